//! The spans' clock: raw ticks of the CPU's time-stamp counter (through `quanta`, which falls
//! back to the monotonic clock where there is none), turned into wall time when a batch leaves
//! the run.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime};

/// Calibrated once per process: when export starts (see [`calibrate`]), or else the first time
/// a span is timed.
static CLOCK: LazyLock<quanta::Clock> = LazyLock::new(quanta::Clock::new);

/// Calibrates the clock now: measuring the time-stamp counter against the system clock takes a
/// few milliseconds, which would otherwise fall on the first run recorded.
pub(crate) fn calibrate() {
    LazyLock::force(&CLOCK);
}

/// A moment, as raw ticks of the clock.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Ticks(u64);

impl Ticks {
    /// Now.
    pub(crate) fn now() -> Self {
        Self(CLOCK.raw())
    }
}

/// Ticks and the wall time they stand for, read together: later moments are placed by their
/// distance from it, so the clock's drift from wall time never adds up beyond one batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Anchor {
    ticks: Ticks,
    wall: SystemTime,
}

impl Anchor {
    /// Now, in both clocks.
    pub(crate) fn now() -> Self {
        Self { ticks: Ticks::now(), wall: SystemTime::now() }
    }

    /// The wall time of `at`, a moment before or after the anchor.
    pub(crate) fn wall(&self, at: Ticks) -> SystemTime {
        if at.0 <= self.ticks.0 {
            self.wall - Duration::from_nanos(CLOCK.delta_as_nanos(at.0, self.ticks.0))
        } else {
            self.wall + Duration::from_nanos(CLOCK.delta_as_nanos(self.ticks.0, at.0))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ticks_become_the_wall_time_they_were_read_at() {
        let before = SystemTime::now();
        let early = Ticks::now();
        std::thread::sleep(Duration::from_millis(200));
        let anchor = Anchor::now();
        let early_wall = anchor.wall(early);
        let late_wall = anchor.wall(Ticks::now());
        // Room for the thread to be set aside between two readings on a busy machine.
        let slack = Duration::from_millis(50);
        assert!(early_wall + slack >= before && early_wall <= before + slack, "{early_wall:?} vs {before:?}");
        assert!(late_wall >= early_wall + Duration::from_millis(200) - slack, "{late_wall:?} vs {early_wall:?}");
    }
}
