//! A subgraph's step events on their way up to the stream of the graph that was run: the
//! subgraph's state type is not the stream's, so its states and updates travel as JSON.

use super::EventKind;
use crate::checkpoint::Source;
use crate::record::codec::to_json_shown;
use crate::state::State;
use serde_json::Value;

/// A step event of a subgraph, free of its state type.
pub(crate) enum Nested {
    Values(Value),
    Update { node: String, update: Value, cached: bool },
    TaskStarted { node: String, task: u32 },
    TaskFinished { node: String, task: u32, error: Option<String>, interrupted: bool },
    Checkpoint { id: String, step: i64, source: Source },
}

impl Nested {
    /// The event as the graph above sees it; `None` for kinds a subgraph run never sends up
    /// (its end is the end of the task that ran it).
    pub(crate) fn of<S: State>(kind: EventKind<S>) -> Option<Self> {
        Some(match kind {
            EventKind::Values(state) => Self::Values(to_json_shown(&state)),
            EventKind::Update { node, update, cached } => Self::Update { node, update: to_json_shown(&update), cached },
            EventKind::SubgraphValues(value) => Self::Values(value),
            EventKind::SubgraphUpdate { node, update, cached } => Self::Update { node, update, cached },
            EventKind::TaskStarted { node, task } => Self::TaskStarted { node, task },
            EventKind::TaskFinished { node, task, error, interrupted, .. } => {
                Self::TaskFinished { node, task, error, interrupted }
            }
            EventKind::Checkpoint { id, step, source } => Self::Checkpoint { id, step, source },
            _ => return None,
        })
    }

    /// The event in the vocabulary of a graph whose state is `S`.
    pub(crate) fn into_kind<S: State>(self) -> EventKind<S> {
        match self {
            Self::Values(value) => EventKind::SubgraphValues(value),
            Self::Update { node, update, cached } => EventKind::SubgraphUpdate { node, update, cached },
            Self::TaskStarted { node, task } => EventKind::TaskStarted { node, task },
            Self::TaskFinished { node, task, error, interrupted } => {
                EventKind::TaskFinished { node, task, error, interrupted, result: None }
            }
            Self::Checkpoint { id, step, source } => EventKind::Checkpoint { id, step, source },
        }
    }
}
