//! Errors of building and running a graph.

use std::error::Error as StdError;
use std::fmt;
use std::time::Duration;

pub use crate::boxed_error::BoxError;

/// Why a node did not produce an update.
///
/// Any error type converts into it with `?`, so a node can return
/// `Result<StateUpdate, NodeError>` and use `?` on its own calls:
///
/// ```
/// use graphwright::NodeError;
///
/// fn parse(text: &str) -> Result<u32, NodeError> {
///     Ok(text.trim().parse::<u32>()?)
/// }
/// assert!(parse("12").is_ok());
/// assert_eq!(parse("x").unwrap_err().to_string(), "invalid digit found in string");
/// ```
pub struct NodeError {
    pub(crate) kind: NodeErrorKind,
}

pub(crate) enum NodeErrorKind {
    /// The node's own code failed.
    Failed(BoxError),
    /// An attempt ran past the node's timeout.
    Timeout(Duration),
    /// The node panicked; the message is the panic's payload when it was a string.
    Panicked(String),
    /// The node paused with `Runtime::interrupt`; not a failure.
    Interrupted(crate::interrupt::Interrupt),
}

impl NodeError {
    /// A node error carrying a plain message.
    pub fn msg(message: impl fmt::Display) -> Self {
        Self::from(message.to_string())
    }

    /// The node's own error, if the node failed on its own (not by timing out).
    #[must_use]
    pub fn source_error(&self) -> Option<&(dyn StdError + Send + Sync + 'static)> {
        match &self.kind {
            NodeErrorKind::Failed(error) => Some(error.as_ref()),
            NodeErrorKind::Timeout(_) | NodeErrorKind::Panicked(_) | NodeErrorKind::Interrupted(_) => None,
        }
    }

    /// Whether the node ran past its timeout.
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        matches!(self.kind, NodeErrorKind::Timeout(_))
    }

    /// Whether the node panicked (the run turned the panic into this error).
    #[must_use]
    pub fn is_panic(&self) -> bool {
        matches!(self.kind, NodeErrorKind::Panicked(_))
    }

    pub(crate) fn timeout(limit: Duration) -> Self {
        Self { kind: NodeErrorKind::Timeout(limit) }
    }

    pub(crate) fn panicked(payload: &(dyn std::any::Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| (*s).to_owned())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_owned());
        Self { kind: NodeErrorKind::Panicked(message) }
    }

    pub(crate) fn into_box(self) -> BoxError {
        match self.kind {
            NodeErrorKind::Failed(error) => error,
            NodeErrorKind::Timeout(limit) => Box::new(TimeoutError(limit)),
            NodeErrorKind::Panicked(message) => Box::new(PanicError(message)),
            NodeErrorKind::Interrupted(interrupt) => {
                format!("node `{}` paused with an interrupt ({})", interrupt.node, interrupt.id).into()
            }
        }
    }

    pub(crate) fn interrupted(interrupt: crate::interrupt::Interrupt) -> Self {
        Self { kind: NodeErrorKind::Interrupted(interrupt) }
    }

    /// The interrupt, when the node paused rather than failed, left in place.
    pub(crate) fn interrupt(&self) -> Option<&crate::interrupt::Interrupt> {
        match &self.kind {
            NodeErrorKind::Interrupted(interrupt) => Some(interrupt),
            _ => None,
        }
    }

    /// The interrupt, when the node paused rather than failed.
    pub(crate) fn take_interrupt(self) -> Result<crate::interrupt::Interrupt, Self> {
        match self.kind {
            NodeErrorKind::Interrupted(interrupt) => Ok(interrupt),
            kind => Err(Self { kind }),
        }
    }
}

impl<E> From<E> for NodeError
where
    E: Into<BoxError>,
{
    fn from(error: E) -> Self {
        Self { kind: NodeErrorKind::Failed(error.into()) }
    }
}

