//! The server with its storage encrypted (`Server::encryption`), driven over a real socket on
//! 127.0.0.1: after a run, a stored item and a cron, neither the SQLite file nor the PostgreSQL
//! rows hold any of their plain text, while every answer shows it; a server started with the
//! wrong key, or none, refuses to show what it cannot read, and says which key it needs; a key
//! rotated out still reads what it wrote.

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

#[path = "support/raw_file.rs"]
mod raw_file;

use graphwright::encryption::Keys;
use graphwright_server::Server;
use raw_file::{contains, raw_bytes};
use serde_json::{Value, json};

/// The served example's graphs.
#[allow(dead_code)] // its `main` and PostgreSQL set-up are the example's own
#[path = "../examples/serve.rs"]
mod example;

/// Words that appear only in what users send: a message, a stored value, a cron's input.
const SECRET: &str = "account-5555-0199-secret";

fn key(byte: u8) -> Keys {
    Keys::new(&[byte; 32]).unwrap()
}

fn served(server: Server) -> Server {
    server.graph("chat", example::chat::graph().compile().unwrap())
}

async fn start(server: Server) -> String {
    let bound = served(server).bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", bound.local_addr().unwrap());
    tokio::spawn(bound.run());
    url
}

/// Sends a request; the status and the answer's JSON.
async fn call(method: reqwest::Method, url: String, body: Option<Value>) -> (u16, Value) {
    let mut request = reqwest::Client::new().request(method, url);
    if let Some(body) = body {
        request = request.header("content-type", "application/json").body(body.to_string());
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::String(text)))
}

async fn ok(method: reqwest::Method, url: String, body: Option<Value>) -> Value {
    let (status, answer) = call(method, url.clone(), body).await;
    assert!((200..300).contains(&status), "{url}: {status} {answer}");
    answer
}

/// A run, a stored item and a cron, each carrying the secret; the thread's id.
async fn use_server(url: &str) -> String {
    use reqwest::Method;
    let message = json!({"messages": [{"type": "human", "content": format!("what is the weather? {SECRET}")}]});
    let thread = ok(Method::POST, format!("{url}/threads"), Some(json!({}))).await;
    let thread_id = thread["thread_id"].as_str().unwrap().to_owned();
    let body = json!({"assistant_id": "chat", "input": message});
    ok(Method::POST, format!("{url}/threads/{thread_id}/runs/wait"), Some(body)).await;
    let item = json!({"namespace": ["users", "ada"], "key": "card", "value": {"number": SECRET}});
    ok(Method::PUT, format!("{url}/store/items"), Some(item)).await;
    let cron = json!({"assistant_id": "chat", "schedule": "0 0 1 1 *", "input": message});
    ok(Method::POST, format!("{url}/threads/{thread_id}/runs/crons"), Some(cron)).await;
    thread_id
}

