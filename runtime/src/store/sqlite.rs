//! The SQLite store: one file, its own tables, safe to share with `SqliteSaver`.

use super::backend::Store;
use super::error::StoreError;
use super::index::{self, Embedded, Indexing};
use super::item::{Item, PutItem, SEPARATOR, SearchQuery};
use super::namespace::{
    check_depth, check_key, cut_namespaces, decode_namespace, encode_namespace, encode_prefix, under,
};
use super::options::StoreOptions;
use super::rows::{Page, RawItem, Stored};
use super::sqlite_index::{self, Pending, VectorCache};
use super::sweeper::Sweeper;
use super::time::{expiry, ms_param, time_of};
use futures::FutureExt;
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, Row, Transaction, TransactionBehavior, params};
use serde_json::Value;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The schema of the store's tables this version writes and reads; stored in `graphwright_meta`
/// under `store_schema_version` (the checkpointer keeps its own version beside it).
const SCHEMA_VERSION: i64 = 1;

const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS graphwright_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL);
CREATE TABLE IF NOT EXISTS store_items (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value TEXT NOT NULL,
    created_at_ms INTEGER NOT NULL,
    updated_at_ms INTEGER NOT NULL,
    expires_at_ms INTEGER,
    ttl_ms INTEGER,
    PRIMARY KEY (namespace, key)
) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS store_items_expiry ON store_items (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
";

/// Puts an item (?1 namespace, ?2 key, ?3 value, ?4 the time, ?5 its expiry, ?6 its time to
/// live), keeping `created_at_ms` unless the item it replaces had expired.
const UPSERT: &str = "INSERT INTO store_items (namespace, key, value, created_at_ms, updated_at_ms, expires_at_ms, ttl_ms) \
     VALUES (?1, ?2, ?3, ?4, ?4, ?5, ?6) \
     ON CONFLICT (namespace, key) DO UPDATE SET \
       value = excluded.value, \
       created_at_ms = CASE WHEN store_items.expires_at_ms IS NOT NULL \
         AND store_items.expires_at_ms <= excluded.updated_at_ms \
         THEN excluded.created_at_ms ELSE store_items.created_at_ms END, \
       updated_at_ms = excluded.updated_at_ms, \
       expires_at_ms = excluded.expires_at_ms, \
       ttl_ms = excluded.ttl_ms";

/// The columns every read selects, in the order [`item_row`] reads them.
const SELECT_ITEM: &str =
    "SELECT namespace, key, value, created_at_ms, updated_at_ms, expires_at_ms, ttl_ms FROM store_items";

/// Live items, under the prefix given as ?2 (NULL for every item), at the time given as ?1.
const LIVE_UNDER_PREFIX: &str = "(expires_at_ms IS NULL OR expires_at_ms > ?1) \
     AND (?2 IS NULL OR namespace = ?2 OR (namespace >= ?3 AND namespace < ?4))";

/// Keeps items in one SQLite file in WAL mode with every commit synced, like `SqliteSaver`, in
/// its own tables (`store_items`), so both can use the same file.
///
/// Values are stored as JSON text; times as milliseconds since the Unix epoch. Filters are
/// applied in Rust after SQLite has selected the live items under the prefix, so their rules
/// are exactly [`Filter`](super::Filter)'s in every backend. Calls run on tokio's blocking pool.
///
/// With an [`IndexConfig`](super::IndexConfig), the vectors of each item are stored in a table
/// of their own (`store_vectors`) and a search by meaning scores all of them exactly, from a
/// copy the store keeps in memory (4 bytes per number: 150 MB for 100,000 texts of 384
/// numbers), loaded by the first such search and reloaded when another connection has changed
/// the vectors. No vector extension is compiled in: exact scoring of an in-memory copy is
/// faster than an extension's scan of the file, and needs no approximate index below millions
/// of items.
///
/// ```
/// use graphwright::store::{SqliteStore, Store};
/// use serde_json::json;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = std::env::temp_dir().join(format!("graphwright-store-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir)?;
/// let store = SqliteStore::open(dir.join("agent.db"))?;
/// store.put(&["users", "u1"], "language", json!("nb"), None).await?;
/// assert_eq!(store.get(&["users", "u1"], "language").await?.map(|i| i.value), Some(json!("nb")));
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SqliteStore {
    connection: Arc<Mutex<Connection>>,
    options: Arc<StoreOptions>,
    sweeper: Arc<Sweeper>,
    /// The vectors of the index, for searches by meaning; locked only under `connection`.
    vectors: Arc<Mutex<VectorCache>>,
}

impl std::fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteStore").field("options", &self.options).finish_non_exhaustive()
    }
}

