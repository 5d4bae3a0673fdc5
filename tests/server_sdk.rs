//! The server driven by LangGraph's own clients over a real socket on loopback. With the Python
//! client (`langgraph-sdk`, `tests/server/sdk_scenarios.py`): every endpoint it offers, every
//! stream mode (`events` included), a thread's stream across runs, interrupts and resumes,
//! reconnecting to a resumable stream, the multitask strategies, cancellation, the store, and bad
//! input. With the JavaScript client (`@langchain/langgraph-sdk`, `tests/server/js_scenarios.mjs`):
//! a streamed run as chat UIs request it, subgraph events, the `events` mode, joining a thread's
//! stream, interrupt and resume, thread search and history, assistant versions and subgraph
//! schemas. In headless Chromium: the chat at `/` (`tests/server/page_check.mjs`) and the studio
//! around it (`tests/server/studio_check.mjs`). This file serves the graphs they use and runs
//! them.
//!
//! `scripts/test` prepares both clients: `GRAPHWRIGHT_TEST_PYTHON` names the interpreter of a
//! virtualenv holding `langgraph-sdk`, `GRAPHWRIGHT_TEST_JS_SDK` a folder whose `node_modules`
//! holds `@langchain/langgraph-sdk`.

use graphwright::prelude::*;
use graphwright_server::Server;
use serde_json::Value;
use std::process::Command;
use std::time::Duration;

/// A chat agent that streams its reply token by token, calls a `weather` tool when asked about
/// the weather, and reports progress on the custom stream.
#[graph]
mod chat {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = tools | END, route = after)]
    fn agent(state: &State, rt: &Runtime) -> StateUpdate {
        let last = state.messages.last().cloned().unwrap_or_else(|| Message::user(""));
        rt.write(json!({"type": "progress", "seen": state.messages.len()}));
        let id = format!("reply-{}", state.messages.len());
        if last.role == Role::User && last.content.contains("weather") {
            let call = ToolCall::new("call-1", "weather", json!({"city": "Oslo"}));
            return StateUpdate::new().messages(vec![Message::assistant("").with_id(id).with_tool_calls(vec![call])]);
        }
        let text = if last.role == Role::Tool {
            format!("It is {} there.", last.content)
        } else {
            format!("You said: {}", last.content)
        };
        for (i, word) in text.split(' ').enumerate() {
            rt.message_delta(&id, &if i == 0 { word.to_owned() } else { format!(" {word}") });
        }
        StateUpdate::new().messages(vec![Message::assistant(text).with_id(id)])
    }

    fn after(state: &State) -> AgentNext {
        if state.messages.last().is_some_and(Message::has_tool_calls) { AgentNext::Tools } else { AgentNext::End }
    }

    #[node(next = agent)]
    fn tools(state: &State) -> StateUpdate {
        let call = state.messages.last().and_then(|m| m.tool_calls.first().cloned());
        let id = call.map(|c| c.id).unwrap_or_default();
        StateUpdate::new().messages(vec![Message::tool(id, "4 °C and raining").with_name("weather")])
    }
}

/// Asks a person before it acts: one interrupt, then a step that records the answer.
#[graph]
mod approval {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub request: String,
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = act)]
    fn ask(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let answer: String = rt.interrupt(json!({"question": "approve?", "request": state.request}))?;
        Ok(StateUpdate::new().log(vec![format!("answer: {answer}")]))
    }

    #[node(next = END)]
    fn act(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["acted".into()])
    }
}

