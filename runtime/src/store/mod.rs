//! Long-term memory shared across threads: JSON values under hierarchical namespaces.
//!
//! A checkpointer remembers one thread; a [`Store`] remembers across all of them. Items live
//! under a namespace (a path of labels such as `["users", "u1", "memories"]`) and a key, hold a
//! `serde_json::Value`, and may expire. Nodes reach the graph's store with
//! [`Runtime::store`](crate::Runtime::store); give the graph one with
//! [`StateGraph::store`](crate::StateGraph::store).
//!
//! - [`Store::put`], [`Store::get`], [`Store::delete`]: one item by namespace and key.
//! - [`Store::search`]: the items under a namespace prefix, narrowed by a [`Filter`] on top-level
//!   fields (`eq`, `ne`, `gt`, `gte`, `lt`, `lte`), paged with `limit` and `offset`, in
//!   (namespace, key) order.
//! - [`Store::list_namespaces`]: the namespaces that hold items, under a prefix, cut to a depth.
//! - TTL: an item put with a time to live is never returned once it has expired; expired items
//!   are deleted by [`Store::sweep`] and, at most once per sweep interval, by writes. With
//!   [`StoreOptions::refresh_on_read`] a read restarts the item's time to live.
//!
//! Backends: [`InMemoryStore`], `SqliteStore` (feature `sqlite`; its own tables, so it can
//! share a file with `SqliteSaver`) and `PostgresStore` (feature `postgres`; many processes
//! sharing one database, which it can share with `PostgresSaver`). They behave alike, down to
//! the order of results and the errors for invalid names (save that PostgreSQL cannot hold
//! U+0000 in a name), and all take their time from a [`Clock`], so tests of expiry advance a
//! [`ManualClock`] instead of sleeping.
//!
//! Namespace labels and keys must be non-empty and must not contain [`SEPARATOR`] (U+001F, the
//! ASCII unit separator), which the stores use to keep a namespace as one string; anything else
//! (dots, slashes, e-mail addresses, any Unicode) is allowed.
//!
//! ```
//! use graphwright::prelude::*;
//! use graphwright::store::{Filter, InMemoryStore, SearchQuery, Store};
//! use serde_json::json;
//! use std::sync::Arc;
//!
//! #[graph]
//! mod assistant {
//!     use super::*;
//!
//!     #[state]
//!     pub struct State {
//!         pub user: String,
//!         pub message: String,
//!         pub known: Vec<String>,
//!     }
//!
//!     /// Remembers what the user said, then recalls everything it knows about them.
//!     #[node(entry, next = END)]
//!     async fn remember(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
//!         let store = rt.store()?;
//!         let namespace = ["users", state.user.as_str(), "facts"];
//!         let key = format!("fact-{}", rt.thread_id().unwrap_or("none"));
//!         store.put(&namespace, &key, json!({"text": state.message, "kind": "fact"}), None).await?;
//!         let facts = store.search(&namespace, SearchQuery::new().filter(Filter::new().eq("kind", "fact"))).await?;
//!         let known: Vec<String> = facts.iter().filter_map(|item| item.value["text"].as_str().map(str::to_owned)).collect();
//!         Ok(StateUpdate::new().known(known))
//!     }
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Report> {
//!     let store = Arc::new(InMemoryStore::new());
//!     let app = assistant::graph().shared_store(store.clone()).compile()?;
//!     let said = |message: &str| assistant::StateUpdate::new().user("u1".to_owned()).message(message.to_owned());
//!
//!     app.invoke(said("likes tea"), &RunConfig::thread("monday")).await?;
//!     // Another thread, same user: the memory written on Monday is there.
//!     let out = app.invoke(said("lives in Oslo"), &RunConfig::thread("tuesday")).await?;
//!     assert_eq!(out.state.known, ["likes tea", "lives in Oslo"]);
//!     assert_eq!(store.list_namespaces(&["users"], None).await?, [vec!["users", "u1", "facts"]]);
//!     Ok(())
//! }
//! ```

mod clock;
mod error;
mod filter;
mod index;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "postgres")]
mod postgres_index;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_index;

