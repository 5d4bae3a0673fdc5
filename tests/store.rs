//! One suite, run against every store: items, namespaces, search with filters and paging,
//! listing, TTL (on a manual clock, so nothing sleeps), and name rules; then whole runs whose
//! nodes share memory across threads. SQLite runs on a real file; PostgreSQL (feature
//! `postgres`) on the server at `GRAPHWRIGHT_TEST_POSTGRES`, a schema per test. Damaged rows of
//! both give typed errors; two PostgreSQL stores on one database see each other's writes.

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

use graphwright::checkpoint::SqliteSaver;
use graphwright::prelude::*;
#[cfg(feature = "postgres")]
use graphwright::store::PostgresStore;
use graphwright::store::{
    Filter, InMemoryStore, Item, ManualClock, SearchQuery, SqliteStore, Store, StoreError, StoreOptions,
};
use serde_json::{Value, json};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// A store under test, with whatever must outlive it (its temporary directory, or its
/// PostgreSQL schema).
struct Fixture {
    store: Arc<dyn Store>,
    _keep: Option<Box<dyn Send>>,
}

/// A fixture, once made: a PostgreSQL store connects before it is ready.
type Pending = Pin<Box<dyn Future<Output = Fixture>>>;

/// Makes a backend's fixture.
type Make = fn(StoreOptions) -> Pending;

fn in_memory(options: StoreOptions) -> Pending {
    Box::pin(std::future::ready(Fixture { store: Arc::new(InMemoryStore::with_options(options)), _keep: None }))
}

fn sqlite(options: StoreOptions) -> Pending {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_with(dir.path().join("store.db"), options).unwrap();
    Box::pin(std::future::ready(Fixture { store: Arc::new(store), _keep: Some(Box::new(dir)) }))
}

/// A store in a schema of its own on the test server, dropped when the fixture is.
#[cfg(feature = "postgres")]
fn postgres(options: StoreOptions) -> Pending {
    Box::pin(async move {
        let schema = postgres_server::TestSchema::new("graphwright_store");
        let store = PostgresStore::connect_with(&schema.url(), options).await.unwrap();
        Fixture { store: Arc::new(store), _keep: Some(Box::new(schema)) }
    })
}

fn keys_for_tests() -> graphwright::encryption::Keys {
    graphwright::encryption::Keys::new(&[7; 32]).unwrap()
}

/// The SQLite store with its values encrypted: the whole suite holds through the wrapper.
fn encrypted_sqlite(options: StoreOptions) -> Pending {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_with(dir.path().join("store.db"), options).unwrap().encrypted(keys_for_tests());
    Box::pin(std::future::ready(Fixture { store: Arc::new(store), _keep: Some(Box::new(dir)) }))
}

#[cfg(feature = "postgres")]
fn encrypted_postgres(options: StoreOptions) -> Pending {
    Box::pin(async move {
        let schema = postgres_server::TestSchema::new("graphwright_store");
        let store = PostgresStore::connect_with(&schema.url(), options).await.unwrap().encrypted(keys_for_tests());
        Fixture { store: Arc::new(store), _keep: Some(Box::new(schema)) }
    })
}

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// A store on a manual clock at `start()`, with `options` otherwise.
async fn on_clock(make: Make, options: StoreOptions) -> (Fixture, ManualClock) {
    let clock = ManualClock::new(start());
    (make(options.clock(clock.clone())).await, clock)
}

fn keys(items: &[Item]) -> Vec<String> {
    items.iter().map(|i| format!("{}/{}", i.namespace.join("."), i.key)).collect()
}

async fn put_get_overwrite_delete(make: Make) {
    let (f, clock) = on_clock(make, StoreOptions::new()).await;
    let store = &*f.store;
    assert_eq!(store.get(&["users", "u1"], "lang").await.unwrap(), None);
    store.put(&["users", "u1"], "lang", json!({"code": "nb"}), None).await.unwrap();
    let item = store.get(&["users", "u1"], "lang").await.unwrap().unwrap();
    assert_eq!(item.namespace, ["users", "u1"]);
    assert_eq!(item.key, "lang");
    assert_eq!(item.value, json!({"code": "nb"}));
    assert_eq!((item.created_at, item.updated_at, item.expires_at), (start(), start(), None));

    clock.advance(Duration::from_secs(5));
    store.put(&["users", "u1"], "lang", json!("en"), None).await.unwrap();
    let item = store.get(&["users", "u1"], "lang").await.unwrap().unwrap();
    assert_eq!(item.value, json!("en"));
    assert_eq!(item.created_at, start(), "an overwrite keeps created_at");
    assert_eq!(item.updated_at, start() + Duration::from_secs(5));

    store.delete(&["users", "u1"], "lang").await.unwrap();
    assert_eq!(store.get(&["users", "u1"], "lang").await.unwrap(), None);
    store.delete(&["users", "u1"], "lang").await.unwrap();
    store.delete(&["nobody"], "nothing").await.unwrap();
}

