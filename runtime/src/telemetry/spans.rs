//! A run's recorded spans: opened with an id and a start, closed with what they carry, and kept
//! in the run's batch until the run ends.

use super::batch::Batch;
use super::clock::{Anchor, TickSpan, Ticks};
use super::current::{Current, current};
use super::record::{Body, Kept, Record, Status};
use super::recorder::{Recorder, RecorderHandle};
use std::cell::{Cell, RefCell};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, LazyLock, Mutex, PoisonError, Weak};

/// A batch is handed on, mid-run, once it holds this many spans or this many bytes of text (or
/// once its first span has waited as long as the recorder lets a span wait, `hand_off_after`):
/// small enough that the buffers a run records into stay in its core's cache and those handed on
/// come from the allocator's free lists (grown large, they would be fresh pages, faulted in, for
/// every run), large enough that handing them on costs nothing per span.
const BATCH_SPANS: usize = 256;
const BATCH_TEXT: usize = 16 << 10;

/// A span begun and not yet ended.
#[derive(Debug)]
#[must_use = "a span is recorded when it is closed"]
pub(crate) struct Open {
    pub(crate) span_id: u64,
    parent: u64,
    start: Ticks,
}

impl Open {
    /// Opens a span under the span `parent` of the same trace.
    pub(crate) fn under(parent: u64) -> Self {
        Self { span_id: span_id(), parent, start: Ticks::now() }
    }

    /// When it began.
    pub(crate) fn start(&self) -> Ticks {
        self.start
    }
}

/// The trace a run records into: its batch (shared with the runs of its subgraphs) and the span
/// the run's own steps and writes hang from.
#[derive(Clone)]
pub(crate) struct RunTrace {
    shared: Arc<Shared>,
    /// The run's own span, or for a subgraph's run the node span it runs in.
    parent: u64,
}

struct Shared {
    recorder: Arc<dyn Recorder>,
    /// This recording's number, unique in the process (`Current::recording`).
    id: u64,
    trace_id: u128,
    outer: u64,
    /// A batch is handed on once a span ends this long after its first did
    /// (`Begun::hand_off_after`).
    hand_off_after: TickSpan,
    batch: Mutex<Batch>,
}

/// The recordings of the runs going on, by number: how a model or tool call made inside a node,
/// with nothing of the run at hand (a node that takes no `Runtime`), finds the recording to
/// record into from the span it runs in. By recording rather than by trace: a graph invoked
/// from a node of another records apart, in the same trace.
static LIVE: LazyLock<Mutex<HashMap<u64, Weak<Shared>>>> = LazyLock::new(Mutex::default);

/// The number of the next recording (0 is none).
static RECORDINGS: AtomicU64 = AtomicU64::new(1);

impl Drop for Shared {
    fn drop(&mut self) {
        LIVE.lock().unwrap_or_else(PoisonError::into_inner).remove(&self.id);
        self.batch.get_mut().unwrap_or_else(PoisonError::into_inner).park();
    }
}

impl std::fmt::Debug for RunTrace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunTrace").field("trace_id", &self.shared.trace_id).field("parent", &self.parent).finish()
    }
}

/// How a run that nothing runs inside (not a subgraph's) begins, when the current `tracing`
/// dispatcher carries a recorder.
pub(crate) enum Began {
    /// The sampler keeps it: its trace, and its span opened.
    Recorded(RunTrace, Open),
    /// The sampler leaves it out: the span its calls are made in, unsampled, in the trace it
    /// continues (or one of its own), so that an outgoing request says it is not sampled and a
    /// span of the program's made inside it is left out as well, rather than either starting a
    /// trace of its own.
    Unsampled(Current),
}

impl RunTrace {
    /// Begins the trace of a run of `graph` that nothing runs inside (not a subgraph's).
    pub(crate) fn begin(graph: &str) -> Option<Began> {
        let recorder = RecorderHandle::current()?;
        let begun = recorder.begin(graph);
        if !begun.sampled {
            // Nothing is recorded: the calls hang from the span the run continues, the nearest
            // that may exist.
            let span_id = begun.parent.as_ref().map_or_else(span_id, |parent| parent.span_id);
            return Some(Began::Unsampled(Current {
                trace_id: begun.trace_id,
                span_id,
                outer: begun.outer,
                recording: 0,
            }));
        }
        let span_id = span_id();
        let batch = Batch::new(begun.trace_id, begun.parent, (BATCH_SPANS, BATCH_TEXT));
        let id = RECORDINGS.fetch_add(1, Ordering::Relaxed);
        let shared = Shared {
            recorder,
            id,
            trace_id: begun.trace_id,
            outer: begun.outer,
            hand_off_after: TickSpan::of(begun.hand_off_after),
            batch: Mutex::new(batch),
        };
        let open = Open { span_id, parent: 0, start: Ticks::now() };
        let shared = Arc::new(shared);
        LIVE.lock().unwrap_or_else(PoisonError::into_inner).insert(id, Arc::downgrade(&shared));
        Some(Began::Recorded(Self { shared, parent: span_id }, open))
    }

