//! The span of storing checkpoints and writes, made by the run's own steps and by its
//! background writer alike.

use crate::checkpoint::BatchOp;
use crate::telemetry::{Body, Open, RunTrace, Status};
use crate::trace_value::int;
use tracing::field::Empty;

/// The span of storing `ops` (checkpoints with their writes, or writes alone; several when the
/// background writer stores a batch): their size in bytes as stored.
pub(super) fn checkpoint_write(ops: &[BatchOp]) -> tracing::Span {
    let span = tracing::info_span!(
        "checkpoint_write",
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "graphwright.checkpoint.id" = Empty,
        "graphwright.checkpoint.step" = Empty,
        "graphwright.checkpoint.bytes" = Empty,
        "graphwright.checkpoint.writes" = Empty,
        "graphwright.checkpoint.batch" = int(ops.len()),
    );
    if span.is_disabled() {
        return span;
    }
    let stored = Stored::of(ops);
    if let Some((id, step)) = stored.checkpoint {
        span.record("graphwright.checkpoint.id", id);
        span.record("graphwright.checkpoint.step", step);
    }
    span.record("graphwright.checkpoint.bytes", int(stored.bytes));
    span.record("graphwright.checkpoint.writes", int(stored.writes));
    span
}

/// What a batch of operations stores: the last checkpoint's id and step, its bytes as stored,
/// and its writes.
struct Stored<'a> {
    checkpoint: Option<(&'a str, i64)>,
    bytes: usize,
    writes: usize,
}

impl<'a> Stored<'a> {
    fn of(ops: &'a [BatchOp]) -> Self {
        let mut stored = Self { checkpoint: None, bytes: 0, writes: 0 };
        for op in ops {
            let listed = match op {
                BatchOp::Put { record, writes, .. } => {
                    stored.checkpoint = Some((record.id.as_str(), record.step));
                    stored.bytes += record.body.len();
                    writes
                }
                BatchOp::Writes(writes) => writes,
            };
            stored.writes += listed.len();
            stored.bytes += listed.iter().map(|w| w.body.len()).sum::<usize>();
        }
        stored
    }
}

/// How a checkpoint write ended.
pub(super) fn record_write<E: std::fmt::Display>(span: &tracing::Span, result: &Result<(), E>) {
    if span.is_disabled() {
        return;
    }
    match result {
        Ok(()) => span.record("otel.status_code", "ok"),
        Err(error) => {
            span.record("otel.status_code", "error");
            span.record("otel.status_description", error.to_string())
        }
    };
}

/// The recorded span of a checkpoint write.
pub(super) struct Recorded<'t> {
    trace: &'t RunTrace,
    open: Open,
    id: Option<String>,
    step: Option<i64>,
    bytes: u64,
    writes: u64,
    batch: u32,
}

impl<'t> Recorded<'t> {
    /// Opens the span of storing `ops`, under the run's.
    pub(super) fn open(trace: &'t RunTrace, ops: &[BatchOp]) -> Self {
        let stored = Stored::of(ops);
        Self {
            trace,
            open: trace.open(),
            id: stored.checkpoint.map(|(id, _)| id.to_owned()),
            step: stored.checkpoint.map(|(_, step)| step),
            bytes: stored.bytes as u64,
            writes: stored.writes as u64,
            batch: u32::try_from(ops.len()).unwrap_or(u32::MAX),
        }
    }

    /// Ends it, as `result` says.
    pub(super) fn end<E: std::fmt::Display>(self, result: &Result<(), E>) {
        let status = match result {
            Ok(()) => Status::Ok,
            Err(error) => Status::Error(error.to_string()),
        };
        let Self { trace, open, id, step, bytes, writes, batch } = self;
        trace.close(open, status, |b| Body::CheckpointWrite {
            id: id.as_deref().map(|id| b.text(id)),
            step,
            bytes,
            writes,
            batch,
        });
    }
}
