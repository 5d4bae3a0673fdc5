//! Errors of storing and loading checkpoints.

use crate::error::BoxError;

/// A checkpoint that could not be stored or loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CheckpointError {
    /// Another run extended the thread first; this run's step was not stored.
    #[error(
        "thread `{thread}` moved on while this run held checkpoint {expected:?} (its head is now {found:?}): \
         another run is writing to it; wait for that run, or run on another thread"
    )]
    Conflict {
        /// The thread.
        thread: String,
        /// The head this run expected.
        expected: Option<String>,
        /// The head the store holds.
        found: Option<String>,
    },
    /// Another run holds the thread.
    #[error(
        "thread `{thread}` is held by another run{}: wait for it to finish, or use another thread id",
        holder.as_deref().map(|h| format!(" ({h})")).unwrap_or_default()
    )]
    Busy {
        /// The thread.
        thread: String,
        /// Who holds it, when the backend knows.
        holder: Option<String>,
    },
    /// This run's claim on the thread is no longer current: another run took the thread over.
    #[error(
        "thread `{thread}` was taken over by another run (claim {current} replaced this run's claim {fence}), \
         so this run's writes were refused; its work since its last stored checkpoint is lost"
    )]
    Fenced {
        /// The thread.
        thread: String,
        /// This run's fence.
        fence: u64,
        /// The thread's current fence.
        current: u64,
    },
    /// A stored record did not decode.
    #[error(
        "checkpoint {checkpoint} of thread `{thread}` is unreadable at `{field}`: {reason}; {}",
        crate::encryption::unread_because(.reason)
    )]
    Corrupt {
        /// The thread.
        thread: String,
        /// The checkpoint id.
        checkpoint: String,
        /// The field that failed (`state`, `next`, `writes[2].update`, `format`...).
        field: String,
        /// What was wrong.
        reason: String,
    },
    /// The store itself failed (I/O, connection, SQL).
    #[error("the checkpoint store failed while it {operation}: {source}")]
    Backend {
        /// What the store was doing ("stored a checkpoint", "listed thread `t`"...).
        operation: String,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
}

impl CheckpointError {
    /// A backend failure during `operation`.
    pub fn backend(operation: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Backend { operation: operation.into(), source: source.into() }
    }
}
