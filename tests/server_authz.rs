//! Authorization of the server over real sockets on loopback: the built-in `OwnerIsolation`
//! policy, with two users (`ada` and `bob`, each with an API key), on a SQLite file. Another
//! user's thread, its runs, state, history and streams are missing (404) on every route that
//! names them, and left out of searches, counts, prunes and bulk cancels; the owner is the
//! creator whatever the client sends; stateless runs and crons belong to their caller (and
//! crons fire as them); a user's assistants are theirs alone while the graphs' default
//! assistants are seen by all and changed by none (403); store namespaces start with the
//! caller's identity (403 otherwise); a refusal made before the body is read leaves the
//! keep-alive connection usable. A custom `Policy` refuses with its own reason, and a policy
//! without authentication does not build. With the `postgres` feature, two server
//! processes share one database: a run ada starts through process A is missing for bob on
//! process B, and hers on B.
//!
//! LangGraph's clients drive it too, as two users at once: `langgraph-sdk`
//! (`tests/server/authz_scenarios.py`, also across the two PostgreSQL processes, ada on one
//! and bob on the other) and `@langchain/langgraph-sdk` (`tests/server/authz_scenarios.mjs`),
//! prepared by `scripts/test`.

use graphwright::prelude::*;
use graphwright_server::authz::{Access, Action, Filter, Forbidden, Grant, OwnerIsolation, Policy, Resource};
use graphwright_server::{ApiKeys, AuthUser, Server, ServerError};
use serde_json::Value;
use std::net::SocketAddr;
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Records who started the run.
#[graph]
mod whoami {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub seen: Vec<String>,
    }

    #[node(entry, next = END)]
    fn record(rt: &Runtime) -> StateUpdate {
        StateUpdate::new().seen(vec![super::caller(rt)])
    }
}

/// Records who started the run after a pause, so that the run is still in flight while the
/// other user tries to cancel, join or stream it.
#[graph]
mod slow {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub seen: Vec<String>,
    }

    #[node(entry, next = END)]
    async fn record(rt: &Runtime) -> StateUpdate {
        tokio::time::sleep(super::SLOW).await;
        StateUpdate::new().seen(vec![super::caller(rt)])
    }
}

/// How long a `slow` run takes.
const SLOW: Duration = Duration::from_secs(2);

fn caller(rt: &Runtime) -> String {
    rt.user().map_or_else(|| "nobody".to_owned(), |user| user.identity.clone())
}

const ADA: &str = "key-ada";
const BOB: &str = "key-bob";

fn keys() -> ApiKeys {
    ApiKeys::new().key(ADA, AuthUser::new("ada")).key(BOB, AuthUser::new("bob"))
}

fn with_graphs(server: Server) -> Server {
    server.graph("whoami", whoami::graph().compile().unwrap()).graph("slow", slow::graph().compile().unwrap())
}

/// The server under test: both graphs, both users, owner isolation.
fn isolated(server: Server) -> Server {
    with_graphs(server).auth(keys()).authorize(OwnerIsolation)
}

async fn serve(server: Server) -> SocketAddr {
    let bound = server.bind("127.0.0.1:0").await.unwrap();
    let addr = bound.local_addr().unwrap();
    tokio::spawn(bound.run());
    addr
}

/// An isolated server on a SQLite file of its own (the folder lives as long as the test).
async fn serve_on_file() -> (tempfile::TempDir, SocketAddr) {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(isolated(Server::new()).sqlite(dir.path().join("server.db"))).await;
    (dir, addr)
}

/// What came back: status and body.
struct Answer {
    status: u16,
    text: String,
    what: String,
}

impl Answer {
    fn json(&self) -> Value {
        serde_json::from_str(&self.text).unwrap_or(Value::Null)
    }

    fn detail(&self) -> String {
        self.json()["detail"].as_str().unwrap_or_default().to_owned()
    }

    /// A 2xx answer's body.
    fn ok(self) -> Value {
        assert!((200..300).contains(&self.status), "{}: expected 2xx, got {} {}", self.what, self.status, self.text);
        self.json()
    }

    /// A 404, as a record that does not exist gets, which names none of `hidden`.
    fn missing(&self, hidden: &[&str]) {
        assert_eq!(self.status, 404, "{}: expected 404, got {} {}", self.what, self.status, self.text);
        for secret in hidden {
            assert!(!self.text.contains(secret), "{}: the 404 shows {secret:?}: {}", self.what, self.text);
        }
    }

    /// A 403 whose `detail` says why (and mentions `says`).
    fn forbidden(&self, says: &str) {
        assert_eq!(self.status, 403, "{}: expected 403, got {} {}", self.what, self.status, self.text);
        let detail = self.detail();
        assert!(!detail.is_empty(), "{}: a refusal says why in `detail`: {}", self.what, self.text);
        assert!(detail.contains(says), "{}: {detail:?} should say {says:?}", self.what);
    }
}

/// One user talking to one server.
#[derive(Clone, Copy)]
struct User {
    addr: SocketAddr,
    key: &'static str,
}

fn ada(addr: SocketAddr) -> User {
    User { addr, key: ADA }
}

fn bob(addr: SocketAddr) -> User {
    User { addr, key: BOB }
}

