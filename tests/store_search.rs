//! Search by meaning, one suite run against every store: ranking and scores, filters and paging
//! with a query, items stored without vectors, what `put_with` embeds, expiry and deletes, the
//! errors of a store without an index and of a model that fails. The vectors come from a model
//! whose similarities are known exactly (words hashed into a vector: a score is the cosine of
//! two bags of words); `store_search_minilm` ranks with a real sentence model.

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

use futures::future::BoxFuture;
use graphwright::model::{Embeddings, ModelError};
#[cfg(feature = "postgres")]
use graphwright::store::PostgresStore;
use graphwright::store::{
    Filter, InMemoryStore, IndexConfig, Indexing, Item, ManualClock, PutItem, SearchQuery, SqliteStore, Store,
    StoreError, StoreOptions,
};
use serde_json::json;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

const DIMS: usize = 64;

/// Each word of a text (lowercased, letters and digits) adds 1 to one of [`DIMS`] numbers
/// chosen by its hash: texts sharing words point the same way.
#[derive(Default)]
struct Words {
    calls: AtomicUsize,
    texts: AtomicUsize,
    failing: AtomicBool,
}

fn bag(text: &str) -> Vec<f32> {
    let mut vector = vec![0.0; DIMS];
    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
        // FNV-1a: the same word lands on the same number in every run.
        let hash = word
            .to_lowercase()
            .bytes()
            .fold(0xcbf2_9ce4_8422_2325_u64, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3));
        vector[usize::try_from(hash % DIMS as u64).unwrap()] += 1.0;
    }
    vector
}

impl Embeddings for Words {
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ModelError>> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::SeqCst);
            self.texts.fetch_add(texts.len(), Ordering::SeqCst);
            if self.failing.load(Ordering::SeqCst) {
                return Err(ModelError::Server {
                    provider: "words".into(),
                    status: 503,
                    message: "the embeddings service is down".into(),
                });
            }
            Ok(texts.iter().map(|t| bag(t)).collect())
        })
    }
}

/// A store under test, its model, its clock, and whatever must outlive it.
struct Fixture {
    store: Arc<dyn Store>,
    model: Arc<Words>,
    clock: ManualClock,
    _keep: Option<Box<dyn Send>>,
}

type Pending = Pin<Box<dyn Future<Output = (Arc<dyn Store>, Option<Box<dyn Send>>)>>>;
type Make = fn(StoreOptions) -> Pending;

fn in_memory(options: StoreOptions) -> Pending {
    Box::pin(std::future::ready((Arc::new(InMemoryStore::with_options(options)) as Arc<dyn Store>, None)))
}

fn sqlite(options: StoreOptions) -> Pending {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open_with(dir.path().join("store.db"), options).unwrap();
    Box::pin(std::future::ready((Arc::new(store) as Arc<dyn Store>, Some(Box::new(dir) as Box<dyn Send>))))
}

#[cfg(feature = "postgres")]
fn postgres(options: StoreOptions) -> Pending {
    Box::pin(async move {
        let schema = postgres_server::TestSchema::new("graphwright_store_search");
        let store = PostgresStore::connect_with(&schema.url(), options).await.unwrap();
        (Arc::new(store) as Arc<dyn Store>, Some(Box::new(schema) as Box<dyn Send>))
    })
}

fn start() -> SystemTime {
    UNIX_EPOCH + Duration::from_secs(1_700_000_000)
}

/// A store indexing `fields` (the whole value for none).
async fn indexed(make: Make, fields: &[&str]) -> Fixture {
    let model = Arc::new(Words::default());
    let mut index = IndexConfig::shared(model.clone(), DIMS);
    if !fields.is_empty() {
        index = index.fields(fields).unwrap();
    }
    let clock = ManualClock::new(start());
    let (store, keep) = make(StoreOptions::new().clock(clock.clone()).index(index)).await;
    Fixture { store, model, clock, _keep: keep }
}

fn keys(items: &[Item]) -> Vec<&str> {
    items.iter().map(|i| i.key.as_str()).collect()
}

/// The cosine similarity of two texts' bags of words, worked out here apart from the stores.
fn cosine(a: &str, b: &str) -> f64 {
    let (a, b) = (bag(a), bag(b));
    let dot: f64 = a.iter().zip(&b).map(|(x, y)| f64::from(*x) * f64::from(*y)).sum();
    let norm = |v: &[f32]| v.iter().map(|x| f64::from(*x).powi(2)).sum::<f64>().sqrt();
    dot / (norm(&a) * norm(&b))
}

fn close(a: Option<f64>, b: f64) -> bool {
    a.is_some_and(|a| (a - b).abs() < 1e-5)
}

