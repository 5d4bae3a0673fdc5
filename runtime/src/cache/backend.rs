//! The [`Cache`] trait every cache backend implements.

use super::error::CacheError;
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