impl User {
    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<&Value>,
    ) -> reqwest::RequestBuilder {
        // A bound on every request: a stream that never ends fails the test instead of hanging it.
        let client = reqwest::Client::builder().timeout(Duration::from_secs(30)).build().unwrap();
        let mut request = client
            .request(method.parse().unwrap(), format!("http://{}{path}", self.addr))
            .header("x-api-key", self.key);
        for (name, value) in headers {
            request = request.header(*name, *value);
        }
        if let Some(body) = body {
            request = request.json(body);
        }
        request
    }

    async fn send_with(&self, method: &str, path: &str, headers: &[(&str, &str)], body: Option<&Value>) -> Answer {
        let response = self.request(method, path, headers, body).send().await.unwrap();
        let status = response.status().as_u16();
        let what = match body {
            Some(body) => format!("{} {method} {path} {body}", self.who()),
            None => format!("{} {method} {path}", self.who()),
        };
        Answer { status, text: response.text().await.unwrap(), what }
    }

    async fn send(&self, method: &str, path: &str, body: Option<&Value>) -> Answer {
        self.send_with(method, path, &[], body).await
    }

    async fn get(&self, path: &str) -> Answer {
        self.send("GET", path, None).await
    }

    async fn post(&self, path: &str, body: &Value) -> Answer {
        self.send("POST", path, Some(body)).await
    }

    /// The status of a request whose answer may be a stream that stays open (a thread's
    /// stream): only the head is read.
    async fn status_of(&self, method: &str, path: &str) -> u16 {
        let response = self.request(method, path, &[], None).send().await.unwrap();
        response.status().as_u16()
    }

    fn who(&self) -> &'static str {
        if self.key == ADA { "ada" } else { "bob" }
    }

    async fn thread(&self, metadata: &Value) -> String {
        let thread = self.post("/threads", &json!({"metadata": metadata})).await.ok();
        thread["thread_id"].as_str().unwrap().to_owned()
    }

    /// A finished run of `whoami` on `thread`, started in the background and joined; its id.
    async fn finished_run(&self, thread: &str) -> String {
        let body = json!({"assistant_id": "whoami", "input": {}, "stream_resumable": true});
        let run = self.post(&format!("/threads/{thread}/runs"), &body).await.ok();
        let run = run["run_id"].as_str().unwrap().to_owned();
        self.get(&format!("/threads/{thread}/runs/{run}/join")).await.ok();
        run
    }

    async fn thread_ids(&self, search: &Value) -> Vec<String> {
        let found = self.post("/threads/search", search).await.ok();
        found.as_array().unwrap().iter().map(|t| t["thread_id"].as_str().unwrap().to_owned()).collect()
    }

    async fn seen(&self, thread: &str) -> Value {
        self.get(&format!("/threads/{thread}/state")).await.ok()["values"]["seen"].clone()
    }
}

/// Every route that names a thread (and its runs), as bob tries them on ada's: each answers 404
/// and shows nothing of the thread; afterwards ada finds it as she left it, and reaches every
/// one of those routes herself.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn another_users_thread_is_missing_on_every_route() {
    let (_dir, addr) = serve_on_file().await;
    let (ada, bob) = (ada(addr), bob(addr));
    let secret = "topic-only-ada-knows";
    let t = ada.thread(&json!({"topic": secret})).await;
    let run = ada.finished_run(&t).await;
    let state = ada.get(&format!("/threads/{t}/state")).await.ok();
    assert_eq!(state["values"]["seen"], json!(["ada"]), "{state}");
    let checkpoint = state["checkpoint"]["checkpoint_id"].as_str().unwrap().to_owned();

    let input = json!({"assistant_id": "whoami", "input": {}});
    let routes: Vec<(&str, String, Option<Value>)> = vec![
        ("GET", format!("/threads/{t}"), None),
        ("PATCH", format!("/threads/{t}"), Some(json!({"metadata": {"taken_by": "bob"}}))),
        ("DELETE", format!("/threads/{t}"), None),
        ("POST", format!("/threads/{t}/copy"), Some(json!({}))),
        ("GET", format!("/threads/{t}/state"), None),
        ("POST", format!("/threads/{t}/state"), Some(json!({"values": {"seen": ["bob"]}}))),
        ("POST", format!("/threads/{t}/state/checkpoint"), Some(json!({"checkpoint": {"checkpoint_id": checkpoint}}))),
        ("GET", format!("/threads/{t}/state/{checkpoint}"), None),
        ("GET", format!("/threads/{t}/history"), None),
        ("POST", format!("/threads/{t}/history"), Some(json!({"limit": 10}))),
        ("GET", format!("/threads/{t}/stream"), None),
        ("GET", format!("/threads/{t}/storage"), None),
        ("GET", format!("/threads/{t}/runs"), None),
        ("POST", format!("/threads/{t}/runs"), Some(input.clone())),
        ("POST", format!("/threads/{t}/runs/stream"), Some(input.clone())),
        ("POST", format!("/threads/{t}/runs/wait"), Some(input.clone())),
        // The thread exists, so `if_not_exists: create` must not let bob in either.
        ("POST", format!("/threads/{t}/runs/wait"), Some(json!({"assistant_id": "whoami", "if_not_exists": "create"}))),
        ("GET", format!("/threads/{t}/runs/{run}"), None),
        ("DELETE", format!("/threads/{t}/runs/{run}"), None),
        ("POST", format!("/threads/{t}/runs/{run}/cancel"), None),
        ("GET", format!("/threads/{t}/runs/{run}/join"), None),
        ("GET", format!("/threads/{t}/runs/{run}/stream"), None),
        ("POST", format!("/threads/{t}/runs/crons"), Some(json!({"assistant_id": "whoami", "schedule": "0 0 1 1 *"}))),
    ];
    for (method, path, body) in &routes {
        bob.send(method, path, body.as_ref()).await.missing(&[secret, "\"owner\""]);
    }
    // Replaying a run's stream from its start, as a client reconnecting does.
    let replay = format!("/threads/{t}/runs/{run}/stream");
    bob.send_with("GET", &replay, &[("last-event-id", "-1")], None).await.missing(&[secret]);
    bob.send_with("GET", &format!("/threads/{t}/stream"), &[("last-event-id", "-1")], None).await.missing(&[secret]);

    // Nothing bob tried changed ada's thread.
    let thread = ada.get(&format!("/threads/{t}")).await.ok();
    assert_eq!(thread["metadata"]["topic"], secret, "{thread}");
    assert_eq!(thread["metadata"]["owner"], "ada", "{thread}");
    assert!(thread["metadata"].get("taken_by").is_none(), "bob's PATCH reached ada's thread: {thread}");
    assert_eq!(ada.seen(&t).await, json!(["ada"]), "bob's state update or run reached ada's thread");
    let runs = ada.get(&format!("/threads/{t}/runs")).await.ok();
    assert_eq!(runs.as_array().map(Vec::len), Some(1), "bob's runs reached ada's thread: {runs}");
    assert_eq!(runs[0]["run_id"], run.as_str());
    let crons = bob.post("/runs/crons/search", &json!({})).await.ok();
    assert_eq!(crons, json!([]), "bob made a cron on ada's thread");

    // Ada reaches every read route of her thread (so the 404s above were not of the routes).
    for (method, path, body) in &routes {
        let reads = *method == "GET" || path.ends_with("/history") || path.ends_with("/state/checkpoint");
        if reads && !path.ends_with("/stream") {
            ada.send(method, path, body.as_ref()).await.ok();
        }
    }
    assert_eq!(ada.status_of("GET", &format!("/threads/{t}/stream")).await, 200);
    assert_eq!(ada.send_with("GET", &replay, &[("last-event-id", "-1")], None).await.status, 200);
    // Her copy is hers, and missing for bob too.
    let copy = ada.post(&format!("/threads/{t}/copy"), &json!({})).await.ok();
    assert_eq!(copy["metadata"]["owner"], "ada", "{copy}");
    bob.get(&format!("/threads/{}", copy["thread_id"].as_str().unwrap())).await.missing(&[secret]);
}

