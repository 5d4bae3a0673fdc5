//! Errors of the long-term memory store.

use crate::error::BoxError;

/// A store call that failed, naming what failed and what to do.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    /// The graph was compiled without a store, and a node asked for it.
    #[error(
        "this graph has no store: give it one with `.store(InMemoryStore::new())` or \
         `.store(SqliteStore::open(path)?)` on the builder before `compile()`"
    )]
    NoStore,
    /// A namespace (or search prefix) that the store cannot hold.
    #[error("invalid store namespace {namespace:?}: {reason}")]
    InvalidNamespace {
        /// The labels as given.
        namespace: Vec<String>,
        /// What is wrong, and how to fix it.
        reason: String,
    },
    /// A key that the store cannot hold.
    #[error("invalid store key {key:?}: {reason}")]
    InvalidKey {
        /// The key as given.
        key: String,
        /// What is wrong, and how to fix it.
        reason: String,
    },
    /// A search or listing that asks for something meaningless.
    #[error("invalid store query: {reason}")]
    InvalidQuery {
        /// What is wrong, and how to fix it.
        reason: String,
    },
    /// A search by meaning (a [`query`](super::SearchQuery::query)), or a put naming fields to
    /// embed, on a store that has no index.
    #[error(
        "the store cannot {operation}: it has no index for search by meaning; give it one with \
         `StoreOptions::new().index(IndexConfig::new(embeddings, dims))` when opening it, or search \
         with a filter instead"
    )]
    NoIndex {
        /// What was asked.
        operation: String,
    },
    /// An index that cannot work as configured: a malformed field path, or a model whose
    /// vectors are not of the configured size.
    #[error("the store's index is unusable: {reason}")]
    InvalidIndex {
        /// What is wrong, and how to fix it.
        reason: String,
    },
    /// The embeddings model failed on what the index had to embed; nothing was stored.
    #[error("the store could not embed {what}, so nothing was written or searched: {source}")]
    Embedding {
        /// What was being embedded (an item's value, a search query).
        what: String,
        /// The model's error (retried already under its retry policy).
        #[source]
        source: crate::model::ModelError,
    },
    /// A stored item did not decode.
    #[error(
        "stored item {key:?} in namespace {namespace:?} is unreadable at `{field}`: {reason}; {}",
        crate::encryption::unread_because(.reason)
    )]
    Corrupt {
        /// The namespace as stored (labels joined by U+001F), or a placeholder if unreadable.
        namespace: String,
        /// The key, or a placeholder if unreadable.
        key: String,
        /// The column or field that failed (`value`, `expires_at_ms`, ...).
        field: String,
        /// What was wrong.
        reason: String,
    },
    /// The store itself failed (I/O, SQL, a poisoned lock).
    #[error("the store failed while it {operation}: {source}")]
    Backend {
        /// What the store was doing (putting a key, sweeping expired items...).
        operation: String,
        /// The backend's error.
        #[source]
        source: BoxError,
    },
}

impl StoreError {
    /// A backend failure during `operation`.
    pub fn backend(operation: impl Into<String>, source: impl Into<BoxError>) -> Self {
        Self::Backend { operation: operation.into(), source: source.into() }
    }
}
