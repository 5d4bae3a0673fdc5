//! The in-process store.

use super::backend::Store;
use super::error::StoreError;
use super::index::arena::{Arena, Ranking, Span};
use super::index::{self, Indexing};
use super::item::{Item, PutItem, SearchQuery};
use super::namespace::{
    Address, check_depth, check_key, cut_namespaces, decode_namespace, encode_namespace, encode_prefix, prefix_ranges,
    under,
};
use super::options::StoreOptions;
use super::sweeper::Sweeper;
use super::time::{expiry, live, time_of, ttl_millis};
use futures::FutureExt;
use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

/// Keeps items in memory: for tests, and for memory that may end with the process. Cheap to
/// share behind an `Arc`.
///
/// ```
/// use graphwright::store::{InMemoryStore, Store};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), graphwright::store::StoreError> {
/// let store = InMemoryStore::new();
/// store.put(&["users", "u1"], "language", json!({"value": "nb"}), None).await?;
/// let item = store.get(&["users", "u1"], "language").await?.expect("just put");
/// assert_eq!(item.value["value"], "nb");
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub struct InMemoryStore {
    /// Entries by (stored namespace, key): the order `search` returns them in.
    items: Mutex<Items>,
    options: StoreOptions,
    sweeper: Sweeper,
}

/// Entries by (stored namespace, key), and the vectors of their embedded texts.
#[derive(Debug)]
struct Items {
    entries: BTreeMap<Address, Entry>,
    arena: Arena,
}

impl Items {
    /// Leaves the slots of a replaced or deleted entry's vectors as a gap, and closes the gaps
    /// once they take more room than the vectors do.
    fn freed(&mut self, span: Span) {
        self.arena.free(span);
        if self.arena.wasteful() {
            self.arena.compact(self.entries.values_mut().map(|e| &mut e.span));
        }
    }
}

#[derive(Debug)]
struct Entry {
    value: Value,
    created_ms: u64,
    updated_ms: u64,
    expires_ms: Option<u64>,
    ttl_ms: Option<u64>,
    /// Where the vectors of its embedded texts lie (none without an index).
    span: Span,
}

/// How many of a ranking's best candidates are sorted at first: a search's page is usually
/// this small, and more are sorted only if the page needs them.
const FIRST_SORTED: usize = 64;

impl Default for InMemoryStore {
    fn default() -> Self {
        Self::new()
    }
}

impl InMemoryStore {
    /// An empty store with the default [`StoreOptions`].
    #[must_use]
    pub fn new() -> Self {
        Self::with_options(StoreOptions::default())
    }

    /// An empty store with `options` (its clock, refresh on read, sweep interval).
    #[must_use]
    pub fn with_options(options: StoreOptions) -> Self {
        let dims = options.index_config().map_or(0, super::IndexConfig::dims);
        let items = Items { entries: BTreeMap::new(), arena: Arena::new(dims) };
        Self { items: Mutex::new(items), sweeper: Sweeper::new(&options), options }
    }