/// Sends `requests` one after another on one connection (as clients keeping connections
/// alive do); the status line of each answer, or what went wrong instead.
fn on_one_connection(addr: SocketAddr, requests: &[String]) -> Vec<String> {
    use std::io::{BufRead, BufReader, Read, Write};
    let stream = std::net::TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut writer = stream;
    let mut answers = Vec::new();
    for request in requests {
        // The head first, then the body a moment later, as clients write them: the server may
        // answer before the body has arrived.
        let (head, body) = request.split_at(request.find("\r\n\r\n").unwrap() + 4);
        let sent = writer.write_all(head.as_bytes()).and_then(|()| {
            std::thread::sleep(Duration::from_millis(50));
            writer.write_all(body.as_bytes())
        });
        if let Err(error) = sent {
            answers.push(format!("the request could not be sent: {error}"));
            break;
        }
        let mut status = String::new();
        if reader.read_line(&mut status).unwrap_or(0) == 0 {
            answers.push("the connection was closed without an answer".to_owned());
            break;
        }
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if let Some((name, value)) = line.split_once(':')
                && name.eq_ignore_ascii_case("content-length")
            {
                length = value.trim().parse().unwrap();
            }
            if line == "\r\n" || line.is_empty() {
                break;
            }
        }
        reader.read_exact(&mut vec![0; length]).unwrap();
        answers.push(status.trim().to_owned());
    }
    answers
}

/// A request refused before its handler reads the body (bob's PATCH of ada's thread) leaves
/// the connection open, as an answer from the handler does: a client keeping connections alive
/// sends its next request on it, and must not find it dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refusal_before_the_body_is_read_keeps_the_connection_usable() {
    let (_dir, addr) = serve_on_file().await;
    let t = ada(addr).thread(&json!({})).await;
    let body = json!({"metadata": {"pad": "x".repeat(64 * 1024)}}).to_string();
    let patch = |key: &str, thread: &str| {
        format!(
            "PATCH /threads/{thread} HTTP/1.1\r\nhost: {addr}\r\nx-api-key: {key}\r\n\
             content-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
    };
    let ok = format!("GET /ok HTTP/1.1\r\nhost: {addr}\r\n\r\n");
    // The same on a thread that does not exist, answered by the handler: the baseline.
    let unknown = uuid_like();
    let requests = [patch(BOB, &unknown), ok.clone(), patch(BOB, &t), ok];
    let answers = tokio::task::spawn_blocking(move || on_one_connection(addr, &requests)).await.unwrap();
    assert_eq!(
        answers,
        ["HTTP/1.1 404 Not Found", "HTTP/1.1 200 OK", "HTTP/1.1 404 Not Found", "HTTP/1.1 200 OK"],
        "the answers on one connection"
    );
}

/// An id no record has.
fn uuid_like() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos();
    format!("00000000-0000-4000-8000-{:012x}", nanos % (1 << 48))
}

