//! What a model call needs from the run it is made in: where deltas go, the run's usage and
//! budget, its deadline, its log (the last two through the model layer's own traits, in
//! `reporting.rs`).

use super::reporting::{CallLog, DeltaSink};
use super::{BudgetLimit, ModelError, Usage};
use crate::model::Budget;
use std::sync::Mutex;
use tokio::time::Instant;

/// Where a model call is made: a node's [`Runtime`](crate::Runtime) (pass `rt`), or
/// [`Runtime::detached`](crate::Runtime::detached) outside a graph.
///
/// Only the crate's runtime implements it; a call made through it streams into the run, counts
/// against the run's budget and deadline, and is logged with the run.
pub trait CallContext: Send + Sync + sealed::Sealed {
    /// The run's side of a call. Not a public API.
    #[doc(hidden)]
    fn model_scope(&self) -> Scope<'_>;
}

pub(crate) mod sealed {
    /// Keeps [`CallContext`](super::CallContext) to the crate's own runtime.
    pub trait Sealed {}
}

/// The run's side of a model call, borrowed from a node's runtime.
#[doc(hidden)]
pub struct Scope<'a> {
    pub(crate) meter: &'a Meter,
    pub(crate) writer: Option<&'a dyn DeltaSink>,
    pub(crate) node: &'a str,
    pub(crate) step: u64,
    pub(crate) run_id: u64,
    pub(crate) thread: Option<&'a str>,
    pub(crate) log: Option<&'a dyn CallLog>,
    /// What the call's span may carry beyond counts (prompts and completions).
    pub(crate) capture: Option<&'a crate::capture::CapturePolicy>,
    /// Where the run reports the call, if anywhere.
    pub(crate) metrics: Option<&'a dyn crate::metrics::RunMetrics>,
    /// Where the run's spans are recorded, when they are exported.
    pub(crate) trace: Option<&'a crate::telemetry::RunTrace>,
}

impl Scope<'_> {
    /// Whether the run streams `messages`, so a reply is worth streaming.
    pub(crate) fn streams_messages(&self) -> bool {
        self.writer.is_some_and(DeltaSink::streams_messages)
    }
}

/// A run's model spending: what it used, what it may use, and until when.
#[derive(Debug, Default)]
pub(crate) struct Meter {
    usage: Mutex<Usage>,
    budget: Option<Budget>,
    deadline: Option<Instant>,
    /// The limit a call passed, so the step fails as `BudgetExceeded` whatever the node made
    /// of the model's error.
    exceeded: Mutex<Option<BudgetLimit>>,
}

impl Meter {
    pub(crate) fn new(budget: Option<Budget>, deadline: Option<Instant>) -> Self {
        Self { budget, deadline, ..Self::default() }
    }

    /// What the run has used so far.
    pub(crate) fn usage(&self) -> Usage {
        *self.usage.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    pub(crate) fn deadline(&self) -> Option<Instant> {
        self.deadline
    }

    /// The limit a call of this run passed, if one did.
    pub(crate) fn exceeded(&self) -> Option<BudgetLimit> {
        *self.exceeded.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Refuses a call when a limit is already reached.
    pub(crate) fn admit(&self) -> Result<(), ModelError> {
        let Some(budget) = &self.budget else { return Ok(()) };
        match budget.reached(&self.usage()) {
            None => Ok(()),
            Some(limit) => Err(self.fail(limit)),
        }
    }

    /// Adds a call's usage; fails when the run is now over a limit.
    pub(crate) fn charge(&self, usage: Usage) -> Result<(), ModelError> {
        let total = {
            let mut spent = self.usage.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            *spent += usage;
            *spent
        };
        match self.budget.as_ref().and_then(|b| b.passed(&total)) {
            None => Ok(()),
            Some(limit) => Err(self.fail(limit)),
        }
    }

    fn fail(&self, limit: BudgetLimit) -> ModelError {
        self.exceeded.lock().unwrap_or_else(std::sync::PoisonError::into_inner).get_or_insert(limit);
        ModelError::BudgetExceeded(limit)
    }
}