async fn namespaces_are_isolated(make: Make) {
    let (f, _clock) = on_clock(make, StoreOptions::new()).await;
    let store = &*f.store;
    for (namespace, value) in
        [(&["a"][..], 1), (&["a", "b"][..], 2), (&["a", "c"][..], 3), (&["ab"][..], 4), (&["a.b"][..], 5)]
    {
        store.put(namespace, "k", json!(value), None).await.unwrap();
    }
    for (namespace, value) in
        [(&["a"][..], 1), (&["a", "b"][..], 2), (&["a", "c"][..], 3), (&["ab"][..], 4), (&["a.b"][..], 5)]
    {
        assert_eq!(store.get(namespace, "k").await.unwrap().unwrap().value, json!(value), "{namespace:?}");
    }
    assert_eq!(store.get(&["a", "b", "c"], "k").await.unwrap(), None);
    store.delete(&["a", "b"], "k").await.unwrap();
    assert_eq!(
        store.get(&["a"], "k").await.unwrap().unwrap().value,
        json!(1),
        "deleting one namespace leaves its parent"
    );

    let under_a = store.search(&["a"], SearchQuery::new()).await.unwrap();
    assert_eq!(keys(&under_a), ["a/k", "a.c/k"], "a prefix matches whole labels: not `ab`, not `a.b`");
    assert_eq!(keys(&store.search(&["a", "c"], SearchQuery::new()).await.unwrap()), ["a.c/k"]);
    assert_eq!(keys(&store.search(&[], SearchQuery::new()).await.unwrap()), ["a/k", "a.c/k", "a.b/k", "ab/k"]);
    assert!(store.search(&["a", "c", "d"], SearchQuery::new()).await.unwrap().is_empty());
}

async fn search_filters_and_pages(make: Make) {
    let (f, _clock) = on_clock(make, StoreOptions::new()).await;
    let store = &*f.store;
    let ns = ["memories", "u1"];
    let values = [
        ("m1", json!({"score": 1, "name": "apple", "kind": "fact"})),
        ("m2", json!({"score": 2.5, "name": "banana", "kind": "fact"})),
        ("m3", json!({"score": 3, "name": "cherry", "kind": "preference"})),
        ("m4", json!({"score": "4", "name": "Date"})),
        ("m5", json!(["not", "an", "object"])),
        ("m6", json!({"score": null, "kind": {"nested": true}})),
    ];
    for (key, value) in &values {
        store.put(&ns, key, value.clone(), None).await.unwrap();
    }
    store.put(&["memories", "u2"], "m1", json!({"score": 1}), None).await.unwrap();
    let search = |filter: Filter| {
        let store = Arc::clone(&f.store);
        async move {
            let found = store.search(&["memories", "u1"], SearchQuery::new().filter(filter)).await.unwrap();
            found.into_iter().map(|i| i.key).collect::<Vec<_>>()
        }
    };
    assert_eq!(search(Filter::new()).await, ["m1", "m2", "m3", "m4", "m5", "m6"]);
    assert_eq!(search(Filter::new().eq("kind", "fact")).await, ["m1", "m2"]);
    assert_eq!(search(Filter::new().eq("score", 1.0)).await, ["m1"], "numbers compare by value");
    assert_eq!(search(Filter::new().eq("score", Value::Null)).await, ["m6"]);
    assert_eq!(search(Filter::new().eq("kind", json!({"nested": true}))).await, ["m6"]);
    assert_eq!(search(Filter::new().ne("kind", "fact")).await, ["m3", "m4", "m5", "m6"], "ne matches missing fields");
    assert_eq!(search(Filter::new().gt("score", 2)).await, ["m2", "m3"], "the string \"4\" is not a number");
    assert_eq!(search(Filter::new().gte("score", 2.5)).await, ["m2", "m3"]);
    assert_eq!(search(Filter::new().lt("score", 3)).await, ["m1", "m2"]);
    assert_eq!(search(Filter::new().lte("score", 3)).await, ["m1", "m2", "m3"]);
    assert_eq!(search(Filter::new().gt("score", "3")).await, ["m4"], "strings compare with strings");
    assert_eq!(search(Filter::new().lt("name", "banana")).await, ["m1", "m4"], "code point order: `D` < `a`");
    assert_eq!(search(Filter::new().gte("name", "banana").lte("name", "cherry")).await, ["m2", "m3"]);
    assert_eq!(search(Filter::new().gt("kind", "a")).await, ["m1", "m2", "m3"]);
    let langgraph = Filter::from_json(&json!({"kind": "fact", "score": {"$gt": 1, "$lte": 3}})).unwrap();
    assert_eq!(search(langgraph).await, ["m2"]);

    let page = |offset, limit| {
        let store = Arc::clone(&f.store);
        async move {
            let query = SearchQuery::new().filter(Filter::new().ne("kind", "preference")).offset(offset).limit(limit);
            store
                .search(&["memories"], query)
                .await
                .unwrap()
                .iter()
                .map(|i| format!("{}/{}", i.namespace[1], i.key))
                .collect::<Vec<_>>()
        }
    };
    assert_eq!(page(0, 2).await, ["u1/m1", "u1/m2"]);
    assert_eq!(page(2, 2).await, ["u1/m4", "u1/m5"], "offset counts matching items only");
    assert_eq!(page(4, 2).await, ["u1/m6", "u2/m1"]);
    assert!(page(6, 2).await.is_empty());
    assert!(page(0, 0).await.is_empty());
}