/// Counts slowly: `steps` steps of `pause_ms` each, for cancelling, queueing and joining runs
/// in flight.
#[graph]
mod slow {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub steps: u32,
        pub pause_ms: u64,
        #[reducer(add)]
        pub done: u32,
    }

    #[node(entry, next = tick | END, route = again)]
    async fn tick(state: &State) -> StateUpdate {
        tokio::time::sleep(std::time::Duration::from_millis(state.pause_ms)).await;
        StateUpdate::new().done(1)
    }

    fn again(state: &State) -> TickNext {
        if state.done < state.steps { TickNext::Tick } else { TickNext::End }
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

/// A parent whose middle node is a subgraph, for `stream_subgraphs`.
#[graph]
mod nested {
    use graphwright::prelude::*;

    /// The trail of the graph that holds the subgraph.
    #[state]
    pub struct State {
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    #[node(entry, next = inner)]
    fn before(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["before".into()])
    }

    #[node(subgraph, next = after)]
    fn inner() -> StateGraph<super::inner::State> {
        super::inner::graph()
    }

    #[node(next = END)]
    fn after(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["after".into()])
    }
}

#[graph]
mod inner {
    use graphwright::prelude::*;

    /// The trail of the subgraph.
    #[state]
    pub struct State {
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    #[node(entry, next = END)]
    fn work(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["inner".into()])
    }
}

/// Two levels of subgraphs: its node `outer` runs `nested`, whose node `inner` runs `inner`.
#[graph]
mod layered {
    use graphwright::prelude::*;

    /// The outermost graph's state.
    #[state]
    pub struct State {
        /// What the run is for.
        pub label: String,
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    #[node(entry, subgraph, next = END)]
    fn outer() -> StateGraph<super::nested::State> {
        super::nested::graph()
    }
}

/// The studio's graph: a conditional edge (`triage` ends the run when there is no topic) and a
/// subgraph node (`research` runs `nested`, which runs `inner` in turn), then a report on the
/// topic.
#[graph]
mod desk {
    use graphwright::prelude::*;

    /// A topic researched.
    #[state]
    pub struct State {
        /// What to research.
        pub topic: String,
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    #[node(entry, next = research | END, route = after_triage)]
    fn triage(state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec![format!("triage: {}", state.topic)])
    }

    fn after_triage(state: &State) -> TriageNext {
        if state.topic.is_empty() { TriageNext::End } else { TriageNext::Research }
    }

    #[node(subgraph, next = report)]
    fn research() -> StateGraph<super::nested::State> {
        super::nested::graph()
    }

    #[node(next = END)]
    fn report(state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec![format!("report: {}", state.topic)])
    }
}

/// Who ships a parcel: the run's context.
#[derive(Clone, Debug, serde::Deserialize, schemars::JsonSchema)]
pub struct Shipper {
    /// The account that pays.
    pub account: String,
}

/// Prices a parcel: a state with one field of each kind a form draws (numbers, text, an enum,
/// an optional, a nested struct), each with a doc comment, and a context.
#[graph(context = super::Shipper)]
mod shipping {
    use graphwright::prelude::*;
    use schemars::JsonSchema;
    use serde::{Deserialize, Serialize};

    /// How fast a parcel goes.
    #[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
    #[serde(rename_all = "lowercase")]
    pub enum Speed {
        #[default]
        Standard,
        Express,
    }

    /// Where a parcel goes.
    #[derive(Clone, Debug, Default, Serialize, Deserialize, JsonSchema)]
    pub struct Address {
        /// The street and number.
        pub street: String,
        /// The city.
        pub city: String,
    }

    /// A parcel to price.
    #[state]
    pub struct State {
        /// The weight in grams.
        pub grams: u32,
        /// What is inside.
        pub contents: String,
        /// How fast it goes.
        pub speed: Speed,
        /// The declared value, when it is insured.
        pub insured_value: Option<f64>,
        /// Where it goes.
        pub to: Address,
        /// The price in cents, once computed, and who pays it.
        #[reducer(append)]
        pub quotes: Vec<String>,
    }

    #[node(entry, next = END)]
    fn quote(state: &State, rt: &Runtime<super::Shipper>) -> StateUpdate {
        let rate = if state.speed == Speed::Express { 3 } else { 1 };
        let cents = u64::from(state.grams) * rate;
        StateUpdate::new().quotes(vec![format!("{cents} cents to {}, paid by {}", state.to.city, rt.context().account)])
    }
}

