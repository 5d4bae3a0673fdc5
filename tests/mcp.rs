//! MCP, against real servers: `@modelcontextprotocol/server-everything` (npm) over stdio, a
//! Python `mcp` server (`tests/mcp/py_server.py`) over streamable HTTP on 127.0.0.1 and over
//! stdio, and our own served tool set checked with the Python `mcp` client
//! (`tests/mcp/py_client.py`). Every failure case is here: a result with `isError`, a JSON-RPC
//! error, a server that exits in the middle of a call, one that never answers, name clashes, and
//! arguments the server's schema rejects before any call.
//!
//! `scripts/test` prepares both servers: `GRAPHWRIGHT_TEST_MCP_EVERYTHING` names the
//! `dist/index.js` of server-everything, `GRAPHWRIGHT_TEST_MCP_PYTHON` the interpreter of a
//! virtualenv holding `mcp`.

use graphwright::mcp::{McpClient, McpError};
use graphwright::model::ScriptedModel;
use graphwright::prebuilt::{MessagesState, react_agent};
use graphwright::prelude::*;
use graphwright::tool::{ToolEnv, ToolPolicy};
use std::time::{Duration, Instant};

const PY_SERVER: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/mcp/py_server.py");
const PY_CLIENT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/mcp/py_client.py");

fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}

fn python() -> String {
    prepared("GRAPHWRIGHT_TEST_MCP_PYTHON", "a virtualenv with Python's `mcp`")
}

async fn everything(prefix: &str) -> McpClient {
    let script = prepared("GRAPHWRIGHT_TEST_MCP_EVERYTHING", "@modelcontextprotocol/server-everything");
    let mut command = tokio::process::Command::new("node");
    command.arg(script).arg("stdio");
    McpClient::stdio(command)
        .prefix(prefix)
        .stderr(std::process::Stdio::null())
        .timeout(Duration::from_secs(30))
        .await
        .expect("server-everything starts")
}

async fn python_stdio(timeout: Duration) -> McpClient {
    let mut command = tokio::process::Command::new(python());
    command.arg(PY_SERVER).arg("stdio");
    let connect = McpClient::stdio(command)
        .stderr(std::process::Stdio::null())
        .timeout(timeout)
        .connect_timeout(Duration::from_secs(30));
    connect.await.expect("the Python stdio server starts")
}

/// The Python server over streamable HTTP on a free loopback port; killed when dropped.
struct PyHttp {
    url: String,
    _process: tokio::process::Child,
}