async fn list_namespaces_by_depth(make: Make) {
    let (f, _clock) = on_clock(make, StoreOptions::new()).await;
    let store = &*f.store;
    for namespace in [
        &["users", "u1", "facts"][..],
        &["users", "u1", "prefs"],
        &["users", "u2", "facts"],
        &["users"],
        &["teams", "t1"],
    ] {
        store.put(namespace, "k", json!(1), None).await.unwrap();
    }
    let all = store.list_namespaces(&[], None).await.unwrap();
    assert_eq!(
        all,
        [
            vec!["teams", "t1"],
            vec!["users"],
            vec!["users", "u1", "facts"],
            vec!["users", "u1", "prefs"],
            vec!["users", "u2", "facts"]
        ]
    );
    assert_eq!(store.list_namespaces(&[], Some(1)).await.unwrap(), [vec!["teams"], vec!["users"]]);
    assert_eq!(
        store.list_namespaces(&["users"], Some(2)).await.unwrap(),
        [vec!["users"], vec!["users", "u1"], vec!["users", "u2"]]
    );
    assert_eq!(
        store.list_namespaces(&["users", "u1"], None).await.unwrap(),
        [vec!["users", "u1", "facts"], vec!["users", "u1", "prefs"]]
    );
    assert!(store.list_namespaces(&["user"], None).await.unwrap().is_empty(), "prefixes match whole labels");
    let zero = store.list_namespaces(&[], Some(0)).await.unwrap_err();
    assert!(matches!(zero, StoreError::InvalidQuery { .. }), "{zero}");
}

async fn ttl_expires_items(make: Make) {
    let (f, clock) = on_clock(make, StoreOptions::new().sweep_interval(None)).await;
    let store = &*f.store;
    store.put(&["s"], "short", json!("short"), Some(Duration::from_secs(10))).await.unwrap();
    store.put(&["s"], "forever", json!("forever"), None).await.unwrap();
    store.put(&["t"], "short", json!("other"), Some(Duration::from_secs(10))).await.unwrap();
    store.put(&["s"], "cleared", json!(1), Some(Duration::from_secs(10))).await.unwrap();
    store.put(&["s"], "cleared", json!(2), None).await.unwrap();

    clock.advance(Duration::from_millis(9_999));
    let item = store.get(&["s"], "short").await.unwrap().expect("not yet expired");
    assert_eq!(item.expires_at, Some(start() + Duration::from_secs(10)));
    assert_eq!(store.get(&["s"], "cleared").await.unwrap().unwrap().expires_at, None, "a put without ttl clears it");

    clock.advance(Duration::from_millis(1));
    assert_eq!(store.get(&["s"], "short").await.unwrap(), None, "expired at exactly its expiry time");
    assert_eq!(keys(&store.search(&[], SearchQuery::new()).await.unwrap()), ["s/cleared", "s/forever"]);
    assert_eq!(store.list_namespaces(&[], None).await.unwrap(), [vec!["s"]]);

    assert_eq!(store.sweep().await.unwrap(), 2);
    assert_eq!(store.sweep().await.unwrap(), 0);
    assert!(store.get(&["s"], "forever").await.unwrap().is_some());

    store.put(&["t"], "short", json!("again"), Some(Duration::from_secs(1))).await.unwrap();
    clock.advance(Duration::from_secs(2));
    store.put(&["t"], "short", json!("renewed"), None).await.unwrap();
    let item = store.get(&["t"], "short").await.unwrap().unwrap();
    assert_eq!(item.created_at, item.updated_at, "a put over an expired item starts it anew");
    assert_eq!(item.created_at, start() + Duration::from_secs(12));
}

async fn ttl_refreshes_on_read(make: Make) {
    let (f, clock) = on_clock(make, StoreOptions::new().refresh_on_read(true)).await;
    let store = &*f.store;
    let ttl = Some(Duration::from_secs(10));
    store.put(&["r"], "got", json!(1), ttl).await.unwrap();
    store.put(&["r"], "searched", json!(2), ttl).await.unwrap();
    store.put(&["r"], "ignored", json!(3), ttl).await.unwrap();
    store.put(&["r"], "forever", json!(4), None).await.unwrap();

    clock.advance(Duration::from_secs(8));
    let got = store.get(&["r"], "got").await.unwrap().unwrap();
    assert_eq!(got.expires_at, Some(start() + Duration::from_secs(18)), "a read restarts the ttl");
    let found = store.search(&["r"], SearchQuery::new().filter(Filter::new().eq("x", 0).ne("x", 0))).await.unwrap();
    assert!(found.is_empty());
    let found = store.search(&["r"], SearchQuery::new().filter(Filter::new().gte("", 0)).limit(0)).await.unwrap();
    assert!(found.is_empty());
    let found = store.search(&["r"], SearchQuery::new().offset(3)).await.unwrap();
    assert_eq!(keys(&found), ["r/searched"]);
    assert_eq!(found[0].expires_at, Some(start() + Duration::from_secs(18)));

    clock.advance(Duration::from_secs(8));
    assert_eq!(store.get(&["r"], "got").await.unwrap().unwrap().expires_at, Some(start() + Duration::from_secs(26)));
    assert_eq!(keys(&store.search(&["r"], SearchQuery::new()).await.unwrap()), ["r/forever", "r/got", "r/searched"]);
    assert_eq!(store.get(&["r"], "forever").await.unwrap().unwrap().expires_at, None);

    clock.advance(Duration::from_secs(10));
    assert!(store.search(&["r"], SearchQuery::new()).await.unwrap().iter().all(|i| i.key == "forever"));
}

