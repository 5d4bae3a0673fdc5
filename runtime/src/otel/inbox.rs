//! [`Inbox`]: where runs leave their batches for the export's thread, which is woken only when
//! enough spans wait, for a flush or for the end, rather than for every batch.
//!
//! Waking a thread that sleeps costs the thread that wakes it a system call and, on a virtual
//! machine, an interrupt sent to another CPU: 7 µs measured on the machine of BENCHMARKS.md, a
//! run's thread paying it for every batch (two or three a run of the `ReAct` loops, whose turns
//! take 4–6 µs). Between wakes the thread sleeps until its oldest span is
//! due; and a thread at work is not woken at all, since it looks before it sleeps again. While
//! spans keep coming, the thread looks again on its own after a short nap ([`Inbox::nap`]) and
//! runs leave it be, unless the spans waiting near what the queue holds: the runs' threads then
//! make no call to wake it at all.

use crate::telemetry::Batch;
use std::sync::mpsc::Sender;
use std::sync::{Condvar, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// How a flush hears that everything recorded before it was sent on (or why not).
pub(super) type FlushDone = Sender<Result<(), String>>;

/// Batches waiting for the export's thread.
#[derive(Debug)]
pub(super) struct Inbox {
    state: Mutex<State>,
    ready: Condvar,
    /// Spans waiting that wake the thread.
    wake_at: usize,
    /// Spans waiting that wake it also from a nap.
    wake_from_nap_at: usize,
}

#[derive(Debug, Default)]
struct State {
    batches: Vec<Batch>,
    spans: usize,
    /// When the first of the waiting batches came.
    since: Option<Instant>,
    flushes: Vec<FlushDone>,
    /// Whether the thread was woken and has not yet taken what woke it.
    woken: bool,
    /// How the thread waits, if it does: only then does waking it take a call to the kernel (a
    /// thread at work sees `woken` before it waits again).
    waiting: Waiting,
    closed: bool,
}

/// How the export's thread waits.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Waiting {
    /// It does not: it works.
    #[default]
    No,
    /// Until it is woken, or its oldest span is due.
    Asleep,
    /// A short while, after which it looks again on its own.
    Napping,
}

/// What the thread takes from the inbox when it wakes.
#[derive(Debug, Default)]
pub(super) struct Taken {
    pub(super) batches: Vec<Batch>,
    /// When the first of `batches` came.
    pub(super) since: Option<Instant>,
    /// Flushes asked since the last wake: each waits for `batches` and what came before.
    pub(super) flushes: Vec<FlushDone>,
    /// The recorder stops: nothing more will come.
    pub(super) closed: bool,
}

impl Inbox {
    /// An inbox that wakes its thread once `wake_at` spans wait (at least one), and from a nap
    /// once `wake_from_nap_at` do (at least `wake_at`).
    pub(super) fn new(wake_at: usize, wake_from_nap_at: usize) -> Self {
        let wake_at = wake_at.max(1);
        Self {
            state: Mutex::default(),
            ready: Condvar::new(),
            wake_at,
            wake_from_nap_at: wake_from_nap_at.max(wake_at),
        }
    }

    /// Leaves `batch` for the thread; `false` (the batch dropped) when the recorder has stopped.
    pub(super) fn put(&self, batch: Batch) -> bool {
        let mut state = self.lock();
        if state.closed {
            return false;
        }
        if state.batches.is_empty() {
            state.since = Some(Instant::now());
        }
        state.spans += batch.records.len();
        state.batches.push(batch);
        let due = if state.waiting == Waiting::Napping { self.wake_from_nap_at } else { self.wake_at };
        if state.spans >= due && !state.woken {
            self.wake(state);
        }
        true
    }

    /// Asks the thread to send everything left so far and say how it went on `done`; `false`
    /// when the recorder has stopped.
    pub(super) fn flush(&self, done: FlushDone) -> bool {
        let mut state = self.lock();
        if state.closed {
            return false;
        }
        state.flushes.push(done);
        self.wake(state);
        true
    }

    /// Tells the thread to send what is left and end.
    pub(super) fn close(&self) {
        let mut state = self.lock();
        state.closed = true;
        self.wake(state);
    }

    /// Waits until woken, or for `timeout`, and takes what waits.
    pub(super) fn take(&self, timeout: Duration) -> Taken {
        self.wait(timeout, false)
    }

    /// As [`take`](Self::take), for a thread that has just taken spans and expects more soon:
    /// it comes back after `timeout` (kept short) on its own, and runs wake it meanwhile only
    /// when the spans waiting reach the nap's mark, for a flush, or for the end.
    pub(super) fn nap(&self, timeout: Duration) -> Taken {
        self.wait(timeout, true)
    }

