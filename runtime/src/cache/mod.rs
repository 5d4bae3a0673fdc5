//! Caches of node outputs: where a node with a [`CachePolicy`](crate::CachePolicy) keeps what
//! it returned for an input, so the same input later (in this run, another run, another thread,
//! or, with a shared cache, another process) gives the stored output without running the node.
//!
//! A graph is given its cache on the builder (`.cache(InMemoryCache::new())`); only the nodes
//! with a cache policy use it. [`InMemoryCache`] lives as long as the process; [`SqliteCache`]
//! (feature `sqlite`) keeps entries in a file; [`PostgresCache`] (feature `postgres`) shares
//! them between processes.
//!
//! Entries are opaque bytes under a namespace (one per graph and node) and a key (drawn from
//! the node's input). An entry past its time to live is never served.

mod error;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;

pub use error::CacheError;
pub use memory::InMemoryCache;
#[cfg(feature = "postgres")]
pub use postgres::PostgresCache;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteCache;

use futures::future::BoxFuture;
use std::time::Duration;

/// A store of cached node outputs. Implementations must be safe to share between runs and
/// threads; a cache shared by several processes must give every one of them the same entries.
pub trait Cache: Send + Sync + 'static {
    /// The value stored under `key` in `namespace`, if there is one whose time to live has not
    /// run out.
    fn get<'a>(&'a self, namespace: &'a str, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, CacheError>>;

    /// Stores `value` under `key` in `namespace`, replacing what was there, to be served for
    /// `ttl` from now (forever when `None`).
    fn set<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), CacheError>>;

    /// Deletes every entry of the given namespaces, or every entry of the cache when `None`.
    fn clear<'a>(&'a self, namespaces: Option<&'a [String]>) -> BoxFuture<'a, Result<(), CacheError>>;
}
