//! Watching a run live: typed events for any combination of modes.
//!
//! [`CompiledGraph::stream`](crate::CompiledGraph::stream) hands back a [`RunStream`]: a
//! `futures::Stream` of [`Event`]s that drives the run itself, as LangGraph's `stream`
//! generator does. Polling the stream runs the graph until it has an event to give or must wait;
//! nothing is spawned, and the run advances only while the stream is polled. At most a bounded
//! number of step events wait for the consumer, so one that falls behind holds the run back
//! instead of growing memory; dropping the stream cancels the run. Every stream ends with
//! exactly one terminal event: [`EventKind::Finished`], [`EventKind::Interrupted`],
//! [`EventKind::Failed`] or [`EventKind::Cancelled`].

mod app;
mod event;
mod mode;
pub(crate) mod nested;
mod queue;
mod run_stream;
mod sink;
mod writer;

pub(crate) use queue::Queue;
pub(crate) use sink::Sink;
pub(crate) use writer::{SharedWriter, Written};

pub use app::{APP_MODES, AppEvent, AppEvents};
pub use event::{Event, EventKind};
pub use mode::{StreamMode, StreamModes};
pub use run_stream::RunStream;