impl From<&layered::State> for nested::State {
    fn from(parent: &layered::State) -> Self {
        Self { trail: parent.trail.clone() }
    }
}

impl From<nested::State> for layered::StateUpdate {
    fn from(child: nested::State) -> Self {
        Self::new().trail(Overwrite(child.trail))
    }
}

impl From<&desk::State> for nested::State {
    fn from(parent: &desk::State) -> Self {
        Self { trail: parent.trail.clone() }
    }
}

impl From<nested::State> for desk::StateUpdate {
    fn from(child: nested::State) -> Self {
        Self::new().trail(Overwrite(child.trail))
    }
}

impl From<&nested::State> for inner::State {
    fn from(parent: &nested::State) -> Self {
        Self { trail: parent.trail.clone() }
    }
}

impl From<inner::State> for nested::StateUpdate {
    fn from(child: inner::State) -> Self {
        Self::new().trail(Overwrite(child.trail))
    }
}

/// A model that answers from the conversation, the way a real one streams: the weather tool
/// when asked about the weather, the tool's result in a sentence, an echo otherwise; text word
/// by word, each tool call in one piece, with the tokens it used.
#[derive(Clone, Debug, Default)]
struct Forecaster {
    settings: graphwright::model::ModelSettings,
}

impl graphwright::model::ChatModel for Forecaster {
    fn provider(&self) -> &'static str {
        "forecaster"
    }

    fn model(&self) -> &'static str {
        "forecaster-1"
    }

    fn settings(&self) -> &graphwright::model::ModelSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut graphwright::model::ModelSettings {
        &mut self.settings
    }

    fn generate<'a>(
        &'a self,
        request: graphwright::model::ModelRequest<'a>,
        sink: &'a mut dyn graphwright::model::ReplySink,
    ) -> futures::future::BoxFuture<'a, Result<graphwright::model::ModelReply, graphwright::model::ModelError>> {
        let last = request.messages.last().cloned().unwrap_or_else(|| Message::user(""));
        let reply = if last.role == Role::User && last.content.contains("weather") {
            Message::assistant("").with_tool_calls(vec![ToolCall::new("call-7", "weather", json!({"city": "Oslo"}))])
        } else if last.role == Role::Tool {
            Message::assistant(format!("In Oslo it is {}.", last.content))
        } else {
            Message::assistant(format!("You said: {}", last.content))
        };
        if request.stream {
            for word in reply.content.split_inclusive(' ') {
                sink.text(word);
            }
            for (index, call) in reply.tool_calls.iter().enumerate() {
                let arguments = call.arguments.to_string();
                sink.tool_call(graphwright::model::ToolCallDelta {
                    index: u32::try_from(index).unwrap(),
                    id: Some(&call.id),
                    name: Some(&call.name),
                    arguments: &arguments,
                });
            }
        }
        let usage = graphwright::model::Usage::tokens(12, 7);
        Box::pin(std::future::ready(Ok(graphwright::model::ModelReply {
            usage,
            ..graphwright::model::ModelReply::new(reply)
        })))
    }
}

/// The weather in a city.
#[tool]
fn weather(city: String) -> String {
    format!("3 °C in {city}")
}

/// The value of a variable `scripts/test` sets, or a panic saying how to get it.
fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}

/// The graphs the scenarios use.
/// An essay written by tasks, reviewed by a person through an interrupt; it remembers how many
/// essays the thread has written (`previous`).
#[task]
async fn outline(topic: String) -> Vec<String> {
    vec![format!("{topic}: why"), format!("{topic}: how")]
}

#[task]
async fn section(heading: String) -> String {
    format!("{heading}, written")
}

#[entrypoint]
async fn essay(
    topic: String,
    previous: Option<u32>,
    rt: &Runtime,
) -> Result<graphwright::functional::Final<Value, u32>, NodeError> {
    let sections = futures::future::try_join_all(outline(topic).await?.into_iter().map(section)).await?;
    let verdict: String = rt.interrupt(serde_json::json!({"draft": sections}))?;
    let count = previous.unwrap_or(0) + 1;
    Ok(graphwright::functional::Final::new(
        serde_json::json!({"sections": sections, "verdict": verdict, "count": count}),
        count,
    ))
}