    /// The trace of the recorded span the code runs in, if any, its spans opened under that
    /// span.
    pub(crate) fn current() -> Option<Self> {
        let current = current().filter(Current::sampled)?;
        // Not kept once the thread's locals are gone (a call made as the thread ends).
        let found = FOUND
            .try_with(|found| {
                let (recording, shared) = &*found.borrow();
                (*recording == current.recording).then(|| shared.upgrade())
            })
            .ok()
            .flatten();
        let shared = if let Some(found) = found {
            // Kept here: the recording itself, or `None` once it has ended (no longer in `LIVE`
            // either).
            found?
        } else {
            let shared = LIVE.lock().unwrap_or_else(PoisonError::into_inner).get(&current.recording)?.upgrade()?;
            let _ = FOUND.try_with(|found| found.replace((current.recording, Arc::downgrade(&shared))));
            shared
        };
        Some(Self { shared, parent: current.span_id })
    }

    /// The trace of a subgraph's run, made inside a node of this one: its steps hang from that
    /// node's span.
    pub(crate) fn nested(&self) -> Self {
        Self { shared: Arc::clone(&self.shared), parent: self.here() }
    }

    /// Opens a span of the run's own (a step, a checkpoint write).
    pub(crate) fn open(&self) -> Open {
        self.open_at(Ticks::now())
    }

    /// Opens a span of the run's own that began at `start`: when another span ended, the same
    /// reading of the clock (the next super-step begins as the last one ends).
    pub(crate) fn open_at(&self, start: Ticks) -> Open {
        Open { span_id: span_id(), parent: self.parent, start }
    }

    /// Opens a span under the recorded span the code runs in (a node's attempt, for a model or
    /// tool call), or the run's own when it runs in none of this trace.
    pub(crate) fn open_here(&self) -> Open {
        Open::under(self.here())
    }

    /// The recorded span of this recording the code runs in, or the run's own.
    fn here(&self) -> u64 {
        current().filter(|c| c.recording == self.shared.id).map_or(self.parent, |c| c.span_id)
    }

    /// The span `open`, as code inside it sees it.
    pub(crate) fn inside(&self, open: &Open) -> Current {
        let shared = &self.shared;
        Current { trace_id: shared.trace_id, span_id: open.span_id, outer: shared.outer, recording: shared.id }
    }

    /// Ends `open` now, with `status` and what `body` makes (its texts kept in the batch).
    pub(crate) fn close(&self, open: Open, status: Status, body: impl FnOnce(&mut Batch) -> Body) {
        self.close_at(open, Ticks::now(), status, body);
    }

    /// Ends `open` at `end`, a reading of the clock taken just now, with `status` and what
    /// `body` makes (its texts kept in the batch).
    // Taken by value so that a span cannot be closed twice.
    #[allow(clippy::needless_pass_by_value)]
    pub(crate) fn close_at(&self, open: Open, end: Ticks, status: Status, body: impl FnOnce(&mut Batch) -> Body) {
        let Open { span_id, parent, start } = open;
        let full = {
            let mut batch = self.shared.batch.lock().unwrap_or_else(PoisonError::into_inner);
            let status = match status {
                Status::Unset => Kept::Unset,
                Status::Ok => Kept::Ok,
                Status::Error(message) => Kept::Error(batch.text(&message)),
            };
            let body = body(&mut batch);
            batch.records.push(Record { span_id, parent, start, end, status, body });
            let (spans, text) = batch.size();
            let due = batch.records.first().is_some_and(|first| first.end.reached(self.shared.hand_off_after, end));
            (spans >= BATCH_SPANS || text >= BATCH_TEXT || due).then(|| batch.hand_off())
        };
        if let Some(full) = full {
            self.send(full);
        }
    }

    /// Sends what the trace holds to the recorder: at the end of the run that began it.
    pub(crate) fn finish(&self) {
        let batch = {
            let mut batch = self.shared.batch.lock().unwrap_or_else(PoisonError::into_inner);
            if batch.records.is_empty() {
                return;
            }
            batch.hand_off()
        };
        self.send(batch);
    }

    fn send(&self, mut batch: Batch) {
        batch.anchor = Some(Anchor::now());
        self.shared.recorder.record(batch);
    }
}

thread_local! {
    /// The recording this thread last found in `LIVE`, by number: the calls of a node that lends
    /// them nothing of its run find it again without `LIVE`'s lock, one call after another.
    /// Numbers are never used twice, so a recording that has ended is never taken for another.
    static FOUND: RefCell<(u64, Weak<Shared>)> = const { RefCell::new((0, Weak::new())) };

    /// The state of this thread's span ids (xorshift64*), seeded at random.
    static IDS: Cell<u64> = Cell::new(seed());
}

