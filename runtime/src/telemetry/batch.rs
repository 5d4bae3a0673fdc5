//! A run's finished spans, as they wait to be exported: fixed-size records whose texts sit in
//! one string of the batch, so that recording a span allocates nothing of its own.

use super::clock::Anchor;
use super::record::{Parent, Record, Text};
use std::cell::RefCell;
use std::sync::{Mutex, PoisonError};

/// The buffers of batches already exported, emptied, for the next batches to be handed off
/// into. A batch's buffers are made on the run's thread and done with on the export's: freed
/// there, each free took the lock of the allocator's arena the run's thread allocates from, and
/// the run waited for it (glibc's `malloc`), several times a run.
static SPARE: Spare = Spare(Mutex::new(Vec::new()));

/// Emptied buffers of batches, a few.
struct Spare(Mutex<Vec<(Vec<Record>, String)>>);

impl Spare {
    /// Enough for the batches of the runs going on at once on a machine's few threads; past
    /// that, buffers are freed.
    const KEPT: usize = 8;
    /// Buffers grown past these (a batch that kept a very long text) are freed, not kept.
    const MAX_RECORDS: usize = 1024;
    const MAX_TEXT: usize = 64 << 10;

    fn take(&self) -> Option<(Vec<Record>, String)> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).pop()
    }

    /// `buffers` emptied, to be kept: `None` when they grew past what is kept.
    fn emptied((mut records, mut texts): (Vec<Record>, String)) -> Option<(Vec<Record>, String)> {
        if records.capacity() > Self::MAX_RECORDS || texts.capacity() > Self::MAX_TEXT {
            return None;
        }
        records.clear();
        texts.clear();
        Some((records, texts))
    }

    fn give(&self, buffers: (Vec<Record>, String)) {
        let Some(buffers) = Self::emptied(buffers) else { return };
        let mut spare = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.len() < Self::KEPT {
            spare.push(buffers);
        }
    }
}

/// The finished spans of one trace (a run and the runs of its subgraphs), handed to the
/// recorder as a whole.
#[derive(Debug)]
pub(crate) struct Batch {
    /// The trace the spans belong to.
    pub(crate) trace_id: u128,
    /// The span the run's own span hangs from, when the run continues a trace (a caller's
    /// `traceparent`, or a span of the program's); its `tracestate` goes with it.
    pub(crate) parent: Option<Parent>,
    pub(crate) records: Vec<Record>,
    texts: String,
    /// Read when the batch leaves the run: what its ticks stand for in wall time.
    pub(crate) anchor: Option<Anchor>,
}

thread_local! {
    /// The buffers the last run on this thread recorded into, for the next one: memory this
    /// thread's core has in cache. A span's record written into memory the export's thread last
    /// read took that core's copy away first, and the lock released after it waited for that:
    /// most of a span's cost on the run's thread, though few instructions (measured by sampling).
    static HOT: RefCell<Option<(Vec<Record>, String)>> = const { RefCell::new(None) };
}

impl Batch {
    /// An empty batch to record into, with room for `spans` spans and `text` bytes of text (or
    /// the room of the buffers the last run on this thread recorded into).
    pub(crate) fn new(trace_id: u128, parent: Option<Parent>, (spans, text): (usize, usize)) -> Self {
        let hot = HOT.try_with(RefCell::take).ok().flatten();
        let (records, texts) = hot.unwrap_or_else(|| (Vec::with_capacity(spans), String::with_capacity(text)));
        Self { trace_id, parent, records, texts, anchor: None }
    }

    /// The spans recorded so far, moved into a batch of their own to be exported; this one goes
    /// on empty, in the same memory.
    pub(crate) fn hand_off(&mut self) -> Self {
        let (mut records, mut texts) = SPARE.take().unwrap_or_default();
        records.append(&mut self.records);
        texts.push_str(&self.texts);
        self.texts.clear();
        Self { trace_id: self.trace_id, parent: self.parent.clone(), records, texts, anchor: None }
    }

    /// Done with recording into (its run ended): its buffers kept for this thread's next run.
    pub(crate) fn park(&mut self) {
        let buffers = (std::mem::take(&mut self.records), std::mem::take(&mut self.texts));
        if let Some(buffers) = Spare::emptied(buffers) {
            // Not kept when the thread is ending (its locals already gone).
            let _ = HOT.try_with(|hot| hot.replace(Some(buffers)));
        }
    }

    /// Done with (exported): its buffers, emptied, kept for a batch to come.
    pub(crate) fn recycle(self) {
        SPARE.give((self.records, self.texts));
    }