fn with_graphs(server: Server) -> Server {
    server
        .graph("essay", essay::entrypoint().compile().unwrap())
        .graph("chat", chat::graph().compile().unwrap())
        .graph("approval", approval::graph().compile().unwrap())
        .graph("slow", slow::graph().compile().unwrap())
        .graph("broken", broken::graph().compile().unwrap())
        .graph("nested", nested::graph().compile().unwrap())
        .graph("layered", layered::graph().compile().unwrap())
        .graph(
            "forecast",
            graphwright::prebuilt::react_agent(Forecaster::default(), tools![Weather]).compile().unwrap(),
        )
        .graph("shipping", shipping::graph().compile().unwrap())
        .body_limit(1024 * 1024)
}

async fn serve(database: &std::path::Path) -> std::net::SocketAddr {
    serve_with(with_graphs(Server::new()).sqlite(database)).await
}

async fn serve_with(server: Server) -> std::net::SocketAddr {
    let bound = server.bind("127.0.0.1:0").await.unwrap();
    let addr = bound.local_addr().unwrap();
    tokio::spawn(bound.run());
    addr
}

/// Serves the graphs on a fresh SQLite file and runs `program script URL extra..`, which
/// prints `all scenarios passed` when every scenario held.
async fn run_scenarios(program: String, script: &'static str, extra: Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(&dir.path().join("server.db")).await;
    run_script(program, script, vec![format!("http://{addr}")], extra).await;
}

/// Runs `program script urls.. extra..`, which prints `all scenarios passed` when every
/// scenario held.
async fn run_script(program: String, script: &'static str, urls: Vec<String>, extra: Vec<String>) {
    let run = tokio::task::spawn_blocking(move || {
        Command::new(&program)
            .arg(script)
            .args(urls)
            .args(extra)
            .output()
            .unwrap_or_else(|error| panic!("{program} does not start: {error}"))
    });
    let output = tokio::time::timeout(Duration::from_mins(5), run).await.expect("the scenarios finish").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "scenarios failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("all scenarios passed"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_python_client_scenarios() {
    let python = prepared("GRAPHWRIGHT_TEST_PYTHON", "langgraph-sdk");
    run_scenarios(python, concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/sdk_scenarios.py"), vec![]).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_js_client_scenarios() {
    let sdk = prepared("GRAPHWRIGHT_TEST_JS_SDK", "@langchain/langgraph-sdk");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/js_scenarios.mjs");
    run_scenarios("node".to_owned(), script, vec![sdk]).await;
}

/// Sends one HTTP/1.1 request over a fresh loopback connection and reads what comes back for
/// at most `listen` (a stream never ends by itself).
async fn raw_request(addr: std::net::SocketAddr, request: String, listen: Duration) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut socket = tokio::net::TcpStream::connect(addr).await.unwrap();
    socket.write_all(request.as_bytes()).await.unwrap();
    let mut received = Vec::new();
    let _ = tokio::time::timeout(listen, socket.read_to_end(&mut received)).await;
    String::from_utf8_lossy(&received).into_owned()
}