async fn python_http() -> PyHttp {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let process = tokio::process::Command::new(python())
        .arg(PY_SERVER)
        .arg("http")
        .arg(port.to_string())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .kill_on_drop(true)
        .spawn()
        .expect("the Python HTTP server starts");
    let started = Instant::now();
    while tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err() {
        assert!(started.elapsed() < Duration::from_secs(30), "the Python MCP server did not listen on {port}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    PyHttp { url: format!("http://127.0.0.1:{port}/mcp"), _process: process }
}

/// The tool messages a tool node gives for `calls`.
async fn run(tools: ToolSet, calls: Vec<ToolCall>) -> Vec<Message> {
    ToolNode::new(tools).run_calls(&calls, &ToolEnv::new()).await
}

/// Whether the process is gone and reaped within five seconds: a zombie keeps its `/proc`
/// entry until its parent (this test) waits for it.
async fn reaped(pid: u32) -> bool {
    for _ in 0..50 {
        if !std::path::Path::new(&format!("/proc/{pid}")).exists() {
            return true;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    false
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn everything_tools_join_a_set_with_the_servers_names_and_schemas() {
    let client = everything("").await;
    let tools = client.tools().await.unwrap();
    let names: Vec<_> = tools.iter().map(|t| t.name().to_owned()).collect();
    assert!(names.iter().any(|n| n == "echo") && names.iter().any(|n| n == "get-sum"), "{names:?}");
    let sum = tools.iter().find(|t| t.name() == "get-sum").unwrap();
    assert!(!sum.description().is_empty());
    assert_eq!(sum.parameters()["properties"]["a"]["type"], "number", "{}", sum.parameters());

    let mut set = ToolSet::new();
    let prefixed = everything("ev_").await;
    let added = prefixed.add_to(&mut set).await.unwrap();
    assert_eq!(added, tools.len());
    assert!(set.get("ev_get-sum").is_some() && set.get("get-sum").is_none());

    let answers = run(
        set,
        vec![
            ToolCall::new("c1", "ev_get-sum", json!({"a": 2, "b": 3})),
            ToolCall::new("c2", "ev_echo", json!({"message": "hi"})),
        ],
    )
    .await;
    assert!(!answers[0].is_error, "{}", answers[0].content);
    assert!(answers[0].content.contains('5'), "{}", answers[0].content);
    assert!(answers[1].content.contains("hi"), "{}", answers[1].content);
    assert_eq!(answers[0].tool_call_id.as_deref(), Some("c1"));

    // A call by the server's own name, for callers outside a tool node.
    let direct = client.call("get-sum", json!({"a": 20, "b": 22})).await.unwrap();
    assert!(direct.into_content().contains("42"));
    client.close().await;
    assert!(client.is_closed());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_react_agent_calls_everything_tools() {
    let client = everything("ev_").await;
    let mut tools = ToolSet::new();
    client.add_to(&mut tools).await.unwrap();
    let model = ScriptedModel::new([
        Message::assistant("").with_tool_calls(vec![ToolCall::new("s1", "ev_get-sum", json!({"a": 2, "b": 3}))]),
        Message::assistant("2 + 3 = 5"),
    ]);
    let app = react_agent(model, tools).compile().unwrap();
    let out = app.invoke(MessagesState::new([Message::user("2 + 3?")]), &RunConfig::default()).await.unwrap();
    let answer = &out.state.messages[2];
    assert_eq!(answer.role, Role::Tool);
    assert!(answer.content.contains('5') && !answer.is_error, "{}", answer.content);
    assert_eq!(out.state.messages.last().unwrap().content, "2 + 3 = 5");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn python_tools_over_http_and_their_failures() {
    let server = python_http().await;
    let client = McpClient::http(&server.url).timeout(Duration::from_secs(20)).await.unwrap();
    assert_eq!(client.server_name(), Some("py-tools"));
    let mut set = ToolSet::new();
    client.add_to(&mut set).await.unwrap();
    let add = set.get("add").unwrap();
    assert_eq!(add.description(), "Add two integers.");
    assert_eq!(add.parameters()["required"], json!(["a", "b"]));

    let answers = run(
        set,
        vec![
            ToolCall::new("ok", "add", json!({"a": 2, "b": 3})),
            ToolCall::new("bad", "add", json!({"a": "two", "b": 3})),
            ToolCall::new("err", "fail", json!({"reason": "no disk"})),
            ToolCall::new("rpc", "refuse", json!({})),
        ],
    )
    .await;
    // structuredContent is preferred: the Python SDK wraps a plain result as {"result": ..}.
    assert_eq!(answers[0].content, r#"{"result":"5"}"#);
    assert!(!answers[0].is_error);
    assert!(answers[1].is_error && answers[1].content.contains("`a`"), "{}", answers[1].content);
    assert!(answers[2].is_error && answers[2].content.contains("refused: no disk"), "{}", answers[2].content);
    assert!(answers[3].is_error && answers[3].content.contains("the quota is used up"), "{}", answers[3].content);

    // The malformed call never reached the server: `add` ran once.
    assert_eq!(client.call("add_calls", json!({})).await.unwrap().into_content(), r#"{"result":"1"}"#);

    // The typed errors a caller gets.
    let failed = client.call("fail", json!({"reason": "no disk"})).await.unwrap_err();
    assert!(
        matches!(&failed, McpError::ToolFailed { tool, message, .. } if tool == "fail" && message.contains("no disk"))
    );
    let refused = client.call("refuse", json!({})).await.unwrap_err();
    assert!(
        matches!(&refused, McpError::Server { code: -32001, message, .. } if message.contains("quota")),
        "{refused}"
    );
    let tool = client.tools().await.unwrap().into_iter().find(|t| t.name() == "fail").unwrap();
    let error = tool.call(json!({"reason": "x"}), &ToolRuntime::detached("t1")).await.unwrap_err();
    let ToolError::Failed { source, .. } = &error else { panic!("{error:?}") };
    assert!(matches!(source.downcast_ref::<McpError>(), Some(McpError::ToolFailed { .. })), "{error:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn name_clashes_are_errors_and_prefixes_resolve_them() {
    /// Add two integers, locally.
    #[tool]
    fn add(a: i64, b: i64) -> i64 {
        a + b
    }

    let server = python_http().await;
    let plain = McpClient::http(&server.url).await.unwrap();
    let mut set = tools![Add];
    let error = plain.add_to(&mut set).await.unwrap_err();
    assert!(matches!(&error, McpError::NameClash { name, .. } if name == "add"), "{error}");
    assert!(error.to_string().contains(".prefix("), "{error}");
    assert_eq!(set.len(), 1, "nothing was added");

    let prefixed = McpClient::http(&server.url).prefix("py_").await.unwrap();
    prefixed.add_to(&mut set).await.unwrap();
    assert!(set.get("add").is_some() && set.get("py_add").is_some());
    // The same server again, with the same prefix: every name is taken.
    let again = prefixed.add_to(&mut set).await.unwrap_err();
    assert!(matches!(again, McpError::NameClash { .. }));

    // Local tools keep their own behaviour.
    let answers = run(
        set,
        vec![ToolCall::new("l", "add", json!({"a": 1, "b": 1})), ToolCall::new("r", "py_add", json!({"a": 1, "b": 2}))],
    )
    .await;
    assert_eq!(answers[0].content, "2");
    assert_eq!(answers[1].content, r#"{"result":"3"}"#);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_exits_mid_call_is_an_error_and_is_reaped() {
    let client = python_stdio(Duration::from_secs(20)).await;
    let pid = client.process_id().expect("a child process");
    let mut set = ToolSet::new();
    client.add_to(&mut set).await.unwrap();

    let started = Instant::now();
    let answers = run(set, vec![ToolCall::new("d", "die", json!({}))]).await;
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}", started.elapsed());
    assert!(answers[0].is_error, "{}", answers[0].content);
    assert!(answers[0].content.contains("closed the connection"), "{}", answers[0].content);

    let after = client.call("add", json!({"a": 1, "b": 2})).await.unwrap_err();
    assert!(after.is_closed(), "{after}");
    assert!(client.is_closed());
    assert!(reaped(pid).await, "process {pid} was not reaped");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_http_server_that_exits_mid_call_is_an_error() {
    let server = python_http().await;
    let client = McpClient::http(&server.url).timeout(Duration::from_secs(20)).await.unwrap();
    let started = Instant::now();
    let error = client.call("die", json!({})).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(10), "took {:?}: {error}", started.elapsed());
    assert!(error.is_closed(), "{error}");
    let after = client.call("add", json!({"a": 1, "b": 2})).await.unwrap_err();
    assert!(after.is_closed(), "{after}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_that_never_answers_times_out() {
    let client = python_stdio(Duration::from_millis(800)).await;
    let started = Instant::now();
    let error = client.call("hang", json!({})).await.unwrap_err();
    assert!(error.is_timeout(), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
    // The connection is still good for other calls.
    assert_eq!(client.call("add", json!({"a": 1, "b": 2})).await.unwrap().into_content(), r#"{"result":"3"}"#);

    // A tool node's own timeout applies too, and the model is told.
    let slow = python_stdio(Duration::from_mins(1)).await;
    let mut set = ToolSet::new();
    slow.add_to(&mut set).await.unwrap();
    let node = ToolNode::new(set).policy("hang", ToolPolicy::new().timeout(Duration::from_millis(300)));
    let answers = node.run_calls(&[ToolCall::new("h", "hang", json!({}))], &ToolEnv::new()).await;
    assert!(answers[0].is_error && answers[0].content.contains("did not finish"), "{}", answers[0].content);

    // A process that never speaks MCP: the handshake times out and the process is stopped.
    let mut silent = tokio::process::Command::new(python());
    silent.args(["-c", "import time; time.sleep(600)"]);
    let error = McpClient::stdio(silent).connect_timeout(Duration::from_millis(800)).await.unwrap_err();
    assert!(matches!(&error, McpError::Timeout { what, .. } if what == "the handshake"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_missing_program_is_a_spawn_error() {
    let command = tokio::process::Command::new("/nonexistent/mcp-server");
    let error = McpClient::stdio(command).await.unwrap_err();
    assert!(matches!(error, McpError::Spawn { .. }), "{error}");
    assert!(error.to_string().contains("/nonexistent/mcp-server"));
}

/// Add two integers.
#[tool]
fn add(
    /// The first term.
    a: i64,
    /// The second term.
    b: i64,
) -> i64 {
    a + b
}

/// Tomorrow's forecast for a city.
#[tool]
fn forecast(
    /// The city.
    city: String,
) -> serde_json::Value {
    json!({"city": city, "celsius": 4})
}

/// Always refuses.
#[tool]
fn refuse(
    /// Why.
    why: String,
) -> Result<String, ToolError> {
    Err(ToolError::msg("refuse", format!("not today: {why}")))
}

/// Crashes.
#[tool]
fn crash() -> String {
    panic!("a bug in the tool")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn served_tools_answer_the_python_client() {
    let server = tools![Add, Forecast, Refuse, Crash].serve_mcp_http("127.0.0.1:0").await.unwrap();
    assert!(server.local_addr().ip().is_loopback());
    let url = server.url();
    let checked = tokio::process::Command::new(python()).arg(PY_CLIENT).arg(&url).output();
    let output = tokio::time::timeout(Duration::from_mins(1), checked).await.expect("the client finishes").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success() && stdout.contains("ok"), "stdout: {stdout}\nstderr: {stderr}");

    // And with our own client, the round trip keeps names and schemas.
    let client = McpClient::http(&url).await.unwrap();
    let tools = client.tools().await.unwrap();
    let add = tools.iter().find(|t| t.name() == "add").unwrap();
    assert_eq!(add.parameters(), Add.parameters());
    assert_eq!(client.call("add", json!({"a": 40, "b": 2})).await.unwrap().into_content(), "42");
    client.close().await;
    server.shutdown().await.unwrap();
}

/// The `mcp_serve` example, which `cargo test` builds beside this test binary.
fn mcp_serve_example() -> std::path::PathBuf {
    let exe = std::env::current_exe().unwrap();
    // target/<profile>/deps/mcp-<hash> → target/<profile>/examples/mcp_serve
    let dir = exe.parent().and_then(std::path::Path::parent).unwrap().join("examples");
    let example = dir.join(format!("mcp_serve{}", std::env::consts::EXE_SUFFIX));
    assert!(
        example.exists(),
        "{} is missing: build it with `cargo build --example mcp_serve --features mcp`",
        example.display()
    );
    example
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_set_served_over_stdio_answers_our_client() {
    let command = tokio::process::Command::new(mcp_serve_example());
    let client = McpClient::stdio(command).stderr(std::process::Stdio::null()).prefix("local_").await.unwrap();
    let pid = client.process_id().unwrap();
    let tools = client.tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(graphwright::Tool::name).collect();
    assert_eq!(names, ["local_word_count", "local_to_fahrenheit"]);
    let count = tools.iter().find(|t| t.name() == "local_word_count").unwrap();
    assert_eq!(count.description(), "Counts the words of a text.");
    assert_eq!(count.parameters()["required"], json!(["text"]));
    assert_eq!(client.call("word_count", json!({"text": "one two three"})).await.unwrap().into_content(), "3");
    assert_eq!(client.call("to_fahrenheit", json!({"celsius": 100.0})).await.unwrap().into_content(), "212.0");
    // Arguments the tool's schema refuses are an error result, not a crash of the server.
    let refused = client.call("to_fahrenheit", json!({"celsius": "hot"})).await.unwrap_err();
    assert!(matches!(refused, McpError::ToolFailed { .. }), "{refused}");
    assert!(!client.is_closed());
    client.close().await;
    assert!(reaped(pid).await, "the served process {pid} was not reaped");
}