async fn ttl_without_refresh_counts_from_the_put(make: Make) {
    let (f, clock) = on_clock(make, StoreOptions::new()).await;
    let store = &*f.store;
    store.put(&["r"], "k", json!(1), Some(Duration::from_secs(10))).await.unwrap();
    clock.advance(Duration::from_secs(8));
    assert_eq!(store.get(&["r"], "k").await.unwrap().unwrap().expires_at, Some(start() + Duration::from_secs(10)));
    clock.advance(Duration::from_secs(8));
    assert_eq!(store.get(&["r"], "k").await.unwrap(), None);
}

async fn writes_sweep_once_per_interval(make: Make) {
    let (f, clock) = on_clock(make, StoreOptions::new().sweep_interval(Some(Duration::from_mins(1)))).await;
    let store = &*f.store;
    store.put(&["w"], "a", json!(1), Some(Duration::from_secs(1))).await.unwrap();
    store.put(&["w"], "b", json!(1), Some(Duration::from_secs(1))).await.unwrap();
    clock.advance(Duration::from_secs(30));
    store.put(&["w"], "c", json!(1), None).await.unwrap();
    clock.advance(Duration::from_secs(30));
    store.delete(&["w"], "c").await.unwrap();
    assert_eq!(store.sweep().await.unwrap(), 0, "the delete 60 s after the store opened swept both");

    store.put(&["w"], "d", json!(1), Some(Duration::from_secs(1))).await.unwrap();
    clock.advance(Duration::from_secs(2));
    store.put(&["w"], "e", json!(1), None).await.unwrap();
    assert_eq!(store.sweep().await.unwrap(), 1, "a write within the interval does not sweep");
}

async fn invalid_names_are_errors(make: Make) {
    let (f, _clock) = on_clock(make, StoreOptions::new()).await;
    let store = &*f.store;
    let namespace_error = |result: Result<(), StoreError>| match result {
        Err(e @ StoreError::InvalidNamespace { .. }) => e.to_string(),
        other => panic!("expected InvalidNamespace, got {other:?}"),
    };
    let message = namespace_error(store.put(&[], "k", json!(1), None).await);
    assert!(message.contains("at least one label"), "{message}");
    let message = namespace_error(store.put(&["users", ""], "k", json!(1), None).await);
    assert_eq!(
        message,
        "invalid store namespace [\"users\", \"\"]: label 1 is empty; every label needs at least one character"
    );
    let message = namespace_error(store.put(&["a\u{1f}b"], "k", json!(1), None).await);
    assert!(message.contains("label 0 contains U+001F"), "{message}");
    namespace_error(store.get(&[], "k").await.map(drop));
    namespace_error(store.delete(&["", "x"], "k").await);
    namespace_error(store.search(&["ok", ""], SearchQuery::new()).await.map(drop));
    namespace_error(store.list_namespaces(&["\u{1f}"], None).await.map(drop));

    let key_error = |result: Result<(), StoreError>| match result {
        Err(e @ StoreError::InvalidKey { .. }) => e.to_string(),
        other => panic!("expected InvalidKey, got {other:?}"),
    };
    let message = key_error(store.put(&["ns"], "", json!(1), None).await);
    assert_eq!(message, "invalid store key \"\": it is empty; every key needs at least one character");
    key_error(store.put(&["ns"], "a\u{1f}", json!(1), None).await);
    key_error(store.get(&["ns"], "").await.map(drop));
    key_error(store.delete(&["ns"], "").await);

    assert!(store.search(&[], SearchQuery::new()).await.unwrap().is_empty(), "nothing invalid was stored");
    store.put(&["with.dots", "a/b", "é ✓"], "key with spaces", json!(1), None).await.unwrap();
    assert!(store.get(&["with.dots", "a/b", "é ✓"], "key with spaces").await.unwrap().is_some());
}