impl SqliteStore {
    /// This store with its values encrypted at rest under `keys` (see
    /// [`Encrypted`](crate::encryption::Encrypted)); items stored before stay readable.
    ///
    /// ```
    /// use graphwright::encryption::Keys;
    /// use graphwright::store::SqliteStore;
    ///
    /// let dir = tempfile::tempdir()?;
    /// let keys = Keys::from_base64("AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")?;
    /// let store = SqliteStore::open(dir.path().join("memory.db"))?.encrypted(keys);
    /// # let _ = store;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    #[must_use]
    pub fn encrypted(self, keys: crate::encryption::Keys) -> crate::encryption::Encrypted<Self> {
        crate::encryption::Encrypted::new(self, keys)
    }

    /// The items a search returns, their time to live refreshed if `refreshes`.
    fn search_with<'a>(
        &'a self,
        prefix: &'a [&'a str],
        query: SearchQuery,
        refreshes: bool,
    ) -> BoxFuture<'a, Result<Vec<Item>, StoreError>> {
        let prefix_encoded = match encode_prefix(prefix) {
            Ok(p) => p,
            Err(e) => return async move { Err(e) }.boxed(),
        };
        let operation = format!("searched namespace prefix {prefix:?}");
        if query.query.is_some() {
            return self.search_by_meaning(prefix_encoded, query, refreshes, operation);
        }
        self.call(operation.clone(), move |c, now| {
            let op = operation.as_str();
            let tx = if refreshes { SqliteStore::begin(c, op)? } else { c.transaction().map_err(sql(op))? };
            let mut page = Page::new(&query);
            {
                let mut statement = tx
                    .prepare_cached(&format!("{SELECT_ITEM} WHERE {LIVE_UNDER_PREFIX} ORDER BY namespace, key"))
                    .map_err(sql(op))?;
                let (p, low, high) = prefix_params(&prefix_encoded);
                let rows =
                    statement.query_map(params![ms_param(now), p, low, high], |r| Ok(item_row(r))).map_err(sql(op))?;
                for row in rows {
                    if page.full() {
                        break;
                    }
                    let stored = row.map_err(sql(op))??;
                    debug_assert!(under(&stored.namespace, &prefix_encoded));
                    page.offer(stored);
                }
            }
            finish_search(tx, page.found, refreshes, now, op)
        })
    }

    /// A search with a query: the items best matching it first, then those without vectors in
    /// key order, filtered and paged as any search.
    fn search_by_meaning(
        &self,
        prefix: String,
        query: SearchQuery,
        refreshes: bool,
        operation: String,
    ) -> BoxFuture<'static, Result<Vec<Item>, StoreError>> {
        let this = self.clone();
        async move {
            let index = this.options.index_config().ok_or_else(|| index::no_index("search by meaning"))?;
            let wanted = index.query_vector(query.query.as_deref().unwrap_or_default()).await?;
            let dims = index.dims();
            let cache = Arc::clone(&this.vectors);
            this.call(operation.clone(), move |c, now| {
                let op = operation.as_str();
                let tx = if refreshes { SqliteStore::begin(c, op)? } else { c.transaction().map_err(sql(op))? };
                let mut page = Page::new(&query);
                {
                    let mut cache =
                        cache.lock().map_err(|_| StoreError::backend(op, "the vectors' lock is poisoned"))?;
                    let batch = page.wanted().saturating_add(query.offset).saturating_mul(2).clamp(16, 1024);
                    let mut item = tx
                        .prepare_cached(&format!(
                            "{SELECT_ITEM} WHERE namespace = ?1 AND key = ?2 \
                             AND (expires_at_ms IS NULL OR expires_at_ms > ?3)"
                        ))
                        .map_err(sql(op))?;
                    for (score, (namespace, key)) in cache.ranking(&tx, dims, wanted, &prefix, batch, op)? {
                        if page.full() {
                            break;
                        }
                        // Vectors whose item has gone (expired, or deleted by a writer without
                        // an index) rank nothing.
                        let found =
                            item.query_row(params![namespace, key, ms_param(now)], |r| Ok(item_row(r))).optional();
                        if let Some(stored) = found.map_err(sql(op))? {
                            let mut stored = stored?;
                            stored.item.score = Some(f64::from(score));
                            page.offer(stored);
                        }
                    }
                }
                if !page.full() {
                    let mut statement = tx
                        .prepare_cached(&format!(
                            "{SELECT_ITEM} WHERE {LIVE_UNDER_PREFIX} AND NOT EXISTS (SELECT 1 FROM store_vectors v \
                             WHERE v.namespace = store_items.namespace AND v.key = store_items.key) \
                             ORDER BY namespace, key"
                        ))
                        .map_err(sql(op))?;
                    let (p, low, high) = prefix_params(&prefix);
                    let rows = statement
                        .query_map(params![ms_param(now), p, low, high], |r| Ok(item_row(r)))
                        .map_err(sql(op))?;
                    for row in rows {
                        if page.full() {
                            break;
                        }
                        page.offer(row.map_err(sql(op))??);
                    }
                }
                finish_search(tx, page.found, refreshes, now, op)
            })
            .await
        }
        .boxed()
    }

    /// Opens (or creates) the database at `path` and the store's tables, with the default
    /// [`StoreOptions`].
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        Self::open_with(path, StoreOptions::default())
    }

    /// Opens (or creates) the database at `path` and the store's tables, with `options`.
    pub fn open_with(path: impl AsRef<Path>, options: StoreOptions) -> Result<Self, StoreError> {
        let path = path.as_ref();
        let connection =
            Connection::open(path).map_err(|e| StoreError::backend(format!("opened {}", path.display()), e))?;
        Self::from_connection(connection, options)
    }

    /// Uses an open connection (for example one opened with custom flags).
    pub fn from_connection(connection: Connection, options: StoreOptions) -> Result<Self, StoreError> {
        let setup = |c: &Connection| -> rusqlite::Result<Option<i64>> {
            crate::sqlite_file::share(c, Duration::from_secs(5))?;
            c.pragma_update(None, "synchronous", "FULL")?;
            c.execute_batch(SCHEMA)?;
            c.execute_batch(sqlite_index::SCHEMA)?;
            c.execute(
                "INSERT OR IGNORE INTO graphwright_meta (key, value) VALUES ('store_schema_version', ?1)",
                [SCHEMA_VERSION],
            )?;
            c.query_row("SELECT value FROM graphwright_meta WHERE key = 'store_schema_version'", [], |r| r.get(0))
                .optional()
        };
        let version = setup(&connection).map_err(|e| StoreError::backend("set up the store tables", e))?;
        if version != Some(SCHEMA_VERSION) {
            return Err(StoreError::backend(
                "checked the store schema version",
                format!(
                    "the file has store schema version {version:?}; this version of graphwright reads {SCHEMA_VERSION}"
                ),
            ));
        }
        Ok(Self {
            connection: Arc::new(Mutex::new(connection)),
            sweeper: Arc::new(Sweeper::new(&options)),
            options: Arc::new(options),
            vectors: Arc::default(),
        })
    }

    /// Runs `f` on the connection on the blocking pool, with the current time in milliseconds.
    fn call<T, F>(&self, operation: String, f: F) -> BoxFuture<'static, Result<T, StoreError>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, u64) -> Result<T, StoreError> + Send + 'static,
    {
        let connection = Arc::clone(&self.connection);
        let now = self.options.now_ms();
        async move {
            tokio::task::spawn_blocking(move || {
                let mut guard = connection
                    .lock()
                    .map_err(|_| StoreError::backend(operation.clone(), "the connection lock is poisoned"))?;
                f(&mut guard, now)
            })
            .await
            .map_err(|e| StoreError::backend("ran a database call", e))?
        }
        .boxed()
    }

    /// Starts a transaction that may write (`IMMEDIATE`, so it never fails to upgrade a read lock).
    fn begin<'c>(c: &'c mut Connection, operation: &str) -> Result<Transaction<'c>, StoreError> {
        c.transaction_with_behavior(TransactionBehavior::Immediate).map_err(sql(operation))
    }
}

