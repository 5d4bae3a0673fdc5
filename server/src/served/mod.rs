//! A graph as the server sees it: JSON in, JSON out, whatever its state and context types.

mod chains;
mod events;
mod graph;
mod schemas;
mod snapshot;

pub(crate) use graph::erase;
pub(crate) use schemas::Schemas;
pub(crate) use snapshot::interrupts_by_task;

use crate::error::ApiError;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use graphwright::{Checkpointer, Drawing, Store, Subgraph};
use serde_json::Value;
use std::sync::Arc;

/// What a run starts from.
#[derive(Clone, Debug)]
pub(crate) enum Start {
    /// A new input (an update of the state, as JSON).
    Input(Value),
    /// Continue the thread: answer interrupts, apply an update, go to nodes.
    Command { resume: Option<Value>, update: Option<Value>, goto: Vec<String> },
}

impl Start {
    /// What the run was given, as the `events` mode's root chain shows its input.
    pub(crate) fn shown(&self) -> Value {
        match self {
            Self::Input(input) => input.clone(),
            Self::Command { resume, update, goto } => {
                serde_json::json!({"command": {"resume": resume, "update": update, "goto": goto}})
            }
        }
    }
}

/// The stream modes a client asked for.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools)] // one flag per mode of the wire protocol
pub(crate) struct Modes {
    pub(crate) values: bool,
    pub(crate) updates: bool,
    pub(crate) messages: bool,
    pub(crate) custom: bool,
    pub(crate) tasks: bool,
    pub(crate) checkpoints: bool,
    pub(crate) debug: bool,
    /// LangChain's run events (`astream_events`), built from the run's events.
    pub(crate) events: bool,
    pub(crate) subgraphs: bool,
}

/// Everything a run needs from the request.
#[derive(Clone, Debug)]
pub(crate) struct RunSpec {
    pub(crate) thread_id: String,
    pub(crate) run_id: String,
    /// The graph's name on this server, and the assistant the run was made with.
    pub(crate) graph_id: String,
    pub(crate) assistant_id: String,
    pub(crate) start: Start,
    pub(crate) modes: Modes,
    pub(crate) checkpoint_id: Option<String>,
    pub(crate) context: Option<Value>,
    pub(crate) recursion_limit: Option<u64>,
    /// Breakpoints of this run alone, by node name (`"*"`: every node).
    pub(crate) interrupt_before: Vec<String>,
    pub(crate) interrupt_after: Vec<String>,
    /// The authenticated caller who started the run.
    pub(crate) user: Option<Arc<graphwright::AuthUser>>,
    /// Where the run reports its model and tool calls (`/metrics`).
    pub(crate) metrics: Arc<crate::metrics::GraphMetrics>,
}

/// One event on a run's stream, named as the wire names it (`values`, `updates|node:task`, ..).
#[derive(Clone, Debug)]
pub(crate) struct WireEvent {
    pub(crate) name: String,
    pub(crate) data: Value,
}

/// How a run ended. Stored as JSON for the followers of a run in other server processes.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub(crate) enum Outcome {
    /// The graph finished; its final values.
    Finished { values: Value },
    /// The graph paused at interrupts; the values then, and the interrupts as the wire shows them.
    Interrupted { values: Value, interrupts: Vec<Value> },
    /// The run failed; the error's kind and message.
    Failed { error: String, message: String },
}

/// What a started run yields: events, then exactly one outcome.
#[derive(Debug)]
pub(crate) enum Emitted {
    Event(WireEvent),
    Done(Outcome),
}

/// A compiled graph behind the server, its types erased.
pub(crate) trait Served: Send + Sync + 'static {
    /// Its nodes and edges.
    fn drawing(&self) -> Drawing;
    /// Its input, output, state, config and context schemas, made on the first call.
    fn schemas(&self) -> &Schemas;
    /// Its subgraph nodes, each with the graph it runs described, and theirs.
    fn subgraphs(&self) -> Vec<Subgraph>;
    /// The schemas of `subgraph`, one of its subgraphs at any depth (run with its context).
    fn subgraph_schemas(&self, subgraph: &Subgraph) -> Schemas;
    /// The state fields that hold chat messages (`State::MESSAGE_FIELDS`).
    fn message_fields(&self) -> &'static [&'static str];
    /// Checks a run's input and context before the run is accepted.
    fn validate(&self, spec: &RunSpec) -> Result<(), ApiError>;
    /// Starts a run; dropping the stream cancels it.
    fn start(&self, spec: RunSpec) -> BoxFuture<'_, Result<BoxStream<'static, Emitted>, ApiError>>;
    /// The thread's state (at `checkpoint`, or its latest), as a `ThreadState`; `None` for a
    /// thread with no checkpoint.
    fn state<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Value>, ApiError>>;
    /// The thread's checkpoints, newest first, as `ThreadState`s.
    fn history<'a>(
        &'a self,
        thread: &'a str,
        limit: usize,
        before: Option<String>,
    ) -> BoxFuture<'a, Result<Vec<Value>, ApiError>>;
    /// Applies `values` as if `as_node` had written them; the new checkpoint's id.
    fn update_state<'a>(
        &'a self,
        thread: &'a str,
        values: Value,
        as_node: Option<String>,
        checkpoint: Option<String>,
    ) -> BoxFuture<'a, Result<String, ApiError>>;
    /// Prunes the thread's history to its latest checkpoint (`keep_latest`); how many
    /// checkpoints were deleted. A thread with a run in progress is a conflict.
    fn prune_history<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<usize, ApiError>>;
    /// The same graph over the server's storage.
    fn rebind(&self, saver: Arc<dyn Checkpointer>, store: Arc<dyn Store>) -> Arc<dyn Served>;
}
