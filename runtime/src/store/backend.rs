//! The [`Store`] trait every backend implements.

use super::error::StoreError;
use super::index::Indexing;
use super::item::{Item, PutItem, SearchQuery};
use futures::future::BoxFuture;
use serde_json::Value;
use std::time::Duration;
/// Long-term memory shared by every thread of the graphs that hold it. Implementations must be
/// safe to share between runs and threads.
///
/// The methods return boxed futures so that the trait stays object-safe: graphs hold a store as
/// `Arc<dyn Store>`, and nodes reach it as `&dyn Store`.
pub trait Store: Send + Sync + 'static {
    /// Stores `value` under `namespace` and `key`, replacing what was there.
    ///
    /// With `ttl` the item expires that long after this put; without, it never expires (a put
    /// always sets the time to live anew). Replacing a live item keeps its `created_at`.
    fn put<'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
        value: Value,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>>;

    /// [`put`](Self::put), embedding what `indexing` says instead of what the store's index
    /// names (LangGraph's `index` argument): [`Indexing::Off`] to store an item without
    /// vectors, [`Indexing::Fields`] for other paths.
    ///
    /// The default serves stores without an index: it puts the item, and refuses
    /// [`Indexing::Fields`] with [`StoreError::NoIndex`].
    fn put_with<'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
        value: Value,
        ttl: Option<Duration>,
        indexing: Indexing,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        match indexing {
            Indexing::AsConfigured | Indexing::Off => self.put(namespace, key, value, ttl),
            Indexing::Fields(_) => Box::pin(async { Err(super::index::no_index("put an item with fields to embed")) }),
        }
    }

    /// Puts every one of `items`, as [`put_with`](Self::put_with) would one by one, with one
    /// call of the index's model for all their texts (which it sends in batches). The
    /// database stores write them in one transaction, so either every item is stored or none
    /// is; the default (for stores that do not override it) puts them one after the other.
    fn put_many(&self, items: Vec<PutItem>) -> BoxFuture<'_, Result<(), StoreError>> {
        Box::pin(async move {
            for item in items {
                let labels = item.labels();
                self.put_with(&labels, &item.key, item.value.clone(), item.ttl, item.indexing.clone()).await?;
            }
            Ok(())
        })
    }

    /// The item under `namespace` and `key`, unless there is none or it has expired.
    fn get<'a>(&'a self, namespace: &'a [&'a str], key: &'a str) -> BoxFuture<'a, Result<Option<Item>, StoreError>>;

    /// Deletes the item under `namespace` and `key`; deleting a missing item is not an error.
    fn delete<'a>(&'a self, namespace: &'a [&'a str], key: &'a str) -> BoxFuture<'a, Result<(), StoreError>>;

    /// The live items whose namespace starts with `prefix` (every item for an empty prefix) and
    /// whose value matches the query's filter, in (namespace, key) order (best match first for
    /// a query by meaning), paged by the query. A store that cannot search by meaning refuses a
    /// [`query`](SearchQuery::query) with [`StoreError::NoIndex`] rather than ignore it.
    fn search<'a>(&'a self, prefix: &'a [&'a str], query: SearchQuery) -> BoxFuture<'a, Result<Vec<Item>, StoreError>>;

    /// The items [`search`](Self::search) returns, without refreshing their time to live when
    /// the store refreshes on read. For a wrapper that reads more items than it returns (as
    /// [`Encrypted`](crate::encryption::Encrypted) does, to filter decrypted values) and
    /// refreshes only those it returns, with [`get`](Self::get).
    ///
    /// The default is `search` itself: a store that refreshes on read overrides it.
    fn search_unrefreshed<'a>(
        &'a self,
        prefix: &'a [&'a str],
        query: SearchQuery,
    ) -> BoxFuture<'a, Result<Vec<Item>, StoreError>> {
        self.search(prefix, query)
    }

    /// The distinct namespaces of live items that start with `prefix`, each cut to its first
    /// `max_depth` labels when given, sorted. `max_depth` of 0 is an error.
    fn list_namespaces<'a>(
        &'a self,
        prefix: &'a [&'a str],
        max_depth: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Vec<String>>, StoreError>>;

    /// Deletes every expired item now; returns how many.
    fn sweep(&self) -> BoxFuture<'_, Result<usize, StoreError>>;
}
