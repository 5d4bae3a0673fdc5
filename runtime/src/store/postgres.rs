//! The PostgreSQL store: long-term memory shared by many processes through one database.

use super::backend::Store;
use super::error::StoreError;
use super::index::{self, Indexing};
use super::item::{Item, PutItem, SEPARATOR, SearchQuery};
use super::namespace::{
    check_depth, check_key, cut_namespaces, decode_namespace, encode_namespace, encode_prefix, under,
};
use super::options::StoreOptions;
use super::postgres_index::{self, Kind, pg};
use super::rows::{Page, RawItem, Stored};
use super::sweeper::Sweeper;
use super::time::{expiry, ms_param, time_of, ttl_millis};
use crate::checkpoint::pool::pool_for;
use deadpool_postgres::{Object, Pool};
use futures::future::BoxFuture;
use futures::{FutureExt, StreamExt};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

/// The schema of the store's table this version writes and reads; stored in `graphwright_meta`
/// under `store_schema_version`, as `SqliteStore` stores its own.
const SCHEMA_VERSION: i32 = 1;

/// The store's table. Namespaces and keys are `COLLATE "C"` so that they sort byte by byte, as
/// in the other backends, whatever the database's locale: the (namespace, key) order of
/// `search` and the prefix ranges depend on it. The primary key is also the index that prefix
/// searches scan in order.
const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS graphwright_store_items (
    namespace text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    value text NOT NULL,
    created_at_ms bigint NOT NULL,
    updated_at_ms bigint NOT NULL,
    expires_at_ms bigint,
    ttl_ms bigint,
    PRIMARY KEY (namespace, key)
);
CREATE INDEX IF NOT EXISTS graphwright_store_items_expiry
    ON graphwright_store_items (expires_at_ms) WHERE expires_at_ms IS NOT NULL;
"#;

/// First key of the two-key advisory lock taken while the tables are set up; the second is a
/// hash of the schema. `PostgresSaver` uses `0x4757_0001` to `0x4757_0003`.
const SETUP_LOCK: i32 = 0x4757_0004;

/// The columns every read selects, in the order [`item_row`] reads them.
const SELECT_ITEM: &str = "SELECT namespace, key, value, created_at_ms, updated_at_ms, expires_at_ms, ttl_ms \
     FROM graphwright_store_items";

/// Live at the time given as $1.
const LIVE: &str = "(expires_at_ms IS NULL OR expires_at_ms > $1)";

/// Under the prefix given as $2, whose namespaces sort from $3 up to $4 (see [`prefix_bounds`]).
const UNDER_PREFIX: &str = "(namespace = $2 OR (namespace >= $3 AND namespace < $4))";

const UPSERT: &str = "INSERT INTO graphwright_store_items AS s \
     (namespace, key, value, created_at_ms, updated_at_ms, expires_at_ms, ttl_ms) \
     VALUES ($1, $2, $3, $4, $4, $5, $6) \
     ON CONFLICT (namespace, key) DO UPDATE SET \
       value = excluded.value, \
       created_at_ms = CASE WHEN s.expires_at_ms IS NOT NULL AND s.expires_at_ms <= excluded.updated_at_ms \
         THEN excluded.created_at_ms ELSE s.created_at_ms END, \
       updated_at_ms = excluded.updated_at_ms, \
       expires_at_ms = excluded.expires_at_ms, \
       ttl_ms = excluded.ttl_ms";

/// Restarts the time to live of the items read ($1 namespaces, $2 keys, $3 their `ttl_ms` as
/// read, $4 their new expiry), unless a write has since given one another time to live or it
/// has expired ($5 is the time): a read never revives or re-times an item it did not see.
const REFRESH: &str = "UPDATE graphwright_store_items AS s SET expires_at_ms = r.expires_at_ms \
     FROM unnest($1::text[], $2::text[], $3::bigint[], $4::bigint[]) AS r(namespace, key, ttl_ms, expires_at_ms) \
     WHERE s.namespace = r.namespace AND s.key = r.key AND s.ttl_ms = r.ttl_ms AND s.expires_at_ms > $5";

