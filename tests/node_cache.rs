//! Cached nodes (`#[node(cache = CachePolicy::new())]`): a task whose input has an entry in the
//! graph's cache returns the stored output without running the node, is streamed as cached,
//! and stores no write of its own before the checkpoint; entries expire; key functions, Send
//! payloads, clearing, unreadable entries and failing caches; SQLite and PostgreSQL caches
//! shared by two graph values as by two processes. LangGraph's
//! `test_in_one_fan_out_state_graph_waiting_edge_multiple_cond_edge` (with a cache) is the
//! first test, in intent.

// The graph modules are private to this test; their items are `pub` the way users write them.
#![allow(unreachable_pub)]

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

use futures::StreamExt;
use futures::future::BoxFuture;
use graphwright::cache::{Cache, CacheError, InMemoryCache, SqliteCache};
use graphwright::checkpoint::{CheckpointError, CheckpointRecord, Checkpointer, Claim, ListFilter, WriteRecord};
use graphwright::prelude::*;
use graphwright::{CachePolicy, EventKind};
use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

static REWRITES: AtomicUsize = AtomicUsize::new(0);

/// A query is rewritten (cached), analyzed, and sent back to be rewritten once more before the
/// answer: each run rewrites two different states.
#[graph]
mod search {
    use super::*;

    #[state]
    pub struct State {
        pub query: String,
        pub answer: String,
    }

    #[node(entry, next = analyze, cache = CachePolicy::new())]
    fn rewrite(state: &State) -> StateUpdate {
        REWRITES.fetch_add(1, Ordering::SeqCst);
        StateUpdate::new().query(format!("query: {}", state.query))
    }

    #[node(next = decide)]
    fn analyze(state: &State) -> StateUpdate {
        StateUpdate::new().query(format!("analyzed: {}", state.query))
    }

    #[node(next = rewrite | qa)]
    fn decide(state: &State) -> (StateUpdate, DecideNext) {
        let next = if state.query.matches("analyzed").count() > 1 { DecideNext::Qa } else { DecideNext::Rewrite };
        (StateUpdate::new(), next)
    }

    #[node(next = END)]
    fn qa(state: &State) -> StateUpdate {
        StateUpdate::new().answer(format!("answer to {}", state.query))
    }
}

fn search_input() -> search::State {
    search::State { query: "what is weather in sf".into(), answer: String::new() }
}

/// Each `updates` event as `node` (and ` cached` for a hit).
async fn updates(app: &CompiledGraph<search::State>) -> Vec<String> {
    let mut events = app.stream(search_input(), &RunConfig::default(), StreamMode::Updates);
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        if let EventKind::Update { node, cached, .. } = event.kind {
            seen.push(if cached { format!("{node} cached") } else { node });
        }
    }
    seen
}

#[tokio::test]
async fn a_cached_node_runs_once_per_input_across_runs_until_the_cache_is_cleared() {
    let app = search::graph().cache(InMemoryCache::new()).compile().unwrap();
    let out = app.invoke(search_input(), &RunConfig::default()).await.unwrap();
    let expected = "answer to analyzed: query: analyzed: query: what is weather in sf";
    assert_eq!(out.state.answer, expected);
    assert_eq!(REWRITES.load(Ordering::SeqCst), 2, "two states were rewritten");

    assert_eq!(
        updates(&app).await,
        ["rewrite cached", "analyze", "decide", "rewrite cached", "analyze", "decide", "qa"],
        "the second run's rewrites come from the cache"
    );
    assert_eq!(REWRITES.load(Ordering::SeqCst), 2, "a hit does not run the node");

    app.clear_cache(&[]).await.unwrap();
    let out = app.invoke(search_input(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.answer, expected, "a run after the clear answers the same");
    assert_eq!(REWRITES.load(Ordering::SeqCst), 4, "after the clear both rewrites ran again");
}

static LOOKUPS: AtomicUsize = AtomicUsize::new(0);

/// `lookup` runs beside `other` in one step, both cached: `lookup`'s entries are keyed by the
/// query's lower-case text alone, `other`'s by the whole state.
#[graph]
mod pair {
    use super::*;

    #[state]
    pub struct State {
        pub query: String,
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = [lookup, other])]
    fn start(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = END, cache = CachePolicy::new().key(|s: &State| s.query.to_lowercase()))]
    fn lookup(state: &State) -> StateUpdate {
        LOOKUPS.fetch_add(1, Ordering::SeqCst);
        StateUpdate::new().log(vec![format!("found {}", state.query)])
    }

    #[node(next = END, cache = CachePolicy::new())]
    fn other(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["other".into()])
    }
}

