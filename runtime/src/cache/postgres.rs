//! The PostgreSQL cache: entries shared by every process connected to one database.

use super::{Cache, CacheError};
use crate::checkpoint::pool::{DbError, pool_for};
use crate::error::BoxError;
use deadpool_postgres::{Object, Pool, PoolError};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::time::Duration;
use tokio_postgres::types::ToSql;

/// The server's time, in milliseconds since the Unix epoch, at the start of the statement: every
/// expiry is set and checked by the server's clock, never a client's.
macro_rules! now_ms {
    () => {
        "floor(extract(epoch FROM statement_timestamp()) * 1000)::bigint"
    };
}

/// The cache's table, and the index that finds a namespace's entries with a time to live.
/// Namespaces and keys are `COLLATE "C"`, compared byte by byte as in the other backends.
const SCHEMA: &str = r#"
CREATE TABLE IF NOT EXISTS graphwright_cache (
    namespace text COLLATE "C" NOT NULL,
    key text COLLATE "C" NOT NULL,
    value bytea NOT NULL,
    expires_at_ms bigint,
    PRIMARY KEY (namespace, key)
);
CREATE INDEX IF NOT EXISTS graphwright_cache_expiry
    ON graphwright_cache (namespace, expires_at_ms) WHERE expires_at_ms IS NOT NULL;
"#;

/// First key of the two-key advisory lock taken while the table is set up; the second is a
/// hash of the schema. `PostgresSaver` uses `0x4757_0001` to `0x4757_0003`, `PostgresStore`
/// `0x4757_0004`.
const SETUP_LOCK: i32 = 0x4757_0005;

/// The live entry of namespace $1, key $2.
const GET: &str = concat!(
    "SELECT value FROM graphwright_cache WHERE namespace = $1 AND key = $2 AND (expires_at_ms IS NULL OR expires_at_ms > ",
    now_ms!(),
    ")"
);

/// Deletes the expired entries of namespace $1, passing over those another statement holds (one
/// storing an entry, or another sweep), so that sweeps never wait on, or deadlock with, each
/// other or a store.
const SWEEP: &str = concat!(
    "DELETE FROM graphwright_cache WHERE (namespace, key) IN (SELECT namespace, key FROM graphwright_cache \
     WHERE namespace = $1 AND expires_at_ms <= ",
    now_ms!(),
    " FOR UPDATE SKIP LOCKED)"
);

/// Stores value $3 under namespace $1, key $2, for $4 milliseconds (forever when NULL).
const UPSERT: &str = concat!(
    "INSERT INTO graphwright_cache (namespace, key, value, expires_at_ms) VALUES ($1, $2, $3, ",
    now_ms!(),
    " + $4::bigint) ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, \
     expires_at_ms = excluded.expires_at_ms"
);

/// The longest time to live counted, in milliseconds (about 146 million years): added to the
/// server's time it stays within `bigint`.
const MAX_TTL_MS: i64 = i64::MAX / 2;

/// Keeps entries in PostgreSQL, for many processes sharing one cache through one database.
///
/// The semantics are [`SqliteCache`](super::SqliteCache)'s: an expired entry is never served,
/// a store sweeps its namespace's expired entries, and a clear deletes the namespaces named or
/// every entry. Expiry is decided by the **server's** clock (`statement_timestamp()`, in
/// milliseconds since the Unix epoch), when an entry is stored and when it is read, so
/// processes whose clocks disagree still agree on which entries are live.
///
/// Entries live in a table of their own, `graphwright_cache`, beside `PostgresSaver`'s and
/// `PostgresStore`'s, so all of them can use the same database; values are `bytea`. Each call
/// is one statement (a store is two, a sweep and the store itself, sent together), so any
/// number of processes may share the table. On connecting, the cache creates its table in the
/// current schema (`search_path`) if it is missing, under an advisory lock, so processes
/// starting at once do not race. The table holds only entries that can be recomputed, so it
/// has no schema version: a later layout would take a table of another name.
///
/// PostgreSQL `text` cannot hold U+0000, so a namespace or key containing it is refused with
/// an error before anything is sent.
///
/// Connections come from a [`deadpool_postgres`](crate::checkpoint::deadpool_postgres) pool
/// over `tokio-postgres`, as for `PostgresSaver`; [`PostgresCache::from_pool`] takes one built
/// elsewhere (with TLS, or a size of its own), for example the pool a saver already uses.
///
/// ```no_run
/// use graphwright::cache::{Cache, PostgresCache};
/// use std::time::Duration;
///
/// # async fn run() -> Result<(), Box<dyn std::error::Error>> {
/// let cache = PostgresCache::connect("postgres://agents@db.internal/agents").await?;
/// cache.set("triage:classify", "input-1", b"urgent".to_vec(), Some(Duration::from_hours(1))).await?;
///
/// // Any process connected to the same database sees the entry at once.
/// let other = PostgresCache::connect("postgres://agents@db.internal/agents").await?;
/// assert_eq!(other.get("triage:classify", "input-1").await?, Some(b"urgent".to_vec()));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct PostgresCache {
    pool: Pool,
}

impl std::fmt::Debug for PostgresCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresCache").field("pool", &self.pool.status()).finish()
    }
}