/// The owner is whoever created the thread: a client's `owner` is overwritten on create and
/// on PATCH, searches and counts hold the caller's threads only, whatever they filter on,
/// and `if_exists: do_nothing` on another user's id is a conflict that shows nothing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_owner_is_the_creator_whatever_the_client_sends() {
    let (_dir, addr) = serve_on_file().await;
    let (ada, bob) = (ada(addr), bob(addr));
    let created = ada.post("/threads", &json!({"metadata": {"owner": "bob", "topic": "x"}})).await.ok();
    assert_eq!(created["metadata"]["owner"], "ada", "{created}");
    assert_eq!(created["metadata"]["topic"], "x", "{created}");
    let t = created["thread_id"].as_str().unwrap().to_owned();
    let patched = ada.send("PATCH", &format!("/threads/{t}"), Some(&json!({"metadata": {"owner": "bob"}}))).await.ok();
    assert_eq!(patched["metadata"]["owner"], "ada", "a PATCH gave the thread away: {patched}");
    assert_eq!(patched["metadata"]["topic"], "x", "{patched}");
    bob.get(&format!("/threads/{t}")).await.missing(&["\"topic\""]);
    assert_eq!(ada.get(&format!("/threads/{t}")).await.ok()["metadata"]["owner"], "ada");

    let b = bob.thread(&json!({"topic": "x"})).await;
    assert_eq!(ada.thread_ids(&json!({})).await, [t.as_str()]);
    assert_eq!(bob.thread_ids(&json!({})).await, [b.as_str()]);
    assert_eq!(bob.thread_ids(&json!({"metadata": {"owner": "ada"}})).await, Vec::<String>::new());
    assert_eq!(bob.thread_ids(&json!({"metadata": {"topic": "x"}})).await, [b.as_str()]);
    assert_eq!(bob.thread_ids(&json!({"ids": [t.clone(), b.clone()]})).await, [b.as_str()]);
    assert_eq!(ada.post("/threads/count", &json!({})).await.ok(), 1);
    assert_eq!(bob.post("/threads/count", &json!({"metadata": {"topic": "x"}})).await.ok(), 1);
    assert_eq!(bob.post("/threads/count", &json!({"metadata": {"owner": "ada"}})).await.ok(), 0);

    // Bob asks for ada's id: a conflict, not her thread.
    for if_exists in ["do_nothing", "raise"] {
        let taken = bob.post("/threads", &json!({"thread_id": t, "if_exists": if_exists})).await;
        assert_eq!(taken.status, 409, "if_exists={if_exists}: {}", taken.text);
        assert!(!taken.text.contains("\"topic\"") && !taken.text.contains("\"ada\""), "{}", taken.text);
    }
    let again = ada.post("/threads", &json!({"thread_id": t, "if_exists": "do_nothing"})).await.ok();
    assert_eq!((again["thread_id"].as_str(), &again["metadata"]["topic"]), (Some(t.as_str()), &json!("x")));
    // And the thread is still ada's, and bob's search still does not hold it.
    assert_eq!(bob.thread_ids(&json!({})).await, [b]);
}

/// Pruning and bulk cancelling leave another user's threads and runs alone; the same calls by
/// their owner take effect (so the test can tell).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prune_and_bulk_cancel_leave_other_users_threads_alone() {
    let (_dir, addr) = serve_on_file().await;
    let (ada, bob) = (ada(addr), bob(addr));
    let t = ada.thread(&json!({})).await;
    let run = ada.post(&format!("/threads/{t}/runs"), &json!({"assistant_id": "slow", "input": {}})).await.ok();
    let run = run["run_id"].as_str().unwrap().to_owned();

    // While the run is in flight.
    let by_ids = bob.post("/runs/cancel", &json!({"run_ids": [run]})).await;
    assert!(by_ids.status < 500, "{} {}", by_ids.status, by_ids.text);
    bob.post("/runs/cancel", &json!({"thread_id": t})).await.missing(&[]);
    // Checked at the end, so that what follows is checked whatever this answers.
    let thread_and_ids = bob.post("/runs/cancel", &json!({"thread_id": t, "run_ids": [run]})).await;
    let joined = ada.get(&format!("/threads/{t}/runs/{run}/join")).await.ok();
    assert_eq!(joined["seen"], json!(["ada"]), "bob's cancel reached ada's run: {joined}");
    let record = ada.get(&format!("/threads/{t}/runs/{run}")).await.ok();
    assert_eq!(record["status"], "success", "{record}");

    let pruned = bob.post("/threads/prune", &json!({"thread_ids": [t]})).await.ok();
    assert_eq!(pruned["pruned_count"], 0, "{pruned}");
    assert_eq!(ada.seen(&t).await, json!(["ada"]));
    let history = ada.get(&format!("/threads/{t}/history")).await.ok();
    assert!(history.as_array().is_some_and(|h| !h.is_empty()), "bob's prune reached ada's history: {history}");

    // Ada's own cancel and prune do take effect.
    let second = ada.post(&format!("/threads/{t}/runs"), &json!({"assistant_id": "slow", "input": {}})).await.ok();
    let second = second["run_id"].as_str().unwrap().to_owned();
    ada.post("/runs/cancel", &json!({"run_ids": [second]})).await.ok();
    ada.get(&format!("/threads/{t}/runs/{second}/join")).await;
    let record = ada.get(&format!("/threads/{t}/runs/{second}")).await.ok();
    assert_ne!(record["status"], "success", "ada's cancel did not take: {record}");
    let pruned = ada.post("/threads/prune", &json!({"thread_ids": [t]})).await.ok();
    assert_eq!(pruned["pruned_count"], 1, "{pruned}");

    // Naming another user's thread is a 404, with run ids or without.
    thread_and_ids.missing(&[]);
}

/// Stateless runs, of every kind, make threads that belong to their caller, and run as them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn stateless_runs_make_threads_of_their_caller() {
    let (_dir, addr) = serve_on_file().await;
    let (ada, bob) = (ada(addr), bob(addr));
    let keep = json!({"assistant_id": "whoami", "input": {}, "on_completion": "keep"});

    let background = ada.post("/runs", &keep).await.ok();
    let (t, r) = (background["thread_id"].as_str().unwrap(), background["run_id"].as_str().unwrap());
    ada.get(&format!("/threads/{t}/runs/{r}/join")).await.ok();
    let waited = ada.post("/runs/wait", &keep).await.ok();
    assert_eq!(waited["seen"], json!(["ada"]), "{waited}");
    let streamed = ada.post("/runs/stream", &keep).await;
    assert_eq!(streamed.status, 200, "{}", streamed.text);
    let batch = ada.post("/runs/batch", &json!([keep, keep])).await.ok();
    for run in batch.as_array().unwrap() {
        let (t, r) = (run["thread_id"].as_str().unwrap(), run["run_id"].as_str().unwrap());
        ada.get(&format!("/threads/{t}/runs/{r}/join")).await.ok();
    }

    let mine = ada.thread_ids(&json!({"limit": 100})).await;
    assert_eq!(mine.len(), 5, "a thread per stateless run: {mine:?}");
    assert!(mine.contains(&t.to_owned()));
    assert_eq!(bob.thread_ids(&json!({"limit": 100})).await, Vec::<String>::new());
    assert_eq!(bob.post("/threads/count", &json!({})).await.ok(), 0);
    for id in &mine {
        let thread = ada.get(&format!("/threads/{id}")).await.ok();
        assert_eq!(thread["metadata"]["owner"], "ada", "{thread}");
        assert_eq!(ada.seen(id).await, json!(["ada"]));
        bob.get(&format!("/threads/{id}")).await.missing(&[]);
        bob.get(&format!("/threads/{id}/runs")).await.missing(&[]);
    }
    let his = bob.post("/runs/wait", &keep).await.ok();
    assert_eq!(his["seen"], json!(["bob"]), "{his}");
    assert_eq!(bob.thread_ids(&json!({})).await.len(), 1);
    assert_eq!(ada.thread_ids(&json!({"limit": 100})).await.len(), 5);
}

