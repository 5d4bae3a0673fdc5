//! The boxed error type every layer fails with, kept in a file of its own so the error types
//! of the lower modules (checkpoints, caches) can name it without depending on the graph's
//! errors, which in turn wrap theirs.

/// The boxed error a node failed with.
pub type BoxError = Box<dyn std::error::Error + Send + Sync + 'static>;