    fn lock(&self, operation: &str) -> Result<MutexGuard<'_, Items>, StoreError> {
        self.items.lock().map_err(|_| {
            StoreError::backend(
                operation.to_owned(),
                "the in-memory store's lock is poisoned: a task panicked while holding it",
            )
        })
    }

    /// Deletes the expired entries; returns how many.
    fn sweep_locked(items: &mut Items, now_ms: u64) -> usize {
        let before = items.entries.len();
        let mut freed = Vec::new();
        items.entries.retain(|_, e| {
            let keep = live(e.expires_ms, now_ms);
            if !keep {
                freed.push(e.span);
            }
            keep
        });
        for span in freed {
            items.freed(span);
        }
        before - items.entries.len()
    }

    /// The items a search returns, read now, their time to live refreshed if `refresh`.
    async fn search_now(&self, prefix: &[&str], query: SearchQuery, refresh: bool) -> Result<Vec<Item>, StoreError> {
        let prefix = encode_prefix(prefix)?;
        let Some(text) = &query.query else {
            return self.search_in_order(&prefix, &query, refresh);
        };
        let index = self.options.index_config().ok_or_else(|| index::no_index("search by meaning"))?;
        let wanted = index.query_vector(text).await?;
        let mut items = self.lock("searched items")?;
        let now = self.options.now_ms();
        // Read without touching the keys' text: comparing each item's namespace with the
        // prefix would wait on memory once per item.
        let (mut addresses, mut spans): (Vec<&Address>, Vec<Span>) = (Vec::new(), Vec::new());
        for range in prefix_ranges(&prefix) {
            for (address, entry) in items.entries.range(range) {
                if live(entry.expires_ms, now) && query.filter.matches(&entry.value) {
                    addresses.push(address);
                    spans.push(entry.span);
                }
            }
        }
        let scoreless: Vec<usize> = (0..spans.len()).filter(|&at| spans[at].is_empty()).collect();
        let batch = query.limit.map_or(usize::MAX, |l| l.saturating_add(query.offset)).min(FIRST_SORTED);
        let page: Vec<((String, String), Option<f32>)> = Ranking::new(&items.arena, wanted, spans, batch)
            .map(|(score, at)| (Some(score), at))
            .chain(scoreless.into_iter().map(|at| (None, at)))
            .skip(query.offset)
            .take(query.limit.unwrap_or(usize::MAX))
            .map(|(score, at)| (addresses[at].clone(), score))
            .collect();
        let mut out = Vec::with_capacity(page.len());
        for (id, score) in page {
            let Some(entry) = items.entries.get_mut(&id) else { continue };
            let mut item = Self::read(&id, entry, now, refresh)?;
            item.score = score.map(f64::from);
            out.push(item);
        }
        Ok(out)
    }

    /// The items a search without a query returns, in key order.
    fn search_in_order(&self, prefix: &str, query: &SearchQuery, refresh: bool) -> Result<Vec<Item>, StoreError> {
        let mut items = self.lock("searched items")?;
        let now = self.options.now_ms();
        let mut out = Vec::new();
        let matching = items
            .entries
            .iter_mut()
            .filter(|(id, e)| under(&id.0, prefix) && live(e.expires_ms, now) && query.filter.matches(&e.value))
            .skip(query.offset)
            .take(query.limit.unwrap_or(usize::MAX));
        for (id, entry) in matching {
            out.push(Self::read(id, entry, now, refresh)?);
        }
        Ok(out)
    }

    /// Reads `entry` as an item at `now_ms`, refreshing its time to live first if `refresh`.
    fn read(
        (namespace, key): &(String, String),
        entry: &mut Entry,
        now_ms: u64,
        refresh: bool,
    ) -> Result<Item, StoreError> {
        if let Some(ttl) = entry.ttl_ms.filter(|_| refresh) {
            entry.expires_ms = Some(expiry(now_ms, ttl));
        }
        let labels = decode_namespace(namespace).ok_or_else(|| StoreError::Corrupt {
            namespace: namespace.clone(),
            key: key.clone(),
            field: "namespace".into(),
            reason: "an empty label".into(),
        })?;
        Ok(Item {
            namespace: labels,
            key: key.clone(),
            value: entry.value.clone(),
            created_at: time_of(entry.created_ms),
            updated_at: time_of(entry.updated_ms),
            expires_at: entry.expires_ms.map(time_of),
            score: None,
        })
    }
}