macro_rules! suite {
    ($($backend:ident => $make:expr),* $(,)?) => {$(
        mod $backend {
            use super::*;

            #[tokio::test]
            async fn put_get_overwrite_delete() { super::put_get_overwrite_delete($make).await }
            #[tokio::test]
            async fn namespaces_are_isolated() { super::namespaces_are_isolated($make).await }
            #[tokio::test]
            async fn search_filters_and_pages() { super::search_filters_and_pages($make).await }
            #[tokio::test]
            async fn list_namespaces_by_depth() { super::list_namespaces_by_depth($make).await }
            #[tokio::test]
            async fn ttl_expires_items() { super::ttl_expires_items($make).await }
            #[tokio::test]
            async fn ttl_refreshes_on_read() { super::ttl_refreshes_on_read($make).await }
            #[tokio::test]
            async fn ttl_without_refresh_counts_from_the_put() { super::ttl_without_refresh_counts_from_the_put($make).await }
            #[tokio::test]
            async fn writes_sweep_once_per_interval() { super::writes_sweep_once_per_interval($make).await }
            #[tokio::test]
            async fn invalid_names_are_errors() { super::invalid_names_are_errors($make).await }
            #[tokio::test]
            async fn nodes_share_memory_across_threads() { super::nodes_share_memory_across_threads($make).await }
        }
    )*};
}

suite!(memory => in_memory, sqlite => sqlite, encrypted_sqlite => encrypted_sqlite);
#[cfg(feature = "postgres")]
suite!(postgres => postgres, encrypted_postgres => encrypted_postgres);

#[graph]
mod memory_graph {
    use graphwright::prelude::*;
    use graphwright::store::{Filter, SearchQuery};
    use serde_json::json;

    #[state]
    pub struct State {
        pub user: String,
        pub note: String,
        pub recalled: Vec<String>,
    }

    /// Writes the note (if any) as a memory of the user, keyed by thread; reads all of them.
    #[node(entry, next = END)]
    async fn remember(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let store = rt.store()?;
        let namespace = ["users", state.user.as_str(), "notes"];
        if !state.note.is_empty() {
            let key = rt.thread_id().unwrap_or("no-thread");
            store.put(&namespace, key, json!({"text": state.note, "kind": "note"}), None).await?;
        }
        let notes = store.search(&namespace, SearchQuery::new().filter(Filter::new().eq("kind", "note"))).await?;
        Ok(StateUpdate::new()
            .recalled(notes.iter().filter_map(|i| i.value["text"].as_str().map(str::to_owned)).collect::<Vec<_>>()))
    }
}

async fn nodes_share_memory_across_threads(make: Make) {
    let (f, _clock) = on_clock(make, StoreOptions::new()).await;
    let app = memory_graph::graph().shared_store(Arc::clone(&f.store)).compile().unwrap();
    let input = |user: &str, note: &str| memory_graph::StateUpdate::new().user(user.to_owned()).note(note.to_owned());

    let first = app.invoke(input("u1", "likes tea"), &RunConfig::thread("monday")).await.unwrap();
    assert_eq!(first.state.recalled, ["likes tea"]);
    let other_user = app.invoke(input("u2", ""), &RunConfig::thread("monday-u2")).await.unwrap();
    assert!(other_user.state.recalled.is_empty(), "memories are per namespace");
    let second = app.invoke(input("u1", ""), &RunConfig::thread("tuesday")).await.unwrap();
    assert_eq!(second.state.recalled, ["likes tea"], "another thread reads what the first one wrote");
    let stored = f.store.get(&["users", "u1", "notes"], "monday").await.unwrap().unwrap();
    assert_eq!(stored.value["text"], "likes tea");
}

#[tokio::test]
async fn a_node_without_a_store_fails_saying_how_to_add_one() {
    let app = memory_graph::graph().compile().unwrap();
    let error = app.invoke(memory_graph::State::default(), &RunConfig::default()).await.unwrap_err();
    assert!(
        error.to_string().contains("this graph has no store: give it one with `.store(InMemoryStore::new())`"),
        "{error}"
    );
}

#[tokio::test]
async fn the_store_shares_a_file_with_the_checkpointer_and_survives_reopening() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.db");
    let saver = SqliteSaver::open(&path).unwrap();
    let store = SqliteStore::open(&path).unwrap();
    let app = memory_graph::graph().checkpointer(saver).store(store).compile().unwrap();
    let input = memory_graph::StateUpdate::new().user("u1".to_owned()).note("lives in Oslo".to_owned());
    app.invoke(input, &RunConfig::thread("t1")).await.unwrap();
    drop(app);

    let reopened = SqliteStore::open(&path).unwrap();
    assert_eq!(reopened.get(&["users", "u1", "notes"], "t1").await.unwrap().unwrap().value["text"], "lives in Oslo");
    let saver = SqliteSaver::open(&path).unwrap();
    let app = memory_graph::graph().checkpointer(saver).store(reopened).compile().unwrap();
    let state = app.get_state(&RunConfig::thread("t1")).await.unwrap().unwrap();
    assert_eq!(state.state.recalled, ["lives in Oslo"]);
}

/// A store with one item in a fresh file, and the file's path.
async fn damaged(sql: &str) -> (tempfile::TempDir, SqliteStore, StoreError) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("damaged.db");
    let store = SqliteStore::open(&path).unwrap();
    store.put(&["users", "u1"], "k", json!({"a": 1}), Some(Duration::from_hours(1))).await.unwrap();
    rusqlite::Connection::open(&path).unwrap().execute_batch(sql).unwrap();
    let error =
        store.get(&["users", "u1"], "k").await.map(drop).err().or(store.search(&[], SearchQuery::new()).await.err());
    (dir, store, error.expect("a damaged row is an error"))
}

