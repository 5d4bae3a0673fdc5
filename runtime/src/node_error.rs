//! Why a node failed: the error a node returns, and the timeout and panic it can fail with.
//! A leaf: every layer that runs node code takes these without reaching the run's own errors.

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
