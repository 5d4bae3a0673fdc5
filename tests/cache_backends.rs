//! One conformance suite, run against every cache: misses, stores and overwrites, namespaces
//! kept apart, expiry, clearing, large and empty values, stores running at once; then two
//! cache values on one SQLite file or one PostgreSQL schema, as two processes would have, and
//! locations a cache cannot use. SQLite runs on a real file; PostgreSQL (feature `postgres`) on
//! the server at `GRAPHWRIGHT_TEST_POSTGRES`, a schema per test.

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

use graphwright::cache::{Cache, InMemoryCache, SqliteCache};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// The time to live of the expiry tests: long enough for a store and a read on a busy machine,
/// short enough to sleep past.
const TTL: Duration = Duration::from_millis(300);

/// Whether a read that ended `elapsed` after the store began came before the entry expired, by
/// a margin for the clock's milliseconds.
fn before_expiry(elapsed: Duration) -> bool {
    elapsed + Duration::from_millis(10) < TTL
}

fn bytes(text: &str) -> Vec<u8> {
    text.as_bytes().to_vec()
}

async fn a_missing_entry_is_none(cache: &dyn Cache) {
    assert_eq!(cache.get("graph:node", "never stored").await.unwrap(), None);
    cache.set("graph:node", "k", b"v".to_vec(), None).await.unwrap();
    assert_eq!(cache.get("graph:node", "K").await.unwrap(), None, "keys are case sensitive");
    assert_eq!(cache.get("graph:other", "k").await.unwrap(), None);
}

async fn a_stored_entry_is_served_until_replaced(cache: &dyn Cache) {
    cache.set("graph:node", "k", b"first".to_vec(), None).await.unwrap();
    assert_eq!(cache.get("graph:node", "k").await.unwrap(), Some(bytes("first")));
    assert_eq!(cache.get("graph:node", "k").await.unwrap(), Some(bytes("first")), "a read leaves the entry");
    cache.set("graph:node", "k", b"second".to_vec(), None).await.unwrap();
    assert_eq!(cache.get("graph:node", "k").await.unwrap(), Some(bytes("second")));
    // Keys and namespaces are any text: quotes, SQL wildcards, separators, other scripts.
    let odd = ["it's 100% _done_", "a\u{1f}b", "ключ 🔑", "", " "];
    for (n, key) in odd.iter().enumerate() {
        cache.set("graph:'odd' %_", key, vec![n as u8], None).await.unwrap();
    }
    for (n, key) in odd.iter().enumerate() {
        assert_eq!(cache.get("graph:'odd' %_", key).await.unwrap(), Some(vec![n as u8]), "key {key:?}");
    }
}

async fn namespaces_are_kept_apart(cache: &dyn Cache) {
    cache.set("graph:a", "k", b"in a".to_vec(), None).await.unwrap();
    cache.set("graph:b", "k", b"in b".to_vec(), None).await.unwrap();
    // One namespace a prefix of another, and a key that looks like a namespace's tail.
    cache.set("graph:a:x", "k", b"in a:x".to_vec(), None).await.unwrap();
    cache.set("graph:a", "x:k", b"x:k in a".to_vec(), None).await.unwrap();
    assert_eq!(cache.get("graph:a", "k").await.unwrap(), Some(bytes("in a")));
    assert_eq!(cache.get("graph:b", "k").await.unwrap(), Some(bytes("in b")));
    assert_eq!(cache.get("graph:a:x", "k").await.unwrap(), Some(bytes("in a:x")));
    assert_eq!(cache.get("graph:a", "x:k").await.unwrap(), Some(bytes("x:k in a")));
    cache.set("graph:b", "k", b"in b again".to_vec(), None).await.unwrap();
    assert_eq!(cache.get("graph:a", "k").await.unwrap(), Some(bytes("in a")), "a store into b leaves a alone");
}