fn corrupt_field(error: &StoreError) -> &str {
    match error {
        StoreError::Corrupt { field, .. } => field,
        other => panic!("expected Corrupt, got {other:?}"),
    }
}

#[tokio::test]
async fn damaged_sqlite_rows_are_typed_errors() {
    let (_dir, _, error) = damaged("UPDATE store_items SET value = '{not json'").await;
    assert_eq!(corrupt_field(&error), "value");
    let message = error.to_string();
    assert!(
        message.starts_with("stored item \"k\" in namespace \"users\\u{1f}u1\" is unreadable at `value`: not JSON"),
        "{message}"
    );

    let (_dir, store, error) = damaged("UPDATE store_items SET value = x'00ff'").await;
    assert_eq!(corrupt_field(&error), "value");
    let search = store.search(&["users"], SearchQuery::new()).await.unwrap_err();
    assert_eq!(corrupt_field(&search), "value", "search reports the damaged row, never skips it");

    let (_dir, _, error) = damaged("UPDATE store_items SET created_at_ms = -5").await;
    assert_eq!(corrupt_field(&error), "created_at_ms");
    let (_dir, _, error) = damaged("UPDATE store_items SET updated_at_ms = 'yesterday'").await;
    assert_eq!(corrupt_field(&error), "updated_at_ms");
    let (_dir, _, error) = damaged("UPDATE store_items SET ttl_ms = 1.5").await;
    assert_eq!(corrupt_field(&error), "ttl_ms");
    let (_dir, store, error) = damaged("UPDATE store_items SET namespace = 'users' || char(31)").await;
    assert_eq!(corrupt_field(&error), "namespace");
    let listed = store.list_namespaces(&[], None).await.unwrap_err();
    assert_eq!(corrupt_field(&listed), "namespace");
}

#[tokio::test]
async fn a_file_from_a_newer_store_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("newer.db");
    drop(SqliteStore::open(&path).unwrap());
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute("UPDATE graphwright_meta SET value = 99 WHERE key = 'store_schema_version'", [])
        .unwrap();
    let error = SqliteStore::open(&path).unwrap_err();
    assert!(error.to_string().contains("store schema version Some(99)"), "{error}");
}

/// Runs `sql` on a connection of its own to `url`, as another program would.
#[cfg(feature = "postgres")]
async fn execute_sql(url: &str, sql: &str) {
    use graphwright::checkpoint::deadpool_postgres::tokio_postgres::{self, NoTls};
    let (client, connection) = tokio_postgres::connect(url, NoTls).await.unwrap();
    let connection = tokio::spawn(connection);
    client.batch_execute(sql).await.unwrap();
    drop(client);
    connection.await.unwrap().unwrap();
}