pub use clock::{Clock, ManualClock, SystemClock};
pub use error::StoreError;
pub use filter::{Condition, Filter, FilterOp};
pub use index::{IndexConfig, Indexing};
pub use memory::InMemoryStore;
#[cfg(feature = "postgres")]
pub use postgres::PostgresStore;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteStore;

use futures::future::BoxFuture;
use serde_json::Value;
use std::collections::BTreeSet;
use std::ops::Bound;
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

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

/// Which items under a prefix [`Store::search`] returns.
///
/// Results come in (namespace, key) order: namespaces compared label by label as strings, then
/// keys. With a [`query`](Self::query), they come best match first instead (items stored
/// without vectors last, in key order), each with its [`score`](Item::score). `offset` items
/// are skipped and at most `limit` returned, after filtering; there is no limit unless one is
/// set (LangGraph's default is 10).
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SearchQuery {
    /// Text to rank items by closeness in meaning, through the store's [`IndexConfig`]; a
    /// store without one refuses it ([`StoreError::NoIndex`]).
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
    /// [`IndexConfig`]).
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

/// One item of a [`Store::put_many`]: what [`Store::put_with`] takes, owned.
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

/// How a store treats time: its clock, whether reads refresh a time to live, and how often
/// writes sweep expired items.
#[derive(Clone)]
pub struct StoreOptions {
    clock: Arc<dyn Clock>,
    refresh_on_read: bool,
    sweep_interval: Option<Duration>,
    index: Option<IndexConfig>,
}

impl Default for StoreOptions {
    /// The system clock, no refresh on read, a sweep at most once a minute.
    fn default() -> Self {
        Self {
            clock: Arc::new(SystemClock),
            refresh_on_read: false,
            sweep_interval: Some(Duration::from_mins(1)),
            index: None,
        }
    }
}

impl std::fmt::Debug for StoreOptions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("StoreOptions")
            .field("refresh_on_read", &self.refresh_on_read)
            .field("sweep_interval", &self.sweep_interval)
            .field("index", &self.index)
            .finish_non_exhaustive()
    }
}

impl StoreOptions {
    /// The defaults: the system clock, no refresh on read, a sweep at most once a minute.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Takes the time from `clock` (a [`ManualClock`] in tests).
    #[must_use]
    pub fn clock(mut self, clock: impl Clock) -> Self {
        self.clock = Arc::new(clock);
        self
    }

    /// Whether `get` and `search` restart the time to live of the items they return (as
    /// LangGraph's `refresh_on_read`). Off by default.
    #[must_use]
    pub fn refresh_on_read(mut self, refresh: bool) -> Self {
        self.refresh_on_read = refresh;
        self
    }

    /// How often writes (`put`, `delete`) also delete expired items; `None` leaves that to
    /// [`Store::sweep`]. Expired items are never returned either way.
    #[must_use]
    pub fn sweep_interval(mut self, interval: Option<Duration>) -> Self {
        self.sweep_interval = interval;
        self
    }

    /// Embeds what `index` names on every put, so that searches with a
    /// [`query`](SearchQuery::query) rank items by meaning. Items put before the index was
    /// given have no vectors until they are put again.
    #[must_use]
    pub fn index(mut self, index: IndexConfig) -> Self {
        self.index = Some(index);
        self
    }

    /// The index given with [`index`](Self::index), if any.
    #[must_use]
    pub fn index_config(&self) -> Option<&IndexConfig> {
        self.index.as_ref()
    }
}

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
            Indexing::Fields(_) => Box::pin(async { Err(index::no_index("put an item with fields to embed")) }),
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

/// The latest time the stores keep, 9999-12-31T23:59:59.999Z: a longer time to live means
/// "never" in practice, and every backend can hold it.
pub(crate) const MAX_TIME_MS: u64 = 253_402_300_799_999;

/// Milliseconds since the Unix epoch, clamped to `0..=MAX_TIME_MS`.
pub(crate) fn millis(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX)).min(MAX_TIME_MS)
}

/// The time `ms` milliseconds after the epoch (`ms` at most `MAX_TIME_MS`).
pub(crate) fn time_of(ms: u64) -> SystemTime {
    UNIX_EPOCH + Duration::from_millis(ms.min(MAX_TIME_MS))
}