fn sql(operation: &str) -> impl Fn(rusqlite::Error) -> StoreError + '_ {
    move |e| StoreError::backend(operation.to_owned(), e)
}

/// The `LIVE_UNDER_PREFIX` parameters ?2..?4 for the stored prefix `prefix`.
fn prefix_params(prefix: &str) -> (Option<String>, String, String) {
    if prefix.is_empty() {
        return (None, String::new(), String::new());
    }
    // Namespaces under `prefix` start with prefix + U+001F, so they sort between that and
    // prefix + U+0020, the next code point (one byte each in UTF-8).
    (Some(prefix.to_owned()), format!("{prefix}{SEPARATOR}"), format!("{prefix}\u{20}"))
}

/// Reads an item row, naming the column that does not hold what it should.
fn item_row(row: &Row<'_>) -> Result<Stored, StoreError> {
    let text = |at: usize| row.get::<_, Option<String>>(at).map_err(|e| e.to_string());
    let time = |at: usize| row.get::<_, Option<i64>>(at).map_err(|e| e.to_string());
    RawItem { namespace: text(0), key: text(1), value: text(2), times: [time(3), time(4), time(5), time(6)] }.decode()
}

/// Restarts the time to live of `stored` at `now`, in the row and in the item returned.
fn refresh(tx: &Transaction<'_>, stored: &mut Stored, now: u64, operation: &str) -> Result<(), StoreError> {
    if let Some(ttl) = stored.ttl_ms {
        let expires = expiry(now, ttl);
        tx.execute(
            "UPDATE store_items SET expires_at_ms = ?3 WHERE namespace = ?1 AND key = ?2",
            params![stored.namespace, stored.item.key, ms_param(expires)],
        )
        .map_err(sql(operation))?;
        stored.item.expires_at = Some(time_of(expires));
    }
    Ok(())
}