/// [`UPSERT`] for a store without an index, which also deletes vectors an earlier index left,
/// in the same statement.
const UPSERT_CLEARING: &str = "WITH cleared AS \
     (DELETE FROM graphwright_store_vectors WHERE namespace = $1 AND key = $2) ";

const SWEEP: &str = "DELETE FROM graphwright_store_items WHERE expires_at_ms IS NOT NULL AND expires_at_ms <= $1";

/// Keeps items in PostgreSQL, for many processes sharing one long-term memory.
///
/// The semantics are [`SqliteStore`](super::SqliteStore)'s: the same TTL, refresh on read and
/// sweeping, the same search order, filters and paging, the same namespace listing, the same
/// errors for invalid names. Filters are applied in Rust after PostgreSQL has selected the live
/// items under the prefix, so their rules are exactly [`Filter`](super::Filter)'s in every
/// backend. Times are milliseconds since the Unix epoch (`bigint`), taken from the store's
/// [`Clock`](super::Clock), not the server's.
///
/// Items live in a table of their own, `graphwright_store_items`, beside `PostgresSaver`'s, so
/// both can use the same database. Values are stored as JSON **text**, not `jsonb`: `jsonb`
/// cannot hold a string containing U+0000, which a `serde_json::Value` can, and it rewrites
/// what it stores (duplicate keys dropped, numbers normalised), while text gives back exactly
/// what was put, as SQLite does; `jsonb`'s operators would not be used, since the filters run
/// in Rust. A stored value that is not JSON is therefore possible (written by hand or by
/// another program), and is [`StoreError::Corrupt`], as is a NULL in a column that needs a
/// value: a damaged row is reported, never read as a default.
///
/// Several processes may share the database: a put is one `INSERT .. ON CONFLICT DO UPDATE`
/// statement, a delete one `DELETE`, and a read's refresh of a time to live one `UPDATE` that
/// leaves alone an item that has expired, or been given another time to live, since it was
/// read. Every store sweeps expired items on its own schedule; two sweeps at once delete each
/// item once.
///
/// On connecting, the store creates its table in the current schema (`search_path`) under an
/// advisory lock, so processes starting at once do not race, and records its schema version in
/// `graphwright_meta`; a database whose store schema is newer than this version reads is
/// refused. PostgreSQL `text` cannot hold U+0000, so namespace labels and keys containing it
/// are refused as invalid names by this store, before anything is sent.
///
/// Connections come from a [`deadpool_postgres`](crate::checkpoint::deadpool_postgres) pool
/// over `tokio-postgres`, as for `PostgresSaver`; [`PostgresStore::from_pool`] takes one built
/// elsewhere (with TLS, or a size of its own).
///
/// ```no_run
/// use graphwright::store::{PostgresStore, SearchQuery, Store, StoreOptions};
/// use serde_json::json;
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let options = StoreOptions::new().refresh_on_read(true);
/// let store = PostgresStore::connect_with("postgres://agents@db.internal/agents", options).await?;
/// store.put(&["users", "u1"], "language", json!("nb"), Some(Duration::from_hours(24 * 90))).await?;
///
/// // Any process connected to the same database sees the item at once.
/// let other = PostgresStore::connect("postgres://agents@db.internal/agents").await?;
/// let found = other.search(&["users"], SearchQuery::new()).await?;
/// assert_eq!(found[0].value, json!("nb"));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresStore {
    pool: Pool,
    options: Arc<StoreOptions>,
    sweeper: Arc<Sweeper>,
    /// How the vectors' table holds vectors.
    kind: Kind,
}

impl std::fmt::Debug for PostgresStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresStore")
            .field("pool", &self.pool.status())
            .field("options", &self.options)
            .finish_non_exhaustive()
    }
}

