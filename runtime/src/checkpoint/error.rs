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
    /// A stored record did not decode.
    #[error(
        "checkpoint {checkpoint} of thread `{thread}` is unreadable at `{field}`: {reason}; \
         the stored data is damaged or was written by an incompatible version, and was not used"
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