    /// Keeps `text` in the batch.
    pub(crate) fn text(&mut self, text: &str) -> Text {
        // A batch is sent on long before four gigabytes; past that a text is cut to nothing
        // rather than misplaced.
        let (Ok(at), Ok(len)) = (u32::try_from(self.texts.len()), u32::try_from(text.len())) else {
            return Text::default();
        };
        self.texts.push_str(text);
        Text { at, len }
    }

    /// A text kept with [`text`](Self::text).
    pub(crate) fn get(&self, text: Text) -> &str {
        let (at, len) = (text.at as usize, text.len as usize);
        self.texts.get(at..at + len).unwrap_or_default()
    }

    /// How much the batch holds, in records and bytes of text, to send it on before it grows large.
    pub(crate) fn size(&self) -> (usize, usize) {
        (self.records.len(), self.texts.len())
    }
}

#[cfg(test)]
impl Batch {
    /// A batch of `n` finished step spans, for tests of what carries batches.
    pub(crate) fn of_steps(n: u64) -> Self {
        use super::clock::Ticks;
        use super::record::{Body, Kept};
        let mut batch = Self::new(1, None, (0, 0));
        let at = Ticks::now();
        batch.records = (1..=n)
            .map(|i| Record {
                span_id: i,
                parent: 0,
                start: at,
                end: at,
                status: Kept::Ok,
                body: Body::Step { step: i, tasks: 1 },
            })
            .collect();
        batch
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn texts_come_back_as_kept() {
        let mut batch = Batch::new(1, None, (0, 0));
        let a = batch.text("lookup");
        let empty = batch.text("");
        let b = batch.text("call-7 ✓");
        assert_eq!((batch.get(a), batch.get(empty), batch.get(b)), ("lookup", "", "call-7 ✓"));
        assert_eq!(batch.size(), (0, "lookupcall-7 ✓".len()));
    }

    #[test]
    fn spare_buffers_come_back_empty_and_only_a_few_are_kept() {
        let spare = Spare(Mutex::new(Vec::new()));
        let mut batch = Batch::of_steps(4);
        batch.text("lookup");
        spare.give((batch.records, batch.texts));
        let (records, texts) = spare.take().expect("kept");
        assert!(records.is_empty() && texts.is_empty());
        assert!(records.capacity() >= 4 && texts.capacity() >= 6, "with their room");
        spare.give((Vec::new(), String::with_capacity(Spare::MAX_TEXT + 1)));
        assert!(spare.take().is_none(), "a grown buffer is freed");
        for _ in 0..Spare::KEPT + 3 {
            spare.give((Vec::new(), String::new()));
        }
        assert_eq!(spare.0.lock().unwrap().len(), Spare::KEPT);
    }

    #[test]
    fn a_batch_handed_off_takes_the_spans_and_recording_goes_on_in_the_same_memory() {
        let mut batch = Batch::of_steps(3);
        let call = batch.text("call-7");
        let (room, at) = (batch.records.capacity(), batch.records.as_ptr());
        let sent = batch.hand_off();
        assert_eq!(sent.records.iter().map(|r| r.span_id).collect::<Vec<_>>(), [1, 2, 3]);
        assert_eq!(sent.get(call), "call-7");
        assert_eq!((sent.trace_id, batch.size()), (batch.trace_id, (0, 0)), "the same trace; nothing left");
        assert_eq!((batch.records.capacity(), batch.records.as_ptr()), (room, at), "the same memory");
    }

    #[test]
    fn a_run_leaves_its_buffers_to_the_next_run_on_its_thread() {
        std::thread::spawn(|| {
            let mut batch = Batch::new(1, None, (16, 64));
            let at = batch.records.as_ptr();
            batch.text("lookup");
            batch.park();
            let next = Batch::new(2, None, (0, 0));
            assert_eq!(next.records.as_ptr(), at, "the same memory");
            assert!(next.records.capacity() >= 16 && next.texts.capacity() >= 64 && next.size() == (0, 0));
            let elsewhere = std::thread::spawn(|| Batch::new(3, None, (0, 0)).records.capacity()).join().unwrap();
            assert_eq!(elsewhere, 0, "another thread's run has its own");
            // A run that kept a very long text leaves nothing behind.
            let mut grown = Batch::new(4, None, (0, Spare::MAX_TEXT + 1));
            grown.park();
            assert_eq!(Batch::new(5, None, (0, 0)).texts.capacity(), 0);
        })
        .join()
        .unwrap();
    }
}
