//! The spans' clock: raw ticks of the CPU's time-stamp counter (through `quanta`, which falls
//! back to the monotonic clock where there is none), turned into wall time when a batch leaves
//! the run.

use std::sync::LazyLock;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

    /// The time from this moment until now.
    pub(crate) fn elapsed(self) -> Duration {
        Duration::from_nanos(CLOCK.delta_as_nanos(self.0, CLOCK.raw()))
    }

    /// Whether `later` came `span` or more after this moment: two readings compared without
    /// turning either into time.
    pub(crate) fn reached(self, span: TickSpan, later: Self) -> bool {
        later.0.saturating_sub(self.0) >= span.0
    }
}

/// A length of time in the clock's ticks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct TickSpan(u64);

impl TickSpan {
    /// `duration` in ticks.
    pub(crate) fn of(duration: Duration) -> Self {
        // The clock's nanoseconds in 2^32 ticks, about a second or more: the ratio to a
        // nanosecond's precision.
        const TICKS: u64 = 1 << 32;
        let nanos = u128::from(CLOCK.delta_as_nanos(0, TICKS).max(1));
        let ticks = duration.as_nanos().saturating_mul(u128::from(TICKS)) / nanos;
        Self(u64::try_from(ticks).unwrap_or(u64::MAX))
    }
}

/// Ticks and the wall time they stand for, read together: later moments are placed by their
/// distance from it, so the clock's drift from wall time never adds up beyond one batch.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Anchor {
    ticks: Ticks,
    /// The wall time read with `ticks`, in nanoseconds since the Unix epoch (0 before it), as
    /// OTLP writes times.
    unix_nanos: u64,
}

impl Anchor {
    /// Now, in both clocks.
    pub(crate) fn now() -> Self {
        let (ticks, wall) = (Ticks::now(), SystemTime::now());
        let unix_nanos =
            wall.duration_since(UNIX_EPOCH).map_or(0, |since| u64::try_from(since.as_nanos()).unwrap_or(u64::MAX));
        Self { ticks, unix_nanos }
    }

    /// The wall time of `at`, a moment before or after the anchor, in nanoseconds since the
    /// Unix epoch: in integers alone (the export's thread reckons two for every span).
    pub(crate) fn unix_nanos(&self, at: Ticks) -> u64 {
        if at.0 <= self.ticks.0 {
            self.unix_nanos.saturating_sub(CLOCK.delta_as_nanos(at.0, self.ticks.0))
        } else {
            self.unix_nanos.saturating_add(CLOCK.delta_as_nanos(self.ticks.0, at.0))
        }
    }

    /// The wall time of `at`, a moment before or after the anchor.
    pub(crate) fn wall(&self, at: Ticks) -> SystemTime {
        UNIX_EPOCH + Duration::from_nanos(self.unix_nanos(at))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_of_ticks_is_reached_when_that_much_time_has_passed() {
        let span = TickSpan::of(Duration::from_millis(100));
        let start = Ticks::now();
        assert!(start.reached(TickSpan::of(Duration::ZERO), start), "no time is reached at once");
        assert!(!start.reached(span, Ticks::now()), "not at once");
        std::thread::sleep(Duration::from_millis(60));
        assert!(!start.reached(span, Ticks::now()), "not after 60 ms");
        std::thread::sleep(Duration::from_millis(60));
        let later = Ticks::now();
        assert!(start.reached(span, later), "after 120 ms");
        assert!(!later.reached(span, start), "an earlier reading reaches nothing");
        assert_eq!(TickSpan::of(Duration::MAX), TickSpan(u64::MAX), "saturates");
    }

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
        let nanos = |wall: SystemTime| wall.duration_since(UNIX_EPOCH).unwrap().as_nanos() as u64;
        assert_eq!(anchor.unix_nanos(early), nanos(early_wall), "the same moment in both forms");
        let late = Ticks::now();
        assert_eq!(anchor.unix_nanos(late), nanos(anchor.wall(late)));
    }
}