/// Deletes the items expired by `now`, and their vectors: how many items, and the change to the
/// copy of the vectors.
/// Ends a search: the time to live of what it found restarted if it `refreshes`, the
/// transaction committed, the items returned.
fn finish_search(
    tx: Transaction<'_>,
    mut found: Vec<Stored>,
    refreshes: bool,
    now: u64,
    op: &str,
) -> Result<Vec<Item>, StoreError> {
    if refreshes {
        for stored in &mut found {
            refresh(&tx, stored, now, op)?;
        }
    }
    tx.commit().map_err(sql(op))?;
    Ok(found.into_iter().map(|s| s.item).collect())
}

fn sweep_expired(tx: &Transaction<'_>, now: u64, operation: &str) -> Result<(usize, Pending), StoreError> {
    let pending = sqlite_index::sweep(tx, ms_param(now), operation)?;
    let removed = tx
        .execute("DELETE FROM store_items WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= ?1", [ms_param(now)])
        .map_err(sql(operation))?;
    Ok((removed, pending))
}

/// Commits `tx`, then brings the copy of the vectors in step with what it wrote.
fn commit(tx: Transaction<'_>, pending: Pending, vectors: &Mutex<VectorCache>, op: &str) -> Result<(), StoreError> {
    tx.commit().map_err(sql(op))?;
    let mut cache = vectors.lock().map_err(|_| StoreError::backend(op, "the vectors' lock is poisoned"))?;
    pending.apply(&mut cache);
    Ok(())
}