impl Store for InMemoryStore {
    fn put<'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
        value: Value,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.put_with(namespace, key, value, ttl, Indexing::AsConfigured)
    }

    fn put_with<'a>(
        &'a self,
        namespace: &'a [&'a str],
        key: &'a str,
        value: Value,
        ttl: Option<Duration>,
        indexing: Indexing,
    ) -> BoxFuture<'a, Result<(), StoreError>> {
        self.put_many(vec![PutItem::new(namespace, key, value).indexing(indexing).with_ttl(ttl)])
    }

    fn put_many(&self, items_put: Vec<PutItem>) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            let mut ids = Vec::with_capacity(items_put.len());
            for item in &items_put {
                ids.push((encode_namespace(&item.labels())?, item.key.clone()));
                check_key(&item.key)?;
            }
            let asked: Vec<_> = items_put.iter().map(|i| (&i.value, &i.indexing, i.key.as_str())).collect();
            // Embedded before the lock is taken: a model call can take seconds.
            let vectors = index::vectors_for_many(self.options.index_config(), &asked).await?;
            let mut items = self.lock("put an item")?;
            let now = self.options.now_ms();
            if self.sweeper.due(now) {
                Self::sweep_locked(&mut items, now);
            }
            for ((id, item), vectors) in ids.into_iter().zip(items_put).zip(vectors) {
                let vectors: Vec<Vec<f32>> = vectors.into_iter().map(|(_, v)| v).collect();
                let span = if vectors.is_empty() { Span::default() } else { items.arena.push(&vectors) };
                let ttl_ms = item.ttl.map(ttl_millis);
                let created_ms =
                    items.entries.get(&id).filter(|old| live(old.expires_ms, now)).map_or(now, |old| old.created_ms);
                let entry = Entry {
                    value: item.value,
                    created_ms,
                    updated_ms: now,
                    expires_ms: ttl_ms.map(|t| expiry(now, t)),
                    ttl_ms,
                    span,
                };
                // Freed once the new entry holds its span: closing the gaps keeps only the
                // vectors entries point at.
                if let Some(old) = items.entries.insert(id, entry) {
                    items.freed(old.span);
                }
            }
            Ok(())
        }
        .boxed()
    }

    fn get<'a>(&'a self, namespace: &'a [&'a str], key: &'a str) -> BoxFuture<'a, Result<Option<Item>, StoreError>> {
        let result = (|| {
            let id = (encode_namespace(namespace)?, key.to_owned());
            check_key(key)?;
            let mut items = self.lock("read an item")?;
            let now = self.options.now_ms();
            match items.entries.get_mut(&id) {
                Some(entry) if live(entry.expires_ms, now) => {
                    Self::read(&id, entry, now, self.options.refreshes()).map(Some)
                }
                _ => Ok(None),
            }
        })();
        async move { result }.boxed()
    }

    fn delete<'a>(&'a self, namespace: &'a [&'a str], key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let result = (|| {
            let id = (encode_namespace(namespace)?, key.to_owned());
            check_key(key)?;
            let mut items = self.lock("deleted an item")?;
            if let Some(gone) = items.entries.remove(&id) {
                items.freed(gone.span);
            }
            let now = self.options.now_ms();
            if self.sweeper.due(now) {
                Self::sweep_locked(&mut items, now);
            }
            Ok(())
        })();
        async move { result }.boxed()
    }

    fn search<'a>(&'a self, prefix: &'a [&'a str], query: SearchQuery) -> BoxFuture<'a, Result<Vec<Item>, StoreError>> {
        self.search_now(prefix, query, self.options.refreshes()).boxed()
    }

    fn search_unrefreshed<'a>(
        &'a self,
        prefix: &'a [&'a str],
        query: SearchQuery,
    ) -> BoxFuture<'a, Result<Vec<Item>, StoreError>> {
        self.search_now(prefix, query, false).boxed()
    }

    fn list_namespaces<'a>(
        &'a self,
        prefix: &'a [&'a str],
        max_depth: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Vec<String>>, StoreError>> {
        let result = (|| {
            let prefix = encode_prefix(prefix)?;
            check_depth(max_depth)?;
            let items = self.lock("listed namespaces")?;
            let now = self.options.now_ms();
            let namespaces = items
                .entries
                .iter()
                .filter(|(id, e)| under(&id.0, &prefix) && live(e.expires_ms, now))
                .map(|(id, _)| id.0.as_str());
            Ok(cut_namespaces(namespaces, max_depth))
        })();
        async move { result }.boxed()
    }

    fn sweep(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        let result = (|| {
            let mut items = self.lock("swept expired items")?;
            let now = self.options.now_ms();
            self.sweeper.swept(now);
            Ok(Self::sweep_locked(&mut items, now))
        })();
        async move { result }.boxed()
    }
}