/// The milliseconds of a time to live, clamped to `MAX_TIME_MS`.
pub(crate) fn ttl_millis(ttl: Duration) -> u64 {
    u64::try_from(ttl.as_millis()).unwrap_or(u64::MAX).min(MAX_TIME_MS)
}

/// When an item with `ttl_ms` expires, counted from `now_ms`.
pub(crate) fn expiry(now_ms: u64, ttl_ms: u64) -> u64 {
    now_ms.saturating_add(ttl_ms).min(MAX_TIME_MS)
}

/// Whether an item expiring at `expires_ms` is still live at `now_ms`.
pub(crate) fn live(expires_ms: Option<u64>, now_ms: u64) -> bool {
    expires_ms.is_none_or(|at| at > now_ms)
}

/// Checks the labels of a namespace or prefix; `whole` requires at least one.
fn check_labels(labels: &[&str], whole: bool) -> Result<(), StoreError> {
    let invalid = |reason: String| StoreError::InvalidNamespace {
        namespace: labels.iter().map(|l| (*l).to_owned()).collect(),
        reason,
    };
    if whole && labels.is_empty() {
        return Err(invalid(
            "it has no labels; an item needs a namespace of at least one label, such as [\"users\", user_id]".into(),
        ));
    }
    for (index, label) in labels.iter().enumerate() {
        if label.is_empty() {
            return Err(invalid(format!("label {index} is empty; every label needs at least one character")));
        }
        if label.contains(SEPARATOR) {
            return Err(invalid(format!(
                "label {index} contains U+001F, the separator the store joins labels with; remove it from the label"
            )));
        }
    }
    Ok(())
}

/// The stored form of a namespace: its labels joined by [`SEPARATOR`].
pub(crate) fn encode_namespace(namespace: &[&str]) -> Result<String, StoreError> {
    check_labels(namespace, true)?;
    Ok(namespace.join(&SEPARATOR.to_string()))
}

/// The stored form of a prefix; empty for the empty prefix (which matches everything).
pub(crate) fn encode_prefix(prefix: &[&str]) -> Result<String, StoreError> {
    check_labels(prefix, false)?;
    Ok(prefix.join(&SEPARATOR.to_string()))
}

/// Checks a key: non-empty and without [`SEPARATOR`].
pub(crate) fn check_key(key: &str) -> Result<(), StoreError> {
    let invalid = |reason: &str| Err(StoreError::InvalidKey { key: key.to_owned(), reason: reason.to_owned() });
    if key.is_empty() {
        return invalid("it is empty; every key needs at least one character");
    }
    if key.contains(SEPARATOR) {
        return invalid("it contains U+001F, the separator the store reserves; remove it from the key");
    }
    Ok(())
}

/// The labels of a stored namespace; `None` when it is not a valid namespace.
pub(crate) fn decode_namespace(encoded: &str) -> Option<Vec<String>> {
    let labels: Vec<String> = encoded.split(SEPARATOR).map(str::to_owned).collect();
    labels.iter().all(|l| !l.is_empty()).then_some(labels)
}

/// Whether the stored namespace `encoded` lies under the stored prefix `prefix`.
pub(crate) fn under(encoded: &str, prefix: &str) -> bool {
    prefix.is_empty() || encoded.strip_prefix(prefix).is_some_and(|rest| rest.is_empty() || rest.starts_with(SEPARATOR))
}

/// An item's place: its stored namespace and its key.
pub(crate) type Address = (String, String);

/// A range of [`Address`]es.
pub(crate) type AddressRange = (Bound<Address>, Bound<Address>);

/// The ranges of (stored namespace, key) pairs whose namespace lies under the stored prefix
/// `prefix`, in a map ordered by them: the namespace itself, then those starting with it and
/// [`SEPARATOR`]. Walking the ranges finds them without reading each namespace's text.
pub(crate) fn prefix_ranges(prefix: &str) -> Vec<AddressRange> {
    if prefix.is_empty() {
        return vec![(Bound::Unbounded, Bound::Unbounded)];
    }
    let from = |namespace: String| Bound::Included((namespace, String::new()));
    let to = |namespace: String| Bound::Excluded((namespace, String::new()));
    vec![
        // Keys are never empty, so (namespace + U+0000, "") comes after every key of the namespace.
        (from(prefix.to_owned()), to(format!("{prefix}\u{0}"))),
        (from(format!("{prefix}{SEPARATOR}")), to(format!("{prefix}\u{20}"))),
    ]
}

