//! The typed events a stream gives: what a step, a node or the run's end reports.

use crate::checkpoint::Source;
use crate::error::GraphError;
use crate::interrupt::Interrupt;
use crate::state::State;
use serde_json::Value;
use std::fmt;

/// One event of a run.
#[derive(Debug)]
#[non_exhaustive]
pub struct Event<S: State> {
    /// The run it belongs to (as [`Runtime::run_id`](crate::Runtime::run_id)).
    pub run_id: u64,
    /// The super-step (0 before the first).
    pub step: u64,
    /// Where in nested graphs the event comes from; empty for the graph that was run.
    pub namespace: Vec<String>,
    /// What happened.
    pub kind: EventKind<S>,
}

/// What an [`Event`] reports.
#[non_exhaustive]
pub enum EventKind<S: State> {
    /// `values`: the state after a step.
    Values(S),
    /// `updates`: what one task wrote.
    Update {
        /// The node.
        node: String,
        /// Its update.
        update: S::Update,
        /// The node did not run: its output came from the graph's cache (its
        /// [`CachePolicy`](crate::CachePolicy)).
        cached: bool,
    },
    /// `values` inside a subgraph (with [`StreamMode::Subgraphs`](super::StreamMode::Subgraphs)): the subgraph's state after
    /// one of its steps, as JSON (its type is not the graph's).
    SubgraphValues(Value),
    /// `updates` inside a subgraph (with [`StreamMode::Subgraphs`](super::StreamMode::Subgraphs)): what one of its tasks
    /// wrote, as JSON.
    SubgraphUpdate {
        /// The subgraph's node.
        node: String,
        /// The node's update.
        update: Value,
        /// The node did not run: its output came from the subgraph's cache.
        cached: bool,
    },
    /// `custom`: a value a node wrote.
    Custom {
        /// The node.
        node: String,
        /// The value.
        value: Value,
    },
    /// `messages`: a piece of a message being generated.
    Message {
        /// The node generating it.
        node: String,
        /// The message it belongs to.
        message_id: String,
        /// The new text.
        delta: String,
    },
    /// `messages`: a piece of a tool call a model is asking for, in the reply `message_id`.
    ToolCallDelta {
        /// The node generating it.
        node: String,
        /// The reply (assistant message) it belongs to.
        message_id: String,
        /// Which call of the reply (0 for the first).
        index: u32,
        /// The call's id, on its first piece.
        id: Option<String>,
        /// The tool's name, on its first piece.
        name: Option<String>,
        /// More of the arguments' JSON text.
        arguments: String,
    },
    /// `custom`: what happened to a tool call a [`ToolNode`](crate::ToolNode) runs in the node:
    /// started (with its redacted arguments), progress the tool wrote, finished (with its
    /// redacted result), under the model's call id.
    Tool {
        /// The node running the call.
        node: String,
        /// What happened.
        event: crate::tool::ToolEvent,
    },
    /// `messages`: what a model call in the node used, once its reply `message_id` is complete.
    Usage {
        /// The node that made the call.
        node: String,
        /// The reply.
        message_id: String,
        /// Its tokens and cost.
        usage: crate::model::Usage,
    },
    /// `tasks`: a task started.
    TaskStarted {
        /// The node.
        node: String,
        /// The task's index in its step.
        task: u32,
    },
    /// `tasks`: a task finished, sent as soon as it did: `result` holds its update, `error` its
    /// error, `interrupted` whether it paused.
    TaskFinished {
        /// The node.
        node: String,
        /// The task's index in its step.
        task: u32,
        /// The error, if the task failed.
        error: Option<String>,
        /// Whether the task paused with an interrupt.
        interrupted: bool,
        /// What the task wrote, if it finished; `None` for a task of a subgraph (its update
        /// comes as [`EventKind::SubgraphUpdate`]).
        result: Option<S::Update>,
    },
    /// `checkpoints`: a checkpoint was stored (or queued, under async durability).
    Checkpoint {
        /// Its id.
        id: String,
        /// Its step.
        step: i64,
        /// Why it was written.
        source: Source,
    },
    /// Terminal: the run finished with this state.
    Finished {
        /// The final state.
        state: S,
        /// Super-steps run.
        steps: u64,
    },
    /// Terminal: the run paused.
    Interrupted {
        /// The state at the pause.
        state: S,
        /// Why it paused.
        interrupts: Vec<Interrupt>,
    },
    /// Terminal: the run failed.
    Failed(GraphError),
    /// Terminal: the run stopped before it could report (the stream was cancelled, or the
    /// run's task was aborted).
    Cancelled,
}

impl<S: State> EventKind<S> {
    /// Whether this is the last event of its stream.
    pub fn is_terminal(&self) -> bool {
        matches!(self, Self::Finished { .. } | Self::Interrupted { .. } | Self::Failed(_) | Self::Cancelled)
    }
}

impl<S: State> fmt::Debug for EventKind<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Values(state) => f.debug_tuple("Values").field(state).finish(),
            Self::SubgraphValues(state) => f.debug_tuple("SubgraphValues").field(state).finish(),
            Self::SubgraphUpdate { node, update, cached } => f
                .debug_struct("SubgraphUpdate")
                .field("node", node)
                .field("update", update)
                .field("cached", cached)
                .finish(),
            Self::Update { node, update, cached } => {
                f.debug_struct("Update").field("node", node).field("update", update).field("cached", cached).finish()
            }
            Self::Custom { node, value } => f.debug_struct("Custom").field("node", node).field("value", value).finish(),
            Self::Message { node, message_id, delta } => f
                .debug_struct("Message")
                .field("node", node)
                .field("message_id", message_id)
                .field("delta", delta)
                .finish(),
            Self::ToolCallDelta { node, message_id, index, id, name, arguments } => f
                .debug_struct("ToolCallDelta")
                .field("node", node)
                .field("message_id", message_id)
                .field("index", index)
                .field("id", id)
                .field("name", name)
                .field("arguments", arguments)
                .finish(),
            Self::Tool { node, event } => f.debug_struct("Tool").field("node", node).field("event", event).finish(),
            Self::Usage { node, message_id, usage } => f
                .debug_struct("Usage")
                .field("node", node)
                .field("message_id", message_id)
                .field("usage", usage)
                .finish(),
            Self::TaskStarted { node, task } => {
                f.debug_struct("TaskStarted").field("node", node).field("task", task).finish()
            }
            Self::TaskFinished { node, task, error, interrupted, result } => f
                .debug_struct("TaskFinished")
                .field("node", node)
                .field("task", task)
                .field("error", error)
                .field("interrupted", interrupted)
                .field("result", result)
                .finish(),
            Self::Checkpoint { id, step, source } => {
                f.debug_struct("Checkpoint").field("id", id).field("step", step).field("source", source).finish()
            }
            Self::Finished { state, steps } => {
                f.debug_struct("Finished").field("state", state).field("steps", steps).finish()
            }
            Self::Interrupted { state, interrupts } => {
                f.debug_struct("Interrupted").field("state", state).field("interrupts", interrupts).finish()
            }
            Self::Failed(error) => f.debug_tuple("Failed").field(error).finish(),
            Self::Cancelled => f.write_str("Cancelled"),
        }
    }
}
