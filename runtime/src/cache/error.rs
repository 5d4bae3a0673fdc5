//! Errors of a cache.

use crate::error::BoxError;

/// A cache call that failed, naming what failed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum CacheError {
    /// The cache's backend refused or failed an operation.
    #[error("the cache could not {operation}: {source}")]
    Backend {
        /// What was being done, e.g. "read entry `k` of namespace `graph:node`".
        operation: String,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
}

impl CacheError {
    /// A backend failure while doing `operation`.
    pub fn backend(operation: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Backend { operation: operation.into(), source: source.into() }
    }
}