/// A user's assistant is theirs alone: missing for others on every route and in searches,
/// and not runnable by them; the graphs' default assistants are seen and run by all, and
/// changed by none (403).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn assistants_of_a_user_are_theirs_and_the_defaults_are_everyones() {
    let (_dir, addr) = serve_on_file().await;
    let (ada, bob) = (ada(addr), bob(addr));
    let body = json!({"graph_id": "whoami", "name": "ada-helper", "metadata": {"owner": "bob", "team": "red"}});
    let mine = ada.post("/assistants", &body).await.ok();
    assert_eq!(mine["metadata"]["owner"], "ada", "{mine}");
    let a = mine["assistant_id"].as_str().unwrap().to_owned();

    for (method, path, body) in [
        ("GET", format!("/assistants/{a}"), None),
        ("GET", format!("/assistants/{a}/graph"), None),
        ("GET", format!("/assistants/{a}/schemas"), None),
        ("GET", format!("/assistants/{a}/subgraphs"), None),
        ("POST", format!("/assistants/{a}/versions"), Some(json!({}))),
        ("POST", format!("/assistants/{a}/latest"), Some(json!({"version": 1}))),
        ("PATCH", format!("/assistants/{a}"), Some(json!({"name": "bob's now"}))),
        ("DELETE", format!("/assistants/{a}"), None),
    ] {
        bob.send(method, &path, body.as_ref()).await.missing(&["ada-helper", "\"team\""]);
    }
    let search = |user: User| async move {
        let found = user.post("/assistants/search", &json!({"graph_id": "whoami"})).await.ok();
        found.as_array().unwrap().iter().map(|a| a["assistant_id"].as_str().unwrap().to_owned()).collect::<Vec<_>>()
    };
    let (seen_by_ada, seen_by_bob) = (search(ada).await, search(bob).await);
    assert!(seen_by_ada.contains(&a) && seen_by_ada.len() == 2, "{seen_by_ada:?}");
    assert_eq!(seen_by_bob.len(), 1, "bob sees the default assistant only: {seen_by_bob:?}");
    let default = seen_by_bob[0].clone();
    assert_ne!(default, a);
    assert_eq!(ada.post("/assistants/count", &json!({"graph_id": "whoami"})).await.ok(), 2);
    assert_eq!(bob.post("/assistants/count", &json!({"graph_id": "whoami"})).await.ok(), 1);
    assert_eq!(bob.post("/assistants/count", &json!({"metadata": {"team": "red"}})).await.ok(), 0);

    // Bob cannot run it, on a thread of his or statelessly, now or by a cron.
    let b = bob.thread(&json!({})).await;
    let run = json!({"assistant_id": a, "input": {}});
    bob.post(&format!("/threads/{b}/runs/wait"), &run).await.missing(&[]);
    bob.post(&format!("/threads/{b}/runs"), &run).await.missing(&[]);
    bob.post("/runs/wait", &run).await.missing(&[]);
    bob.post("/runs", &run).await.missing(&[]);
    bob.post("/runs/crons", &json!({"assistant_id": a, "schedule": "0 0 1 1 *"})).await.missing(&[]);
    assert_eq!(bob.get(&format!("/threads/{b}/runs")).await.ok(), json!([]), "a run of ada's assistant was made");
    // Ada can, and a bob taking her id with `do_nothing` gets a conflict.
    let t = ada.thread(&json!({})).await;
    assert_eq!(ada.post(&format!("/threads/{t}/runs/wait"), &run).await.ok()["seen"], json!(["ada"]));
    let taken =
        bob.post("/assistants", &json!({"assistant_id": a, "graph_id": "whoami", "if_exists": "do_nothing"})).await;
    assert_eq!(taken.status, 409, "{}", taken.text);
    assert!(!taken.text.contains("ada-helper"), "{}", taken.text);

    // The default: seen and run by bob, by its id and by its graph's name; changed by nobody.
    bob.get(&format!("/assistants/{default}")).await.ok();
    bob.get("/assistants/whoami").await.ok();
    bob.get(&format!("/assistants/{default}/schemas")).await.ok();
    assert_eq!(
        bob.post(&format!("/threads/{b}/runs/wait"), &json!({"assistant_id": "whoami", "input": {}})).await.ok()["seen"],
        json!(["bob"])
    );
    for user in [bob, ada] {
        user.send("PATCH", &format!("/assistants/{default}"), Some(&json!({"name": "mine"}))).await.forbidden("");
        user.send("DELETE", &format!("/assistants/{default}"), None).await.forbidden("");
        user.post(&format!("/assistants/{default}/latest"), &json!({"version": 1})).await.forbidden("");
    }
    assert_ne!(bob.get(&format!("/assistants/{default}")).await.ok()["name"], "mine");

    // Ada changes her own; it stays hers.
    let patched =
        ada.send("PATCH", &format!("/assistants/{a}"), Some(&json!({"metadata": {"owner": "bob"}}))).await.ok();
    assert_eq!(patched["metadata"]["owner"], "ada", "{patched}");
    bob.get(&format!("/assistants/{a}")).await.missing(&[]);
    ada.send("DELETE", &format!("/assistants/{a}"), None).await.ok();
    ada.get(&format!("/assistants/{a}")).await.missing(&[]);
}

