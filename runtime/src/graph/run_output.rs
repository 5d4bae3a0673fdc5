//! What a run returns: its state and how it ended.

use crate::interrupt::Interrupt;
use crate::model::Usage;
use std::sync::Arc;

/// How a run ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum RunStatus {
    /// No task was left: the graph reached its end.
    Finished,
    /// It paused for interrupts (or at a breakpoint); [`resume`](crate::CompiledGraph::resume)
    /// continues it.
    Interrupted,
    /// A step failed; the thread keeps the failure (see
    /// [`PendingTask::error`](crate::PendingTask::error)), and `resume` runs the failed task
    /// again.
    Failed,
}

/// Why a run failed: where, and the error as the thread keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct RunFailure {
    /// The super-step that failed.
    pub step: u64,
    /// The node whose task failed, when one task did (not for the recursion limit).
    pub node: Option<String>,
    /// That task's position in the step.
    pub task: Option<u32>,
    /// The error, as text.
    pub message: String,
}

/// What a run returns: the state it left and how it ended, with what a caller needs to
/// continue it (thread, checkpoint, interrupts).
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RunOutput<S> {
    /// The final state; the state at the pause when the run was interrupted; the state before
    /// the failed step when it failed.
    pub state: S,
    /// How many super-steps ran.
    pub steps: u64,
    /// Why the run paused; empty when it finished or failed.
    pub interrupts: Vec<Interrupt>,
    /// What the run's model calls used.
    pub usage: Usage,
    /// The thread it ran on, if any.
    pub thread_id: Option<String>,
    /// The thread's checkpoint the run ended at (what `resume` continues from), if it ran on a
    /// thread.
    pub checkpoint_id: Option<String>,
    /// Why it failed, when it did (only [`CompiledGraph::run`](crate::CompiledGraph::run)
    /// returns failed runs; `invoke` returns their error).
    pub failure: Option<RunFailure>,
}

impl<S> RunOutput<S> {
    /// How the run ended.
    pub fn status(&self) -> RunStatus {
        match (&self.failure, self.interrupts.is_empty()) {
            (Some(_), _) => RunStatus::Failed,
            (None, false) => RunStatus::Interrupted,
            (None, true) => RunStatus::Finished,
        }
    }

    /// What the run's model calls used: tokens, cost (when prices are set) and calls.
    pub fn usage(&self) -> &Usage {
        &self.usage
    }

    /// Whether the run paused for an interrupt instead of finishing.
    pub fn is_interrupted(&self) -> bool {
        self.status() == RunStatus::Interrupted
    }

    pub(crate) fn new(state: S, steps: u64, interrupts: Vec<Interrupt>) -> Self {
        Self { state, steps, interrupts, usage: Usage::default(), thread_id: None, checkpoint_id: None, failure: None }
    }

    /// Notes the checkpoint the run ended at.
    pub(crate) fn at(mut self, checkpoint: Option<&Arc<str>>) -> Self {
        self.checkpoint_id = checkpoint.map(ToString::to_string);
        self
    }
}

/// Why a run stopped short of an output: a step that failed (with what the run leaves), or an
/// error that left nothing to report (bad configuration, storage).
pub(crate) enum Halt<S> {
    Failed(Box<(RunOutput<S>, crate::GraphError)>),
    Error(crate::GraphError),
}

impl<S> Halt<S> {
    pub(crate) fn into_error(self) -> crate::GraphError {
        match self {
            Halt::Failed(failed) => failed.1,
            Halt::Error(error) => error,
        }
    }
}

/// Lets `fill` complete the output a run leaves, whether it finished, paused or failed.
pub(crate) fn complete<S>(
    mut result: Result<RunOutput<S>, Halt<S>>,
    fill: impl FnOnce(&mut RunOutput<S>),
) -> Result<RunOutput<S>, Halt<S>> {
    match &mut result {
        Ok(out) => fill(out),
        Err(Halt::Failed(failed)) => fill(&mut failed.0),
        Err(Halt::Error(_)) => {}
    }
    result
}

impl<S> From<crate::GraphError> for Halt<S> {
    fn from(error: crate::GraphError) -> Self {
        Halt::Error(error)
    }
}
