//! The in-process cache.

use super::{Cache, CacheError};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

/// The fewest entries a namespace holds before a store into it sweeps its expired entries.
const FIRST_SWEEP: usize = 64;

/// Keeps entries in memory, for as long as the process (or the cache value) lives: for tests,
/// and for graphs whose cached outputs need not outlive the process.
///
/// Expiry is measured on the monotonic clock ([`Instant`]), so changing the system time moves
/// no entry's expiry. An expired entry is never served: a read that meets one removes it, and
/// a store into a namespace sweeps its expired entries whenever the namespace has doubled in
/// size since the last sweep (so the work is a constant amount per store, on average).
///
/// ```
/// use graphwright::cache::{Cache, InMemoryCache};
/// use std::time::Duration;
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), graphwright::cache::CacheError> {
/// let cache = InMemoryCache::new();
/// cache.set("triage:classify", "input-1", b"urgent".to_vec(), Some(Duration::from_secs(60))).await?;
/// assert_eq!(cache.get("triage:classify", "input-1").await?, Some(b"urgent".to_vec()));
/// assert_eq!(cache.get("triage:classify", "input-2").await?, None);
///
/// cache.clear(Some(&["triage:classify".to_owned()])).await?;
/// assert_eq!(cache.get("triage:classify", "input-1").await?, None);
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct InMemoryCache {
    /// The entries of each namespace; a namespace left with none is removed.
    namespaces: Mutex<HashMap<String, Namespace>>,
}

/// The entries of one namespace, by key.
#[derive(Default)]
struct Namespace {
    entries: HashMap<String, Entry>,
    /// How many entries the namespace holds when the next store sweeps it.
    sweep_at: usize,
}

struct Entry {
    value: Vec<u8>,
    /// When the entry stops being served; `None` for never.
    expires: Option<Instant>,
}

impl Entry {
    fn live(&self, now: Instant) -> bool {
        self.expires.is_none_or(|at| at > now)
    }
}

impl std::fmt::Debug for InMemoryCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Counts, not contents: the values may be large, and are opaque bytes.
        let namespaces = self.lock();
        let entries: usize = namespaces.values().map(|n| n.entries.len()).sum();
        f.debug_struct("InMemoryCache").field("namespaces", &namespaces.len()).field("entries", &entries).finish()
    }
}

impl InMemoryCache {
    /// An empty cache.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The entries. A panic while the lock was held cannot have left them half changed (every
    /// change is one insert or removal), so a poisoned lock is used as it is.
    fn lock(&self) -> MutexGuard<'_, HashMap<String, Namespace>> {
        self.namespaces.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get_now(&self, namespace: &str, key: &str) -> Option<Vec<u8>> {
        let mut namespaces = self.lock();
        let entries = &mut namespaces.get_mut(namespace)?.entries;
        let entry = entries.get(key)?;
        if entry.live(Instant::now()) {
            return Some(entry.value.clone());
        }
        entries.remove(key);
        if entries.is_empty() {
            namespaces.remove(namespace);
        }
        None
    }

    fn set_now(&self, namespace: &str, key: &str, value: Vec<u8>, ttl: Option<Duration>) {
        let now = Instant::now();
        // A time to live too long for the clock to count never runs out.
        let expires = ttl.and_then(|ttl| now.checked_add(ttl));
        let mut namespaces = self.lock();
        let space = namespaces.entry(namespace.to_owned()).or_default();
        space.entries.insert(key.to_owned(), Entry { value, expires });
        if space.entries.len() >= space.sweep_at {
            space.entries.retain(|_, entry| entry.live(now));
            space.sweep_at = (space.entries.len() * 2).max(FIRST_SWEEP);
        }
    }

    fn clear_now(&self, namespaces: Option<&[String]>) {
        let mut held = self.lock();
        match namespaces {
            None => held.clear(),
            Some(namespaces) => {
                for namespace in namespaces {
                    held.remove(namespace);
                }
            }
        }
    }
}

impl Cache for InMemoryCache {
    fn get<'a>(&'a self, namespace: &'a str, key: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, CacheError>> {
        async move { Ok(self.get_now(namespace, key)) }.boxed()
    }

    fn set<'a>(
        &'a self,
        namespace: &'a str,
        key: &'a str,
        value: Vec<u8>,
        ttl: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), CacheError>> {
        async move {
            self.set_now(namespace, key, value, ttl);
            Ok(())
        }
        .boxed()
    }

    fn clear<'a>(&'a self, namespaces: Option<&'a [String]>) -> BoxFuture<'a, Result<(), CacheError>> {
        async move {
            self.clear_now(namespaces);
            Ok(())
        }
        .boxed()
    }
}
