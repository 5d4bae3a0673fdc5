//! The values a store is handed and hands back: an item, a search, a put, and the separator
//! that keeps a namespace as one string.

use super::filter::Filter;
use super::index::Indexing;
use serde_json::Value;
use std::time::Duration;
use std::time::SystemTime;
/// The character that joins namespace labels in storage; labels and keys may not contain it.
pub const SEPARATOR: char = '\u{1f}';

/// A stored item, as `get` and `search` return it.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct Item {
    /// The namespace it lives under.
    pub namespace: Vec<String>,
    /// Its key within the namespace.
    pub key: String,
    /// The stored value.
    pub value: Value,
    /// When the key was first put (kept by later puts, unless the item had expired).
    pub created_at: SystemTime,
    /// When the value was last put.
    pub updated_at: SystemTime,
    /// When it expires, for an item put with a time to live; refreshed by reads when the store
    /// refreshes on read.
    pub expires_at: Option<SystemTime>,
    /// How close it is in meaning to a search's [`query`](SearchQuery::query): the cosine
    /// similarity of the query and the item's best-matching text, from -1 to 1. `None` outside
    /// such a search, and for an item stored without vectors.
    pub score: Option<f64>,
}

/// Which items under a prefix [`Store::search`](super::Store::search) returns.
///
/// Results come in (namespace, key) order: namespaces compared label by label as strings, then
/// keys. With a [`query`](Self::query), they come best match first instead (items stored
/// without vectors last, in key order), each with its [`score`](Item::score). `offset` items
/// are skipped and at most `limit` returned, after filtering; there is no limit unless one is
/// set (LangGraph's default is 10).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SearchQuery {
    /// Text to rank items by closeness in meaning, through the store's [`IndexConfig`](super::IndexConfig); a
    /// store without one refuses it ([`StoreError::NoIndex`](super::StoreError::NoIndex)).
    pub query: Option<String>,
    /// Conditions on the value's top-level fields, all of which must hold.
    pub filter: Filter,
    /// At most this many items; `None` for all.
    pub limit: Option<usize>,
    /// Skip this many matching items first.
    pub offset: usize,
}

impl SearchQuery {
    /// Every item, in order.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Ranks the items by how close they are in meaning to `query` (the store needs an
    /// [`IndexConfig`](super::IndexConfig)).
    #[must_use]
    pub fn query(mut self, query: impl Into<String>) -> Self {
        self.query = Some(query.into());
        self
    }

    /// Only the items whose value matches `filter`.
    #[must_use]
    pub fn filter(mut self, filter: Filter) -> Self {
        self.filter = filter;
        self
    }

    /// At most `limit` items.
    #[must_use]
    pub fn limit(mut self, limit: usize) -> Self {
        self.limit = Some(limit);
        self
    }

    /// Skips the first `offset` matching items.
    #[must_use]
    pub fn offset(mut self, offset: usize) -> Self {
        self.offset = offset;
        self
    }
}

/// One item of a [`Store::put_many`](super::Store::put_many): what [`Store::put_with`](super::Store::put_with) takes, owned.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct PutItem {
    /// The namespace's labels.
    pub namespace: Vec<String>,
    /// The key within the namespace.
    pub key: String,
    /// The value to store.
    pub value: Value,
    /// Its time to live, if it expires.
    pub ttl: Option<Duration>,
    /// What of it to embed.
    pub indexing: Indexing,
}

impl PutItem {
    /// `value` under `namespace` and `key`, without expiry, embedded as the index says.
    pub fn new<S: AsRef<str>>(namespace: &[S], key: impl Into<String>, value: Value) -> Self {
        Self {
            namespace: namespace.iter().map(|label| label.as_ref().to_owned()).collect(),
            key: key.into(),
            value,
            ttl: None,
            indexing: Indexing::AsConfigured,
        }
    }

    /// Expires `ttl` after the put.
    #[must_use]
    pub fn ttl(mut self, ttl: Duration) -> Self {
        self.ttl = Some(ttl);
        self
    }

    /// Expires `ttl` after the put, if given.
    #[must_use]
    pub fn with_ttl(mut self, ttl: Option<Duration>) -> Self {
        self.ttl = ttl;
        self
    }

    /// Embeds what `indexing` says.
    #[must_use]
    pub fn indexing(mut self, indexing: Indexing) -> Self {
        self.indexing = indexing;
        self
    }

    /// The namespace as the stores take it.
    #[must_use]
    pub fn labels(&self) -> Vec<&str> {
        self.namespace.iter().map(String::as_str).collect()
    }
}