fn pair_input(query: &str) -> pair::State {
    pair::State { query: query.into(), log: Vec::new() }
}

/// A checkpointer that counts the writes stored on their own (not with a checkpoint), by
/// thread.
#[derive(Default)]
struct CountingWrites {
    inner: MemorySaver,
    separate: Mutex<Vec<(String, u32)>>,
}

impl Checkpointer for CountingWrites {
    fn claim<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Claim, CheckpointError>> {
        self.inner.claim(thread)
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.release(claim)
    }

    fn put<'a>(
        &'a self,
        claim: &'a Claim,
        record: CheckpointRecord,
        expected_head: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.put(claim, record, expected_head, writes)
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.separate.lock().unwrap().extend(writes.iter().map(|w| (w.thread_id.clone(), w.task)));
        self.inner.put_writes(claim, writes)
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        self.inner.get(thread, id)
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        self.inner.list(thread, filter)
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        self.inner.writes(thread, checkpoint)
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.delete_thread(thread)
    }
}

/// LangGraph's `test_no_redundant_put_writes_for_cached_task`, for nodes: a hit in a step with
/// a sibling is stored with the step's checkpoint, not on its own as a finished task's write
/// is, and the thread reads the same as the first one.
#[tokio::test]
async fn a_hit_beside_a_sibling_stores_no_write_of_its_own_and_a_key_function_shares_entries() {
    let saver = Arc::new(CountingWrites::default());
    let app = pair::graph()
        .cache(InMemoryCache::new())
        .shared_checkpointer(Arc::clone(&saver) as Arc<dyn Checkpointer>)
        .compile()
        .unwrap();
    let first = app.invoke(pair_input("Weather"), &RunConfig::thread("first")).await.unwrap();
    let second = app.invoke(pair_input("weather"), &RunConfig::thread("second")).await.unwrap();
    assert_eq!(LOOKUPS.load(Ordering::SeqCst), 1, "the key is the lower-case query: one entry for both");
    assert_eq!(first.state.log, ["found Weather", "other"]);
    assert_eq!(second.state.log, ["found Weather", "other"], "the stored output, as the node returned it");

    let separate = saver.separate.lock().unwrap().clone();
    let by = |thread: &str| separate.iter().filter(|(t, _)| t == thread).map(|(_, task)| *task).collect::<Vec<_>>();
    let (mut first_tasks, second_tasks) = (by("first"), by("second"));
    first_tasks.sort_unstable();
    assert_eq!(first_tasks, [0, 1], "both tasks of the step ran and stored their writes at once");
    assert_eq!(second_tasks.len(), 1, "only the sibling that ran stored its write at once: {second_tasks:?}");
    let read = app.get_state(&RunConfig::thread("second")).await.unwrap().unwrap();
    assert_eq!(read.state.log, ["found Weather", "other"], "the hit's write went in with the checkpoint");
}

static EXPIRING: AtomicUsize = AtomicUsize::new(0);

/// One node whose entries live 1.5 s (long enough for two runs on a loaded machine).
#[graph]
mod ttl {
    use super::*;

    #[state]
    pub struct State {
        pub n: u64,
    }

    #[node(entry, next = END, cache = CachePolicy::new().ttl(Duration::from_millis(1500)))]
    async fn expiring(state: &State) -> StateUpdate {
        EXPIRING.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        StateUpdate::new().n(state.n + 1)
    }
}

