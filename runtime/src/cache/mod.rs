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
//! the node's input). An entry past its time to live is never served. A run started for a user
//! keeps its entries apart from other users' (unless its policy says
//! [`across_users`](crate::CachePolicy::across_users)): on a server, one caller's cached output
//! is never served to another.

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

/// The key an entry is stored under: `key`, within the entries of `user` when the run has one
/// and the policy keeps users apart. The identity's length comes first, so no identity and key
/// can spell another pair's.
pub(crate) fn scoped_key(policy: &crate::CachePolicy, user: Option<&crate::AuthUser>, key: String) -> String {
    match user {
        Some(user) if !policy.across_users => format!("user:{}:{}:{key}", user.identity.len(), user.identity),
        _ => key,
    }
}

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