async fn an_entry_is_served_until_its_ttl_and_never_after(cache: &dyn Cache) {
    let started = Instant::now();
    cache.set("graph:ttl", "short", b"short".to_vec(), Some(TTL)).await.unwrap();
    cache.set("graph:ttl", "forever", b"forever".to_vec(), None).await.unwrap();
    cache.set("graph:ttl", "long", b"long".to_vec(), Some(Duration::from_hours(1))).await.unwrap();
    cache.set("graph:ttl", "renewed", b"old".to_vec(), Some(TTL)).await.unwrap();
    cache.set("graph:ttl", "made forever", b"old".to_vec(), Some(TTL)).await.unwrap();
    cache.set("graph:ttl", "zero", b"zero".to_vec(), Some(Duration::ZERO)).await.unwrap();
    cache.set("graph:ttl", "huge", b"huge".to_vec(), Some(Duration::MAX)).await.unwrap();
    let read = cache.get("graph:ttl", "short").await.unwrap();
    if before_expiry(started.elapsed()) {
        assert_eq!(read, Some(bytes("short")), "served before its time to live ran out");
    }
    assert_eq!(cache.get("graph:ttl", "zero").await.unwrap(), None, "a zero time to live is never served");

    tokio::time::sleep(TTL + Duration::from_millis(100)).await;
    let renewed = Instant::now();
    cache.set("graph:ttl", "renewed", b"new".to_vec(), Some(TTL)).await.unwrap();
    cache.set("graph:ttl", "made forever", b"new".to_vec(), None).await.unwrap();
    assert_eq!(cache.get("graph:ttl", "short").await.unwrap(), None, "never served after its time to live");
    assert_eq!(cache.get("graph:ttl", "short").await.unwrap(), None, "nor on a second read");
    let read = cache.get("graph:ttl", "renewed").await.unwrap();
    if before_expiry(renewed.elapsed()) {
        assert_eq!(read, Some(bytes("new")), "a store after expiry starts a new time to live");
    }
    assert_eq!(cache.get("graph:ttl", "forever").await.unwrap(), Some(bytes("forever")));
    assert_eq!(cache.get("graph:ttl", "long").await.unwrap(), Some(bytes("long")));
    assert_eq!(cache.get("graph:ttl", "huge").await.unwrap(), Some(bytes("huge")), "a time to live too long to count");

    tokio::time::sleep(TTL + Duration::from_millis(100)).await;
    assert_eq!(cache.get("graph:ttl", "renewed").await.unwrap(), None);
    assert_eq!(
        cache.get("graph:ttl", "made forever").await.unwrap(),
        Some(bytes("new")),
        "a store without ttl keeps it"
    );
    // An expired entry stored again is served again.
    cache.set("graph:ttl", "short", b"again".to_vec(), None).await.unwrap();
    assert_eq!(cache.get("graph:ttl", "short").await.unwrap(), Some(bytes("again")));
}

async fn clear_deletes_the_namespaces_named_or_all(cache: &dyn Cache) {
    for namespace in ["graph:a", "graph:b", "graph:c", "graph:a:x"] {
        cache.set(namespace, "k1", namespace.as_bytes().to_vec(), None).await.unwrap();
        cache.set(namespace, "k2", namespace.as_bytes().to_vec(), Some(Duration::from_hours(1))).await.unwrap();
    }
    cache.clear(Some(&[])).await.unwrap();
    assert_eq!(
        cache.get("graph:a", "k1").await.unwrap(),
        Some(bytes("graph:a")),
        "clearing no namespace clears nothing"
    );

    cache.clear(Some(&["graph:a".to_owned(), "graph:c".to_owned(), "graph:never".to_owned()])).await.unwrap();
    for key in ["k1", "k2"] {
        assert_eq!(cache.get("graph:a", key).await.unwrap(), None);
        assert_eq!(cache.get("graph:c", key).await.unwrap(), None);
        assert_eq!(cache.get("graph:b", key).await.unwrap(), Some(bytes("graph:b")));
        assert_eq!(cache.get("graph:a:x", key).await.unwrap(), Some(bytes("graph:a:x")), "not a prefix match");
    }
    cache.set("graph:a", "k1", b"back".to_vec(), None).await.unwrap();
    assert_eq!(
        cache.get("graph:a", "k1").await.unwrap(),
        Some(bytes("back")),
        "a cleared namespace takes entries again"
    );

    cache.clear(None).await.unwrap();
    for namespace in ["graph:a", "graph:b", "graph:c", "graph:a:x"] {
        for key in ["k1", "k2"] {
            assert_eq!(cache.get(namespace, key).await.unwrap(), None, "{namespace} {key}");
        }
    }
    cache.clear(None).await.unwrap();
}