impl Store for SqliteStore {
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

    fn put_many(&self, items: Vec<PutItem>) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            let mut encoded = Vec::with_capacity(items.len());
            for item in &items {
                encoded.push(encode_namespace(&item.labels())?);
                check_key(&item.key)?;
            }
            let index = self.options.index_config();
            let asked: Vec<_> = items.iter().map(|i| (&i.value, &i.indexing, i.key.as_str())).collect();
            // Embedded before the connection is taken: a model call can take seconds.
            let embedded: Vec<Vec<Embedded>> = index::vectors_for_many(index, &asked).await?;
            let indexed = index.is_some();
            let (sweeper, vectors) = (Arc::clone(&self.sweeper), Arc::clone(&self.vectors));
            let operation = match items.as_slice() {
                [one] => format!("put {:?} in namespace {:?}", one.key, one.namespace),
                _ => format!("put {} items", items.len()),
            };
            self.call(operation.clone(), move |c, now| {
                let op = operation.as_str();
                let tx = SqliteStore::begin(c, op)?;
                let mut pending = Pending::none();
                if sweeper.due(now) {
                    pending = sweep_expired(&tx, now, op)?.1;
                }
                for ((item, namespace), embedded) in items.into_iter().zip(encoded).zip(embedded) {
                    let text = serde_json::to_string(&item.value).map_err(|e| StoreError::backend(op, e))?;
                    let ttl_ms = item.ttl.map(super::time::ttl_millis);
                    let mut upsert = tx.prepare_cached(UPSERT).map_err(sql(op))?;
                    upsert
                        .execute(params![
                            namespace,
                            item.key,
                            text,
                            ms_param(now),
                            ttl_ms.map(|t| ms_param(expiry(now, t))),
                            ttl_ms.map(ms_param)
                        ])
                        .map_err(sql(op))?;
                    pending = pending.and(sqlite_index::write(&tx, &namespace, &item.key, embedded, indexed, op)?);
                }
                commit(tx, pending, &vectors, op)
            })
            .await
        }
        .boxed()
    }

    fn get<'a>(&'a self, namespace: &'a [&'a str], key: &'a str) -> BoxFuture<'a, Result<Option<Item>, StoreError>> {
        let encoded = match encode_namespace(namespace).and_then(|ns| check_key(key).map(|()| ns)) {
            Ok(encoded) => encoded,
            Err(e) => return async move { Err(e) }.boxed(),
        };
        let key = key.to_owned();
        let refreshes = self.options.refreshes();
        let operation = format!("read {key:?} in namespace {namespace:?}");
        self.call(operation.clone(), move |c, now| {
            let op = operation.as_str();
            let tx = if refreshes { SqliteStore::begin(c, op)? } else { c.transaction().map_err(sql(op))? };
            let row = tx
                .query_row(
                    &format!("{SELECT_ITEM} WHERE namespace = ?1 AND key = ?2 AND (expires_at_ms IS NULL OR expires_at_ms > ?3)"),
                    params![encoded, key, ms_param(now)],
                    |r| Ok(item_row(r)),
                )
                .optional()
                .map_err(sql(op))?;
            let Some(stored) = row else { return Ok(None) };
            let mut stored = stored?;
            if refreshes {
                refresh(&tx, &mut stored, now, op)?;
            }
            tx.commit().map_err(sql(op))?;
            Ok(Some(stored.item))
        })
    }

    fn delete<'a>(&'a self, namespace: &'a [&'a str], key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        let encoded = match encode_namespace(namespace).and_then(|ns| check_key(key).map(|()| ns)) {
            Ok(encoded) => encoded,
            Err(e) => return async move { Err(e) }.boxed(),
        };
        let (key, sweeper, vectors) = (key.to_owned(), Arc::clone(&self.sweeper), Arc::clone(&self.vectors));
        let operation = format!("deleted {key:?} in namespace {namespace:?}");
        self.call(operation.clone(), move |c, now| {
            let op = operation.as_str();
            let tx = SqliteStore::begin(c, op)?;
            tx.execute("DELETE FROM store_items WHERE namespace = ?1 AND key = ?2", params![encoded, key])
                .map_err(sql(op))?;
            let mut pending = sqlite_index::write(&tx, &encoded, &key, Vec::new(), false, op)?;
            if sweeper.due(now) {
                pending = pending.and(sweep_expired(&tx, now, op)?.1);
            }
            commit(tx, pending, &vectors, op)
        })
    }

    fn search<'a>(&'a self, prefix: &'a [&'a str], query: SearchQuery) -> BoxFuture<'a, Result<Vec<Item>, StoreError>> {
        self.search_with(prefix, query, self.options.refreshes())
    }

    fn search_unrefreshed<'a>(
        &'a self,
        prefix: &'a [&'a str],
        query: SearchQuery,
    ) -> BoxFuture<'a, Result<Vec<Item>, StoreError>> {
        self.search_with(prefix, query, false)
    }

    fn list_namespaces<'a>(
        &'a self,
        prefix: &'a [&'a str],
        max_depth: Option<usize>,
    ) -> BoxFuture<'a, Result<Vec<Vec<String>>, StoreError>> {
        let prefix_encoded = match encode_prefix(prefix).and_then(|p| check_depth(max_depth).map(|()| p)) {
            Ok(p) => p,
            Err(e) => return async move { Err(e) }.boxed(),
        };
        let operation = format!("listed the namespaces under {prefix:?}");
        self.call(operation.clone(), move |c, now| {
            let op = operation.as_str();
            let mut statement = c
                .prepare_cached(&format!(
                    "SELECT DISTINCT namespace FROM store_items WHERE {LIVE_UNDER_PREFIX} ORDER BY namespace"
                ))
                .map_err(sql(op))?;
            let (p, low, high) = prefix_params(&prefix_encoded);
            let rows = statement
                .query_map(params![ms_param(now), p, low, high], |r| r.get::<_, String>(0))
                .map_err(sql(op))?;
            let mut namespaces = Vec::new();
            for row in rows {
                let namespace = row.map_err(|e| StoreError::Corrupt {
                    namespace: "<unreadable>".into(),
                    key: "<any>".into(),
                    field: "namespace".into(),
                    reason: e.to_string(),
                })?;
                if decode_namespace(&namespace).is_none() {
                    return Err(StoreError::Corrupt {
                        namespace,
                        key: "<any>".into(),
                        field: "namespace".into(),
                        reason: "it has an empty label".into(),
                    });
                }
                namespaces.push(namespace);
            }
            Ok(cut_namespaces(namespaces.iter().map(String::as_str), max_depth))
        })
    }

    fn sweep(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        let (sweeper, vectors) = (Arc::clone(&self.sweeper), Arc::clone(&self.vectors));
        self.call("swept expired items".into(), move |c, now| {
            let op = "swept expired items";
            let tx = SqliteStore::begin(c, op)?;
            let (removed, pending) = sweep_expired(&tx, now, op)?;
            commit(tx, pending, &vectors, op)?;
            sweeper.swept(now);
            Ok(removed)
        })
    }
}