/// A thread's stream stays open while nothing happens on the thread, sending only keep-alive
/// comment lines (no blank line after them, so no client reads an event into them).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_idle_thread_stream_sends_keep_alive_comments() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(&dir.path().join("server.db")).await;
    let body = r#"{"thread_id": "quiet-thread"}"#;
    let create = format!(
        "POST /threads HTTP/1.1\r\nhost: test\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    );
    let created = raw_request(addr, create, Duration::from_secs(10)).await;
    assert!(created.starts_with("HTTP/1.1 200"), "{created}");
    let follow = "GET /threads/quiet-thread/stream HTTP/1.1\r\nhost: test\r\n\r\n".to_owned();
    let streamed = raw_request(addr, follow, Duration::from_millis(5_600)).await;
    let (head, events) = streamed.split_once("\r\n\r\n").expect("a complete head");
    assert!(head.starts_with("HTTP/1.1 200") && head.contains("text/event-stream"), "{head}");
    assert!(events.contains(": keep-alive\n"), "no keep-alive within the interval: {events:?}");
    assert!(!events.contains("event:") && !events.contains("\n\n"), "an idle thread sent an event: {events:?}");
    let missing = "GET /threads/no-such-thread/stream HTTP/1.1\r\nhost: test\r\nconnection: close\r\n\r\n".to_owned();
    let refused = raw_request(addr, missing, Duration::from_secs(10)).await;
    assert!(refused.starts_with("HTTP/1.1 404") && refused.contains("no-such-thread"), "{refused}");
}

/// Sends `body` (JSON) to the server at `addr`; the status and the JSON answer.
async fn call(addr: std::net::SocketAddr, method: reqwest::Method, path: &str, body: Value) -> (u16, Value) {
    let request = reqwest::Client::new()
        .request(method, format!("http://{addr}{path}"))
        .header("content-type", "application/json")
        .body(body.to_string());
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    let text = response.text().await.unwrap();
    (status, serde_json::from_str(&text).unwrap_or(Value::Null))
}

/// What a server that kept no versions leaves: an assistant updated twice (its version 3).
async fn leave_an_updated_assistant(addr: std::net::SocketAddr) -> String {
    let create = json!({"graph_id": "shipping", "context": {"account": "first"}});
    let (status, made) = call(addr, reqwest::Method::POST, "/assistants", create).await;
    assert_eq!(status, 200, "{made}");
    let id = made["assistant_id"].as_str().unwrap().to_owned();
    for account in ["second", "third"] {
        let patch = json!({"context": {"account": account}});
        let (status, _) = call(addr, reqwest::Method::PATCH, &format!("/assistants/{id}"), patch).await;
        assert_eq!(status, 200);
    }
    id
}

/// Checks that records made before versions were kept, opened by the server at `addr`, have
/// each assistant's current configuration as its one kept version, and go on from there.
async fn check_versions_gained(addr: std::net::SocketAddr, id: &str) {
    let versions = |addr| async move {
        let (status, list) = call(addr, reqwest::Method::POST, &format!("/assistants/{id}/versions"), json!({})).await;
        assert_eq!(status, 200, "{list}");
        list.as_array()
            .unwrap()
            .iter()
            .map(|v| (v["version"].as_i64().unwrap(), v["context"].clone()))
            .collect::<Vec<_>>()
    };
    assert_eq!(versions(addr).await, [(3, json!({"account": "third"}))], "the current configuration, kept");
    let (status, _) =
        call(addr, reqwest::Method::PATCH, &format!("/assistants/{id}"), json!({"context": {"account": "fourth"}}))
            .await;
    assert_eq!(status, 200);
    let (status, back) =
        call(addr, reqwest::Method::POST, &format!("/assistants/{id}/latest"), json!({"version": 3})).await;
    assert_eq!(
        (status, back["version"].clone(), back["context"].clone()),
        (200, json!(3), json!({"account": "third"}))
    );
    let (status, _) =
        call(addr, reqwest::Method::POST, &format!("/assistants/{id}/latest"), json!({"version": 2})).await;
    assert_eq!(status, 404, "versions before the records kept them are not made up");
    let default = default_assistant_id("chat");
    let (status, kept) = call(addr, reqwest::Method::POST, &format!("/assistants/{default}/versions"), json!({})).await;
    assert_eq!((status, kept[0]["version"].clone(), kept.as_array().map(Vec::len)), (200, json!(1), Some(1)));
}

/// The id LangGraph (and this server) gives a graph's default assistant.
fn default_assistant_id(graph: &str) -> String {
    let namespace = uuid::Uuid::parse_str("6ba7b821-9dad-11d1-80b4-00c04fd430c8").unwrap();
    uuid::Uuid::new_v5(&namespace, graph.as_bytes()).to_string()
}