impl PostgresCache {
    /// Connects to the database at `url` (`postgres://user@host:port/db`, or `host=... dbname=...`)
    /// without TLS, with a pool of the default size, and creates the cache's table if it is
    /// missing. For TLS or other pool settings, build the pool and call
    /// [`PostgresCache::from_pool`].
    pub async fn connect(url: &str) -> Result<Self, CacheError> {
        // The URL may hold a password: the error names the step, not the URL.
        let pool = pool_for(url).map_err(|(step, e)| {
            // tokio-postgres keeps what is wrong with the string in the error's source.
            let e = match e.downcast::<tokio_postgres::Error>() {
                Ok(e) => BoxError::from(DbError::from(*e)),
                Err(e) => e,
            };
            CacheError::backend(format!("connect to PostgreSQL ({step})"), e)
        })?;
        Self::from_pool(pool).await
    }

    /// Uses a pool built elsewhere (with TLS, a size or timeouts of its own), and creates the
    /// cache's table, if it is missing, in the schema its connections see.
    pub async fn from_pool(pool: Pool) -> Result<Self, CacheError> {
        let cache = Self { pool };
        cache.set_up().await?;
        Ok(cache)
    }

    /// Creates the table if it is missing, in one transaction under an advisory lock: two
    /// `CREATE TABLE IF NOT EXISTS` at once can both find the table missing, and one then fails.
    async fn set_up(&self) -> Result<(), CacheError> {
        let op = "set up the cache table";
        let mut client = self.client(op).await?;
        let tx = client.transaction().await.map_err(pg(op))?;
        tx.execute("SELECT pg_advisory_xact_lock($1, hashtext(coalesce(current_schema(), '')))", &[&SETUP_LOCK])
            .await
            .map_err(pg(op))?;
        tx.batch_execute(SCHEMA).await.map_err(pg(op))?;
        tx.commit().await.map_err(pg(op))
    }

    /// A connection from the pool.
    async fn client(&self, operation: &str) -> Result<Object, CacheError> {
        self.pool.get().await.map_err(|e| match e {
            // Named with its cause ("Connection refused"), which the pool's own text leaves out.
            PoolError::Backend(e) => CacheError::backend(operation.to_owned(), DbError::from(e)),
            e => CacheError::backend(operation.to_owned(), e),
        })
    }
}

fn pg(operation: &str) -> impl Fn(tokio_postgres::Error) -> CacheError + '_ {
    move |e| CacheError::backend(operation.to_owned(), DbError::from(e))
}

/// Refuses a namespace or key PostgreSQL `text` cannot hold, naming it, for `operation`.
fn check_text(operation: &str, what: &str, text: &str) -> Result<(), CacheError> {
    if text.contains('\0') {
        return Err(CacheError::backend(
            operation.to_owned(),
            format!("the {what} contains U+0000, which PostgreSQL text cannot hold; remove it from the {what}"),
        ));
    }
    Ok(())
}

/// The namespaces of a `clear`, as its error names them.
fn describe_namespaces(namespaces: &[String]) -> String {
    let quoted: Vec<String> = namespaces.iter().map(|n| format!("`{n}`")).collect();
    quoted.join(", ")
}

impl Cache for PostgresCache {
    fn get<'a>(&'a self, namespace: &'a str, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, CacheError>> {
        async move {
            let op = &format!("read entry `{key}` of namespace `{namespace}`");
            check_text(op, "namespace", namespace)?;
            check_text(op, "key", key)?;
            let client = self.client(op).await?;
            let statement = client.prepare_cached(GET).await.map_err(pg(op))?;
            let row = client.query_opt(&statement, &[&namespace, &key]).await.map_err(pg(op))?;
            row.map(|row| row.try_get::<_, Vec<u8>>(0)).transpose().map_err(pg(op))
        }
        .boxed()
    }

    fn set<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), CacheError>> {
        async move {
            let op = &format!("store entry `{key}` of namespace `{namespace}`");
            check_text(op, "namespace", namespace)?;
            check_text(op, "key", key)?;
            let ttl_ms = ttl.map(|ttl| i64::try_from(ttl.as_millis()).unwrap_or(MAX_TTL_MS).min(MAX_TTL_MS));
            let client = self.client(op).await?;
            let (sweep, upsert) =
                futures::try_join!(client.prepare_cached(SWEEP), client.prepare_cached(UPSERT)).map_err(pg(op))?;
            // Sent together, and run in this order, each in a transaction of its own: the
            // sweep's row locks are let go before the store takes its own.
            let sweep_params: [&(dyn ToSql + Sync); 1] = [&namespace];
            let upsert_params: [&(dyn ToSql + Sync); 4] = [&namespace, &key, &value, &ttl_ms];
            futures::try_join!(client.execute(&sweep, &sweep_params), client.execute(&upsert, &upsert_params))
                .map_err(pg(op))?;
            Ok(())
        }
        .boxed()
    }

    fn clear<'a>(&'a self, namespaces: Option<&'a [String]>) -> BoxFuture<'a, Result<(), CacheError>> {
        async move {
            let op = &match namespaces {
                None => "clear every entry".to_owned(),
                Some(namespaces) => format!("clear namespaces {}", describe_namespaces(namespaces)),
            };
            if let Some(namespaces) = namespaces {
                if namespaces.is_empty() {
                    return Ok(());
                }
                for namespace in namespaces {
                    check_text(op, "namespace", namespace)?;
                }
            }
            let client = self.client(op).await?;
            match namespaces {
                None => client.execute("DELETE FROM graphwright_cache", &[]).await,
                Some(namespaces) => {
                    client.execute("DELETE FROM graphwright_cache WHERE namespace = ANY($1)", &[&namespaces]).await
                }
            }
            .map_err(pg(op))?;
            Ok(())
        }
        .boxed()
    }
}