fn seed() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(0x9e37_79b9_7f4a_7c15);
    hasher.finish() | 1
}

/// A fresh span id: never 0, and unlike any other this process makes in practice (a 64-bit
/// generator per thread, seeded at random).
pub(crate) fn span_id() -> u64 {
    IDS.with(|state| {
        let mut x = state.get();
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        state.set(x);
        x.wrapping_mul(0x2545_f491_4f6c_dd1d).max(1)
    })
}

/// A fresh trace id, never 0.
pub(crate) fn trace_id() -> u128 {
    (u128::from(span_id()) << 64) | u128::from(span_id())
}

#[cfg(test)]
mod tests {
    use super::super::current::within;
    use super::*;
    use std::collections::HashSet;

    /// Keeps the batches it is given.
    #[derive(Default)]
    struct Keep(Mutex<Vec<Vec<u64>>>);

    impl Recorder for Keep {
        fn begin(&self, _graph: &str) -> super::super::Begun {
            unreachable!("the test makes its trace itself")
        }

        fn record(&self, batch: Batch) {
            self.0.lock().unwrap().push(batch.records.iter().map(|r| r.span_id).collect());
        }
    }

    fn step(trace: &RunTrace) -> u64 {
        let open = trace.open();
        let id = open.span_id;
        trace.close(open, Status::Ok, |_| Body::Step { step: 0, tasks: 1 });
        id
    }

    /// A recording numbered `id`, its batch given to `kept`.
    fn recording(kept: &Arc<Keep>, id: u64, hand_off_after: std::time::Duration) -> Arc<Shared> {
        Arc::new(Shared {
            recorder: Arc::clone(kept) as Arc<dyn Recorder>,
            id,
            trace_id: 1,
            outer: 0,
            hand_off_after: TickSpan::of(hand_off_after),
            batch: Mutex::new(Batch::new(1, None, (0, 0))),
        })
    }

    /// Registers `shared` as a live recording, as `begin` does.
    fn live(shared: &Arc<Shared>) {
        LIVE.lock().unwrap().insert(shared.id, Arc::downgrade(shared));
    }

    #[test]
    fn the_recording_a_span_belongs_to_is_found_again_and_never_once_it_ended() {
        let kept = Arc::new(Keep::default());
        let day = std::time::Duration::from_hours(24);
        let ids = [RECORDINGS.fetch_add(1, Ordering::Relaxed), RECORDINGS.fetch_add(1, Ordering::Relaxed)];
        let (first, second) = (recording(&kept, ids[0], day), recording(&kept, ids[1], day));
        live(&first);
        live(&second);
        let inside = |shared: &Arc<Shared>, span_id| Current { trace_id: 1, span_id, outer: 0, recording: shared.id };
        let found = |span: Current| within(Some(span), RunTrace::current).map(|t| (t.shared.id, t.parent));
        std::thread::spawn(move || {
            assert_eq!(found(inside(&first, 7)), Some((ids[0], 7)));
            assert_eq!(found(inside(&first, 8)), Some((ids[0], 8)), "again, under another span");
            assert_eq!(found(inside(&second, 9)), Some((ids[1], 9)), "another recording on the same thread");
            assert_eq!(found(inside(&first, 7)), Some((ids[0], 7)), "and the first again");
            let gone = first.id;
            drop(first);
            let span = Current { trace_id: 1, span_id: 7, outer: 0, recording: gone };
            assert_eq!(found(span), None, "a recording that ended is not found");
            assert_eq!(found(inside(&second, 9)), Some((ids[1], 9)));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn a_long_runs_spans_are_handed_on_once_the_first_has_waited_long_enough() {
        let kept = Arc::new(Keep::default());
        let trace = RunTrace { shared: recording(&kept, 0, std::time::Duration::from_millis(100)), parent: 1 };
        let first = step(&trace);
        let second = step(&trace);
        assert!(kept.0.lock().unwrap().is_empty(), "nothing has waited yet");
        std::thread::sleep(std::time::Duration::from_millis(120));
        let third = step(&trace);
        assert_eq!(*kept.0.lock().unwrap(), [vec![first, second, third]], "the span after the wait takes them on");
        let fourth = step(&trace);
        trace.finish();
        assert_eq!(kept.0.lock().unwrap()[1..], [vec![fourth]], "the wait counts again from the next batch's first");
    }

    #[test]
    fn span_ids_do_not_repeat() {
        let ids: HashSet<u64> = (0..100_000).map(|_| span_id()).collect();
        assert_eq!(ids.len(), 100_000);
        assert!(!ids.contains(&0));
        let other: u64 = std::thread::spawn(span_id).join().unwrap();
        assert!(!ids.contains(&other), "another thread's generator is seeded apart");
    }
}
