//! The run queue as storage reports it, apart from the other records so that `/metrics` can read
//! it without depending on how runs are written.

/// A run that has not ended, as the queue's figures count it.
pub(crate) struct OpenRun {
    pub(crate) thread_id: String,
    pub(crate) running: bool,
    /// When it was created (RFC 3339).
    pub(crate) created_at: String,
}
