//! A run's finished spans, as they wait to be exported: fixed-size records whose texts sit in
//! one string of the batch, so that recording a span allocates nothing of its own.

use super::clock::Anchor;
use super::record::{Parent, Record, Text};

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
    /// An empty batch with room for `spans` spans and `text` bytes of text.
    pub(crate) fn new(trace_id: u128, parent: Option<Parent>, (spans, text): (usize, usize)) -> Self {
        Self { trace_id, parent, records: Vec::with_capacity(spans), texts: String::with_capacity(text), anchor: None }
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
}
