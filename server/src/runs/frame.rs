//! A run's event as it goes out on the wire, kept by the run's log and matched by its replay.

/// One event as sent: its position in the run (the SSE `id`), its name and its JSON.
#[derive(Debug)]
pub(crate) struct Frame {
    pub(crate) id: usize,
    pub(crate) name: String,
    pub(crate) data: String,
}