async fn large_and_empty_values_come_back_whole(cache: &dyn Cache) {
    // Every byte value, zeros included, in a pattern that does not repeat every 256 bytes.
    let large: Vec<u8> = (0..300 * 1024u32).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8).collect();
    cache.set("graph:sizes", "large", large.clone(), None).await.unwrap();
    cache.set("graph:sizes", "empty", Vec::new(), None).await.unwrap();
    cache.set("graph:sizes", "nul", vec![0, 0, 0], None).await.unwrap();
    assert_eq!(cache.get("graph:sizes", "large").await.unwrap().as_deref(), Some(&large[..]));
    assert_eq!(cache.get("graph:sizes", "empty").await.unwrap(), Some(Vec::new()), "an empty value is a hit");
    assert_eq!(cache.get("graph:sizes", "nul").await.unwrap(), Some(vec![0, 0, 0]));
    let larger: Vec<u8> = large.iter().rev().copied().chain(large.iter().copied()).collect();
    cache.set("graph:sizes", "large", larger.clone(), None).await.unwrap();
    assert_eq!(cache.get("graph:sizes", "large").await.unwrap().as_deref(), Some(&larger[..]));
}

/// Many stores at once into one namespace full of expired entries (each sweeping them) all
/// succeed, and the last value of each key is served.
async fn stores_at_once_all_succeed(cache: Arc<dyn Cache>) {
    for key in 0..40 {
        cache.set("graph:busy", &format!("old {key}"), vec![1], Some(Duration::from_millis(1))).await.unwrap();
    }
    tokio::time::sleep(Duration::from_millis(20)).await;
    let tasks: Vec<_> = (0..8u8)
        .map(|task| {
            let cache = Arc::clone(&cache);
            tokio::spawn(async move {
                for round in 0..20u8 {
                    let key = format!("key {}", (task + round) % 10);
                    cache.set("graph:busy", &key, vec![task, round], Some(Duration::from_millis(1))).await.unwrap();
                    cache.set("graph:busy", &format!("task {task}"), vec![round], None).await.unwrap();
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    for task in 0..8u8 {
        assert_eq!(cache.get("graph:busy", &format!("task {task}")).await.unwrap(), Some(vec![19]));
    }
    for key in 0..40 {
        assert_eq!(cache.get("graph:busy", &format!("old {key}")).await.unwrap(), None);
    }
}

macro_rules! conformance {
    ($backend:ident, $make:expr) => {
        mod $backend {
            use super::*;

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_missing_entry_is_none() {
                let (cache, _keep) = $make;
                super::a_missing_entry_is_none(&*cache).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn a_stored_entry_is_served_until_replaced() {
                let (cache, _keep) = $make;
                super::a_stored_entry_is_served_until_replaced(&*cache).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn namespaces_are_kept_apart() {
                let (cache, _keep) = $make;
                super::namespaces_are_kept_apart(&*cache).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn an_entry_is_served_until_its_ttl_and_never_after() {
                let (cache, _keep) = $make;
                super::an_entry_is_served_until_its_ttl_and_never_after(&*cache).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn clear_deletes_the_namespaces_named_or_all() {
                let (cache, _keep) = $make;
                super::clear_deletes_the_namespaces_named_or_all(&*cache).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn large_and_empty_values_come_back_whole() {
                let (cache, _keep) = $make;
                super::large_and_empty_values_come_back_whole(&*cache).await;
            }

            #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
            async fn stores_at_once_all_succeed() {
                let (cache, _keep) = $make;
                super::stores_at_once_all_succeed(cache).await;
            }
        }
    };
}

fn memory() -> (Arc<dyn Cache>, ()) {
    (Arc::new(InMemoryCache::new()), ())
}

fn sqlite() -> (Arc<dyn Cache>, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let cache = SqliteCache::open(dir.path().join("cache.db")).unwrap();
    (Arc::new(cache), dir)
}

/// A schema of its own per test, made the cache's through `search_path` in its connection
/// URL; dropped when the test ends.
#[cfg(feature = "postgres")]
async fn postgres() -> (Arc<dyn Cache>, postgres_server::TestSchema) {
    let schema = postgres_server::TestSchema::new("graphwright_cache");
    (Arc::new(graphwright::cache::PostgresCache::connect(&schema.url()).await.unwrap()), schema)
}

conformance!(in_memory_cache, memory());
conformance!(sqlite_cache, sqlite());
#[cfg(feature = "postgres")]
conformance!(postgres_cache, postgres().await);

/// Two caches on one location, as in two processes: each sees what the other stores,
/// replaces, lets expire and clears.
async fn two_caches_share_their_entries(one: &dyn Cache, two: &dyn Cache) {
    one.set("graph:node", "k", b"from one".to_vec(), None).await.unwrap();
    assert_eq!(two.get("graph:node", "k").await.unwrap(), Some(bytes("from one")));
    two.set("graph:node", "k", b"from two".to_vec(), None).await.unwrap();
    assert_eq!(one.get("graph:node", "k").await.unwrap(), Some(bytes("from two")));

    let started = Instant::now();
    two.set("graph:node", "short", b"short".to_vec(), Some(TTL)).await.unwrap();
    let read = one.get("graph:node", "short").await.unwrap();
    if before_expiry(started.elapsed()) {
        assert_eq!(read, Some(bytes("short")));
    }
    tokio::time::sleep(TTL + Duration::from_millis(100)).await;
    assert_eq!(one.get("graph:node", "short").await.unwrap(), None, "expired for the other cache too");

    one.set("graph:other", "k", b"other".to_vec(), None).await.unwrap();
    two.clear(Some(&["graph:node".to_owned()])).await.unwrap();
    assert_eq!(one.get("graph:node", "k").await.unwrap(), None);
    assert_eq!(one.get("graph:other", "k").await.unwrap(), Some(bytes("other")));
    one.clear(None).await.unwrap();
    assert_eq!(two.get("graph:other", "k").await.unwrap(), None);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_sqlite_caches_on_one_file_share_their_entries() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("shared.db");
    let (one, two) = (SqliteCache::open(&path).unwrap(), SqliteCache::open(&path).unwrap());
    two_caches_share_their_entries(&one, &two).await;
}

/// The cache's table sits beside a saver's in one file, and a store sweeps the expired entries
/// of its own namespace, not those of others.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_cache_shares_its_file_and_sweeps_expired_entries_of_the_namespace_it_stores_into() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.db");
    let _saver = graphwright::SqliteSaver::open(&path).unwrap();
    let cache = SqliteCache::open(&path).unwrap();
    cache.set("graph:a", "old", b"old".to_vec(), Some(Duration::from_millis(1))).await.unwrap();
    cache.set("graph:b", "old", b"old".to_vec(), Some(Duration::from_millis(1))).await.unwrap();
    tokio::time::sleep(Duration::from_millis(20)).await;
    cache.set("graph:a", "new", b"new".to_vec(), None).await.unwrap();

    let connection = rusqlite::Connection::open(&path).unwrap();
    let mut rows: Vec<(String, String)> = connection
        .prepare("SELECT namespace, key FROM graphwright_cache ORDER BY namespace, key")
        .unwrap()
        .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    rows.sort();
    assert_eq!(rows, [("graph:a".to_owned(), "new".to_owned()), ("graph:b".to_owned(), "old".to_owned())]);
    let mode: String = connection.pragma_query_value(None, "journal_mode", |row| row.get(0)).unwrap();
    assert_eq!(mode, "wal");
}

#[test]
fn a_sqlite_cache_on_a_directory_says_which_file_it_could_not_open() {
    let dir = tempfile::tempdir().unwrap();
    let error = SqliteCache::open(dir.path()).unwrap_err().to_string();
    assert!(error.starts_with("the cache could not "), "{error}");
    assert!(error.contains(&format!("`{}`", dir.path().display())), "{error}");
}

#[test]
fn a_sqlite_cache_on_a_file_that_is_not_a_database_says_so() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "these are notes, not a database; ".repeat(200)).unwrap();
    let error = SqliteCache::open(&path).unwrap_err().to_string();
    assert!(error.contains(&format!("set up the cache table in `{}`", path.display())), "{error}");
    assert!(error.contains("not a database"), "{error}");
}

/// An error of a call names the operation, the key and the namespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failing_sqlite_call_names_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.db");
    let cache = SqliteCache::open(&path).unwrap();
    rusqlite::Connection::open(&path).unwrap().execute_batch("DROP TABLE graphwright_cache").unwrap();
    let read = cache.get("graph:node", "k").await.unwrap_err().to_string();
    assert!(read.starts_with("the cache could not read entry `k` of namespace `graph:node`: "), "{read}");
    assert!(read.contains("no such table"), "{read}");
    let stored = cache.set("graph:node", "k", Vec::new(), None).await.unwrap_err().to_string();
    assert!(stored.starts_with("the cache could not store entry `k` of namespace `graph:node`: "), "{stored}");
    let cleared = cache.clear(Some(&["graph:a".into(), "graph:b".into()])).await.unwrap_err().to_string();
    assert!(cleared.starts_with("the cache could not clear namespaces `graph:a`, `graph:b`: "), "{cleared}");
    let all = cache.clear(None).await.unwrap_err().to_string();
    assert!(all.starts_with("the cache could not clear every entry: "), "{all}");
}

#[cfg(feature = "postgres")]
mod postgres_only {
    use super::*;
    use graphwright::cache::PostgresCache;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_postgres_caches_on_one_schema_share_their_entries() {
        let schema = postgres_server::TestSchema::new("graphwright_cache");
        let one = PostgresCache::connect(&schema.url()).await.unwrap();
        let two = PostgresCache::connect(&schema.url()).await.unwrap();
        two_caches_share_their_entries(&one, &two).await;
    }

    /// Caches starting at once on an empty schema, as processes would, all set the table up.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn postgres_caches_starting_at_once_all_set_up() {
        let schema = postgres_server::TestSchema::new("graphwright_cache");
        let url = schema.url();
        let caches = futures::future::join_all((0..6).map(|_| PostgresCache::connect(&url))).await;
        let caches: Vec<PostgresCache> = caches.into_iter().map(Result::unwrap).collect();
        caches[0].set("graph:node", "k", b"v".to_vec(), None).await.unwrap();
        assert_eq!(caches[5].get("graph:node", "k").await.unwrap(), Some(bytes("v")));
    }

    /// A store sweeps the expired entries of its own namespace, not those of others.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_postgres_cache_sweeps_expired_entries_of_the_namespace_it_stores_into() {
        let schema = postgres_server::TestSchema::new("graphwright_cache");
        let pool = graphwright::checkpoint::postgres_pool(&schema.url()).unwrap();
        let cache = PostgresCache::from_pool(pool.clone()).await.unwrap();
        cache.set("graph:a", "old", b"old".to_vec(), Some(Duration::from_millis(1))).await.unwrap();
        cache.set("graph:b", "old", b"old".to_vec(), Some(Duration::from_millis(1))).await.unwrap();
        tokio::time::sleep(Duration::from_millis(20)).await;
        cache.set("graph:a", "new", b"new".to_vec(), None).await.unwrap();
        let client = pool.get().await.unwrap();
        let rows = client.query("SELECT namespace, key FROM graphwright_cache ORDER BY namespace, key", &[]).await;
        let rows: Vec<(String, String)> = rows.unwrap().iter().map(|r| (r.get(0), r.get(1))).collect();
        assert_eq!(rows, [("graph:a".to_owned(), "new".to_owned()), ("graph:b".to_owned(), "old".to_owned())]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_key_postgres_cannot_hold_is_refused_by_name() {
        let schema = postgres_server::TestSchema::new("graphwright_cache");
        let cache = PostgresCache::connect(&schema.url()).await.unwrap();
        let error = cache.set("graph:node", "a\0b", b"v".to_vec(), None).await.unwrap_err().to_string();
        assert!(error.starts_with("the cache could not store entry `a\0b` of namespace `graph:node`: "), "{error}");
        assert!(error.contains("the key contains U+0000"), "{error}");
        let error = cache.get("graph\0node", "k").await.unwrap_err().to_string();
        assert!(error.contains("the namespace contains U+0000"), "{error}");
    }

    #[tokio::test]
    async fn a_postgres_cache_without_a_server_says_what_it_could_not_do() {
        let error = PostgresCache::connect("postgres://postgres@127.0.0.1:1/test").await.unwrap_err().to_string();
        assert!(error.starts_with("the cache could not set up the cache table: "), "{error}");
        assert!(error.contains("refused"), "the cause is named: {error}");
        let error =
            PostgresCache::connect("postgres://postgres@127.0.0.1:notaport/test").await.unwrap_err().to_string();
        assert!(error.starts_with("the cache could not connect to PostgreSQL ("), "{error}");
        assert!(error.contains("port"), "what is wrong is named: {error}");
    }

    /// A schema in `search_path` that does not exist leaves nowhere to create the table.
    #[tokio::test]
    async fn a_postgres_cache_with_no_schema_to_create_in_says_so() {
        let schema = postgres_server::TestSchema::new("graphwright_cache");
        let url = schema.url().replace("search_path%3D", "search_path%3Dno_such_schema_");
        let error = PostgresCache::connect(&url).await.unwrap_err().to_string();
        assert!(error.starts_with("the cache could not set up the cache table: "), "{error}");
        assert!(error.contains("no schema has been selected"), "{error}");
    }
}
