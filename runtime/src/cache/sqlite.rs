//! The SQLite cache: entries in one file, which other caches, savers and stores may share.

use super::{Cache, CacheError};
use futures::FutureExt;
use futures::future::BoxFuture;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The cache's table, and the index that finds a namespace's entries with a time to live.
/// Not `WITHOUT ROWID`: SQLite advises against it for rows as large as cached outputs can be.
const SCHEMA: &str = "
CREATE TABLE IF NOT EXISTS graphwright_cache (
    namespace TEXT NOT NULL,
    key TEXT NOT NULL,
    value BLOB NOT NULL,
    expires_at_ms INTEGER,
    PRIMARY KEY (namespace, key)
);
CREATE INDEX IF NOT EXISTS graphwright_cache_expiry
    ON graphwright_cache (namespace, expires_at_ms) WHERE expires_at_ms IS NOT NULL;
";

/// The live entry of namespace ?1, key ?2 at the time ?3.
const GET: &str = "SELECT value FROM graphwright_cache \
     WHERE namespace = ?1 AND key = ?2 AND (expires_at_ms IS NULL OR expires_at_ms > ?3)";

/// The expired entries of namespace ?1 at the time ?2.
const SWEEP: &str = "DELETE FROM graphwright_cache WHERE namespace = ?1 AND expires_at_ms <= ?2";

const UPSERT: &str = "INSERT INTO graphwright_cache (namespace, key, value, expires_at_ms) VALUES (?1, ?2, ?3, ?4) \
     ON CONFLICT (namespace, key) DO UPDATE SET value = excluded.value, expires_at_ms = excluded.expires_at_ms";

/// How long a call waits for a lock another connection holds on the file.
const BUSY_WAIT: Duration = Duration::from_secs(5);

/// Keeps entries in one SQLite file, in a table of its own (`graphwright_cache`), so the file
/// may also hold a [`SqliteSaver`](crate::SqliteSaver)'s checkpoints and a
/// [`SqliteStore`](crate::store::SqliteStore)'s items.
///
/// Several caches, in this process or others, may open the same file and see each other's
/// entries: the file is in write-ahead-log mode (see [`sqlite_file::share`](crate::sqlite_file::share)),
/// and a call waits up to five seconds for a lock another connection holds. Every call runs on
/// tokio's blocking pool. Commits are not synced to disk one by one (`synchronous = NORMAL`):
/// a power loss may take the last entries stored, never the file's integrity, and a lost entry
/// only means the node runs again.
///
/// Times are milliseconds since the Unix epoch by this machine's clock, which every process
/// sharing the file reads. An expired entry is never served; a store sweeps its namespace's
/// expired entries. The table holds only entries that can be recomputed, so it has no schema
/// version: a later layout would take a table of another name.
///
/// ```
/// use graphwright::cache::{Cache, SqliteCache};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let dir = tempfile::tempdir()?;
/// let cache = SqliteCache::open(dir.path().join("agent.db"))?;
/// cache.set("triage:classify", "input-1", b"urgent".to_vec(), Some(Duration::from_secs(60))).await?;
///
/// // Another cache on the same file, as in another process, sees the entry.
/// let other = SqliteCache::open(dir.path().join("agent.db"))?;
/// assert_eq!(other.get("triage:classify", "input-1").await?, Some(b"urgent".to_vec()));
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SqliteCache {
    connection: Arc<Mutex<Connection>>,
    /// The file's path, for errors and `Debug`.
    path: Arc<str>,
}

impl std::fmt::Debug for SqliteCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteCache").field("path", &self.path).finish_non_exhaustive()
    }
}

