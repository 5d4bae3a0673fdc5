//! The server's protocol endpoints driven by their official clients over a real socket on
//! loopback, with threads in a SQLite file: `/mcp` by the TypeScript MCP client
//! (`@modelcontextprotocol/sdk`, `tests/server/mcp_client.mjs`), and `/a2a/{assistant_id}` by
//! the Python A2A client (`a2a-sdk`, `tests/server/a2a_scenarios.py`), in both protocol
//! versions it speaks. This file serves the graphs they use, runs them, and checks what a
//! browser page on another site gets from `/mcp`.
//!
//! `scripts/test` prepares both clients: `GRAPHWRIGHT_TEST_MCP_TS` names a folder whose
//! `node_modules` holds `@modelcontextprotocol/sdk`, `GRAPHWRIGHT_TEST_A2A_PYTHON` the
//! interpreter of a virtualenv holding `a2a-sdk`.

use graphwright::prelude::*;
use graphwright_server::Server;
use serde_json::Value;
use std::net::SocketAddr;
use std::process::Command;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// Echoes the user's last message, token by token, and says how many messages of the user's
/// the thread holds (so a second message on a thread shows that the graph saw both).
#[graph]
mod chat {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = END)]
    fn reply(state: &State, rt: &Runtime) -> StateUpdate {
        let theirs = state.messages.iter().filter(|m| m.role == Role::User).count();
        let last = state.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        let text = format!("You said: {last} ({theirs} from you)");
        let id = format!("reply-{}", state.messages.len());
        for (i, word) in text.split(' ').enumerate() {
            rt.message_delta(&id, &if i == 0 { word.to_owned() } else { format!(" {word}") });
        }
        StateUpdate::new().messages(vec![Message::assistant(text).with_id(id)])
    }
}

/// Asks the user to approve before it answers: the run pauses on a question.
#[graph]
mod ask {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = END)]
    fn approve(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let request = state.messages.last().map(|m| m.content.clone()).unwrap_or_default();
        let answer: String = rt.interrupt(json!({"question": "approve?", "request": request}))?;
        Ok(StateUpdate::new().messages(vec![Message::assistant(format!("{request}: {answer}"))]))
    }
}

/// Works slowly (a hundred steps of 50 ms), for cancelling a task in flight.
#[graph]
mod slow {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
        #[reducer(add)]
        pub done: u32,
    }

    #[node(entry, next = tick | END, route = again)]
    async fn tick(_state: &State) -> StateUpdate {
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        StateUpdate::new().done(1)
    }

    fn again(state: &State) -> TickNext {
        if state.done < 100 { TickNext::Tick } else { TickNext::End }
    }
}

/// Adds two numbers; no messages: its tool's input schema is the state's.
#[graph]
mod adder {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        /// The first number.
        pub a: i64,
        /// The second number.
        pub b: i64,
        /// Their sum, once the graph ran.
        pub sum: i64,
    }

    #[node(entry, next = END)]
    fn add(state: &State) -> StateUpdate {
        StateUpdate::new().sum(state.a + state.b)
    }
}

/// Fails in its only node.
#[graph]
mod broken {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub n: u32,
    }

    #[node(entry, next = END)]
    fn fail(state: &State) -> Result<StateUpdate, NodeError> {
        Err(NodeError::msg(format!("cannot handle {}", state.n)))
    }
}

/// The value of a variable `scripts/test` sets, or a panic saying how to get it.
fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}

/// Serves the graphs on a fresh SQLite file in `dir`, bound to `host` (port 0: a free one).
async fn serve(dir: &std::path::Path, host: &str) -> SocketAddr {
    let server = Server::new()
        .graph("chat", chat::graph().compile().unwrap())
        .graph("ask", ask::graph().compile().unwrap())
        .graph("slow", slow::graph().compile().unwrap())
        .graph("adder", adder::graph().compile().unwrap())
        .graph("broken", broken::graph().compile().unwrap())
        .sqlite(dir.join("server.db"))
        // One test binds 0.0.0.0, which a server without authentication binds only when told.
        .allow_unauthenticated();
    let bound = server.bind(format!("{host}:0")).await.unwrap();
    let addr = bound.local_addr().unwrap();
    tokio::spawn(bound.run());
    addr
}

/// Runs `program args..`, which prints `all scenarios passed` when every scenario held.
async fn run_script(program: String, args: Vec<String>) {
    let run = tokio::task::spawn_blocking(move || {
        Command::new(&program).args(&args).output().unwrap_or_else(|error| panic!("{program} does not start: {error}"))
    });
    let output = tokio::time::timeout(Duration::from_mins(5), run).await.expect("the scenarios finish").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "scenarios failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("all scenarios passed"), "{stdout}");
}