/// A file written by a server that kept no versions: opened again, each assistant keeps its
/// current configuration as its version.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_older_sqlite_file_gains_assistant_versions_when_opened() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("server.db");
    let id = leave_an_updated_assistant(serve(&path).await).await;
    rusqlite::Connection::open(&path).unwrap().execute_batch("DROP TABLE gw_assistant_versions").unwrap();
    check_versions_gained(serve(&path).await, &id).await;
}

/// Opens `url` in headless Chromium (through playwright-core), types each of `keys` into the
/// page's API key form in turn when it asks, waits for the run the page starts to end, saves a
/// screenshot at `picture` and returns the page's HTML.
async fn open_page(url: String, picture: &std::path::Path, keys: &[&str]) -> String {
    let chromium = prepared("GRAPHWRIGHT_TEST_CHROMIUM", "Debian's chromium");
    let node = prepared("GRAPHWRIGHT_TEST_JS_SDK", "playwright-core");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/page_check.mjs");
    let picture = picture.display().to_string();
    let keys: Vec<String> = keys.iter().map(|k| (*k).to_owned()).collect();
    let run = tokio::task::spawn_blocking(move || {
        Command::new("node").args([script, &url, &node, &chromium, &picture]).args(keys).output().expect("node starts")
    });
    let output = tokio::time::timeout(Duration::from_mins(2), run).await.expect("the page settles").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "the page check failed:\n{stdout}\n{}", String::from_utf8_lossy(&output.stderr));
    stdout
}

/// How many pixels of the picture at `path` have exactly the colour `rgb`.
fn pixels_of(path: &std::path::Path, rgb: [u8; 3]) -> usize {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut buffer = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut buffer).unwrap();
    assert_eq!((frame.width, frame.height), (900, 700), "the window's size");
    let channels = frame.color_type.samples();
    buffer[..frame.buffer_size()].chunks(channels).filter(|px| px[..3] == rgb).count()
}

