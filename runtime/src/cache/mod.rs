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

mod backend;
mod error;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
#[cfg(feature = "sqlite")]
mod sqlite;
mod user_scope;

pub use backend::Cache;
pub use error::CacheError;
pub use memory::InMemoryCache;
#[cfg(feature = "postgres")]
pub use postgres::PostgresCache;
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteCache;
pub(crate) use user_scope::scoped_key;