async fn memories(store: &dyn Store) {
    let ns = ["users", "u1", "memories"];
    for (key, text, kind) in [
        ("tea", "likes green tea in the morning", "taste"),
        ("oslo", "lives in oslo near the fjord", "place"),
        ("coffee", "drinks black coffee at night", "taste"),
        ("cat", "has a cat called tea", "pet"),
    ] {
        store.put(&ns, key, json!({"text": text, "kind": kind}), None).await.unwrap();
    }
}

async fn ranks_by_meaning_with_scores(make: Make) {
    let f = indexed(make, &["text"]).await;
    memories(&*f.store).await;
    let found = f.store.search(&["users"], SearchQuery::new().query("green tea")).await.unwrap();
    assert_eq!(keys(&found).len(), 4);
    assert_eq!(keys(&found)[..2], ["tea", "cat"]);
    assert!(found.windows(2).all(|w| w[0].score >= w[1].score), "best first");
    assert!(close(found[0].score, cosine("green tea", "likes green tea in the morning")), "{:?}", found[0].score);
    assert!(close(found[1].score, cosine("green tea", "has a cat called tea")), "{:?}", found[1].score);
    assert!(found[2..].iter().all(|i| i.score.is_some_and(|s| s.abs() < 0.3)), "unrelated memories score near 0");
    assert_eq!(found[0].value["kind"], "taste", "the whole item comes back");
    let plain = f.store.search(&["users"], SearchQuery::new()).await.unwrap();
    assert!(plain.iter().all(|i| i.score.is_none()), "no query, no score");
    assert_eq!(f.store.get(&["users", "u1", "memories"], "tea").await.unwrap().unwrap().score, None);
}

async fn filters_prefixes_and_pages_apply_to_the_ranking(make: Make) {
    let f = indexed(make, &["text"]).await;
    memories(&*f.store).await;
    f.store
        .put(&["users", "u2", "memories"], "tea2", json!({"text": "green tea green tea", "kind": "taste"}), None)
        .await
        .unwrap();
    let query = || SearchQuery::new().query("green tea");
    let mine = f.store.search(&["users", "u1"], query()).await.unwrap();
    assert_eq!(keys(&mine).len(), 4, "another namespace's better match stays out");
    assert_eq!(keys(&mine)[..2], ["tea", "cat"]);
    let all = f.store.search(&["users"], query()).await.unwrap();
    assert_eq!(keys(&all)[0], "tea2");
    let tastes = f.store.search(&["users", "u1"], query().filter(Filter::new().eq("kind", "taste"))).await.unwrap();
    assert_eq!(keys(&tastes), ["tea", "coffee"]);
    let second = f.store.search(&["users", "u1"], query().offset(1).limit(2)).await.unwrap();
    assert_eq!(keys(&second), keys(&mine)[1..3]);
    let filtered_page =
        f.store.search(&["users"], query().filter(Filter::new().ne("kind", "pet")).offset(1).limit(1)).await.unwrap();
    assert_eq!(keys(&filtered_page), ["tea"]);
}

async fn items_without_vectors_come_last_in_key_order(make: Make) {
    let f = indexed(make, &["text"]).await;
    memories(&*f.store).await;
    let ns = ["users", "u1", "memories"];
    let calls = f.model.calls.load(Ordering::SeqCst);
    f.store.put_with(&ns, "a-secret", json!({"text": "green tea secret"}), None, Indexing::Off).await.unwrap();
    assert_eq!(f.model.calls.load(Ordering::SeqCst), calls, "an item put with Indexing::Off is not embedded");
    f.store.put(&ns, "b-no-text", json!({"title": "green tea"}), None).await.unwrap();
    assert_eq!(f.model.calls.load(Ordering::SeqCst), calls, "a value without the indexed field has nothing to embed");
    let found = f.store.search(&["users"], SearchQuery::new().query("green tea")).await.unwrap();
    assert_eq!(keys(&found).len(), 6);
    assert_eq!(keys(&found)[..2], ["tea", "cat"]);
    assert_eq!(keys(&found)[4..], ["a-secret", "b-no-text"]);
    assert!(found[..4].iter().all(|i| i.score.is_some()));
    assert_eq!((found[4].score, found[5].score), (None, None));
    let tail = f.store.search(&["users"], SearchQuery::new().query("green tea").offset(3).limit(2)).await.unwrap();
    assert_eq!(keys(&tail), [keys(&found)[3], "a-secret"], "paging runs across the scored and the unscored");
}

