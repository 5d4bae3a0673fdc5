//! Search by meaning over 100,000 stored items (BENCHMARKS.md, "Store search"):
//!
//! - `store_search_memory`, `store_search_sqlite`, `store_search_postgres`: 100,000 items under
//!   one namespace, each with a text field indexed into a 384-number vector, then searches for
//!   the 10 best matches of a query; the time of one search, p50 and p99.
//!
//! The vectors are pseudo-random (xorshift64*, seeded by the item's number) and the same,
//! number for number, as `store_search/store_search_langgraph.py` makes for LangGraph's
//! `InMemoryStore`; both print the keys found for the first query, which must agree. The model
//! is a table lookup, so what is timed is the store. PostgreSQL (feature `postgres`, the server
//! at `GRAPHWRIGHT_TEST_POSTGRES` or 127.0.0.1:5432) is skipped when it cannot be reached.
//! `store_search/side_by_side.sh` runs both sides. Prints one JSON object per line.

use futures::future::BoxFuture;
use graphwright::model::{Embeddings, ModelError};
use graphwright::store::{InMemoryStore, IndexConfig, PutItem, SearchQuery, SqliteStore, Store, StoreOptions};
use serde_json::json;
use std::time::Instant;

const ITEMS: u64 = 100_000;
const DIMS: usize = 384;
/// Items per `put_many` while loading.
const CHUNK: u64 = 5_000;

/// The `DIMS` numbers of vector `n` (item `n`, or query `n - ITEMS`): xorshift64* from a seed
/// made of `n`, each number 24 random bits scaled to [-1, 1), exact in `f32` and in Python's
/// floats alike.
fn vector(n: u64) -> Vec<f32> {
    let mut state = (n + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..DIMS)
        .map(|_| {
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            let bits = u32::try_from(state.wrapping_mul(0x2545_F491_4F6C_DD1D) >> 40).unwrap_or(0);
            #[allow(clippy::cast_precision_loss, reason = "24 bits: exact in an f32")]
            let unit = bits as f32 / 16_777_216.0;
            unit * 2.0 - 1.0
        })
        .collect()
}

/// "doc N" is item N's vector, "query N" query N's.
struct Table;

impl Embeddings for Table {
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ModelError>> {
        Box::pin(async move {
            texts
                .iter()
                .map(|text| {
                    let number = |prefix: &str| text.strip_prefix(prefix).and_then(|n| n.parse::<u64>().ok());
                    match (number("doc "), number("query ")) {
                        (Some(n), _) => Ok(vector(n)),
                        (None, Some(n)) => Ok(vector(ITEMS + n)),
                        _ => Err(ModelError::Config(format!("the bench's table has no vector for {text:?}"))),
                    }
                })
                .collect()
        })
    }
}

fn options() -> StoreOptions {
    StoreOptions::new().index(IndexConfig::new(Table, DIMS).fields(["text"]).expect("a valid path"))
}

fn percentile(sorted: &[f64], p: f64) -> f64 {
    #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
    let at = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[at]
}

/// Loads the items into `store`, then times `queries` searches; prints the line of `name`.
async fn measure(name: &str, store: &dyn Store, queries: u64) {
    let loading = Instant::now();
    for start in (0..ITEMS).step_by(usize::try_from(CHUNK).unwrap_or(1)) {
        let items = (start..(start + CHUNK).min(ITEMS))
            .map(|n| {
                PutItem::new(&["bench", "items"], format!("item-{n:06}"), json!({"text": format!("doc {n}"), "n": n}))
            })
            .collect();
        store.put_many(items).await.expect("the items load");
    }
    let load_s = loading.elapsed().as_secs_f64();
    let search = |q: u64| store.search(&["bench"], SearchQuery::new().query(format!("query {q}")).limit(10));
    // The first search of a SQLite store loads its copy of the vectors; it is timed apart.
    let first = Instant::now();
    let top = search(0).await.expect("the search runs");
    let first_ms = first.elapsed().as_secs_f64() * 1e3;
    let mut samples = Vec::new();
    for q in 0..queries {
        let start = Instant::now();
        let found = search(q).await.expect("the search runs");
        samples.push(start.elapsed().as_secs_f64() * 1e3);
        assert_eq!(found.len(), 10);
    }
    samples.sort_by(f64::total_cmp);
    let keys: Vec<&str> = top.iter().map(|item| item.key.as_str()).collect();
    println!(
        "{}",
        json!({
            "name": name, "items": ITEMS, "dims": DIMS, "searches": queries, "load_s": load_s,
            "first_search_ms": first_ms, "p50_ms": percentile(&samples, 0.5), "p99_ms": percentile(&samples, 0.99),
            "top10": keys,
        })
    );
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    // `cargo bench --bench store_search -- store_search_sqlite` runs the benches whose names
    // start with `store_search_sqlite`.
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wants = |name: &str| only.as_deref().is_none_or(|f| name.starts_with(f));

    if wants("store_search_memory") {
        measure("store_search_memory", &InMemoryStore::with_options(options()), 200).await;
    }
    if wants("store_search_sqlite") {
        let dir = tempfile::tempdir().expect("a temporary directory");
        let store = SqliteStore::open_with(dir.path().join("store.db"), options()).expect("the file opens");
        measure("store_search_sqlite", &store, 200).await;
    }
    #[cfg(feature = "postgres")]
    if wants("store_search_postgres") {
        postgres().await;
    }
}

/// The PostgreSQL store in a schema of its own, dropped after.
#[cfg(feature = "postgres")]
async fn postgres() {
    let url = std::env::var("GRAPHWRIGHT_TEST_POSTGRES")
        .unwrap_or_else(|_| "postgres://postgres@127.0.0.1:5432/test".to_owned());
    let schema = format!("graphwright_bench_{}", std::process::id());
    let Ok((admin, connection)) = tokio_postgres::connect(&url, tokio_postgres::NoTls).await else {
        eprintln!("store_search_postgres skipped: no PostgreSQL at {url}");
        return;
    };
    tokio::spawn(connection);
    admin.batch_execute(&format!("CREATE SCHEMA {schema}")).await.expect("the schema is made");
    let separator = if url.contains('?') { '&' } else { '?' };
    let scoped = format!("{url}{separator}options=-c%20search_path%3D{schema}");
    let store = graphwright::store::PostgresStore::connect_with(&scoped, options()).await.expect("the store connects");
    measure("store_search_postgres", &store, 20).await;
    drop(store);
    admin.batch_execute(&format!("DROP SCHEMA {schema} CASCADE")).await.expect("the schema is dropped");
}