impl PostgresStore {
    /// This store with its values encrypted at rest under `keys` (see
    /// [`Encrypted`](crate::encryption::Encrypted)); items stored before stay readable.
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
        async move {
            let prefix_encoded = prefix_address(prefix)?;
            let op = &format!("searched namespace prefix {prefix:?}");
            if let Some(text) = &query.query {
                return self.search_by_meaning(&prefix_encoded, text, &query, refreshes, op).await;
            }
            let now = self.options.now_ms();
            // Without a filter, the first offset + limit rows are all that is read; with one,
            // rows are read until enough have matched.
            let rows_needed =
                if query.filter.is_empty() { query.limit.map(|l| l.saturating_add(query.offset)) } else { None };
            let rows_needed = rows_needed.map(|n| i64::try_from(n).unwrap_or(i64::MAX));
            let (low, high) = prefix_bounds(&prefix_encoded);
            let now_param = ms_param(now);
            let (sql, params): (String, Vec<&(dyn ToSql + Sync)>) = if prefix_encoded.is_empty() {
                (format!("{SELECT_ITEM} WHERE {LIVE} ORDER BY namespace, key LIMIT $2"), vec![&now_param, &rows_needed])
            } else {
                (
                    format!("{SELECT_ITEM} WHERE {LIVE} AND {UNDER_PREFIX} ORDER BY namespace, key LIMIT $5"),
                    vec![&now_param, &prefix_encoded, &low, &high, &rows_needed],
                )
            };
            let client = self.client(op).await?;
            let statement = client.prepare_cached(&sql).await.map_err(pg(op))?;
            let mut page = Page::new(&query);
            {
                // Dropped before the refresh below: rows left unread in a stream still alive
                // would hold up every later reply on this connection, the refresh's included.
                let rows = client.query_raw(&statement, params).await.map_err(pg(op))?;
                let mut rows = std::pin::pin!(rows);
                while !page.full() {
                    let Some(row) = rows.next().await else { break };
                    let stored = item_row(&row.map_err(pg(op))?)?;
                    debug_assert!(under(&stored.namespace, &prefix_encoded));
                    page.offer(stored);
                }
            }
            let mut found = page.found;
            if refreshes {
                Self::refresh(&client, &mut found, now, op).await?;
            }
            Ok(found.into_iter().map(|s| s.item).collect())
        }
        .boxed()
    }

    /// A search with a query: the items best matching it first, then those without vectors in
    /// key order, filtered and paged as any search.
    async fn search_by_meaning(
        &self,
        prefix: &str,
        text: &str,
        query: &SearchQuery,
        refreshes: bool,
        op: &str,
    ) -> Result<Vec<Item>, StoreError> {
        let index = self.options.index_config().ok_or_else(|| index::no_index("search by meaning"))?;
        let wanted = postgres_index::query_param(self.kind, index.query_vector(text).await?);
        let now = ms_param(self.options.now_ms());
        let (low, high) = prefix_bounds(prefix);
        // Without a filter, the best offset + limit items are all a page needs; an item has a
        // vector per text, so as many vectors per item as the index has fields are read.
        let vectors_needed = match (query.filter.is_empty(), query.limit) {
            (true, Some(limit)) => Some(
                i64::try_from(limit.saturating_add(query.offset).saturating_mul(index.field_names().len().max(1) * 4))
                    .unwrap_or(i64::MAX),
            ),
            _ => None,
        };
        let prefixed = !prefix.is_empty();
        let client = self.client(op).await?;
        let mut page = Page::new(query);
        {
            let statement =
                client.prepare_cached(&postgres_index::ranking_sql(self.kind, prefixed)).await.map_err(pg(op))?;
            let mut params: Vec<&(dyn ToSql + Sync)> = vec![&now, &*wanted, &vectors_needed];
            if prefixed {
                params.extend([&prefix as &(dyn ToSql + Sync), &low, &high]);
            }
            let rows = client.query_raw(&statement, params).await.map_err(pg(op))?;
            let mut rows = std::pin::pin!(rows);
            while !page.full() {
                let Some(row) = rows.next().await else { break };
                let row = row.map_err(pg(op))?;
                let mut stored = item_row(&row)?;
                stored.item.score = row.try_get::<_, Option<f64>>(7).ok().flatten();
                page.offer(stored);
            }
        }
        if !page.full() {
            let unscored = format!(
                "{SELECT_ITEM} WHERE {LIVE} AND {UNDER} AND NOT EXISTS (SELECT 1 FROM graphwright_store_vectors v \
                 WHERE v.namespace = graphwright_store_items.namespace AND v.key = graphwright_store_items.key) \
                 ORDER BY namespace, key",
                UNDER = if prefixed { UNDER_PREFIX } else { "TRUE" }
            );
            let statement = client.prepare_cached(&unscored).await.map_err(pg(op))?;
            let params: Vec<&(dyn ToSql + Sync)> = if prefixed { vec![&now, &prefix, &low, &high] } else { vec![&now] };
            let rows = client.query_raw(&statement, params).await.map_err(pg(op))?;
            let mut rows = std::pin::pin!(rows);
            while !page.full() {
                let Some(row) = rows.next().await else { break };
                page.offer(item_row(&row.map_err(pg(op))?)?);
            }
        }
        let mut found = page.found;
        if refreshes {
            Self::refresh(&client, &mut found, self.options.now_ms(), op).await?;
        }
        Ok(found.into_iter().map(|s| s.item).collect())
    }

    /// Connects to the database at `url` (`postgres://user@host:port/db`, or `host=... dbname=...`)
    /// without TLS, with a pool of the default size and the default [`StoreOptions`], and sets
    /// up the store's table. For TLS or other pool settings, build the pool and call
    /// [`PostgresStore::from_pool`].
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        Self::connect_with(url, StoreOptions::default()).await
    }

    /// Connects as [`PostgresStore::connect`] does, with `options` (clock, refresh on read,
    /// sweep interval).
    pub async fn connect_with(url: &str, options: StoreOptions) -> Result<Self, StoreError> {
        // The URL may hold a password: the error names the step, not the URL.
        let pool = pool_for(url).map_err(|(step, e)| StoreError::backend(step, e))?;
        Self::from_pool(pool, options).await
    }

    /// Uses a pool built elsewhere (with TLS, a size or timeouts of its own) and `options`, and
    /// sets up the store's table in the schema its connections see.
    pub async fn from_pool(pool: Pool, options: StoreOptions) -> Result<Self, StoreError> {
        let mut store =
            Self { pool, sweeper: Arc::new(Sweeper::new(&options)), options: Arc::new(options), kind: Kind::Array };
        store.kind = store.set_up().await?;
        Ok(store)
    }

    /// Creates the tables if they are missing and checks the schema version, in one transaction
    /// under an advisory lock; returns how the vectors' table holds vectors.
    async fn set_up(&self) -> Result<Kind, StoreError> {
        let op = "set up the store tables";
        let mut client = self.client(op).await?;
        let tx = client.transaction().await.map_err(pg(op))?;
        // Taken before anything else, so `CREATE TABLE IF NOT EXISTS` never races either.
        tx.execute("SELECT pg_advisory_xact_lock($1, hashtext(coalesce(current_schema(), '')))", &[&SETUP_LOCK])
            .await
            .map_err(pg(op))?;
        tx.batch_execute("CREATE TABLE IF NOT EXISTS graphwright_meta (key text PRIMARY KEY, value integer NOT NULL)")
            .await
            .map_err(pg(op))?;
        let version: Option<i32> = tx
            .query_opt("SELECT value FROM graphwright_meta WHERE key = 'store_schema_version'", &[])
            .await
            .and_then(|row| row.map(|r| r.try_get(0)).transpose())
            .map_err(pg(op))?;
        match version {
            None => {
                tx.batch_execute(SCHEMA).await.map_err(pg(op))?;
                tx.execute(
                    "INSERT INTO graphwright_meta (key, value) VALUES ('store_schema_version', $1)",
                    &[&SCHEMA_VERSION],
                )
                .await
                .map_err(pg(op))?;
            }
            Some(SCHEMA_VERSION) => {}
            Some(other) => {
                // Dropping the transaction rolls it back: nothing of the newer schema is touched.
                return Err(StoreError::backend(
                    "checked the store schema version",
                    format!(
                        "the database has store schema version {other}; this version of graphwright reads \
                         {SCHEMA_VERSION}"
                    ),
                ));
            }
        }
        let kind = postgres_index::set_up(&tx, self.options.index_config().map(index::IndexConfig::dims), op).await?;
        tx.commit().await.map_err(pg(op))?;
        Ok(kind)
    }

    /// A connection from the pool.
    async fn client(&self, operation: &str) -> Result<Object, StoreError> {
        self.pool.get().await.map_err(|e| StoreError::backend(operation.to_owned(), e))
    }

    /// Deletes the expired items at `now` on `client`; returns how many.
    async fn sweep_on(client: &Object, now: u64, op: &str) -> Result<usize, StoreError> {
        let statement = client.prepare_cached(SWEEP).await.map_err(pg(op))?;
        let removed = client.execute(&statement, &[&ms_param(now)]).await.map_err(pg(op))?;
        Ok(usize::try_from(removed).unwrap_or(usize::MAX))
    }

    /// Restarts the time to live of the items in `found` that have one, at `now`, in the table
    /// and in the items returned.
    async fn refresh(client: &Object, found: &mut [Stored], now: u64, op: &str) -> Result<(), StoreError> {
        let mut namespaces = Vec::new();
        let mut keys = Vec::new();
        let mut ttls = Vec::new();
        let mut new_expiries = Vec::new();
        for stored in found.iter_mut() {
            if let Some(ttl) = stored.ttl_ms {
                let expires = expiry(now, ttl);
                namespaces.push(stored.namespace.as_str());
                keys.push(stored.item.key.as_str());
                ttls.push(ms_param(ttl));
                new_expiries.push(ms_param(expires));
                stored.item.expires_at = Some(time_of(expires));
            }
        }
        if namespaces.is_empty() {
            return Ok(());
        }
        let statement = client.prepare_cached(REFRESH).await.map_err(pg(op))?;
        client
            .execute(&statement, &[&namespaces, &keys, &ttls, &new_expiries, &ms_param(now)])
            .await
            .map_err(pg(op))?;
        Ok(())
    }
}