#[tokio::test]
async fn an_entry_is_served_until_its_ttl_runs_out_and_never_after() {
    let app = ttl::graph().cache(InMemoryCache::new()).compile().unwrap();
    let run = || async { app.invoke(ttl::State { n: 1 }, &RunConfig::default()).await.unwrap() };
    run().await;
    run().await;
    assert_eq!(EXPIRING.load(Ordering::SeqCst), 1, "the second run was served from the cache");
    tokio::time::sleep(Duration::from_millis(1600)).await;
    run().await;
    assert_eq!(EXPIRING.load(Ordering::SeqCst), 2, "the entry had expired: the node ran again");
    run().await;
    assert_eq!(EXPIRING.load(Ordering::SeqCst), 2, "and its new output is served");
}

/// A typed Send payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// The number the worker adds ten times.
    pub n: u64,
}

static WORKERS: AtomicUsize = AtomicUsize::new(0);

#[graph]
mod map_reduce {
    use super::*;

    #[state]
    pub struct State {
        pub count: u64,
        #[reducer(add)]
        pub total: u64,
    }

    #[node(entry, send = worker)]
    fn fan(state: &State) -> Vec<Item> {
        (1..=state.count).map(|n| Item { n }).collect()
    }

    #[node(next = END, cache = CachePolicy::new())]
    async fn worker(item: &Item, _state: &State) -> StateUpdate {
        WORKERS.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        StateUpdate::new().total(item.n * 10)
    }
}

#[tokio::test]
async fn send_tasks_are_keyed_by_their_payload() {
    let app = map_reduce::graph().cache(InMemoryCache::new()).compile().unwrap();
    let run = |count: u64| {
        let app = app.clone();
        async move { app.invoke(map_reduce::StateUpdate::new().count(count), &RunConfig::default()).await.unwrap() }
    };
    assert_eq!(run(3).await.state.total, 60);
    assert_eq!(WORKERS.load(Ordering::SeqCst), 3);
    assert_eq!(run(3).await.state.total, 60, "the cached outputs add up as the ran ones did");
    assert_eq!(WORKERS.load(Ordering::SeqCst), 3, "every payload had an entry");
    assert_eq!(run(4).await.state.total, 100);
    assert_eq!(WORKERS.load(Ordering::SeqCst), 4, "only the new payload ran");
}

#[test]
fn a_cache_policy_needs_a_cache_and_a_key_of_the_nodes_input() {
    let error = search::graph().compile().unwrap_err().to_string();
    assert!(error.contains("node `rewrite` has a cache policy but the graph has no cache"), "{error}");
    assert!(error.contains(".cache(InMemoryCache::new())"), "{error}");

    let mistyped = map_reduce::graph()
        .cache(InMemoryCache::new())
        .policy("worker", NodePolicy::new().cache(CachePolicy::new().key(|s: &map_reduce::State| s.count.to_string())))
        .compile()
        .unwrap_err()
        .to_string();
    assert!(mistyped.contains("the cache key of node `worker` reads `&node_cache::map_reduce::State`"), "{mistyped}");
    assert!(mistyped.contains("make the key function take `&node_cache::Item`"), "{mistyped}");
}

#[tokio::test]
async fn clear_cache_names_what_it_cannot_clear_and_clears_one_node() {
    let uncached = pair::graph().policy("lookup", NodePolicy::new()).policy("other", NodePolicy::new());
    let error = uncached.compile().unwrap().clear_cache(&[]).await.unwrap_err().to_string();
    assert_eq!(
        error,
        "graph `pair`: the cache was not cleared: it has no cache; give it one with `.cache(..)` on the builder"
    );

    let cache = Arc::new(InMemoryCache::new());
    let app = pair::graph().shared_cache(Arc::clone(&cache) as Arc<dyn Cache>).compile().unwrap();
    for (names, reason) in
        [(["start"], "node `start` has no cache policy"), (["nowhere"], "it has no node named `nowhere`")]
    {
        let error = app.clear_cache(&names).await.unwrap_err();
        assert!(matches!(&error, GraphError::ClearCache { reason: r, .. } if r == reason), "{error}");
    }
    cache.set("pair:lookup", "a", b"x".to_vec(), None).await.unwrap();
    cache.set("pair:other", "b", b"y".to_vec(), None).await.unwrap();
    cache.set("elsewhere:lookup", "c", b"z".to_vec(), None).await.unwrap();
    app.clear_cache(&["lookup"]).await.unwrap();
    assert_eq!(cache.get("pair:lookup", "a").await.unwrap(), None);
    assert!(cache.get("pair:other", "b").await.unwrap().is_some(), "another node's entries stay");
    app.clear_cache(&[]).await.unwrap();
    assert_eq!(cache.get("pair:other", "b").await.unwrap(), None, "every cached node of the graph");
    assert!(cache.get("elsewhere:lookup", "c").await.unwrap().is_some(), "another graph's entries stay");
}

