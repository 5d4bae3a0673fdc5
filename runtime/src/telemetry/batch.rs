//! A run's finished spans, as they wait to be exported: fixed-size records whose texts sit in
//! one string of the batch, so that recording a span allocates nothing of its own.

use super::clock::Anchor;
use super::record::{Parent, Record, Text};
use std::sync::{Mutex, PoisonError};

/// The buffers of batches already exported, emptied, for the next batches to record into. A
/// batch's buffers are made on the run's thread and done with on the export's: freed there,
/// each free took the lock of the allocator's arena the run's thread allocates from, and the run
/// waited for it (glibc's `malloc`), several times a run.
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

    fn give(&self, (mut records, mut texts): (Vec<Record>, String)) {
        if records.capacity() > Self::MAX_RECORDS || texts.capacity() > Self::MAX_TEXT {
            return;
        }
        records.clear();
        texts.clear();
        let mut spare = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if spare.len() < Self::KEPT {
            spare.push((records, texts));
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

impl Batch {
    /// An empty batch with room for `spans` spans and `text` bytes of text (or the room of the
    /// buffers of a batch recycled).
    pub(crate) fn new(trace_id: u128, parent: Option<Parent>, (spans, text): (usize, usize)) -> Self {
        let (records, texts) = SPARE.take().unwrap_or_else(|| (Vec::with_capacity(spans), String::with_capacity(text)));
        Self { trace_id, parent, records, texts, anchor: None }
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

    /// An empty batch of the same trace, to go on recording into, with the room this one has.
    pub(crate) fn successor(&self) -> Self {
        Self::new(self.trace_id, self.parent.clone(), (self.records.capacity(), self.texts.capacity()))
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
}
