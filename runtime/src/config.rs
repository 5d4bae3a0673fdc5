//! Per-run settings.

use std::sync::Arc;
use std::time::Duration;

/// Settings of one run: the thread, the typed context, and limits.
///
/// ```
/// use graphwright::RunConfig;
/// use std::time::Duration;
///
/// struct Ctx {
///     user_id: String,
/// }
/// let cfg = RunConfig::thread("ticket-42")
///     .context(Ctx { user_id: "u1".into() })
///     .recursion_limit(50)
///     .deadline(Duration::from_secs(30));
/// assert_eq!(cfg.thread_id(), Some("ticket-42"));
/// ```
pub struct RunConfig<C = ()> {
    pub(crate) durability: Durability,
    pub(crate) thread_id: Option<Arc<str>>,
    pub(crate) checkpoint_id: Option<Arc<str>>,
    pub(crate) context: Option<Arc<C>>,
    pub(crate) recursion_limit: Option<u64>,
    pub(crate) deadline: Option<Duration>,
    pub(crate) log: Option<crate::log::RunLog>,
    pub(crate) budget: Option<crate::model::Budget>,
}

impl<C> Default for RunConfig<C> {
    fn default() -> Self {
        Self {
            durability: Durability::default(),
            thread_id: None,
            checkpoint_id: None,
            context: None,
            recursion_limit: None,
            deadline: None,
            log: None,
            budget: None,
        }
    }
}

impl<C> Clone for RunConfig<C> {
    fn clone(&self) -> Self {
        Self {
            durability: self.durability,
            thread_id: self.thread_id.clone(),
            checkpoint_id: self.checkpoint_id.clone(),
            context: self.context.clone(),
            recursion_limit: self.recursion_limit,
            deadline: self.deadline,
            log: self.log.clone(),
            budget: self.budget,
        }
    }
}

impl<C> std::fmt::Debug for RunConfig<C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunConfig")
            .field("thread_id", &self.thread_id)
            .field("checkpoint_id", &self.checkpoint_id)
            .field("context", &self.context.as_ref().map(|_| std::any::type_name::<C>()))
            .field("recursion_limit", &self.recursion_limit)
            .field("deadline", &self.deadline)
            .field("budget", &self.budget)
            .field("durability", &self.durability)
            .field("log", &self.log.as_ref().map(|log| &log.policy))
            .finish()
    }
}

impl<C> RunConfig<C> {
    /// A run on thread `id`: with a checkpointer, its state persists under that id.
    pub fn thread(id: impl Into<Arc<str>>) -> Self {
        Self { thread_id: Some(id.into()), ..Self::default() }
    }

    /// The run's typed context, reachable from nodes through [`Runtime::context`](crate::Runtime::context).
    #[must_use]
    pub fn context(mut self, context: C) -> Self {
        self.context = Some(Arc::new(context));
        self
    }

    /// The same, from a context already shared elsewhere.
    #[must_use]
    pub fn shared_context(mut self, context: Arc<C>) -> Self {
        self.context = Some(context);
        self
    }

    /// Bounds the super-steps of this run, overriding the graph's limit.
    #[must_use]
    pub fn recursion_limit(mut self, limit: u64) -> Self {
        self.recursion_limit = Some(limit);
        self
    }

    /// Cancels the run once `after` has passed: in-flight nodes are dropped at once and the
    /// run fails with [`GraphError::DeadlineExceeded`](crate::GraphError::DeadlineExceeded).
    /// Needs a tokio runtime with its timer enabled.
    #[must_use]
    pub fn deadline(mut self, after: Duration) -> Self {
        self.deadline = Some(after);
        self
    }

    /// Limits what the run's model calls may spend (tokens, cost, calls); a call that starts
    /// with a limit reached, or whose reply passes one, fails its step with
    /// [`GraphError::BudgetExceeded`](crate::GraphError::BudgetExceeded).
    #[must_use]
    pub fn budget(mut self, budget: crate::model::Budget) -> Self {
        self.budget = Some(budget);
        self
    }

    /// When the run's checkpoints are written (only runs with a thread write any).
    #[must_use]
    pub fn durability(mut self, durability: Durability) -> Self {
        self.durability = durability;
        self
    }

    /// Points `resume` and `update_state` at an older checkpoint of the thread: the run (or
    /// the update) starts a new branch from there, and the old branch is left as it was.
    #[must_use]
    pub fn checkpoint(mut self, id: impl Into<Arc<str>>) -> Self {
        self.checkpoint_id = Some(id.into());
        self
    }

    /// Records the run in `log`: which nodes ran, and their inputs, outputs and state as
    /// `policy` allows, with secret-looking keys redacted (see [`crate::log`]).
    #[must_use]
    pub fn log(mut self, log: Arc<dyn crate::log::EventLog>, policy: crate::log::CapturePolicy) -> Self {
        self.log = Some(crate::log::RunLog { log, policy: Arc::new(policy) });
        self
    }

    /// The thread id, if the run has one.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }
}

/// When a run on a thread writes its checkpoints, as in LangGraph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// Each step's checkpoint is stored before the next step starts.
    Sync,
    /// Each step's checkpoint is stored in the background while the next steps run, several
    /// steps to a commit; the run returns only once everything is stored. At most
    /// [`MAX_STEPS_AHEAD`](crate::MAX_STEPS_AHEAD) (64) checkpoints wait for the store at any
    /// time: a slow store slows the run instead of letting it race ahead, and a crash loses at
    /// most that many steps. The default, as in LangGraph.
    #[default]
    Async,
    /// Only the final checkpoint is stored, when the run ends (also on an error). A crash loses
    /// the whole run.
    Exit,
}
