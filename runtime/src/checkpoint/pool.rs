//! The PostgreSQL connection pool and error text shared by every PostgreSQL backend (the
//! checkpointer, the store and the cache), below all three so none reaches into another.

use super::CheckpointError;
use crate::error::BoxError;
use deadpool_postgres::{Manager, ManagerConfig, Pool, RecyclingMethod};
use std::fmt::Write as _;
use tokio_postgres::NoTls;

/// A pool of the default size for `url`, without TLS (shared with `PostgresStore`). On failure,
/// the step that failed and why: never the URL, which may hold a password.
pub(crate) fn pool_for(url: &str) -> Result<Pool, (&'static str, BoxError)> {
    let config: tokio_postgres::Config =
        url.parse().map_err(|e| ("parsed the PostgreSQL connection string", BoxError::from(e)))?;
    let manager = Manager::from_config(config, NoTls, ManagerConfig { recycling_method: RecyclingMethod::Fast });
    Pool::builder(manager).build().map_err(|e| ("built the PostgreSQL connection pool", BoxError::from(e)))
}

/// A pool of connections to the PostgreSQL database at `url` (`postgres://user@host:port/db`),
/// without TLS and of the default size, for one pool shared by a [`PostgresSaver`](super::PostgresSaver), a
/// [`PostgresStore`](crate::store::PostgresStore) (both take it in `from_pool`) and an
/// application's own queries. No connection is made until one is needed. The error names the
/// step that failed, never the URL, which may hold a password.
///
/// ```no_run
/// use graphwright::checkpoint::{PostgresSaver, postgres_pool};
/// use graphwright::store::{PostgresStore, StoreOptions};
///
/// # async fn open() -> Result<(), Box<dyn std::error::Error>> {
/// let pool = postgres_pool("postgres://agents@127.0.0.1:5432/agents")?;
/// let saver = PostgresSaver::from_pool(pool.clone()).await?;
/// let store = PostgresStore::from_pool(pool, StoreOptions::default()).await?;
/// # let _ = (saver, store); Ok(()) }
/// ```
pub fn postgres_pool(url: &str) -> Result<Pool, CheckpointError> {
    pool_for(url).map_err(|(step, e)| CheckpointError::backend(step, e))
}

/// A PostgreSQL error whose text carries the server's reason (tokio-postgres's own says only
/// "db error" and keeps the reason in its source). Shared with `PostgresStore`.
#[derive(Debug)]
pub(crate) struct DbError {
    text: String,
    source: tokio_postgres::Error,
}

impl From<tokio_postgres::Error> for DbError {
    fn from(source: tokio_postgres::Error) -> Self {
        let text = match source.as_db_error() {
            Some(db) => {
                let mut text = format!("{} {}: {}", db.severity(), db.code().code(), db.message());
                if let Some(detail) = db.detail() {
                    let _ = write!(text, " ({detail})");
                }
                if let Some(hint) = db.hint() {
                    let _ = write!(text, "; hint: {hint}");
                }
                text
            }
            None => match std::error::Error::source(&source) {
                Some(cause) => format!("{source}: {cause}"),
                None => source.to_string(),
            },
        };
        Self { text, source }
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.text)
    }
}

impl std::error::Error for DbError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.source)
    }
}