/// Checks `max_depth` for `list_namespaces`.
pub(crate) fn check_depth(max_depth: Option<usize>) -> Result<(), StoreError> {
    if max_depth == Some(0) {
        return Err(StoreError::InvalidQuery {
            reason: "max_depth is 0, which would cut every namespace to nothing; pass Some(1) or more, or None".into(),
        });
    }
    Ok(())
}

/// The distinct namespaces of `encoded`, each cut to `max_depth` labels, sorted.
pub(crate) fn cut_namespaces<'a>(
    encoded: impl IntoIterator<Item = &'a str>,
    max_depth: Option<usize>,
) -> Vec<Vec<String>> {
    let mut seen = BTreeSet::new();
    for namespace in encoded {
        let cut = match max_depth {
            Some(depth) => namespace.split(SEPARATOR).take(depth).collect::<Vec<_>>().join(&SEPARATOR.to_string()),
            None => namespace.to_owned(),
        };
        seen.insert(cut);
    }
    seen.into_iter().map(|n| n.split(SEPARATOR).map(str::to_owned).collect()).collect()
}

/// Decides when a write should also sweep: at most once per interval of the store's clock.
#[derive(Debug)]
pub(crate) struct Sweeper {
    interval_ms: Option<u64>,
    last_ms: Mutex<u64>,
}

impl Sweeper {
    pub(crate) fn new(options: &StoreOptions) -> Self {
        Self { interval_ms: options.sweep_interval.map(ttl_millis), last_ms: Mutex::new(millis(options.clock.now())) }
    }

    /// Whether a sweep is due at `now_ms`; if so, counts it as done.
    pub(crate) fn due(&self, now_ms: u64) -> bool {
        let Some(interval) = self.interval_ms else { return false };
        let Ok(mut last) = self.last_ms.lock() else { return false };
        if now_ms.saturating_sub(*last) >= interval {
            *last = now_ms;
            true
        } else {
            false
        }
    }

    /// Notes a sweep made at `now_ms`.
    pub(crate) fn swept(&self, now_ms: u64) {
        if let Ok(mut last) = self.last_ms.lock() {
            *last = now_ms;
        }
    }
}

impl StoreOptions {
    /// The current time in milliseconds, by the store's clock.
    pub(crate) fn now_ms(&self) -> u64 {
        millis(self.clock.now())
    }

    pub(crate) fn refreshes(&self) -> bool {
        self.refresh_on_read
    }
}

/// A time in milliseconds as the databases hold it (a signed 64-bit integer).
pub(crate) fn ms_param(ms: u64) -> i64 {
    i64::try_from(ms.min(MAX_TIME_MS)).unwrap_or(i64::MAX)
}

/// A search's page, gathered from live items in key order: those the filter matches, after
/// skipping the query's offset, at most its limit.
pub(crate) struct Page<'q> {
    query: &'q SearchQuery,
    skipped: usize,
    pub(crate) found: Vec<Stored>,
}

impl<'q> Page<'q> {
    pub(crate) fn new(query: &'q SearchQuery) -> Self {
        Self { query, skipped: 0, found: Vec::new() }
    }

    /// Whether the page holds as many items as the query asks for.
    pub(crate) fn full(&self) -> bool {
        self.query.limit.is_some_and(|limit| self.found.len() >= limit)
    }

    /// How many more items the page takes.
    pub(crate) fn wanted(&self) -> usize {
        self.query.limit.map_or(usize::MAX, |limit| limit.saturating_sub(self.found.len()))
    }

    /// Takes `stored` into the page if the filter matches it and the offset is used up.
    pub(crate) fn offer(&mut self, stored: Stored) {
        if !self.query.filter.matches(&stored.item.value) {
            return;
        }
        if self.skipped < self.query.offset {
            self.skipped += 1;
            return;
        }
        self.found.push(stored);
    }
}

/// One row as stored, before it becomes an [`Item`].
pub(crate) struct Stored {
    pub(crate) namespace: String,
    pub(crate) item: Item,
    pub(crate) ttl_ms: Option<u64>,
}