/// The bounds of the namespaces strictly under the stored prefix `prefix`: they start with
/// prefix + U+001F, so they sort from that up to prefix + U+0020, the next code point (one byte
/// each in UTF-8, and compared byte by byte under `COLLATE "C"`).
fn prefix_bounds(prefix: &str) -> (String, String) {
    (format!("{prefix}{SEPARATOR}"), format!("{prefix}\u{20}"))
}

/// Refuses U+0000 in the labels of `namespace` and in `key`: PostgreSQL `text` cannot hold it.
fn check_nul(namespace: &[&str], key: Option<&str>) -> Result<(), StoreError> {
    if let Some(index) = namespace.iter().position(|label| label.contains('\0')) {
        return Err(StoreError::InvalidNamespace {
            namespace: namespace.iter().map(|l| (*l).to_owned()).collect(),
            reason: format!(
                "label {index} contains U+0000, which PostgreSQL text cannot hold; remove it from the label"
            ),
        });
    }
    if let Some(key) = key.filter(|key| key.contains('\0')) {
        return Err(StoreError::InvalidKey {
            key: key.to_owned(),
            reason: "it contains U+0000, which PostgreSQL text cannot hold; remove it from the key".to_owned(),
        });
    }
    Ok(())
}

/// The stored namespace of an item, once `namespace` and `key` are checked.
fn item_address(namespace: &[&str], key: &str) -> Result<String, StoreError> {
    let encoded = encode_namespace(namespace)?;
    check_key(key)?;
    check_nul(namespace, Some(key))?;
    Ok(encoded)
}