/// What the server shows of the thread: its record, its state, its runs, the stored item and
/// the crons, as one text.
async fn shown(url: &str, thread: &str) -> Result<String, (u16, Value)> {
    use reqwest::Method;
    let mut seen = Vec::new();
    for (method, path, body) in [
        (Method::GET, format!("/threads/{thread}"), None),
        (Method::GET, format!("/threads/{thread}/state"), None),
        (Method::GET, format!("/threads/{thread}/runs"), None),
        (Method::GET, "/store/items?namespace=users.ada&key=card".to_owned(), None),
        (Method::POST, "/runs/crons/search".to_owned(), Some(json!({}))),
        (Method::POST, "/threads/search".to_owned(), Some(json!({"values": {}}))),
    ] {
        let (status, answer) = call(method, format!("{url}{path}"), body).await;
        if !(200..300).contains(&status) {
            return Err((status, answer));
        }
        seen.push(answer.to_string());
    }
    Ok(seen.join("\n"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sqlite_file_holds_none_of_what_users_sent() {
    // Without a key the same use leaves the secret in the file: the scan finds what it seeks.
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.db");
    let url = start(Server::new().sqlite(&plain)).await;
    let thread = use_server(&url).await;
    assert!(shown(&url, &thread).await.unwrap().contains(SECRET));
    assert!(contains(&raw_bytes(&plain), SECRET), "a plain file holds what users sent");

    let sealed = dir.path().join("sealed.db");
    let url = start(Server::new().sqlite(&sealed).encryption(key(1))).await;
    let thread = use_server(&url).await;
    let seen = shown(&url, &thread).await.unwrap();
    assert!(seen.matches(SECRET).count() >= 5, "every answer shows the plain values:\n{seen}");
    assert!(!contains(&raw_bytes(&sealed), SECRET), "the encrypted file holds none of it");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wrong_key_or_none_is_refused_and_a_rotated_key_still_reads() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.db");
    let url = start(Server::new().sqlite(&path).encryption(key(1))).await;
    let thread = use_server(&url).await;
    let before = shown(&url, &thread).await.unwrap();

    let url = start(Server::new().sqlite(&path).encryption(key(2))).await;
    let (status, answer) = shown(&url, &thread).await.unwrap_err();
    assert_eq!(status, 500, "{answer}");
    let detail = answer["detail"].as_str().unwrap_or_default();
    assert!(detail.contains(&key(1).id().to_string()) && !detail.contains(SECRET), "{detail}");

    let url = start(Server::new().sqlite(&path)).await;
    let (_, answer) = shown(&url, &thread).await.unwrap_err();
    assert!(answer["detail"].as_str().unwrap_or_default().contains("GRAPHWRIGHT_AES_KEY"), "{answer}");

    let url = start(Server::new().sqlite(&path).encryption(key(2).with_old(&[1; 32]).unwrap())).await;
    assert_eq!(shown(&url, &thread).await.unwrap(), before);
    // The thread goes on under the new key.
    let message = json!({"messages": [{"type": "human", "content": "and tomorrow?"}]});
    let body = json!({"assistant_id": "chat", "input": message});
    ok(reqwest::Method::POST, format!("{url}/threads/{thread}/runs/wait"), Some(body)).await;
    assert!(!contains(&raw_bytes(&path), SECRET));
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgres_rows_hold_none_of_what_users_sent() {
    use graphwright::checkpoint::deadpool_postgres::tokio_postgres;
    let schema = postgres_server::TestSchema::new("graphwright_server_encryption");
    let url = start(Server::new().postgres(schema.url()).encryption(key(1))).await;
    let thread = use_server(&url).await;
    // A stream through the run queue, so that its events are written for other processes.
    let message = json!({"messages": [{"type": "human", "content": format!("again {SECRET}")}]});
    let body = json!({"assistant_id": "chat", "input": message, "stream_mode": ["values", "messages-tuple"]});
    let (status, _) = call(reqwest::Method::POST, format!("{url}/threads/{thread}/runs/stream"), Some(body)).await;
    assert_eq!(status, 200);
    assert!(shown(&url, &thread).await.unwrap().contains(SECRET));

    let (client, connection) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    let mut found = Vec::new();
    for (table, column) in [
        ("gw_threads", "vals"),
        ("gw_threads", "interrupts"),
        ("gw_runs", "kwargs"),
        ("gw_runs", "outcome"),
        ("gw_run_events", "data"),
        ("gw_crons", "payload"),
        ("graphwright_checkpoints", "encode(body, 'escape')"),
        ("graphwright_writes", "encode(body, 'escape')"),
        ("graphwright_store_items", "value"),
    ] {
        let rows = client.query(&format!("SELECT {column}::text FROM {table}"), &[]).await.unwrap();
        assert!(!rows.is_empty(), "{table} has rows");
        for row in rows {
            let text: Option<String> = row.get(0);
            if text.as_deref().is_some_and(|t| t.contains(SECRET)) {
                found.push(format!("{table}.{column}"));
            }
        }
    }
    assert!(found.is_empty(), "plain text in {found:?}");
}
