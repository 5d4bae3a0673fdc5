//! Search by meaning with a real sentence model: all-MiniLM-L6-v2 served on loopback in
//! OpenAI's `/v1/embeddings` shape (`tests/support/minilm_server.py`), reached through
//! `OpenAiEmbeddings`, indexing a user's memories in each store. The related memory comes first
//! though it shares no word with the question, filters narrow the ranking, and the three
//! stores give the same ranking and scores.

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

#[path = "support/model_servers.rs"]
mod model_servers;

use graphwright::model::OpenAiEmbeddings;
#[cfg(feature = "postgres")]
use graphwright::store::PostgresStore;
use graphwright::store::{
    Filter, InMemoryStore, IndexConfig, Item, PutItem, SearchQuery, SqliteStore, Store, StoreOptions,
};
use model_servers::minilm::MiniLm;
use serde_json::json;

fn options() -> StoreOptions {
    let model = OpenAiEmbeddings::new(MiniLm::MODEL).base_url(MiniLm::shared().openai_base()).api_key("sk-local");
    StoreOptions::new().index(IndexConfig::new(model, MiniLm::DIMENSIONS).fields(["text"]).unwrap())
}

const MEMORIES: [(&str, &str, &str); 6] = [
    ("diet", "She is vegetarian and never eats meat or fish.", "food"),
    ("drink", "Her favourite drink is a cup of green tea in the morning.", "food"),
    ("pet", "She has a grey cat called Miso who sleeps on the windowsill.", "home"),
    ("home", "She lives in a small flat near the harbour in Bergen.", "home"),
    ("job", "She works as a nurse on night shifts at the hospital.", "work"),
    ("travel", "She gets anxious on planes and prefers the window seat.", "travel"),
];

fn keys(items: &[Item]) -> Vec<&str> {
    items.iter().map(|item| item.key.as_str()).collect()
}

/// Puts the memories, asks the questions, and returns the rankings (keys and scores).
async fn rankings(store: &dyn Store) -> Vec<Vec<(String, f64)>> {
    let memories = ["users", "ada", "memories"];
    let items = MEMORIES
        .iter()
        .map(|(key, text, kind)| PutItem::new(&memories, *key, json!({"text": text, "kind": kind})))
        .collect();
    store.put_many(items).await.unwrap();
    // Someone else's memory, closer to the first question than any of hers: never found
    // under her prefix.
    store
        .put(&["users", "bo", "memories"], "dinner", json!({"text": "What to cook for dinner tonight?"}), None)
        .await
        .unwrap();

    let mut all = Vec::new();
    for (question, first) in [
        ("Can I serve her a steak?", "diet"),
        ("Does she have pets?", "pet"),
        ("Which city does she live in?", "home"),
        ("What does she like to drink?", "drink"),
        ("Where does she sit when she flies?", "travel"),
        ("What is her profession?", "job"),
    ] {
        let found = store.search(&["users", "ada"], SearchQuery::new().query(question)).await.unwrap();
        assert_eq!(found.len(), MEMORIES.len(), "{question}");
        assert_eq!(found[0].key, first, "{question}: {:?}", keys(&found));
        let (best, next) = (found[0].score.unwrap(), found[1].score.unwrap());
        assert!(best - next > 0.05, "{question}: the related memory stands out ({best} against {next})");
        all.push(found.iter().map(|item| (item.key.clone(), item.score.unwrap())).collect());
    }
    let homely = SearchQuery::new().query("Can I serve her a steak?").filter(Filter::new().eq("kind", "home"));
    let found = store.search(&["users", "ada"], homely.limit(1)).await.unwrap();
    assert_eq!(keys(&found), ["home"], "a filter narrows the ranking before it is paged");
    let everyone = store.search(&["users"], SearchQuery::new().query("What to cook tonight?").limit(1)).await.unwrap();
    assert_eq!(keys(&everyone), ["dinner"]);
    all
}

#[tokio::test]
async fn each_store_finds_the_related_memory_first_and_all_agree() {
    let in_memory = rankings(&InMemoryStore::with_options(options())).await;

    let dir = tempfile::tempdir().unwrap();
    let sqlite = rankings(&SqliteStore::open_with(dir.path().join("store.db"), options()).unwrap()).await;
    assert_same(&in_memory, &sqlite, "SQLite");

    #[cfg(feature = "postgres")]
    {
        let schema = postgres_server::TestSchema::new("graphwright_store_minilm");
        let store = PostgresStore::connect_with(&schema.url(), options()).await.unwrap();
        assert_same(&in_memory, &rankings(&store).await, "PostgreSQL");
    }
}

/// The same keys in the same order, with the same scores (PostgreSQL sums in double precision).
fn assert_same(expected: &[Vec<(String, f64)>], got: &[Vec<(String, f64)>], store: &str) {
    for (e, g) in expected.iter().zip(got) {
        let (e_keys, g_keys): (Vec<&String>, Vec<&String>) =
            (e.iter().map(|x| &x.0).collect(), g.iter().map(|x| &x.0).collect());
        assert_eq!(e_keys, g_keys, "{store} ranks as the in-memory store does");
        for ((_, a), (_, b)) in e.iter().zip(g) {
            assert!((a - b).abs() < 1e-5, "{store}: score {b} against {a}");
        }
    }
}