/// An item row as a database returned it, column by column: each a value (`None` for NULL) or
/// why it could not be read. The columns are those the backends select, in their order.
pub(crate) struct RawItem {
    pub(crate) namespace: Result<Option<String>, String>,
    pub(crate) key: Result<Option<String>, String>,
    pub(crate) value: Result<Option<String>, String>,
    /// `created_at_ms`, `updated_at_ms`, `expires_at_ms`, `ttl_ms`.
    pub(crate) times: [Result<Option<i64>, String>; 4],
}

impl RawItem {
    /// The item, or [`StoreError::Corrupt`] naming the column that does not hold what it should.
    pub(crate) fn decode(self) -> Result<Stored, StoreError> {
        let shown = |column: &Result<Option<String>, String>| {
            column.clone().ok().flatten().unwrap_or_else(|| "<unreadable>".to_owned())
        };
        let (namespace, key) = (shown(&self.namespace), shown(&self.key));
        let corrupt = |field: &str, reason: String| StoreError::Corrupt {
            namespace: namespace.clone(),
            key: key.clone(),
            field: field.to_owned(),
            reason,
        };
        let required = |column: Result<Option<String>, String>, field: &str| match column {
            Ok(Some(text)) => Ok(text),
            Ok(None) => Err(corrupt(field, "it is NULL".into())),
            Err(e) => Err(corrupt(field, e)),
        };
        required(self.namespace, "namespace")?;
        required(self.key, "key")?;
        let Some(labels) = decode_namespace(&namespace) else {
            return Err(corrupt("namespace", "it has an empty label".into()));
        };
        let value = serde_json::from_str::<Value>(&required(self.value, "value")?)
            .map_err(|e| corrupt("value", format!("not JSON: {e}")))?;
        let [created, updated, expires, ttl] = self.times;
        let time = |column: Result<Option<i64>, String>, field: &str| -> Result<Option<u64>, StoreError> {
            match column {
                Ok(None) => Ok(None),
                Ok(Some(ms)) => match u64::try_from(ms) {
                    Ok(ms) if ms <= MAX_TIME_MS => Ok(Some(ms)),
                    _ => Err(corrupt(
                        field,
                        format!("{ms} is not a time in milliseconds since 1970 before the year 10000"),
                    )),
                },
                Err(e) => Err(corrupt(field, e)),
            }
        };
        let required_time =
            |column, field: &str| time(column, field)?.ok_or_else(|| corrupt(field, "it is NULL".into()));
        let created = required_time(created, "created_at_ms")?;
        let updated = required_time(updated, "updated_at_ms")?;
        let expires = time(expires, "expires_at_ms")?;
        let ttl_ms = time(ttl, "ttl_ms")?;
        Ok(Stored {
            item: Item {
                namespace: labels,
                key,
                value,
                created_at: time_of(created),
                updated_at: time_of(updated),
                expires_at: expires.map(time_of),
                score: None,
            },
            namespace,
            ttl_ms,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeMap;

    #[test]
    fn prefix_ranges_hold_the_namespace_and_those_under_it_only() {
        let namespaces = ["a", "a\u{1f}b", "a\u{1f}b\u{1f}c", "a\u{5}", "a\u{0}", "ab", "b", "\u{1f}a"];
        let map: BTreeMap<Address, u8> = namespaces.iter().map(|n| (((*n).to_owned(), "k".to_owned()), 0)).collect();
        let found = |prefix: &str| -> Vec<&str> {
            prefix_ranges(prefix).into_iter().flat_map(|range| map.range(range)).map(|((n, _), _)| n.as_str()).collect()
        };
        assert_eq!(found("a"), ["a", "a\u{1f}b", "a\u{1f}b\u{1f}c"]);
        assert_eq!(found("a\u{1f}b"), ["a\u{1f}b", "a\u{1f}b\u{1f}c"]);
        assert_eq!(found("").len(), namespaces.len());
        for prefix in ["a", "a\u{1f}b", "b", "ab"] {
            let by_text: Vec<&str> = map.keys().map(|(n, _)| n.as_str()).filter(|n| under(n, prefix)).collect();
            assert_eq!(found(prefix), by_text, "{prefix:?}");
        }
    }
}