static KEYED: AtomicUsize = AtomicUsize::new(0);

/// One cached node keyed by a constant, so a test can reach its entry.
#[graph]
mod keyed {
    use super::*;

    #[state]
    pub struct State {
        pub n: u64,
    }

    #[node(entry, next = END, cache = CachePolicy::new().key(|_: &State| "k".to_owned()))]
    fn work(state: &State) -> StateUpdate {
        KEYED.fetch_add(1, Ordering::SeqCst);
        StateUpdate::new().n(state.n + 1)
    }
}

/// A cache whose every call fails.
struct Broken;

impl Cache for Broken {
    fn get<'a>(&'a self, _: &'a str, _: &'a str) -> BoxFuture<'a, Result<Option<Vec<u8>>, CacheError>> {
        Box::pin(async { Err(CacheError::backend("read an entry", "the cache server is down")) })
    }

    fn set<'a>(
        &'a self,
        _: &'a str,
        _: &'a str,
        _: Vec<u8>,
        _: Option<Duration>,
    ) -> BoxFuture<'a, Result<(), CacheError>> {
        Box::pin(async { Err(CacheError::backend("store an entry", "the cache server is down")) })
    }

    fn clear<'a>(&'a self, _: Option<&'a [String]>) -> BoxFuture<'a, Result<(), CacheError>> {
        Box::pin(async { Err(CacheError::backend("clear entries", "the cache server is down")) })
    }
}

/// The cache only saves work: an entry that does not read back as the node's output is not
/// served (the node runs and its output replaces it), and a cache that fails leaves every run
/// to its nodes; clearing through it names the failure.
#[tokio::test]
async fn unreadable_entries_and_failing_caches_only_cost_a_run_of_the_node() {
    let cache = Arc::new(InMemoryCache::new());
    let app = keyed::graph().shared_cache(Arc::clone(&cache) as Arc<dyn Cache>).compile().unwrap();
    let run = |app: CompiledGraph<keyed::State>| async move {
        app.invoke(keyed::State { n: 1 }, &RunConfig::default()).await.unwrap().state.n
    };
    for junk in [&b"not an output"[..], &[], &[0x05, 0xa4, b'w', b'o', b'r', b'k']] {
        cache.set("keyed:work", "k", junk.to_vec(), None).await.unwrap();
        let before = KEYED.load(Ordering::SeqCst);
        assert_eq!(run(app.clone()).await, 2);
        assert_eq!(KEYED.load(Ordering::SeqCst), before + 1, "an unreadable entry ({junk:?}) is not served");
        assert_eq!(run(app.clone()).await, 2);
        assert_eq!(KEYED.load(Ordering::SeqCst), before + 1, "the node's output replaced it");
    }

    let broken = keyed::graph().cache(Broken).compile().unwrap();
    let before = KEYED.load(Ordering::SeqCst);
    assert_eq!(run(broken.clone()).await, 2);
    assert_eq!(run(broken.clone()).await, 2);
    assert_eq!(KEYED.load(Ordering::SeqCst), before + 2, "with a failing cache every task runs");
    let error = broken.clear_cache(&[]).await.unwrap_err().to_string();
    assert_eq!(error, "the cache could not clear entries: the cache server is down");
}

static SHARED: AtomicUsize = AtomicUsize::new(0);

#[graph]
mod shared {
    use super::*;

    #[state]
    pub struct State {
        pub text: String,
    }

    #[node(entry, next = END, cache = CachePolicy::new())]
    async fn shout(state: &State) -> StateUpdate {
        SHARED.fetch_add(1, Ordering::SeqCst);
        tokio::task::yield_now().await;
        StateUpdate::new().text(state.text.to_uppercase())
    }
}