/// Crons belong to their creator (`user_id` and the `owner` metadata), are missing for others
/// on every route and in searches and counts, and fire as their creator.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn crons_belong_to_their_creator_and_fire_as_them() {
    let (_dir, addr) = serve_on_file().await;
    let (ada, bob) = (ada(addr), bob(addr));
    let yearly = json!({"assistant_id": "whoami", "schedule": "0 0 1 1 *", "metadata": {"owner": "bob"}});
    let cron = ada.post("/runs/crons", &yearly).await.ok();
    assert_eq!(cron["user_id"], "ada", "{cron}");
    assert_eq!(cron["metadata"]["owner"], "ada", "{cron}");
    let c = cron["cron_id"].as_str().unwrap().to_owned();

    bob.get(&format!("/runs/crons/{c}")).await.missing(&[]);
    bob.send("PATCH", &format!("/runs/crons/{c}"), Some(&json!({"schedule": "* * * * * *"}))).await.missing(&[]);
    bob.send("DELETE", &format!("/runs/crons/{c}"), None).await.missing(&[]);
    assert_eq!(bob.post("/runs/crons/search", &json!({})).await.ok(), json!([]));
    assert_eq!(bob.post("/runs/crons/count", &json!({})).await.ok(), 0);
    assert_eq!(bob.post("/runs/crons/count", &json!({"assistant_id": "whoami"})).await.ok(), 0);
    let kept = ada.get(&format!("/runs/crons/{c}")).await.ok();
    assert_eq!(kept["schedule"], "0 0 1 1 *", "bob's PATCH reached ada's cron: {kept}");
    let found = ada.post("/runs/crons/search", &json!({})).await.ok();
    assert_eq!(found.as_array().map(Vec::len), Some(1), "{found}");
    assert_eq!(ada.post("/runs/crons/count", &json!({})).await.ok(), 1);

    // A cron on ada's thread, every second: its runs see ada.
    let t = ada.thread(&json!({})).await;
    bob.post(&format!("/threads/{t}/runs/crons"), &json!({"assistant_id": "whoami", "schedule": "* * * * * *"}))
        .await
        .missing(&[]);
    let every = json!({"assistant_id": "whoami", "schedule": "* * * * * *", "input": {}});
    let fast = ada.post(&format!("/threads/{t}/runs/crons"), &every).await.ok();
    assert_eq!(fast["user_id"], "ada", "{fast}");
    let started = Instant::now();
    let seen = loop {
        let seen = ada.seen(&t).await;
        if seen.as_array().is_some_and(|s| !s.is_empty()) {
            break seen;
        }
        assert!(started.elapsed() < Duration::from_secs(15), "the cron did not fire within 15 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    ada.send("DELETE", &format!("/runs/crons/{}", fast["cron_id"].as_str().unwrap()), None).await.ok();
    assert!(seen.as_array().unwrap().iter().all(|s| s == "ada"), "a cron of ada's fired as {seen}");

    ada.send("DELETE", &format!("/runs/crons/{c}"), None).await.ok();
    ada.get(&format!("/runs/crons/{c}")).await.missing(&[]);
}

/// Store namespaces start with the caller's identity: any other is refused (403, saying why)
/// for every operation, and searches and listings with no prefix hold the caller's own only.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_namespaces_start_with_the_callers_identity() {
    let (_dir, addr) = serve_on_file().await;
    let (ada, bob) = (ada(addr), bob(addr));
    let put = |ns: Value, text: &str| json!({"namespace": ns, "key": "k", "value": {"text": text}});
    ada.send("PUT", "/store/items", Some(&put(json!(["ada", "notes"]), "ada's"))).await.ok();
    bob.send("PUT", "/store/items", Some(&put(json!(["bob", "notes"]), "bob's"))).await.ok();

    ada.send("PUT", "/store/items", Some(&put(json!(["bob", "notes"]), "ada was here"))).await.forbidden("");
    ada.send("PUT", "/store/items", Some(&put(json!(["notes"]), "nobody's"))).await.forbidden("");
    bob.get("/store/items?namespace=ada.notes&key=k").await.forbidden("");
    bob.send("DELETE", "/store/items", Some(&json!({"namespace": ["ada", "notes"], "key": "k"}))).await.forbidden("");
    bob.post("/store/items/search", &json!({"namespace_prefix": ["ada"]})).await.forbidden("");
    bob.post("/store/items/search", &json!({"namespace_prefix": ["ada", "notes"]})).await.forbidden("");
    bob.post("/store/namespaces", &json!({"prefix": ["ada"]})).await.forbidden("");

    let item = bob.get("/store/items?namespace=bob.notes&key=k").await.ok();
    assert_eq!(item["value"]["text"], "bob's", "ada's put reached bob's namespace: {item}");
    let item = ada.get("/store/items?namespace=ada.notes&key=k").await.ok();
    assert_eq!(item["value"]["text"], "ada's", "bob's delete reached ada's item: {item}");

    for (user, me) in [(ada, "ada"), (bob, "bob")] {
        let found = user.post("/store/items/search", &json!({"limit": 100})).await.ok();
        let items = found["items"].as_array().unwrap();
        assert_eq!(items.len(), 1, "{me}: {found}");
        assert_eq!(items[0]["namespace"], json!([me, "notes"]), "{me}: {found}");
        let listed = user.post("/store/namespaces", &json!({})).await.ok();
        assert_eq!(listed["namespaces"], json!([[me, "notes"]]), "{me}: {listed}");
    }
    ada.send("DELETE", "/store/items", Some(&json!({"namespace": ["ada", "notes"], "key": "k"}))).await.ok();
    assert_eq!(ada.get("/store/items?namespace=ada.notes&key=k").await.ok(), Value::Null);
}

/// What a policy's handler was asked: by whom, on what, doing what, with which values.
type Asked = (String, Resource, Action, Value);

