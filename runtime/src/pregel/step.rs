//! What a super-step is made of: its tasks, the slots their outputs fill, and how a task or
//! the step ended. Plain data, read by the planner, the executor, the typed records and the
//! persistence alike.

use crate::error::GraphError;
use crate::interrupt::Interrupt;
use crate::node::NodeOutput;
use std::any::Any;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The tasks of a step, inline when there is one (see [`Slots`]).
pub(crate) type Tasks = smallvec::SmallVec<[Task; 1]>;

/// The outputs of a step's tasks, by task index. Inline when the step has one task: a chain of
/// nodes, and a subgraph's run, then allocate no lists.
pub(crate) type Slots<S> = smallvec::SmallVec<[Option<NodeOutput<S>>; 1]>;

/// One task of a step: a node to run, with its Send payload if a Send started it.
pub(crate) struct Task {
    pub(crate) node: u32,
    pub(crate) payload: Option<Box<dyn Any + Send + Sync>>,
    /// Answers to the task's interrupts by call number, when it resumes after a pause.
    pub(crate) answers: Option<Arc<BTreeMap<u32, serde_json::Value>>>,
    /// Results of calls an earlier run of the task finished (durable tool calls), by slot.
    pub(crate) results: Option<Arc<BTreeMap<u32, (String, serde_json::Value)>>>,
}

impl Task {
    pub(crate) fn pull(node: u32) -> Self {
        Self { node, payload: None, answers: None, results: None }
    }

    pub(crate) fn send(node: u32, payload: Box<dyn Any + Send + Sync>) -> Self {
        Self { node, payload: Some(payload), answers: None, results: None }
    }
}

/// Why a task produced no output.
pub(crate) enum Stop {
    Failed(GraphError),
    Paused(Interrupt),
}

/// A step that failed: the task that failed first, and why.
pub(crate) struct StepFailure {
    pub(crate) task: usize,
    pub(crate) error: GraphError,
}

/// How a step's tasks ended: the interrupts raised, by task index (empty when all finished).
pub(crate) type StepResult = Result<Vec<(u32, Interrupt)>, StepFailure>;