impl fmt::Debug for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            NodeErrorKind::Failed(error) => fmt::Debug::fmt(error, f),
            NodeErrorKind::Timeout(limit) => write!(f, "Timeout({limit:?})"),
            NodeErrorKind::Panicked(message) => write!(f, "Panicked({message:?})"),
            NodeErrorKind::Interrupted(interrupt) => write!(f, "Interrupted({:?})", interrupt.id),
        }
    }
}

impl fmt::Display for NodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.kind {
            NodeErrorKind::Failed(error) => fmt::Display::fmt(error, f),
            NodeErrorKind::Timeout(limit) => fmt::Display::fmt(&TimeoutError(*limit), f),
            NodeErrorKind::Panicked(message) => write!(f, "the node panicked: {message}"),
            NodeErrorKind::Interrupted(interrupt) => write!(f, "the node paused with interrupt {}", interrupt.id),
        }
    }
}

/// A node attempt that ran past its timeout (`NodePolicy::timeout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("the node ran past its timeout of {0:?}")]
pub struct TimeoutError(pub Duration);

/// A node that panicked; the run caught the panic and failed the node with this error.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the node panicked: {0}")]
pub struct PanicError(pub String);

/// A run that did not finish.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GraphError {
    /// A node returned an error (after its retries, if it has a retry policy).
    #[error("node `{node}` failed in step {step} (attempt {attempts}): {source}")]
    Node {
        /// The node's name.
        node: String,
        /// The super-step it ran in (1 is the first).
        step: u64,
        /// How many attempts were made.
        attempts: u32,
        /// What the node failed with.
        #[source]
        source: BoxError,
    },
    /// Two nodes wrote a last-value field in the same super-step; nothing of that step was applied.
    #[error(
        "field `{field}` received a value from both `{first}` and `{second}` in step {step}: \
         a field without a reducer takes one write per step; give it a reducer \
         (for example `#[reducer(append)]`) or let only one of them write it"
    )]
    InvalidUpdate {
        /// The field written twice.
        field: &'static str,
        /// The first node (in merge order) that wrote it.
        first: String,
        /// The second node that wrote it.
        second: String,
        /// The super-step.
        step: u64,
    },
    /// The run needed more super-steps than its recursion limit allows.
    #[error(
        "the run reached its recursion limit of {limit} super-steps without finishing: \
         look for a loop that never reaches END, or raise the limit with `.recursion_limit(n)`"
    )]
    RecursionLimit {
        /// The limit that was reached.
        limit: u64,
    },
    /// A model call of the node would have taken the run past its
    /// [`Budget`](crate::model::Budget); nothing of that step was applied.
    #[error("node `{node}` stopped in step {step}: {limit}")]
    BudgetExceeded {
        /// The node whose model call passed the budget.
        node: String,
        /// The super-step.
        step: u64,
        /// The limit, and what was spent.
        limit: crate::model::BudgetLimit,
    },
    /// The run was stopped by its deadline.
    #[error("the run was cancelled after {after:?} by the deadline set with `RunConfig::deadline`")]
    DeadlineExceeded {
        /// The deadline that passed.
        after: Duration,
    },
    /// The graph needs a context and the run config has none.
    #[error("graph `{graph}` needs a context of type `{context}`: pass one with `RunConfig::context(..)`")]
    MissingContext {
        /// The graph's name.
        graph: String,
        /// The context type's name.
        context: &'static str,
    },
    /// Another run is in progress on the thread in this process.
    #[error("thread `{thread}` already has a run in progress: wait for it to finish, or use another thread id")]
    ThreadBusy {
        /// The thread.
        thread: String,
    },
    /// A node paused with an interrupt in a run that has no thread to keep the pause in.
    #[error(
        "node `{node}` paused with an interrupt, but the run has no thread to resume later: pass `RunConfig::thread(id)`"
    )]
    InterruptWithoutThread {
        /// The node.
        node: String,
    },
    /// A resume answer did not match the pending interrupts.
    #[error("thread `{thread}`: {reason}; pending interrupts: {}", if pending.is_empty() { "none".to_owned() } else { pending.join(", ") })]
    Resume {
        /// The thread.
        thread: String,
        /// What did not match.
        reason: String,
        /// The ids of the pending interrupts.
        pending: Vec<String>,
    },
    /// `update_state` could not act as asked.
    #[error("thread `{thread}`: the state was not updated: {reason}")]
    UpdateState {
        /// The thread.
        thread: String,
        /// What was wrong.
        reason: String,
    },
    /// A thread operation was called with a config that names no thread.
    #[error("graph `{graph}`: this needs a thread; pass one with `RunConfig::thread(id)`")]
    NoThread {
        /// The graph's name.
        graph: String,
    },
    /// `resume` found no pending tasks on the thread.
    #[error("thread `{thread}` has nothing to resume: {reason}; start a run with `invoke`")]
    NothingToResume {
        /// The thread.
        thread: String,
        /// Why there is nothing to resume.
        reason: &'static str,
    },
    /// A value of the run cannot be stored in a checkpoint (nested too deeply, say); the step
    /// that produced it failed, and nothing of the value was stored.
    #[error(
        "{what} cannot be stored in a checkpoint{}: {reason}; the step failed and stored nothing of it",
        if field.is_empty() { String::new() } else { format!(" (at `{field}`)") }
    )]
    Unstorable {
        /// What held the value ("the update of node `x`", "the state", "the run's input"...).
        what: String,
        /// Where in it the value sits (`messages[3].content`), or empty.
        field: String,
        /// Why it cannot be stored.
        reason: String,
    },
    /// A command's `goto` names a node that cannot be run that way.
    #[error("`goto` names `{node}` in graph `{graph}`: {reason}")]
    Goto {
        /// The graph.
        graph: String,
        /// The name given.
        node: String,
        /// What is wrong.
        reason: String,
    },
    /// A run's breakpoint (`RunConfig::interrupt_before`/`interrupt_after`) names a node the
    /// graph does not have.
    #[error(
        "a breakpoint names `{node}`, which graph `{graph}` does not have; its nodes are: {known} (or \"*\" for all)"
    )]
    Breakpoint {
        /// The graph.
        graph: String,
        /// The name given.
        node: String,
        /// The graph's nodes, comma-separated.
        known: String,
    },
    /// The checkpoint store failed or held unreadable data.
    #[error(transparent)]
    Checkpoint(#[from] crate::checkpoint::CheckpointError),
    /// The graph's cache failed (when it was cleared; a failure while a run reads or writes it
    /// is logged and the node runs).
    #[error(transparent)]
    Cache(#[from] crate::cache::CacheError),
    /// [`clear_cache`](crate::CompiledGraph::clear_cache) was asked for something the graph
    /// does not have.
    #[error("graph `{graph}`: the cache was not cleared: {reason}")]
    ClearCache {
        /// The graph.
        graph: String,
        /// What was wrong, and what to do.
        reason: String,
    },
    /// An entrypoint could not take its input or give its value (see
    /// [`functional`](crate::functional)).
    #[error("entrypoint `{entrypoint}`: {reason}")]
    Entrypoint {
        /// The entrypoint.
        entrypoint: String,
        /// What was wrong, and what to do.
        reason: String,
    },
    /// A Send payload did not have the type its target node takes.
    #[error("node `{node}` received a Send payload of the wrong type; it takes `{expected}`")]
    PayloadType {
        /// The target node.
        node: String,
        /// The payload type the node takes.
        expected: &'static str,
    },
}

/// A graph whose wiring is wrong; returned by [`StateGraph::compile`](crate::StateGraph::compile).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum BuildError {
    /// The wiring breaks one or more rules (the same rules the `#[graph]` macro checks).
    #[error("graph `{graph}` is miswired:\n{}", problems.iter().map(|p| format!("  - {p}")).collect::<Vec<_>>().join("\n"))]
    Wiring {
        /// The graph's name.
        graph: String,
        /// Every rule that is broken.
        problems: Vec<graphwright_wiring::Problem>,
    },
    /// A builder call referred to something that does not fit.
    #[error("graph `{graph}`: {message}")]
    Invalid {
        /// The graph's name.
        graph: String,
        /// What is wrong and what to do.
        message: String,
    },
}