impl SqliteCache {
    /// Opens (or creates) the database at `path` and the cache's table.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, CacheError> {
        let path = path.as_ref();
        let connection = Connection::open(path)
            .map_err(|e| CacheError::backend(format!("open the cache file `{}`", path.display()), e))?;
        Self::set_up(connection, path.display().to_string().into())
    }

    /// Uses an open connection (for example one opened with flags of its own) and creates the
    /// cache's table in its main database.
    pub fn from_connection(connection: Connection) -> Result<Self, CacheError> {
        let path = match connection.path() {
            Some(path) if !path.is_empty() => path.into(),
            _ => ":memory:".into(),
        };
        Self::set_up(connection, path)
    }

    /// Shares the file of `connection` (named `path` in errors) and creates the cache's table.
    fn set_up(connection: Connection, path: Arc<str>) -> Result<Self, CacheError> {
        let setup = |c: &Connection| -> rusqlite::Result<()> {
            crate::sqlite_file::share(c, BUSY_WAIT)?;
            c.pragma_update(None, "synchronous", "NORMAL")?;
            c.execute_batch(SCHEMA)
        };
        setup(&connection).map_err(|e| CacheError::backend(format!("set up the cache table in `{path}`"), e))?;
        Ok(Self { connection: Arc::new(Mutex::new(connection)), path })
    }

    /// Runs `f` on the connection on the blocking pool, with the current time in milliseconds;
    /// its error is reported as failing `operation`.
    fn call<T, F>(&self, operation: String, f: F) -> BoxFuture<'static, Result<T, CacheError>>
    where
        T: Send + 'static,
        F: FnOnce(&mut Connection, i64) -> rusqlite::Result<T> + Send + 'static,
    {
        let connection = Arc::clone(&self.connection);
        let path = Arc::clone(&self.path);
        async move {
            let done = tokio::task::spawn_blocking(move || {
                // A panic while the lock was held rolled back its transaction as it unwound
                // (a `Transaction` rolls back on drop), so the connection is fit to use.
                let mut connection = connection.lock().unwrap_or_else(PoisonError::into_inner);
                f(&mut connection, now_ms()).map_err(|e| CacheError::backend(operation, e))
            })
            .await;
            done.map_err(|e| CacheError::backend(format!("run a call on the cache file `{path}`"), e))?
        }
        .boxed()
    }
}

/// Milliseconds since the Unix epoch by the system clock (0 before it).
fn now_ms() -> i64 {
    let since = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default();
    i64::try_from(since.as_millis()).unwrap_or(i64::MAX)
}

/// When an entry stored at `now_ms` for `ttl` expires.
fn expiry(now_ms: i64, ttl: Duration) -> i64 {
    now_ms.saturating_add(i64::try_from(ttl.as_millis()).unwrap_or(i64::MAX))
}

/// The namespaces of a `clear`, as its error names them.
fn describe_namespaces(namespaces: &[String]) -> String {
    let quoted: Vec<String> = namespaces.iter().map(|n| format!("`{n}`")).collect();
    quoted.join(", ")
}

impl Cache for SqliteCache {
    fn get<'a>(&'a self, namespace: &'a str, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, CacheError>> {
        let (namespace, key) = (namespace.to_owned(), key.to_owned());
        let operation = format!("read entry `{key}` of namespace `{namespace}`");
        self.call(operation, move |c, now| {
            c.prepare_cached(GET)?.query_row(params![namespace, key, now], |row| row.get::<_, Vec<u8>>(0)).optional()
        })
    }

    fn set<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), CacheError>> {
        let (namespace, key) = (namespace.to_owned(), key.to_owned());
        let operation = format!("store entry `{key}` of namespace `{namespace}`");
        self.call(operation, move |c, now| {
            let expires = ttl.map(|ttl| expiry(now, ttl));
            // `IMMEDIATE`: the transaction writes, so it takes the write lock up front rather
            // than fail to upgrade a read lock another writer got first.
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            tx.prepare_cached(SWEEP)?.execute(params![namespace, now])?;
            tx.prepare_cached(UPSERT)?.execute(params![namespace, key, value, expires])?;
            tx.commit()
        })
    }

    fn clear<'a>(&'a self, namespaces: Option<&'a [String]>) -> BoxFuture<'a, Result<(), CacheError>> {
        let namespaces = namespaces.map(<[String]>::to_vec);
        let operation = match &namespaces {
            None => "clear every entry".to_owned(),
            Some(namespaces) => format!("clear namespaces {}", describe_namespaces(namespaces)),
        };
        self.call(operation, move |c, _| {
            let tx = c.transaction_with_behavior(TransactionBehavior::Immediate)?;
            match namespaces {
                None => {
                    tx.execute("DELETE FROM graphwright_cache", [])?;
                }
                Some(namespaces) => {
                    let mut delete = tx.prepare_cached("DELETE FROM graphwright_cache WHERE namespace = ?1")?;
                    for namespace in &namespaces {
                        delete.execute([namespace])?;
                    }
                }
            }
            tx.commit()
        })
    }
}