/// The chat page of a server with authentication asks for an API key, asks again after a
/// wrong one, and then works as without authentication, sending the key with every request.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_page_asks_for_an_api_key() {
    let dir = tempfile::tempdir().unwrap();
    let keys = graphwright_server::ApiKeys::new().key("page-key-31", graphwright::AuthUser::new("reader"));
    let addr = serve_with(with_graphs(Server::new()).sqlite(dir.path().join("server.db")).auth(keys)).await;
    let picture = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("chat-page-with-key.png");
    let chat = format!("http://{addr}/?graph=chat&message=what%20is%20the%20weather%3F");
    let dom = open_page(chat, &picture, &["a-wrong-key", "page-key-31"]).await;
    for shown in ["weather: 4 °C and raining</li>", "It is 4 °C and raining there.</li>", "thread idle"] {
        assert!(dom.contains(shown), "the page does not show {shown:?}:\n{dom}");
    }
    assert!(dom.contains(r#"<form id="key-form" hidden="">"#), "the key form is put away:\n{dom}");
    assert!(!dom.contains("page-key-31"), "the key is not written into the page");
}

/// The chat page at `/`, in headless Chromium: a message sent from the page streams back the
/// reply, with the tool call and its result shown; a graph that asks a person shows the
/// question with a form to answer it. The screenshots land in the test's temporary folder for
/// review (`target/tmp/chat-page-*.png`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn chat_page_in_headless_chromium() {
    let dir = tempfile::tempdir().unwrap();
    let addr = serve(&dir.path().join("server.db")).await;

    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let picture = shots.join("chat-page-weather.png");
    let chat = format!("http://{addr}/?graph=chat&message=what%20is%20the%20weather%3F");
    let dom = open_page(chat, &picture, &[]).await;
    for shown in [
        r#"<li class="message human" data-id="#,
        ">what is the weather?</li>",
        r#"<span class="tool-call">calls weather({"city":"Oslo"})</span>"#,
        r#"<li class="message tool" data-id="#,
        "weather: 4 °C and raining</li>",
        r#"<li class="message ai" data-id="reply-3">It is 4 °C and raining there.</li>"#,
        "thread idle",
    ] {
        assert!(dom.contains(shown), "the page does not show {shown:?}:\n{dom}");
    }
    assert!(dom.contains(r#"<section id="interrupt" hidden="">"#), "no question is shown:\n{dom}");

    let approval = format!("http://{addr}/?graph=approval&message=%7B%22request%22%3A%22refund%207%22%7D");
    let dom = open_page(approval, &shots.join("chat-page-approval.png"), &[]).await;
    assert!(dom.contains(r#"<section id="interrupt">"#), "the question is shown:\n{dom}");
    assert!(
        dom.contains("&quot;question&quot;: &quot;approve?&quot;") || dom.contains(r#""question": "approve?""#),
        "{dom}"
    );
    assert!(dom.contains("thread interrupted"), "{dom}");

    // The user's bubble (#2f5bd3) and the tool's result (#eef7ee) are drawn, in their colours.
    assert!(
        pixels_of(&picture, [0x2f, 0x5b, 0xd3]) > 2000,
        "the user's message is not drawn: see {}",
        picture.display()
    );
    assert!(
        pixels_of(&picture, [0xee, 0xf7, 0xee]) > 2000,
        "the tool's result is not drawn: see {}",
        picture.display()
    );
}

/// The studio at `/` in headless Chromium, scenario by scenario (`tests/server/studio_check.mjs`):
/// the graph drawn with its conditional edges dashed and its subgraphs opened and folded, nodes
/// lit as a run's events arrive, the thread's checkpoints listed and shown, a bad edit refused,
/// a field edited and the thread forked there, runs from a checkpoint, and the tokens and tool
/// outcomes beside their nodes. Then, through the API, the checkpoint the page forked holds the
/// edited value and the run from it reported on it; and the screenshots (`target/tmp/studio-*.png`)
/// show the running node lit, the checkpoint picked, and the nodes that ran.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn studio_in_headless_chromium() {
    let chromium = prepared("GRAPHWRIGHT_TEST_CHROMIUM", "Debian's chromium");
    let node = prepared("GRAPHWRIGHT_TEST_JS_SDK", "playwright-core");
    let dir = tempfile::tempdir().unwrap();
    let server = with_graphs(Server::new()).graph("desk", desk::graph().compile().unwrap());
    let addr = serve_with(server.sqlite(dir.path().join("server.db"))).await;
    let shots = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/studio_check.mjs");
    let args = [script.to_owned(), format!("http://{addr}"), node, chromium, shots.display().to_string()];
    let run = tokio::task::spawn_blocking(move || Command::new("node").args(args).output().expect("node starts"));
    let output = tokio::time::timeout(Duration::from_mins(4), run).await.expect("the studio's scenarios end").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    println!("{stdout}");
    assert!(
        output.status.success(),
        "the studio's scenarios failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.trim_end().ends_with("all scenarios passed"), "{stdout}");

    let named: Value =
        stdout.lines().find_map(|line| serde_json::from_str(line).ok()).expect("the thread and the fork");
    let (thread, fork) = (named["thread"].as_str().unwrap(), named["fork"].as_str().unwrap());
    let (status, at_fork) =
        call(addr, reqwest::Method::GET, &format!("/threads/{thread}/state/{fork}"), Value::Null).await;
    assert_eq!(status, 200, "{at_fork}");
    assert_eq!((&at_fork["values"]["topic"], &at_fork["metadata"]["source"]), (&json!("moon"), &json!("update")));
    let (_, history) =
        call(addr, reqwest::Method::POST, &format!("/threads/{thread}/history"), json!({"limit": 100})).await;
    let history = history.as_array().unwrap();
    let after_fork =
        history.iter().find(|s| s["parent_checkpoint"]["checkpoint_id"] == fork).expect("a run from the fork");
    assert_eq!(after_fork["values"]["topic"], "moon");
    assert!(
        history.iter().any(|s| s["values"]["trail"].as_array().and_then(|t| t.last()) == Some(&json!("report: moon")))
    );

    // The running node's fill (#ffd95e), the checkpoint picked (#2f5bd3), and the fill of the
    // nodes that ran (#e3f1e3), each drawn.
    for (picture, rgb, least) in [
        ("studio-running.png", [0xff, 0xd9, 0x5e], 800),
        ("studio-timeline.png", [0x2f, 0x5b, 0xd3], 3000),
        ("studio-forecast.png", [0xe3, 0xf1, 0xe3], 1500),
    ] {
        let path = shots.join(picture);
        let found = pixels_of(&path, rgb);
        assert!(found >= least, "{found} pixels of {rgb:02x?} in {}, fewer than {least}", path.display());
    }
}

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

#[cfg(feature = "postgres")]
#[path = "support/server_process.rs"]
mod server_process;

/// The server on PostgreSQL: the Python scenarios against one process, and two processes
/// sharing one database (`tests/server/cluster_scenarios.py`).
#[cfg(feature = "postgres")]
mod on_postgres {
    use super::{
        Server, check_versions_gained, leave_an_updated_assistant, prepared, run_script, serve_with, with_graphs,
    };
    use graphwright::checkpoint::deadpool_postgres::tokio_postgres;

    use super::postgres_server::TestSchema;
    use super::server_process::ServerProcess;

    /// Where a server process started by [`two_server_processes_share_one_postgres`] finds
    /// its database.
    const SERVE_ON: &str = "GRAPHWRIGHT_TEST_SERVE_POSTGRES";

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn langgraph_python_client_scenarios_on_postgres() {
        let python = prepared("GRAPHWRIGHT_TEST_PYTHON", "langgraph-sdk");
        let schema = TestSchema::new("server_sdk");
        let addr = serve_with(with_graphs(Server::new()).postgres(schema.url())).await;
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/sdk_scenarios.py");
        run_script(python, script, vec![format!("http://{addr}")], vec![]).await;
    }

    /// A database written by a server that kept no versions: opened again, each assistant keeps
    /// its current configuration as its version.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_older_postgres_database_gains_assistant_versions_when_opened() {
        let schema = TestSchema::new("server_versions");
        let id = leave_an_updated_assistant(serve_with(with_graphs(Server::new()).postgres(schema.url())).await).await;
        let (client, connection) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls).await.unwrap();
        tokio::spawn(connection);
        // As a database made before assistant versions was: neither table is there.
        client.batch_execute("DROP TABLE gw_assistant_versions; DROP TABLE gw_schema_version").await.unwrap();
        check_versions_gained(serve_with(with_graphs(Server::new()).postgres(schema.url())).await, &id).await;
    }

    /// A server process of [`two_server_processes_share_one_postgres`]: this test binary run
    /// again with only this test, which serves until it is killed.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    #[ignore = "a server process that `two_server_processes_share_one_postgres` starts"]
    async fn server_process() {
        let url = prepared(SERVE_ON, "a database (it is set by the test that starts this process)");
        let bound = with_graphs(Server::new()).postgres(url).bind("127.0.0.1:0").await.unwrap();
        println!("listening on {}", bound.local_addr().unwrap());
        bound.run().await.unwrap();
    }

    /// Starts a server process on `url`; it and the URL it serves on.
    fn start(url: &str) -> (ServerProcess, String) {
        let (process, addr) = ServerProcess::start("on_postgres::server_process", SERVE_ON, url);
        (process, format!("http://{addr}"))
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_server_processes_share_one_postgres() {
        let python = prepared("GRAPHWRIGHT_TEST_PYTHON", "langgraph-sdk");
        let schema = TestSchema::new("server_cluster");
        let (a, url_a) = start(&schema.url());
        let (_b, url_b) = start(&schema.url());
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/cluster_scenarios.py");
        run_script(python, script, vec![url_a, url_b], vec![a.id().to_string()]).await;
        drop(a);
    }
}