/// A custom policy: its handler gets the caller, the resource, the action and the record's
/// id, and its refusal reaches the client as a 403 with its reason; what no handler covers is
/// allowed, a per-resource filter hides records, and `deny_unlisted` refuses the rest.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_policy_decides_and_its_reason_reaches_the_client() {
    let asked: Arc<Mutex<Vec<Asked>>> = Arc::default();
    let record = Arc::clone(&asked);
    let policy = Policy::new()
        .on(Resource::Threads, Action::Delete, move |access: Access| {
            let record = Arc::clone(&record);
            async move {
                let user = access.user().identity.clone();
                record.lock().unwrap().push((user, access.resource(), access.action(), access.value().clone()));
                Err::<Grant, _>(Forbidden::new("no deleting"))
            }
        })
        .on(Resource::Assistants, Action::Create, |access: Access| async move {
            if access.user().permissions.iter().any(|p| p == "admin") {
                Ok(Grant::allow())
            } else {
                Err(Forbidden::new("only administrators make assistants"))
            }
        });
    let keys = ApiKeys::new().key(ADA, AuthUser::new("ada").with_permissions(["admin"])).key(BOB, AuthUser::new("bob"));
    let addr = serve(with_graphs(Server::new()).auth(keys).authorize(policy)).await;
    let (ada, bob) = (ada(addr), bob(addr));

    let t = ada.thread(&json!({})).await;
    // No filter: bob sees ada's thread; no handler for reads: allowed.
    bob.get(&format!("/threads/{t}")).await.ok();
    let refused = bob.send("DELETE", &format!("/threads/{t}"), None).await;
    refused.forbidden("no deleting");
    assert_eq!(refused.detail(), "no deleting");
    ada.send("DELETE", &format!("/threads/{t}"), None).await.forbidden("no deleting");
    ada.get(&format!("/threads/{t}")).await.ok();
    let asked = asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!((asked[0].0.as_str(), asked[0].1, asked[0].2), ("bob", Resource::Threads, Action::Delete));
    assert_eq!(asked[0].3["thread_id"], t.as_str(), "{:?}", asked[0].3);
    assert_eq!(asked[1].0, "ada");

    let body = json!({"graph_id": "whoami"});
    bob.post("/assistants", &body).await.forbidden("only administrators make assistants");
    ada.post("/assistants", &body).await.ok();
}

/// A policy's own filter: records it does not admit are missing, and left out of searches.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_filter_hides_the_records_it_does_not_admit() {
    let red = Policy::new().on_resource(Resource::Threads, |_: Access| async {
        Ok::<_, Forbidden>(Grant::only(Filter::eq("team", "red")))
    });
    let addr = serve(with_graphs(Server::new()).auth(keys()).authorize(red)).await;
    let (ada, bob) = (ada(addr), bob(addr));
    // Creating is allowed (the grant stamps nothing), but a blue thread is then out of sight.
    let blue = ada.thread(&json!({"team": "blue"})).await;
    ada.get(&format!("/threads/{blue}")).await.missing(&[]);
    let red = ada.thread(&json!({"team": "red"})).await;
    bob.get(&format!("/threads/{red}")).await.ok();
    assert_eq!(bob.thread_ids(&json!({})).await, [red]);
    assert_eq!(ada.post("/threads/count", &json!({})).await.ok(), 1);
}

/// `deny_unlisted`: what no handler covers is refused, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deny_unlisted_refuses_what_no_handler_covers() {
    let strict = Policy::new()
        .on(Resource::Threads, Action::Create, |_: Access| async { Ok::<_, Forbidden>(Grant::allow()) })
        .deny_unlisted();
    let addr = serve(with_graphs(Server::new()).auth(keys()).authorize(strict)).await;
    let ada = ada(addr);
    let t = ada.thread(&json!({})).await;
    ada.get(&format!("/threads/{t}")).await.forbidden("no handler");
    ada.post("/assistants/search", &json!({})).await.forbidden("no handler");
}

/// `OwnerIsolation` extended like any policy: its thread isolation holds, and the added
/// handler decides what it covers.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn owner_isolation_extends_like_any_policy() {
    let policy = Policy::from(OwnerIsolation).on(Resource::Assistants, Action::Create, |_: Access| async {
        Err(Forbidden::new("assistants are made by ops"))
    });
    let addr = serve(with_graphs(Server::new()).auth(keys()).authorize(policy)).await;
    let t = ada(addr).thread(&json!({})).await;
    bob(addr).get(&format!("/threads/{t}")).await.missing(&[]);
    ada(addr).post("/assistants", &json!({"graph_id": "whoami"})).await.forbidden("assistants are made by ops");
}

/// A policy needs to know who calls: without `auth` the server is not built, whichever way.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_without_authentication_is_refused() {
    let error = with_graphs(Server::new()).authorize(OwnerIsolation).into_router().await.unwrap_err();
    assert!(matches!(error, ServerError::AuthorizationWithoutAuthentication), "{error:?}");
    assert!(error.to_string().contains("Server::auth"), "{error}");
    let error = Server::new().authorize(Policy::new()).bind("127.0.0.1:0").await.unwrap_err();
    assert!(matches!(error, ServerError::AuthorizationWithoutAuthentication), "{error:?}");
    // With authentication it builds.
    assert!(Server::new().auth(keys()).authorize(OwnerIsolation).into_router().await.is_ok());
}

/// The value of a variable `scripts/test` sets, or a panic saying how to get it.
fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}

/// Runs `program script url_of_ada url_of_bob extra..`; it prints `all scenarios passed` when
/// every scenario held.
async fn run_client(program: String, script: &str, urls: [String; 2], extra: Vec<String>) {
    let script = script.to_owned();
    let run = tokio::task::spawn_blocking(move || {
        let mut command = Command::new(&program);
        command.arg(script).args(urls).args(extra);
        command.output().unwrap_or_else(|error| panic!("{program} does not start: {error}"))
    });
    let output = tokio::time::timeout(Duration::from_mins(3), run).await.expect("the scenarios finish").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success() && stdout.contains("all scenarios passed"), "{stdout}\n{stderr}");
}

