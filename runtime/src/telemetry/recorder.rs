//! Where a run's spans go: the recorder export sets up, found through the `tracing` dispatcher
//! the run starts under.

use super::batch::Batch;
use super::record::Parent;
use std::sync::Arc;

/// Takes runs' finished spans (OpenTelemetry's export, `crate::otel`).
pub(crate) trait Recorder: Send + Sync + 'static {
    /// Begins the trace of a run of `graph`: its id, the span it continues, and whether the
    /// sampler keeps it (nothing of it is recorded when not).
    fn begin(&self, graph: &str) -> Begun;

    /// Takes a trace's finished spans.
    fn record(&self, batch: Batch);
}

/// The recorder, as a `tracing` subscriber carries it: export's layer holds one, and a run asks
/// the current dispatcher for it.
#[derive(Clone)]
pub(crate) struct RecorderHandle(pub(crate) Arc<dyn Recorder>);

impl RecorderHandle {
    /// The recorder of the current dispatcher, if it carries one.
    pub(crate) fn current() -> Option<Arc<dyn Recorder>> {
        tracing::dispatcher::get_default(|dispatch| dispatch.downcast_ref::<Self>().map(|handle| Arc::clone(&handle.0)))
    }
}

/// A root run's trace as the recorder begins it.
#[derive(Debug)]
pub(crate) struct Begun {
    pub(crate) trace_id: u128,
    pub(crate) parent: Option<Parent>,
    /// The `tracing` span current as the run began (its id's number; 0: none).
    pub(crate) outer: u64,
    /// Whether the sampler keeps the run.
    pub(crate) sampled: bool,
    /// How long a span may wait in the run's batch: a batch whose first span ended longer ago
    /// than that is handed on when the next one ends (a long run's spans go out as it goes, not
    /// all at its end).
    pub(crate) hand_off_after: std::time::Duration,
}