async fn put_with_fields_embeds_other_paths_and_every_text(make: Make) {
    let f = indexed(make, &["text"]).await;
    let ns = ["docs"];
    f.store
        .put_with(
            &ns,
            "notes",
            json!({"text": "nothing relevant", "notes": [{"body": "fjord walks"}, {"body": "green tea"}]}),
            None,
            Indexing::Fields(vec!["notes[*].body".into()]),
        )
        .await
        .unwrap();
    f.store.put(&ns, "plain", json!({"text": "green leaves", "notes": []}), None).await.unwrap();
    let found = f.store.search(&ns, SearchQuery::new().query("green tea")).await.unwrap();
    assert_eq!(keys(&found), ["notes", "plain"], "an item scores as its best-matching text");
    assert!(close(found[0].score, 1.0));
    let error =
        f.store.put_with(&ns, "bad", json!({}), None, Indexing::Fields(vec!["notes[".into()])).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidIndex { .. }) && error.to_string().contains("never closed"), "{error}");
    assert_eq!(f.store.get(&ns, "bad").await.unwrap(), None, "a refused put stores nothing");
}

async fn overwrites_deletes_and_expiry_update_the_ranking(make: Make) {
    let f = indexed(make, &["text"]).await;
    memories(&*f.store).await;
    let ns = ["users", "u1", "memories"];
    f.store.put(&ns, "oslo", json!({"text": "green tea in oslo", "kind": "place"}), None).await.unwrap();
    f.store.delete(&ns, "tea").await.unwrap();
    f.store.put(&ns, "brief", json!({"text": "green tea tasting"}), Some(Duration::from_mins(1))).await.unwrap();
    let found = f.store.search(&["users"], SearchQuery::new().query("green tea").limit(2)).await.unwrap();
    assert_eq!(keys(&found), ["brief", "oslo"]);
    f.clock.advance(Duration::from_secs(61));
    let found = f.store.search(&["users"], SearchQuery::new().query("green tea")).await.unwrap();
    assert_eq!(keys(&found).len(), 3, "deleted and expired items are gone from the ranking");
    assert_eq!(keys(&found)[..2], ["oslo", "cat"]);
    assert_eq!(f.store.sweep().await.unwrap(), 1);
    f.store.put(&ns, "brief", json!({"text": "plain water"}), None).await.unwrap();
    let found = f.store.search(&["users"], SearchQuery::new().query("green tea")).await.unwrap();
    assert_eq!(keys(&found)[..2], ["oslo", "cat"], "an item put again after its expiry has its new vectors only");
}

async fn put_many_embeds_in_one_call_and_is_all_or_nothing(make: Make) {
    let f = indexed(make, &["text"]).await;
    let item = |key: &str, text: &str| PutItem::new(&["m"], key, json!({"text": text}));
    let refused = vec![item("tea", "green tea"), item("", "an empty key")];
    let error = f.store.put_many(refused).await.unwrap_err();
    assert!(matches!(error, StoreError::InvalidKey { .. }), "{error}");
    assert_eq!(f.model.calls.load(Ordering::SeqCst), 0, "names are checked before anything is embedded");
    assert_eq!(f.store.get(&["m"], "tea").await.unwrap(), None, "a refused batch stores nothing");
    let batch = vec![
        item("tea", "green tea"),
        item("coffee", "black coffee"),
        item("juice", "orange juice").indexing(Indexing::Off),
        item("soon", "green tea leaves").ttl(Duration::from_mins(1)),
    ];
    f.store.put_many(batch).await.unwrap();
    assert_eq!(f.model.calls.load(Ordering::SeqCst), 1, "one call of the model for the whole batch");
    assert_eq!(f.model.texts.load(Ordering::SeqCst), 3);
    let found = f.store.search(&["m"], SearchQuery::new().query("green tea")).await.unwrap();
    assert_eq!(keys(&found)[..2], ["tea", "soon"]);
    assert_eq!(keys(&found)[3], "juice");
    f.clock.advance(Duration::from_mins(2));
    assert_eq!(f.store.get(&["m"], "soon").await.unwrap(), None, "each item keeps its own time to live");
    f.model.failing.store(true, Ordering::SeqCst);
    let error = f.store.put_many(vec![item("a", "one"), item("b", "two")]).await.unwrap_err();
    assert!(error.to_string().contains("the values of 2 items"), "{error}");
    assert_eq!(f.store.get(&["m"], "a").await.unwrap(), None);
}