    fn wait(&self, timeout: Duration, nap: bool) -> Taken {
        let mut state = self.lock();
        state.waiting = if nap { Waiting::Napping } else { Waiting::Asleep };
        let (mut state, _) = self
            .ready
            .wait_timeout_while(state, timeout, |state| !state.woken && !state.closed)
            .unwrap_or_else(PoisonError::into_inner);
        state.waiting = Waiting::No;
        state.woken = false;
        state.spans = 0;
        Taken {
            batches: std::mem::take(&mut state.batches),
            since: state.since.take(),
            flushes: std::mem::take(&mut state.flushes),
            closed: state.closed,
        }
    }

    fn wake(&self, mut state: MutexGuard<'_, State>) {
        state.woken = true;
        let waiting = state.waiting != Waiting::No;
        drop(state);
        if waiting {
            self.ready.notify_one();
        }
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn the_thread_sleeps_through_batches_until_enough_spans_wait() {
        let inbox = Arc::new(Inbox::new(10, 10));
        assert!(inbox.put(Batch::of_steps(4)));
        assert!(inbox.put(Batch::of_steps(4)));
        let started = Instant::now();
        let taken = inbox.take(Duration::from_millis(200));
        assert!(started.elapsed() >= Duration::from_millis(200), "8 spans of 10 do not wake it");
        assert_eq!(taken.batches.len(), 2, "a timeout takes what waits");
        assert!(taken.since.is_some_and(|since| since <= started));

        let waiting = Arc::clone(&inbox);
        let thread = std::thread::spawn(move || waiting.take(Duration::from_mins(1)));
        assert!(inbox.put(Batch::of_steps(6)));
        assert!(inbox.put(Batch::of_steps(4)));
        let taken = thread.join().unwrap();
        let spans: usize = taken.batches.iter().map(|b| b.records.len()).sum();
        assert_eq!(spans, 10, "woken by the batch that made 10");
    }

    #[test]
    fn a_wake_while_the_thread_works_is_kept_for_its_next_wait() {
        let inbox = Inbox::new(10, 10);
        // Nobody waits: no call to wake anyone, but the next wait ends at once.
        assert!(inbox.put(Batch::of_steps(10)));
        let started = Instant::now();
        let taken = inbox.take(Duration::from_mins(1));
        assert!(started.elapsed() < Duration::from_secs(30), "not waited for");
        assert_eq!(taken.batches.len(), 1);
    }

    #[test]
    fn a_flush_and_the_end_wake_the_thread_and_nothing_is_taken_after_the_end() {
        let inbox = Arc::new(Inbox::new(1000, 1000));
        assert!(inbox.put(Batch::of_steps(1)));
        let (done, _answer) = std::sync::mpsc::channel();
        assert!(inbox.flush(done));
        let taken = inbox.take(Duration::from_mins(1));
        assert_eq!((taken.batches.len(), taken.flushes.len(), taken.closed), (1, 1, false));

        inbox.close();
        let taken = inbox.take(Duration::from_mins(1));
        assert!(taken.closed && taken.batches.is_empty());
        assert!(!inbox.put(Batch::of_steps(1)), "refused after the end");
        let (done, _answer) = std::sync::mpsc::channel();
        assert!(!inbox.flush(done));
    }

    #[test]
    fn a_napping_thread_is_left_to_come_back_unless_the_spans_near_the_queues_room() {
        let inbox = Arc::new(Inbox::new(10, 30));
        let napping = Arc::clone(&inbox);
        let thread = std::thread::spawn(move || {
            let started = Instant::now();
            (napping.nap(Duration::from_millis(300)), started.elapsed())
        });
        while inbox.lock().waiting != Waiting::Napping {
            std::thread::yield_now();
        }
        assert!(inbox.put(Batch::of_steps(20)));
        let (taken, waited) = thread.join().unwrap();
        assert!(waited >= Duration::from_millis(300), "20 spans of 30 leave a nap be: {waited:?}");
        assert_eq!(taken.batches.len(), 1, "and it takes them when it comes back");

        let napping = Arc::clone(&inbox);
        let thread = std::thread::spawn(move || napping.nap(Duration::from_mins(1)));
        while inbox.lock().waiting != Waiting::Napping {
            std::thread::yield_now();
        }
        assert!(inbox.put(Batch::of_steps(20)));
        assert!(inbox.put(Batch::of_steps(10)));
        let taken = thread.join().unwrap();
        let spans: usize = taken.batches.iter().map(|b| b.records.len()).sum();
        assert_eq!(spans, 30, "woken from the nap by the batch that made 30");
        assert_eq!(inbox.lock().waiting, Waiting::No, "back at work");

        let napping = Arc::clone(&inbox);
        let thread = std::thread::spawn(move || napping.nap(Duration::from_mins(1)));
        while inbox.lock().waiting != Waiting::Napping {
            std::thread::yield_now();
        }
        let (done, _answer) = std::sync::mpsc::channel();
        assert!(inbox.flush(done));
        let taken = thread.join().unwrap();
        assert_eq!((taken.batches.len(), taken.flushes.len()), (0, 1), "a flush ends a nap at once");
    }
}