/// A PostgreSQL store with one item in a fresh schema damaged by `sql`, and the error reading
/// it gives.
#[cfg(feature = "postgres")]
async fn damaged_in_postgres(sql: &str) -> (postgres_server::TestSchema, PostgresStore, StoreError) {
    let schema = postgres_server::TestSchema::new("graphwright_store_damaged");
    let store = PostgresStore::connect(&schema.url()).await.unwrap();
    store.put(&["users", "u1"], "k", json!({"a": 1}), Some(Duration::from_hours(1))).await.unwrap();
    execute_sql(&schema.url(), sql).await;
    let error =
        store.get(&["users", "u1"], "k").await.map(drop).err().or(store.search(&[], SearchQuery::new()).await.err());
    (schema, store, error.expect("a damaged row is an error"))
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn damaged_postgres_rows_are_typed_errors() {
    let (_schema, store, error) = damaged_in_postgres("UPDATE graphwright_store_items SET value = '{not json'").await;
    assert_eq!(corrupt_field(&error), "value");
    let message = error.to_string();
    assert!(
        message.starts_with("stored item \"k\" in namespace \"users\\u{1f}u1\" is unreadable at `value`: not JSON"),
        "{message}"
    );
    let search = store.search(&["users"], SearchQuery::new()).await.unwrap_err();
    assert_eq!(corrupt_field(&search), "value", "search reports the damaged row, never skips it");

    let (_schema, _, error) = damaged_in_postgres(
        "ALTER TABLE graphwright_store_items ALTER COLUMN value DROP NOT NULL; \
         UPDATE graphwright_store_items SET value = NULL",
    )
    .await;
    assert_eq!(corrupt_field(&error), "value");
    assert!(error.to_string().contains("`value`: it is NULL"), "{error}");

    let (_schema, _, error) = damaged_in_postgres(
        "ALTER TABLE graphwright_store_items ALTER COLUMN created_at_ms DROP NOT NULL; \
         UPDATE graphwright_store_items SET created_at_ms = NULL",
    )
    .await;
    assert_eq!(corrupt_field(&error), "created_at_ms");
    assert!(error.to_string().contains("it is NULL"), "{error}");

    let (_schema, _, error) = damaged_in_postgres("UPDATE graphwright_store_items SET updated_at_ms = -5").await;
    assert_eq!(corrupt_field(&error), "updated_at_ms");
    let (_schema, _, error) = damaged_in_postgres("UPDATE graphwright_store_items SET ttl_ms = -1").await;
    assert_eq!(corrupt_field(&error), "ttl_ms");
    let (_schema, store, error) =
        damaged_in_postgres("UPDATE graphwright_store_items SET namespace = 'users' || chr(31)").await;
    assert_eq!(corrupt_field(&error), "namespace");
    let listed = store.list_namespaces(&[], None).await.unwrap_err();
    assert_eq!(corrupt_field(&listed), "namespace");
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_database_with_a_newer_store_schema_is_refused() {
    let schema = postgres_server::TestSchema::new("graphwright_store_newer");
    let store = PostgresStore::connect(&schema.url()).await.unwrap();
    store.put(&["kept"], "k", json!(1), None).await.unwrap();
    drop(store);
    execute_sql(&schema.url(), "UPDATE graphwright_meta SET value = 99 WHERE key = 'store_schema_version'").await;
    let error = PostgresStore::connect(&schema.url()).await.unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("the database has store schema version 99; this version of graphwright reads 1"),
        "{message}"
    );

    execute_sql(&schema.url(), "UPDATE graphwright_meta SET value = 1 WHERE key = 'store_schema_version'").await;
    let store = PostgresStore::connect(&schema.url()).await.unwrap();
    assert_eq!(store.get(&["kept"], "k").await.unwrap().unwrap().value, json!(1), "the refusal changed nothing");
}

/// Two stores on one schema, as two processes sharing a database have: each sees what the other
/// wrote, at once, and puts racing on one key from both neither fail nor mix.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_postgres_stores_on_one_database_see_each_others_writes() {
    let schema = postgres_server::TestSchema::new("graphwright_store_shared");
    let clock = ManualClock::new(start());
    let options = || StoreOptions::new().clock(clock.clone());
    // Both set up the schema at once: one waits for the other's setup lock.
    let url = schema.url();
    let (a, b) =
        tokio::join!(PostgresStore::connect_with(&url, options()), PostgresStore::connect_with(&url, options()));
    let (a, b) = (a.unwrap(), b.unwrap());

    a.put(&["users", "u1"], "lang", json!("nb"), None).await.unwrap();
    assert_eq!(b.get(&["users", "u1"], "lang").await.unwrap().unwrap().value, json!("nb"));
    clock.advance(Duration::from_secs(5));
    b.put(&["users", "u1"], "lang", json!("en"), Some(Duration::from_mins(1))).await.unwrap();
    let item = a.get(&["users", "u1"], "lang").await.unwrap().unwrap();
    assert_eq!(item.value, json!("en"));
    assert_eq!(item.created_at, start(), "an overwrite from another store keeps created_at");
    assert_eq!(item.expires_at, Some(start() + Duration::from_secs(65)));
    a.put(&["users", "u2"], "lang", json!("sv"), None).await.unwrap();
    assert_eq!(b.list_namespaces(&["users"], None).await.unwrap(), [vec!["users", "u1"], vec!["users", "u2"]]);
    b.delete(&["users", "u1"], "lang").await.unwrap();
    assert_eq!(a.get(&["users", "u1"], "lang").await.unwrap(), None);

    let mut puts = Vec::new();
    for n in 0..20 {
        for (name, store) in [("a", a.clone()), ("b", b.clone())] {
            puts.push(tokio::spawn(async move {
                store.put(&["race"], "same", json!({"by": name, "n": n}), None).await?;
                store.put(&["race"], &format!("{name}{n}"), json!(n), None).await
            }));
        }
    }
    for put in puts {
        put.await.unwrap().unwrap();
    }
    let same = a.get(&["race"], "same").await.unwrap().unwrap().value;
    assert!(same["by"] == "a" || same["by"] == "b", "{same}");
    assert_eq!(b.search(&["race"], SearchQuery::new()).await.unwrap().len(), 41);
    let by_a = a.search(&["race"], SearchQuery::new().filter(Filter::new().eq("by", "a"))).await.unwrap();
    assert!(by_a.len() <= 1, "one item under one key, whoever wrote it last");

    clock.advance(Duration::from_mins(1));
    assert_eq!(a.get(&["users", "u2"], "lang").await.unwrap().unwrap().value, json!("sv"));
    a.put(&["ttl"], "short", json!(1), Some(Duration::from_secs(1))).await.unwrap();
    clock.advance(Duration::from_secs(1));
    assert_eq!(b.sweep().await.unwrap(), 1, "one store sweeps what the other wrote");
    assert_eq!(a.sweep().await.unwrap(), 0);
}

