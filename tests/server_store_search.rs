//! The server's store searched by meaning, as LangGraph's clients ask for it: `langgraph-sdk`'s
//! `put_item(.., index=..)` and `search_items(.., query=..)` against a server given an index
//! (`Server::store_index`), over a real socket on loopback with the store in a SQLite file; a
//! server without an index refuses a query with a 422 naming what to do, and one given an
//! index and encryption refuses to start.

use futures::future::BoxFuture;
use graphwright::model::{Embeddings, ModelError};
use graphwright::store::IndexConfig;
use graphwright_server::{Server, ServerError};
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

const DIMS: usize = 32;

/// Each word of a text adds 1 to one of [`DIMS`] numbers picked by its letters: texts sharing
/// words point the same way.
struct Words;

impl Embeddings for Words {
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ModelError>> {
        Box::pin(async move {
            Ok(texts
                .iter()
                .map(|text| {
                    let mut vector = vec![0.0; DIMS];
                    for word in text.split(|c: char| !c.is_alphanumeric()).filter(|w| !w.is_empty()) {
                        let at = word.to_lowercase().bytes().fold(7_usize, |h, b| h.wrapping_mul(31) + usize::from(b));
                        vector[at % DIMS] += 1.0;
                    }
                    vector
                })
                .collect())
        })
    }
}

/// The value of a variable `scripts/test` sets, or a panic saying how to get it.
fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}

async fn serve(server: Server) -> String {
    let bound = server.bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", bound.local_addr().unwrap());
    tokio::spawn(bound.run());
    url
}

/// What the Python client does, checked there; it prints `all scenarios passed`.
const SCENARIO: &str = r#"
import asyncio, sys
from langgraph_sdk import get_client

async def main():
    client = get_client(url=sys.argv[1])
    ns = ["users", "ada", "memories"]
    await client.store.put_item(ns, "tea", {"text": "likes green tea in the morning", "kind": "taste"})
    await client.store.put_item(ns, "fjord", {"text": "lives near the fjord in oslo", "kind": "place"})
    await client.store.put_item(ns, "coffee", {"text": "black coffee at night", "kind": "taste"})
    await client.store.put_item(ns, "secret", {"text": "green tea is a secret"}, index=False)
    await client.store.put_item(ns, "tags", {"text": "nothing", "tags": ["green", "tea"]}, index=["tags[*]"])

    found = (await client.store.search_items(["users"], query="green tea"))["items"]
    keys = [item["key"] for item in found]
    assert keys[0] == "tags" and keys[1] == "tea", keys
    assert keys[-1] == "secret" and found[-1]["score"] is None, found[-1]
    assert all(a["score"] >= b["score"] for a, b in zip(found[:-2], found[1:-1])), found
    # Each tag is embedded alone: "green" against "green tea" is 1 / sqrt(2).
    assert abs(found[0]["score"] - 0.5 ** 0.5) < 1e-6, found[0]["score"]

    tastes = (await client.store.search_items(["users"], query="green tea", filter={"kind": "taste"}, limit=1, offset=1))["items"]
    assert [item["key"] for item in tastes] == ["coffee"], tastes

    plain = (await client.store.search_items(["users"], filter={"kind": "place"}))["items"]
    assert [item["key"] for item in plain] == ["fjord"] and plain[0]["score"] is None, plain
    print("all scenarios passed")

asyncio.run(main())
"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_sdk_searches_the_store_by_meaning() {
    let dir = tempfile::tempdir().unwrap();
    let index = IndexConfig::new(Words, DIMS).fields(["text"]).unwrap();
    let url = serve(Server::new().sqlite(dir.path().join("server.db")).store_index(index)).await;
    let python = prepared("GRAPHWRIGHT_TEST_PYTHON", "langgraph-sdk");
    let script = dir.path().join("store_search.py");
    std::fs::write(&script, SCENARIO).unwrap();
    let run = tokio::task::spawn_blocking(move || Command::new(&python).arg(&script).arg(url).output().unwrap());
    let output = tokio::time::timeout(Duration::from_mins(2), run).await.expect("the scenario ends").unwrap();
    let (stdout, stderr) = (String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
    assert!(output.status.success() && stdout.contains("all scenarios passed"), "{stdout}\n{stderr}");
}

async fn post(url: &str, path: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new().post(format!("{url}{path}")).json(&body).send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn a_server_without_an_index_refuses_a_query_and_bad_index_requests_are_422() {
    let url = serve(Server::new()).await;
    let (status, body) = post(&url, "/store/items/search", json!({"namespace_prefix": ["a"], "query": "tea"})).await;
    assert_eq!(status, 422, "{body}");
    assert!(body["detail"].as_str().is_some_and(|d| d.contains("no index")), "{body}");
    let put = |index: Value| json!({"namespace": ["a"], "key": "k", "value": {"text": "x"}, "index": index});
    let response = reqwest::Client::new().put(format!("{url}/store/items")).json(&put(json!(["text"]))).send().await;
    assert_eq!(response.unwrap().status().as_u16(), 422, "paths to embed need an index");
    for bad in [json!(true), json!("text"), json!([1])] {
        let response = reqwest::Client::new().put(format!("{url}/store/items")).json(&put(bad.clone())).send().await;
        assert_eq!(response.unwrap().status().as_u16(), 422, "index {bad}");
    }
    let response = reqwest::Client::new().put(format!("{url}/store/items")).json(&put(json!(false))).send().await;
    assert_eq!(response.unwrap().status().as_u16(), 204);
    let (status, body) = post(&url, "/store/items/search", json!({"namespace_prefix": ["a"], "query": 7})).await;
    assert_eq!(status, 422, "{body}");
}

#[tokio::test]
async fn an_index_with_encryption_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let keys = graphwright::encryption::Keys::new(&[3; 32]).unwrap();
    let server =
        Server::new().sqlite(dir.path().join("server.db")).encryption(keys).store_index(IndexConfig::new(Words, DIMS));
    let Err(error) = server.bind("127.0.0.1:0").await else { panic!("a server with an index and encryption started") };
    assert!(matches!(error, ServerError::IndexWithEncryption), "{error}");
}