const PYTHON_SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/authz_scenarios.py");
const JS_SCENARIOS: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/authz_scenarios.mjs");

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_python_clients_of_two_users() {
    let python = prepared("GRAPHWRIGHT_TEST_PYTHON", "langgraph-sdk");
    let (_dir, addr) = serve_on_file().await;
    let url = format!("http://{addr}");
    run_client(python, PYTHON_SCENARIOS, [url.clone(), url], vec![]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_js_clients_of_two_users() {
    let sdk = prepared("GRAPHWRIGHT_TEST_JS_SDK", "@langchain/langgraph-sdk");
    let (_dir, addr) = serve_on_file().await;
    let url = format!("http://{addr}");
    run_client("node".to_owned(), JS_SCENARIOS, [url.clone(), url], vec![sdk]).await;
}

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

#[cfg(feature = "postgres")]
#[path = "support/server_process.rs"]
mod server_process;

/// Two server processes sharing one PostgreSQL database, ada on one and bob on the other: the
/// checks read the shared records, so they hold whichever process accepted the run.
#[cfg(feature = "postgres")]
mod on_postgres {
    use super::postgres_server::TestSchema;
    use super::server_process::ServerProcess;
    use super::{PYTHON_SCENARIOS, Server, ada, bob, isolated, json, prepared, run_client};
    use std::net::SocketAddr;

    /// Where a server process started by this module's tests finds its database.
    const SERVE_ON: &str = "GRAPHWRIGHT_TEST_SERVE_AUTHZ";

    /// A server process of the tests below: this test binary run again with only this test,
    /// which serves until it is killed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "a server process that the tests of `on_postgres` start"]
    async fn server_process() {
        let url = prepared(SERVE_ON, "a database (it is set by the test that starts this process)");
        let bound = isolated(Server::new()).postgres(url).bind("127.0.0.1:0").await.unwrap();
        println!("listening on {}", bound.local_addr().unwrap());
        bound.run().await.unwrap();
    }

    /// Starts a server process on `url`; it and the address it serves on.
    fn start(url: &str) -> (ServerProcess, SocketAddr) {
        let (process, addr) = ServerProcess::start("on_postgres::server_process", SERVE_ON, url);
        (process, addr.parse().unwrap())
    }

    /// A run ada starts through process A, while it is in flight and after: missing for bob
    /// through process B on every route that names it, not cancelled by him, and hers through B.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_started_on_one_process_is_missing_for_others_on_another() {
        let schema = TestSchema::new("server_authz");
        let (_a, addr_a) = start(&schema.url());
        let (_b, addr_b) = start(&schema.url());
        let (ada_a, ada_b, bob_b) = (ada(addr_a), ada(addr_b), bob(addr_b));

        let t = ada_a.thread(&json!({"topic": "cluster"})).await;
        let body = json!({"assistant_id": "slow", "input": {}, "stream_resumable": true});
        let run = ada_a.post(&format!("/threads/{t}/runs"), &body).await.ok();
        let run = run["run_id"].as_str().unwrap().to_owned();

        // While it runs on A.
        let stream = format!("/threads/{t}/runs/{run}/stream");
        bob_b.send_with("GET", &stream, &[("last-event-id", "-1")], None).await.missing(&["cluster"]);
        bob_b.get(&format!("/threads/{t}/runs/{run}/join")).await.missing(&[]);
        bob_b.get(&format!("/threads/{t}/runs/{run}")).await.missing(&[]);
        bob_b.post(&format!("/threads/{t}/runs/{run}/cancel"), &json!({})).await.missing(&[]);
        bob_b.post("/runs/cancel", &json!({"thread_id": t})).await.missing(&[]);
        let by_ids = bob_b.post("/runs/cancel", &json!({"run_ids": [run]})).await;
        assert!(by_ids.status < 500, "{} {}", by_ids.status, by_ids.text);
        let replay = ada_b.send_with("GET", &stream, &[("last-event-id", "-1")], None).await;
        assert_eq!(replay.status, 200, "{}", replay.text);
        assert!(replay.text.contains("\"ada\""), "ada's stream through B: {}", replay.text);

        let joined = ada_b.get(&format!("/threads/{t}/runs/{run}/join")).await.ok();
        assert_eq!(joined["seen"], json!(["ada"]), "bob's cancel through B reached ada's run: {joined}");
        assert_eq!(ada_b.get(&format!("/threads/{t}/runs/{run}")).await.ok()["status"], "success");
        bob_b.get(&format!("/threads/{t}")).await.missing(&["cluster"]);
        bob_b.get(&format!("/threads/{t}/state")).await.missing(&["cluster"]);
        bob_b.get(&format!("/threads/{t}/runs")).await.missing(&[]);
        assert_eq!(bob_b.thread_ids(&json!({})).await, Vec::<String>::new());
        assert_eq!(ada_b.thread_ids(&json!({})).await, [t.as_str()]);
        let pruned = bob_b.post("/threads/prune", &json!({"thread_ids": [t]})).await.ok();
        assert_eq!(pruned["pruned_count"], 0, "{pruned}");
        assert_eq!(ada_a.seen(&t).await, json!(["ada"]));
    }

    /// The Python scenarios with ada on process A and bob on process B.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn langgraph_python_clients_of_two_users_on_two_processes() {
        let python = prepared("GRAPHWRIGHT_TEST_PYTHON", "langgraph-sdk");
        let schema = TestSchema::new("server_authz_sdk");
        let (_a, addr_a) = start(&schema.url());
        let (_b, addr_b) = start(&schema.url());
        run_client(python, PYTHON_SCENARIOS, [format!("http://{addr_a}"), format!("http://{addr_b}")], vec![]).await;
    }
}
