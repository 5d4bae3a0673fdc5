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
    pub(crate) capture: Option<Arc<crate::log::CapturePolicy>>,
    pub(crate) budget: Option<crate::model::Budget>,
    pub(crate) breakpoints: Option<Arc<Breakpoints>>,
    pub(crate) user: Option<Arc<crate::AuthUser>>,
    pub(crate) metrics: Option<Arc<dyn crate::metrics::RunMetrics>>,
}

/// Breakpoints one run adds to the graph's own, by node name (`"*"` for every node).
#[derive(Clone, Debug, Default)]
pub(crate) struct Breakpoints {
    before: Vec<String>,
    after: Vec<String>,
}

/// A run's breakpoints resolved against its graph: one flag per node index.
#[derive(Debug)]
pub(crate) struct NodeBreakpoints {
    pub(crate) before: Vec<bool>,
    pub(crate) after: Vec<bool>,
}

impl Breakpoints {
    /// The flags for a graph named `graph` whose node indices `index` gives, or an error
    /// naming the first node the graph does not have.
    pub(crate) fn resolve(
        &self,
        graph: &str,
        index: &std::collections::HashMap<Arc<str>, u32>,
    ) -> Result<NodeBreakpoints, crate::GraphError> {
        let flags = |names: &[String]| {
            let mut set = vec![false; index.len()];
            for name in names {
                if name == "*" {
                    set.fill(true);
                    continue;
                }
                let Some(&node) = index.get(name.as_str()) else {
                    let mut known: Vec<&str> = index.keys().map(|k| &**k).collect();
                    known.sort_unstable();
                    return Err(crate::GraphError::Breakpoint {
                        graph: graph.to_owned(),
                        node: name.clone(),
                        known: known.join(", "),
                    });
                };
                set[node as usize] = true;
            }
            Ok(set)
        };
        Ok(NodeBreakpoints { before: flags(&self.before)?, after: flags(&self.after)? })
    }
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
            capture: None,
            budget: None,
            breakpoints: None,
            user: None,
            metrics: None,
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
            capture: self.capture.clone(),
            budget: self.budget,
            breakpoints: self.breakpoints.clone(),
            user: self.user.clone(),
            metrics: self.metrics.clone(),
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
            .field("capture", &self.capture)
            .field("breakpoints", &self.breakpoints)
            .field("user", &self.user.as_ref().map(|u| &u.identity))
            .field("metrics", &self.metrics.is_some())
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

    /// Pauses this run before the named nodes run (`"*"`: before every node), as the graph's
    /// own [`interrupt_before`](crate::StateGraph::interrupt_before) does, without changing the
    /// graph; [`resume`](crate::CompiledGraph::resume) goes on from there. A name the graph
    /// does not have fails the run with [`GraphError::Breakpoint`](crate::GraphError::Breakpoint).
    /// Breakpoints apply to this graph's nodes, not to those of its subgraphs.
    #[must_use]
    pub fn interrupt_before<N: AsRef<str>>(mut self, nodes: impl IntoIterator<Item = N>) -> Self {
        let set = Arc::make_mut(self.breakpoints.get_or_insert_with(Arc::default));
        set.before.extend(nodes.into_iter().map(|n| n.as_ref().to_owned()));
        self
    }

    /// Pauses this run after the named nodes have run and their step is stored (`"*"`: after
    /// every step), as the graph's own [`interrupt_after`](crate::StateGraph::interrupt_after)
    /// does.
    #[must_use]
    pub fn interrupt_after<N: AsRef<str>>(mut self, nodes: impl IntoIterator<Item = N>) -> Self {
        let set = Arc::make_mut(self.breakpoints.get_or_insert_with(Arc::default));
        set.after.extend(nodes.into_iter().map(|n| n.as_ref().to_owned()));
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
    /// `policy` allows, with secret-looking keys redacted (see [`crate::log`]). The same `policy`
    /// also says what the run's tracing spans carry, unless [`capture`](Self::capture) gives
    /// them one of their own.
    #[must_use]
    pub fn log(mut self, log: Arc<dyn crate::log::EventLog>, policy: crate::log::CapturePolicy) -> Self {
        self.log = Some(crate::log::RunLog { log, policy: Arc::new(policy) });
        self
    }

    /// What the run's tracing spans (and so an OpenTelemetry exporter) may carry beyond names,
    /// timings, token counts and errors: with [`CapturePolicy::messages`](crate::log::CapturePolicy::messages)
    /// the prompts and completions of model calls and the arguments and results of tool calls,
    /// redacted as the event log is. Off by default: text leaves the process only when asked.
    #[must_use]
    pub fn capture(mut self, policy: crate::log::CapturePolicy) -> Self {
        self.capture = Some(Arc::new(policy));
        self
    }

    /// Who starts the run, reachable from its nodes (and its subgraphs' nodes) through
    /// [`Runtime::user`](crate::Runtime::user). The server sets it to the authenticated caller.
    #[must_use]
    pub fn user(mut self, user: impl Into<Arc<crate::AuthUser>>) -> Self {
        self.user = Some(user.into());
        self
    }

    /// Reports the run's start and end, its model calls and its tool calls (its subgraphs'
    /// included) to `metrics` (see [`crate::metrics`]). With the `otel` feature, a run without
    /// metrics of its own reports to `otel::OtelMetrics` over OpenTelemetry's global meter.
    #[must_use]
    pub fn metrics(mut self, metrics: Arc<dyn crate::metrics::RunMetrics>) -> Self {
        self.metrics = Some(metrics);
        self
    }

    /// The thread id, if the run has one.
    pub fn thread_id(&self) -> Option<&str> {
        self.thread_id.as_deref()
    }

    /// Where the run reports its metrics: its own, or the default.
    pub(crate) fn run_metrics(&self) -> Option<Arc<dyn crate::metrics::RunMetrics>> {
        self.metrics.clone().or_else(default_metrics)
    }
}

/// The metrics of a run that was given none: with the `otel` feature, OpenTelemetry's global
/// meter's (shared by every run, made again only when the application installs another meter
/// provider); otherwise none.
#[allow(clippy::unnecessary_wraps)] // `None` without the `otel` feature
pub(crate) fn default_metrics() -> Option<Arc<dyn crate::metrics::RunMetrics>> {
    #[cfg(feature = "otel")]
    return Some(crate::otel::global_metrics());
    #[cfg(not(feature = "otel"))]
    None
}

/// When a run on a thread writes its checkpoints, as in LangGraph.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Durability {
    /// Each step's checkpoint is stored before the next step starts.
    Sync,
    /// Each step's checkpoint is stored in the background while the next steps run, several
    /// steps to a commit; the run returns only once everything is stored. At most
    /// [`MAX_STEPS_AHEAD`](crate::MAX_STEPS_AHEAD) (64) checkpoints wait for the store at any
    /// time, the run's and its subgraphs' together: a slow store slows the run instead of
    /// letting it race ahead, and a crash loses at most that many steps. The default, as in
    /// LangGraph.
    #[default]
    Async,
    /// Only the final checkpoint is stored, when the run ends (also on an error). A crash loses
    /// the whole run.
    Exit,
}