async fn vectors_replaced_many_times_are_ranked_by_their_latest(make: Make) {
    let f = indexed(make, &["text"]).await;
    f.store.put(&["m"], "other", json!({"text": "black coffee"}), None).await.unwrap();
    // A search first, so that a store keeping a copy of its vectors has it loaded and keeps it
    // in step through the replacements.
    assert_eq!(keys(&f.store.search(&["m"], SearchQuery::new().query("tea")).await.unwrap()), ["other"]);
    // Enough replacements that the stores close the gaps the old vectors leave.
    let texts = ["black coffee at night", "green tea"];
    let batch: Vec<PutItem> =
        (0..1500).map(|n| PutItem::new(&["m"], "k", json!({"text": texts[n % 2], "n": n}))).collect();
    f.store.put_many(batch).await.unwrap();
    let found = f.store.search(&["m"], SearchQuery::new().query("green tea")).await.unwrap();
    assert_eq!(keys(&found), ["k", "other"]);
    assert_eq!(found[0].value["n"], 1499, "the last put of a key in a batch is the one kept");
    assert!(close(found[0].score, 1.0), "{:?}", found[0].score);
    f.store.delete(&["m"], "k").await.unwrap();
    let found = f.store.search(&["m"], SearchQuery::new().query("green tea")).await.unwrap();
    assert_eq!(keys(&found), ["other"]);
}

async fn a_failing_model_fails_the_put_and_stores_nothing(make: Make) {
    let f = indexed(make, &[]).await;
    f.store.put(&["a"], "kept", json!("green tea"), None).await.unwrap();
    f.model.failing.store(true, Ordering::SeqCst);
    let error = f.store.put(&["a"], "lost", json!("black coffee"), None).await.unwrap_err();
    assert!(matches!(error, StoreError::Embedding { .. }), "{error}");
    assert!(error.to_string().contains("\"lost\"") && error.to_string().contains("503"), "{error}");
    assert_eq!(f.store.get(&["a"], "lost").await.unwrap(), None);
    let error = f.store.search(&["a"], SearchQuery::new().query("tea")).await.unwrap_err();
    assert!(error.to_string().contains("the search query (3 characters)"), "{error}");
    assert!(!error.to_string().contains("tea"), "the query's text stays out of the error: {error}");
    f.model.failing.store(false, Ordering::SeqCst);
    let found = f.store.search(&["a"], SearchQuery::new().query("tea")).await.unwrap();
    assert_eq!(keys(&found), ["kept"]);
}

async fn vectors_of_the_wrong_size_are_refused(make: Make) {
    let (store, _keep) = make(StoreOptions::new().index(IndexConfig::new(Words::default(), DIMS + 1))).await;
    let error = store.put(&["a"], "k", json!("text"), None).await.unwrap_err();
    assert!(
        matches!(error, StoreError::InvalidIndex { .. })
            && error.to_string().contains("64 numbers")
            && error.to_string().contains("dims = 65"),
        "{error}"
    );
    assert_eq!(store.get(&["a"], "k").await.unwrap(), None);
}

async fn a_store_without_an_index_refuses_a_query(make: Make) {
    let (store, _keep) = make(StoreOptions::new()).await;
    store.put(&["a"], "k", json!("green tea"), None).await.unwrap();
    let error = store.search(&["a"], SearchQuery::new().query("tea")).await.unwrap_err();
    assert!(matches!(error, StoreError::NoIndex { .. }) && error.to_string().contains("IndexConfig"), "{error}");
    let error = store.put_with(&["a"], "j", json!("x"), None, Indexing::Fields(vec!["text".into()])).await.unwrap_err();
    assert!(matches!(error, StoreError::NoIndex { .. }), "{error}");
    store.put_with(&["a"], "j", json!("x"), None, Indexing::Off).await.unwrap();
}

macro_rules! suite {
    ($($backend:ident => $make:expr),* $(,)?) => {$(
        mod $backend {
            use super::*;

            #[tokio::test]
            async fn ranks_by_meaning_with_scores() { super::ranks_by_meaning_with_scores($make).await }
            #[tokio::test]
            async fn filters_prefixes_and_pages_apply_to_the_ranking() {
                super::filters_prefixes_and_pages_apply_to_the_ranking($make).await
            }
            #[tokio::test]
            async fn items_without_vectors_come_last_in_key_order() {
                super::items_without_vectors_come_last_in_key_order($make).await
            }
            #[tokio::test]
            async fn put_with_fields_embeds_other_paths_and_every_text() {
                super::put_with_fields_embeds_other_paths_and_every_text($make).await
            }
            #[tokio::test]
            async fn overwrites_deletes_and_expiry_update_the_ranking() {
                super::overwrites_deletes_and_expiry_update_the_ranking($make).await
            }
            #[tokio::test]
            async fn put_many_embeds_in_one_call_and_is_all_or_nothing() {
                super::put_many_embeds_in_one_call_and_is_all_or_nothing($make).await
            }
            #[tokio::test]
            async fn vectors_replaced_many_times_are_ranked_by_their_latest() {
                super::vectors_replaced_many_times_are_ranked_by_their_latest($make).await
            }
            #[tokio::test]
            async fn a_failing_model_fails_the_put_and_stores_nothing() {
                super::a_failing_model_fails_the_put_and_stores_nothing($make).await
            }
            #[tokio::test]
            async fn vectors_of_the_wrong_size_are_refused() { super::vectors_of_the_wrong_size_are_refused($make).await }
            #[tokio::test]
            async fn a_store_without_an_index_refuses_a_query() {
                super::a_store_without_an_index_refuses_a_query($make).await
            }
        }
    )*};
}