/// The stored form of a search or listing prefix, once checked.
fn prefix_address(prefix: &[&str]) -> Result<String, StoreError> {
    let encoded = encode_prefix(prefix)?;
    check_nul(prefix, None)?;
    Ok(encoded)
}

/// Reads an item row, naming the column that does not hold what it should.
fn item_row(row: &Row) -> Result<Stored, StoreError> {
    let text = |at: usize| row.try_get::<_, Option<String>>(at).map_err(|e| e.to_string());
    let time = |at: usize| row.try_get::<_, Option<i64>>(at).map_err(|e| e.to_string());
    RawItem { namespace: text(0), key: text(1), value: text(2), times: [time(3), time(4), time(5), time(6)] }.decode()
}

impl Store for PostgresStore {
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
        async move {
            let encoded = item_address(namespace, key)?;
            let op = &format!("put {key:?} in namespace {namespace:?}");
            let text = serde_json::to_string(&value).map_err(|e| StoreError::backend(op.clone(), e))?;
            if self.options.index_config().is_some() {
                return self.put_many(vec![PutItem::new(namespace, key, value).indexing(indexing).with_ttl(ttl)]).await;
            }
            // Refuses fields to embed, which a store without an index cannot.
            index::vectors_for_many(None, &[(&value, &indexing, key)]).await?;
            let now = self.options.now_ms();
            let ttl_ms = ttl.map(ttl_millis);
            let client = self.client(op).await?;
            if self.sweeper.due(now) {
                Self::sweep_on(&client, now, op).await?;
            }
            let (now_param, expires, ttl_param) =
                (ms_param(now), ttl_ms.map(|t| ms_param(expiry(now, t))), ttl_ms.map(ms_param));
            // One statement, as without vectors: it also clears vectors an earlier index left.
            let statement = client.prepare_cached(&format!("{UPSERT_CLEARING}{UPSERT}")).await.map_err(pg(op))?;
            client
                .execute(&statement, &[&encoded, &key, &text, &now_param, &expires, &ttl_param])
                .await
                .map_err(pg(op))?;
            Ok(())
        }
        .boxed()
    }

    fn put_many(&self, items: Vec<PutItem>) -> BoxFuture<'_, Result<(), StoreError>> {
        async move {
            let mut rows = Vec::with_capacity(items.len());
            for item in &items {
                let encoded = item_address(&item.labels(), &item.key)?;
                let text = serde_json::to_string(&item.value)
                    .map_err(|e| StoreError::backend(format!("put {:?}", item.key), e))?;
                rows.push((encoded, text));
            }
            let op = &match items.as_slice() {
                [one] => format!("put {:?} in namespace {:?}", one.key, one.namespace),
                _ => format!("put {} items", items.len()),
            };
            let asked: Vec<_> = items.iter().map(|i| (&i.value, &i.indexing, i.key.as_str())).collect();
            // Embedded before a connection is taken: a model call can take seconds.
            let embedded = index::vectors_for_many(self.options.index_config(), &asked).await?;
            let now = self.options.now_ms();
            let mut client = self.client(op).await?;
            if self.sweeper.due(now) {
                Self::sweep_on(&client, now, op).await?;
            }
            let tx = client.transaction().await.map_err(pg(op))?;
            let statement = tx.prepare_cached(&format!("{UPSERT_CLEARING}{UPSERT}")).await.map_err(pg(op))?;
            let now_param = ms_param(now);
            for ((item, (encoded, text)), embedded) in items.iter().zip(&rows).zip(embedded) {
                let ttl_ms = item.ttl.map(ttl_millis);
                let (expires, ttl_param) = (ttl_ms.map(|t| ms_param(expiry(now, t))), ttl_ms.map(ms_param));
                tx.execute(&statement, &[encoded, &item.key, text, &now_param, &expires, &ttl_param])
                    .await
                    .map_err(pg(op))?;
                if !embedded.is_empty() {
                    postgres_index::write(&tx, self.kind, encoded, &item.key, embedded, op).await?;
                }
            }
            tx.commit().await.map_err(pg(op))
        }
        .boxed()
    }

    fn get<'a>(&'a self, namespace: &'a [&'a str], key: &'a str) -> BoxFuture<'a, Result<Option<Item>, StoreError>> {
        async move {
            let encoded = item_address(namespace, key)?;
            let op = &format!("read {key:?} in namespace {namespace:?}");
            let now = self.options.now_ms();
            let client = self.client(op).await?;
            let statement = client
                .prepare_cached(&format!("{SELECT_ITEM} WHERE {LIVE} AND namespace = $2 AND key = $3"))
                .await
                .map_err(pg(op))?;
            let row = client.query_opt(&statement, &[&ms_param(now), &encoded, &key]).await.map_err(pg(op))?;
            let Some(row) = row else { return Ok(None) };
            let mut found = [item_row(&row)?];
            if self.options.refreshes() {
                Self::refresh(&client, &mut found, now, op).await?;
            }
            let [stored] = found;
            Ok(Some(stored.item))
        }
        .boxed()
    }

    fn delete<'a>(&'a self, namespace: &'a [&'a str], key: &'a str) -> BoxFuture<'a, Result<(), StoreError>> {
        async move {
            let encoded = item_address(namespace, key)?;
            let op = &format!("deleted {key:?} in namespace {namespace:?}");
            let now = self.options.now_ms();
            let client = self.client(op).await?;
            let statement = client
                .prepare_cached("DELETE FROM graphwright_store_items WHERE namespace = $1 AND key = $2")
                .await
                .map_err(pg(op))?;
            client.execute(&statement, &[&encoded, &key]).await.map_err(pg(op))?;
            if self.sweeper.due(now) {
                Self::sweep_on(&client, now, op).await?;
            }
            Ok(())
        }
        .boxed()
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
        async move {
            let prefix_encoded = prefix_address(prefix)?;
            check_depth(max_depth)?;
            let op = &format!("listed the namespaces under {prefix:?}");
            let now = ms_param(self.options.now_ms());
            let (low, high) = prefix_bounds(&prefix_encoded);
            let client = self.client(op).await?;
            let rows = if prefix_encoded.is_empty() {
                let sql =
                    format!("SELECT DISTINCT namespace FROM graphwright_store_items WHERE {LIVE} ORDER BY namespace");
                let statement = client.prepare_cached(&sql).await.map_err(pg(op))?;
                client.query(&statement, &[&now]).await
            } else {
                let sql = format!(
                    "SELECT DISTINCT namespace FROM graphwright_store_items WHERE {LIVE} AND {UNDER_PREFIX} \
                     ORDER BY namespace"
                );
                let statement = client.prepare_cached(&sql).await.map_err(pg(op))?;
                client.query(&statement, &[&now, &prefix_encoded, &low, &high]).await
            }
            .map_err(pg(op))?;
            let mut namespaces = Vec::with_capacity(rows.len());
            for row in rows {
                let corrupt = |namespace: String, reason: String| StoreError::Corrupt {
                    namespace,
                    key: "<any>".into(),
                    field: "namespace".into(),
                    reason,
                };
                let namespace = match row.try_get::<_, Option<String>>(0) {
                    Ok(Some(namespace)) => namespace,
                    Ok(None) => return Err(corrupt("<unreadable>".into(), "it is NULL".into())),
                    Err(e) => return Err(corrupt("<unreadable>".into(), e.to_string())),
                };
                if decode_namespace(&namespace).is_none() {
                    return Err(corrupt(namespace, "it has an empty label".into()));
                }
                namespaces.push(namespace);
            }
            Ok(cut_namespaces(namespaces.iter().map(String::as_str), max_depth))
        }
        .boxed()
    }

    fn sweep(&self) -> BoxFuture<'_, Result<usize, StoreError>> {
        async move {
            let op = "swept expired items";
            let now = self.options.now_ms();
            let client = self.client(op).await?;
            let removed = Self::sweep_on(&client, now, op).await?;
            self.sweeper.swept(now);
            Ok(removed)
        }
        .boxed()
    }
}
