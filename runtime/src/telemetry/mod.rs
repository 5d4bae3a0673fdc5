//! The run's spans as records of its own, for export: what OpenTelemetry's export (feature
//! `otel`) sends for a run when it is set up.
//!
//! A `tracing` span costs a subscriber's registry entry and, with `tracing-opentelemetry`, the
//! SDK's span data built on the run's thread: several microseconds a span, more than a step of
//! a graph that does not wait on a model takes. A run here writes each span once, when it ends,
//! as a small record (ids, clock ticks, counts, its texts copied into one buffer of the run) to
//! the run's batch; the batch goes to the [`Recorder`] when the run ends (or fills, or its first
//! span has waited as long as export lets a span wait), and the recorder turns it into
//! OpenTelemetry spans on a thread of its own.
//!
//! Runs find the recorder in the current `tracing` dispatcher ([`Recorder::current`]): the layer
//! that export hands out carries it, so a program (or a test) that sets a subscriber up with
//! that layer has its runs recorded, and one without it records nothing.

mod batch;
mod clock;
mod current;
mod record;
mod recorder;
mod spans;

/// The target of the runtime's `tracing` spans that a run also records (a model or tool call made
/// in a recorded run, or in one the sampler left out, which records nothing): export's layer
/// leaves them to the record, other layers take them as any.
pub(crate) const RECORDED: &str = "graphwright::recorded";

pub(crate) use batch::Batch;
pub(crate) use clock::{Anchor, Ticks, calibrate};
pub(crate) use current::{Current, current, in_trace, left_to_record, within};
pub(crate) use record::{Body, ChatBody, Kept, NodeMark, Parent, Record, RunBody, Status, ToolBody};
pub(crate) use recorder::{Begun, Recorder, RecorderHandle};
pub(crate) use spans::{Began, Open, RunTrace, trace_id};