suite!(memory => in_memory, sqlite => sqlite);
#[cfg(feature = "postgres")]
suite!(postgres => postgres);

/// Two stores on one SQLite file (two processes, say): a search by one sees what the other
/// wrote since its copy of the vectors was loaded.
#[tokio::test]
async fn a_sqlite_store_sees_vectors_another_connection_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let open = || {
        let options = StoreOptions::new().index(IndexConfig::new(Words::default(), DIMS).fields(["text"]).unwrap());
        SqliteStore::open_with(dir.path().join("store.db"), options).unwrap()
    };
    let (a, b) = (open(), open());
    a.put(&["m"], "tea", json!({"text": "green tea"}), None).await.unwrap();
    let query = || SearchQuery::new().query("black coffee");
    assert_eq!(keys(&b.search(&["m"], query()).await.unwrap()), ["tea"], "b's copy is loaded now");
    a.put(&["m"], "coffee", json!({"text": "black coffee"}), None).await.unwrap();
    assert_eq!(keys(&b.search(&["m"], query()).await.unwrap()), ["coffee", "tea"]);
    a.delete(&["m"], "coffee").await.unwrap();
    b.put(&["m"], "juice", json!({"text": "orange juice"}), None).await.unwrap();
    let juice = || SearchQuery::new().query("orange juice");
    assert_eq!(keys(&a.search(&["m"], juice()).await.unwrap()), ["juice", "tea"]);
    assert_eq!(keys(&b.search(&["m"], juice()).await.unwrap()), ["juice", "tea"]);
    drop((a, b));
    let again = open();
    assert_eq!(keys(&again.search(&["m"], SearchQuery::new().query("orange")).await.unwrap()), ["juice", "tea"]);
}

/// Two PostgreSQL stores on one database rank the same vectors.
#[cfg(feature = "postgres")]
#[tokio::test]
async fn two_postgres_stores_rank_each_others_items() {
    let schema = postgres_server::TestSchema::new("graphwright_store_search");
    let options = || StoreOptions::new().index(IndexConfig::new(Words::default(), DIMS).fields(["text"]).unwrap());
    let a = PostgresStore::connect_with(&schema.url(), options()).await.unwrap();
    let b = PostgresStore::connect_with(&schema.url(), options()).await.unwrap();
    a.put(&["m"], "tea", json!({"text": "green tea"}), None).await.unwrap();
    b.put(&["m"], "coffee", json!({"text": "black coffee"}), None).await.unwrap();
    assert_eq!(keys(&a.search(&["m"], SearchQuery::new().query("coffee")).await.unwrap()), ["coffee", "tea"]);
    assert_eq!(keys(&b.search(&["m"], SearchQuery::new().query("tea")).await.unwrap()), ["tea", "coffee"]);
}

/// An encrypted store keeps no vectors and refuses a query, whatever its backend's index.
#[tokio::test]
async fn an_encrypted_store_is_not_searched_by_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let model = Arc::new(Words::default());
    let options = StoreOptions::new().index(IndexConfig::shared(model.clone(), DIMS));
    let keys_for_test = graphwright::encryption::Keys::new(&[7; 32]).unwrap();
    let store = SqliteStore::open_with(dir.path().join("store.db"), options).unwrap().encrypted(keys_for_test);
    store.put(&["m"], "tea", json!({"text": "green tea"}), None).await.unwrap();
    assert_eq!(model.calls.load(Ordering::SeqCst), 0, "nothing of an encrypted value reaches the model");
    let error = store.search(&["m"], SearchQuery::new().query("tea")).await.unwrap_err();
    assert!(error.to_string().contains("not searched by meaning"), "{error}");
    assert_eq!(store.search(&["m"], SearchQuery::new()).await.unwrap()[0].value["text"], "green tea");
}
