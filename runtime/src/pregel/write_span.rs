//! The span of storing checkpoints and writes, made by the run's own steps and by its
//! background writer alike.

use crate::checkpoint::BatchOp;
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
    let (mut bytes, mut writes) = (0, 0);
    for op in ops {
        let listed = match op {
            BatchOp::Put { record, writes, .. } => {
                span.record("graphwright.checkpoint.id", record.id.as_str());
                span.record("graphwright.checkpoint.step", record.step);
                bytes += record.body.len();
                writes
            }
            BatchOp::Writes(writes) => writes,
        };
        writes += listed.len();
        bytes += listed.iter().map(|w| w.body.len()).sum::<usize>();
    }
    span.record("graphwright.checkpoint.bytes", int(bytes));
    span.record("graphwright.checkpoint.writes", int(writes));
    span
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