/// Two graph values on one cache location, as two processes would be: the second is served
/// what the first stored.
async fn shared_between_two_graphs(one: Arc<dyn Cache>, two: Arc<dyn Cache>, text: &str) {
    let first = shared::graph().shared_cache(one).compile().unwrap();
    let second = shared::graph().shared_cache(two).compile().unwrap();
    let input = || shared::State { text: text.to_owned() };
    let before = SHARED.load(Ordering::SeqCst);
    assert_eq!(first.invoke(input(), &RunConfig::default()).await.unwrap().state.text, text.to_uppercase());
    assert_eq!(second.invoke(input(), &RunConfig::default()).await.unwrap().state.text, text.to_uppercase());
    assert_eq!(SHARED.load(Ordering::SeqCst), before + 1, "the second graph was served the first one's entry");
    second.clear_cache(&[]).await.unwrap();
    first.invoke(input(), &RunConfig::default()).await.unwrap();
    assert_eq!(SHARED.load(Ordering::SeqCst), before + 2, "a clear through one is seen by the other");
}

#[tokio::test]
async fn a_sqlite_cache_is_shared_through_its_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cache.db");
    let (one, two) = (SqliteCache::open(&path).unwrap(), SqliteCache::open(&path).unwrap());
    shared_between_two_graphs(Arc::new(one), Arc::new(two), "sqlite").await;
}

#[cfg(feature = "postgres")]
#[tokio::test]
async fn a_postgres_cache_is_shared_through_its_database() {
    let schema = postgres_server::TestSchema::new("graphwright_node_cache");
    let one = graphwright::cache::PostgresCache::connect(&schema.url()).await.unwrap();
    let two = graphwright::cache::PostgresCache::connect(&schema.url()).await.unwrap();
    shared_between_two_graphs(Arc::new(one), Arc::new(two), "postgres").await;
}

static GREETED: AtomicUsize = AtomicUsize::new(0);

/// A greeting that names whoever asked: its output depends on the run's user, not only its input.
#[graph]
mod greeter {
    use super::*;

    #[state]
    pub struct State {
        pub topic: String,
        pub greeting: String,
    }

    #[node(entry, next = END, cache = CachePolicy::new())]
    fn greet(state: &State, rt: &Runtime) -> StateUpdate {
        GREETED.fetch_add(1, Ordering::SeqCst);
        let who = rt.user().map_or("nobody", |u| u.identity.as_str());
        StateUpdate::new().greeting(format!("{}, {who}", state.topic))
    }
}

/// Entries are kept per user: the same input from another user runs the node again and never
/// gets the first user's output; `across_users` shares them.
#[tokio::test]
async fn a_users_cached_output_is_never_served_to_another_user() {
    let app = greeter::graph().cache(InMemoryCache::new()).compile().unwrap();
    let input = || greeter::State { topic: "hello".into(), greeting: String::new() };
    let run = |user: Option<&str>| {
        let cfg = user.map_or_else(RunConfig::default, |u| RunConfig::default().user(graphwright::AuthUser::new(u)));
        let app = &app;
        async move { app.invoke(input(), &cfg).await.unwrap().state.greeting }
    };
    assert_eq!(run(Some("ada")).await, "hello, ada");
    assert_eq!(run(Some("bo")).await, "hello, bo", "not ada's entry");
    assert_eq!(run(Some("ada")).await, "hello, ada");
    assert_eq!(run(None).await, "hello, nobody");
    assert_eq!(GREETED.load(Ordering::SeqCst), 3, "ada's second run was a hit");

    let shared = greeter::graph()
        .policy("greet", NodePolicy::new().cache(CachePolicy::new().across_users()))
        .cache(InMemoryCache::new())
        .compile()
        .unwrap();
    let as_user = |u: &str| RunConfig::default().user(graphwright::AuthUser::new(u));
    assert_eq!(shared.invoke(input(), &as_user("ada")).await.unwrap().state.greeting, "hello, ada");
    assert_eq!(shared.invoke(input(), &as_user("bo")).await.unwrap().state.greeting, "hello, ada", "shared on purpose");
}
