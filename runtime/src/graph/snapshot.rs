//! What a thread's state looks like from outside: its snapshot at a checkpoint, the pending
//! tasks of its next step, and the state of the subgraphs they run.

use crate::checkpoint::Source;
use crate::interrupt::Interrupt;
use crate::state::State;
use std::fmt;

/// A thread's state at one checkpoint.
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct StateSnapshot<S: State> {
    /// The state. For the thread's current checkpoint, the outputs of tasks that already
    /// finished in the pending step are applied (as LangGraph shows it).
    pub state: S,
    /// The nodes that run next: on the current checkpoint, those that have not finished; [`START`](crate::START)
    /// on an input checkpoint (its input is not yet applied); empty when the run finished.
    pub next: Vec<String>,
    /// Every task of the checkpoint's next step, with how far it got.
    pub tasks: Vec<PendingTask<S::Update>>,
    /// The checkpoint's id.
    pub checkpoint_id: String,
    /// The checkpoint it follows.
    pub parent_id: Option<String>,
    /// The super-step it was taken after (-1 for a run's input).
    pub step: i64,
    /// Why it was written.
    pub source: Source,
    /// When, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// The interrupts waiting for an answer at this checkpoint.
    pub interrupts: Vec<Interrupt>,
}

impl<S: State + PartialEq> PartialEq for StateSnapshot<S>
where
    S::Update: PartialEq,
{
    fn eq(&self, other: &Self) -> bool {
        self.state == other.state
            && self.next == other.next
            && self.tasks == other.tasks
            && self.checkpoint_id == other.checkpoint_id
            && self.parent_id == other.parent_id
            && self.step == other.step
            && self.source == other.source
            && self.created_at_ms == other.created_at_ms
            && self.interrupts == other.interrupts
    }
}

/// A task of a checkpoint's next step, as a [`StateSnapshot`] shows it.
#[derive(Clone, PartialEq)]
#[non_exhaustive]
pub struct PendingTask<U> {
    /// The node it runs ([`START`](crate::START) for a run's input).
    pub node: String,
    /// Its position in the step.
    pub index: u32,
    /// What it wrote, if it finished.
    pub result: Option<U>,
    /// Why it failed, if its last attempt failed.
    pub error: Option<String>,
    /// Its interrupts still waiting for an answer.
    pub interrupts: Vec<Interrupt>,
    /// For a task of a subgraph node that has checkpoints, the subgraph's state; filled by
    /// [`CompiledGraph::get_state_with_subgraphs`](crate::CompiledGraph::get_state_with_subgraphs) only.
    pub subgraph: Option<Box<SubgraphSnapshot>>,
}

impl<U: fmt::Debug> fmt::Debug for PendingTask<U> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PendingTask")
            .field("node", &self.node)
            .field("index", &self.index)
            .field("result", &self.result)
            .field("error", &self.error)
            .field("interrupts", &self.interrupts)
            .field("subgraph", &self.subgraph)
            .finish()
    }
}

/// A subgraph's state as [`CompiledGraph::get_state_with_subgraphs`](crate::CompiledGraph::get_state_with_subgraphs) shows it, inside the
/// [`PendingTask`](crate::PendingTask) that runs it. Its state and updates are JSON: their types
/// are the subgraph's.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct SubgraphSnapshot {
    /// Where it sits: one `node:checkpoint:task` segment per level, outermost first (as
    /// [`Event::namespace`](crate::Event::namespace) names it).
    pub namespace: Vec<String>,
    /// The subgraph's state.
    pub state: serde_json::Value,
    /// Its nodes that run next.
    pub next: Vec<String>,
    /// Its tasks, each with the subgraph it runs in turn, if any.
    pub tasks: Vec<PendingTask<serde_json::Value>>,
    /// Its checkpoint.
    pub checkpoint_id: String,
    /// The interrupts waiting inside it.
    pub interrupts: Vec<Interrupt>,
}