fn script(name: &str) -> String {
    format!("{}/../tests/server/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn typescript_mcp_client_scenarios() {
    let sdk = prepared("GRAPHWRIGHT_TEST_MCP_TS", "@modelcontextprotocol/sdk");
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path(), "127.0.0.1").await;
    run_script("node".into(), vec![script("mcp_client.mjs"), format!("http://{addr}"), sdk]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_a2a_client_scenarios() {
    let python = prepared("GRAPHWRIGHT_TEST_A2A_PYTHON", "a2a-sdk");
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path(), "127.0.0.1").await;
    run_script(python, vec![script("a2a_scenarios.py"), format!("http://{addr}")]).await;
}

/// One HTTP/1.1 request over a fresh connection; the response's status and body.
async fn request(addr: SocketAddr, head: &str, body: &str) -> (u16, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    let message = format!("{head}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}", body.len());
    stream.write_all(message.as_bytes()).await.unwrap();
    let mut response = Vec::new();
    tokio::time::timeout(Duration::from_secs(10), stream.read_to_end(&mut response)).await.unwrap().unwrap();
    let response = String::from_utf8_lossy(&response).into_owned();
    let status = response.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap_or(0);
    let body = response.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default();
    (status, body)
}

const INITIALIZE: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}"#;

/// An MCP `initialize` sent as a browser on `origin` would, to a server reached as `host`.
async fn initialize(addr: SocketAddr, host: &str, origin: Option<&str>) -> (u16, String) {
    let origin = origin.map(|o| format!("\r\nOrigin: {o}")).unwrap_or_default();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nHost: {host}\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream{origin}"
    );
    request(addr, &head, INITIALIZE).await
}

/// `/mcp` answers clients without an `Origin` (programs) and pages served from loopback; it
/// refuses a page from another site, and a request for another host name (a DNS-rebinding
/// page's, whose name was made to resolve to this machine), whatever address the server is
/// bound to: on the wildcard address it still answers requests for its IP addresses.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_refuses_pages_of_other_sites() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path(), "127.0.0.1").await;
    let own = addr.to_string();
    for (host, origin) in [
        (own.as_str(), None),
        ("localhost", Some("http://localhost:5173")),
        (own.as_str(), Some("http://127.0.0.1:3000")),
        (own.as_str(), Some("http://[::1]:8080")),
    ] {
        let (status, body) = initialize(addr, host, origin).await;
        assert_eq!(status, 200, "Host {host}, Origin {origin:?}: {body}");
        assert!(body.contains("graphwright-server"), "{body}");
    }
    for (host, origin) in [
        (own.as_str(), Some("http://evil.example")),
        (own.as_str(), Some("https://localhost.evil.example:443")),
        ("evil.example", None),
        (&format!("evil.example:{}", addr.port()) as &str, Some("http://evil.example")),
    ] {
        let (status, body) = initialize(addr, host, origin).await;
        assert_eq!(status, 403, "Host {host}, Origin {origin:?}: {body}");
    }

    let other = tempfile::tempdir().unwrap();
    let wildcard = serve(other.path(), "0.0.0.0").await;
    let loopback = SocketAddr::from(([127, 0, 0, 1], wildcard.port()));
    let (status, body) = initialize(loopback, &loopback.to_string(), None).await;
    assert_eq!(status, 200, "{body}");
    let (status, _) = initialize(loopback, &format!("evil.example:{}", wildcard.port()), None).await;
    assert_eq!(status, 403);
}

/// Requests that are not A2A JSON-RPC requests get JSON-RPC errors, in a `200 OK`: never an
/// HTTP error status, never a 5xx.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a2a_answers_malformed_requests_with_json_rpc_errors() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(dir.path(), "127.0.0.1").await;
    let head = format!("POST /a2a/chat HTTP/1.1\r\nHost: {addr}\r\nContent-Type: application/json");
    for (body, code, says) in [
        ("{not json", -32700, "not JSON"),
        ("[]", -32600, "batch"),
        ("7", -32600, "not an object"),
        (r#"{"jsonrpc":"2.0","method":"message/send"}"#, -32600, "no `id`"),
        (r#"{"jsonrpc":"1.0","id":1,"method":"message/send"}"#, -32600, "\"2.0\""),
        (r#"{"jsonrpc":"2.0","id":{},"method":"message/send"}"#, -32600, "`id`"),
        (r#"{"jsonrpc":"2.0","id":1}"#, -32600, "`method`"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"tasks/unknown"}"#, -32601, "tasks/unknown"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"tasks/pushNotificationConfig/set","params":{}}"#, -32003, "push"),
        (r#"{"jsonrpc":"2.0","id":1,"method":"message/send","params":[]}"#, -32602, "`params`"),
    ] {
        let (status, answer) = request(addr, &head, body).await;
        assert_eq!(status, 200, "{body}: {answer}");
        let answer: Value = serde_json::from_str(&answer).unwrap_or_else(|_| panic!("{body}: {answer}"));
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(message.contains(says), "{body}: {message}");
    }
    // The id is echoed once it was read.
    let (_, answer) = request(addr, &head, r#"{"jsonrpc":"2.0","id":"x-1","method":"nope"}"#).await;
    assert_eq!(serde_json::from_str::<Value>(&answer).unwrap()["id"], "x-1");
}