/// PostgreSQL text cannot hold U+0000: such names are invalid names, refused before anything is
/// sent; inside a value, where it is escaped JSON, it round-trips.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn postgres_refuses_u0000_in_names_and_keeps_it_in_values() {
    let fixture = postgres(StoreOptions::new()).await;
    let store = &*fixture.store;
    let error = store.put(&["users", "a\0b"], "k", json!(1), None).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidNamespace { .. }), "{error:?}");
    assert!(error.to_string().contains("label 1 contains U+0000, which PostgreSQL text cannot hold"), "{error}");
    let error = store.get(&["users"], "k\0").await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidKey { .. }), "{error:?}");
    let error = store.search(&["\0"], SearchQuery::new()).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidNamespace { .. }), "{error:?}");
    let error = store.list_namespaces(&["\0"], None).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidNamespace { .. }), "{error:?}");

    let odd = json!({"nul": "a\u{0}b", "big": u64::MAX, "float": 0.1, "z": 1, "a": [null, -0.0, "é ✓"]});
    store.put(&["users"], "odd", odd.clone(), None).await.unwrap();
    assert_eq!(store.get(&["users"], "odd").await.unwrap().unwrap().value, odd);
}

/// The store and the checkpointer share one database, and a new process finds both.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn the_postgres_store_shares_a_database_with_the_saver() {
    use graphwright::checkpoint::PostgresSaver;
    let schema = postgres_server::TestSchema::new("graphwright_store_saver");
    let saver = PostgresSaver::connect(&schema.url()).await.unwrap();
    let store = PostgresStore::connect(&schema.url()).await.unwrap();
    let app = memory_graph::graph().checkpointer(saver).store(store).compile().unwrap();
    let input = memory_graph::StateUpdate::new().user("u1".to_owned()).note("lives in Oslo".to_owned());
    app.invoke(input, &RunConfig::thread("t1")).await.unwrap();
    drop(app);

    let store = PostgresStore::connect(&schema.url()).await.unwrap();
    assert_eq!(store.get(&["users", "u1", "notes"], "t1").await.unwrap().unwrap().value["text"], "lives in Oslo");
    let saver = PostgresSaver::connect(&schema.url()).await.unwrap();
    let app = memory_graph::graph().checkpointer(saver).store(store).compile().unwrap();
    let state = app.get_state(&RunConfig::thread("t1")).await.unwrap().unwrap();
    assert_eq!(state.state.recalled, ["lives in Oslo"]);
}

/// A search that stops reading rows early (its limit reached) and then refreshes what it found
/// leaves the connection usable: the unread rows never block the refresh or the next call.
/// (Multi-threaded, so that on failure the pool's connections close while the schema is dropped.)
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_postgres_search_stopping_early_still_refreshes() {
    let schema = postgres_server::TestSchema::new("graphwright_store_early");
    let clock = ManualClock::new(start());
    let options = StoreOptions::new().clock(clock.clone()).refresh_on_read(true);
    let store = PostgresStore::connect_with(&schema.url(), options).await.unwrap();
    store.put(&["many"], "k", json!({"n": 0}), Some(Duration::from_secs(10))).await.unwrap();
    execute_sql(
        &schema.url(),
        "INSERT INTO graphwright_store_items (namespace, key, value, created_at_ms, updated_at_ms, ttl_ms, expires_at_ms) \
         SELECT 'many', 'k' || n, '{\"n\": ' || n || ', \"pad\": \"' || repeat('x', 200) || '\"}', 0, 0, 10000, \
         1700000010000 FROM generate_series(1, 20000) AS n",
    )
    .await;
    clock.advance(Duration::from_secs(5));
    let search = async {
        for _ in 0..3 {
            // With a filter, rows are read until two match, not cut by SQL.
            let query = SearchQuery::new().filter(Filter::new().gte("n", 0)).limit(2);
            let found = store.search(&["many"], query).await.unwrap();
            assert_eq!(keys(&found), ["many/k", "many/k1"]);
            assert_eq!(found[0].expires_at, Some(start() + Duration::from_secs(15)));
        }
        store.get(&["many"], "k1").await.unwrap().unwrap()
    };
    let item = tokio::time::timeout(Duration::from_secs(30), search).await.expect("the search never finished");
    assert_eq!(item.expires_at, Some(start() + Duration::from_secs(15)));
}

/// Processes that start together on one new file (a server's workers, the two sides of a
/// hand-off) each set it up: write-ahead logging, their tables, their schema version. Savers and
/// stores that open one new file at the same moment all open: the later ones wait for the
/// earlier instead of failing with "database is locked".
#[test]
fn savers_and_stores_opening_one_new_sqlite_file_at_once_all_open() {
    const OPENERS: usize = 6;
    for round in 0..25 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("shared.db");
        let start = Arc::new(std::sync::Barrier::new(OPENERS));
        let openers: Vec<_> = (0..OPENERS)
            .map(|i| {
                let (path, start) = (path.clone(), Arc::clone(&start));
                std::thread::spawn(move || {
                    start.wait();
                    if i % 2 == 0 {
                        SqliteSaver::open(&path).map(drop).map_err(|e| e.to_string())
                    } else {
                        SqliteStore::open(&path).map(drop).map_err(|e| e.to_string())
                    }
                })
            })
            .collect();
        for opener in openers {
            let opened = opener.join().unwrap();
            assert!(opened.is_ok(), "round {round}: an opener of the shared file failed: {opened:?}");
        }
    }
}
