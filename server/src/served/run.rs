//! What a run of a served graph is given and what it gives back, as plain data shared by the
//! graph adapters, the run executor and storage.

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
