//! Model-client benchmarks against aimock on loopback (BENCHMARKS.md, "Models"):
//!
//! - `react_10_turns_aimock`: a `ReAct` graph (model → `ToolNode` → model) whose model, an
//!   [`OpenAi`] client, makes ten tool calls and then answers: eleven HTTP calls. Also
//!   reports `server_share`, the time the same eleven requests take when sent raw with
//!   reqwest, over the graph's time: what no client can save.
//! - `stream_100k_tokens`: a 100,000-token streamed reply, from its first byte to its last
//!   event, through the client alone and through a graph streaming `messages`, against the
//!   same body read raw with reqwest: medians of ten rounds, and the medians of each round's
//!   ratio to its own raw read.
//!
//! `runtime/benches/models/side_by_side.sh` runs this and the LangGraph baseline
//! (`react_langgraph.py`) in one go. Prints one JSON object per line.

#[path = "../../tests/support/model_servers.rs"]
mod model_servers;

use futures::StreamExt;
use graphwright::model::{ChatModel, ModelRequest, ModelRetry, OpenAi, ReplySink, ToolCallDelta};
use graphwright::prelude::*;
use graphwright::{EventKind, StreamMode};
use model_servers::Aimock;
use serde_json::{Value, json};
use std::sync::LazyLock;
use std::time::{Duration, Instant};

const RUNS: usize = 5;
/// Rounds of the stream bench: more than [`RUNS`], since node's collector lands on one reader
/// or another and a median of five moves by a tenth between runs.
const STREAM_RUNS: usize = 9;
const STREAM_TOKENS: usize = 100_000;

#[graph(context = OpenAi)]
mod react {
    use super::TOOLS;
    use graphwright::model::{ChatModel, OpenAi};
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    /// Counts to `n`.
    #[tool]
    pub fn count(
        /// The number reached.
        n: u32,
    ) -> String {
        format!("count={n};")
    }

    #[node(entry, next = tools | END, route = route)]
    async fn model(state: &State, rt: &Runtime<OpenAi>) -> Result<StateUpdate, NodeError> {
        Ok(StateUpdate::new().messages(vec![rt.context().invoke(&state.messages, rt).await?]))
    }

    fn route(state: &State) -> ModelNext {
        tools_condition(&state.messages).pick(ModelNext::Tools, ModelNext::End)
    }

    #[node(next = model)]
    async fn tools(state: &State, rt: &Runtime<OpenAi>) -> StateUpdate {
        StateUpdate::new().messages(TOOLS.run(&state.messages, state, rt).await)
    }
}

static TOOLS: LazyLock<ToolNode> = LazyLock::new(|| ToolNode::new(tools![react::Count]));

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

fn line(value: &Value) {
    println!("{value}");
}

async fn react_10_turns(mock: &Aimock) {
    let model = OpenAi::new("bench").base_url(mock.openai_base()).api_key("none").bind_tools(&tools![react::Count]);
    let app = react::graph().compile().unwrap();
    let cfg = RunConfig::default().context(model);
    let input = || react::StateUpdate::new().messages(vec![Message::user("count to ten")]);
    let mut walls = Vec::new();
    let mut ok = true;
    for run in 0..=RUNS {
        let started = Instant::now();
        let out = app.invoke(input(), &cfg).await.unwrap();
        let wall = started.elapsed().as_secs_f64();
        ok &= out.state.messages.last().is_some_and(|m| m.content == "I counted to ten.") && out.usage().calls == 11;
        if run > 0 {
            walls.push(wall);
        }
    }
    // The last run's eleven requests, sent again raw: the server's share of the time.
    let bodies = mock.bodies("/v1/chat/completions").await;
    let last: Vec<&Value> = bodies.iter().rev().take(11).collect();
    let client = reqwest::Client::new();
    let mut raws = Vec::new();
    for _ in 0..RUNS {
        let started = Instant::now();
        for body in last.iter().rev() {
            let mut body = (*body).clone();
            body.as_object_mut().unwrap().remove("_endpointType");
            let response = client
                .post(format!("{}/chat/completions", mock.openai_base()))
                .body(body.to_string())
                .send()
                .await
                .unwrap();
            ok &= response.status().is_success();
            response.bytes().await.unwrap();
        }
        raws.push(started.elapsed().as_secs_f64());
    }
    let (wall, raw) = (median(walls), median(raws));
    line(&json!({
        "name": "react_10_turns_aimock",
        "wall_s": wall,
        "per_unit_us": wall / 11.0 * 1e6,
        "units": 11,
        "raw_requests_s": raw,
        "server_share": raw / wall,
        "ok": ok,
    }));
}

/// Notes when the first piece of a reply arrives.
struct FirstPiece(Option<Instant>, usize);

impl ReplySink for FirstPiece {
    fn text(&mut self, delta: &str) {
        self.0.get_or_insert_with(Instant::now);
        self.1 += delta.len();
    }
    fn tool_call(&mut self, _delta: ToolCallDelta<'_>) {}
}

#[graph(context = OpenAi)]
mod relay {
    use graphwright::model::{ChatModel, OpenAi};
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = END)]
    async fn model(state: &State, rt: &Runtime<OpenAi>) -> Result<StateUpdate, NodeError> {
        Ok(StateUpdate::new().messages(vec![rt.context().invoke(&state.messages, rt).await?]))
    }
}

async fn stream_100k(mock: &Aimock) {
    let expected = STREAM_TOKENS * 4;
    let model =
        OpenAi::new("bench").base_url(mock.openai_base()).api_key("none").streaming(true).retry(ModelRetry::none());
    let messages = [Message::user("long")];
    let app = relay::graph().compile().unwrap();
    let cfg = RunConfig::default().context(model.clone());
    let client = reqwest::Client::new();
    let body = json!({"model": "bench", "messages": [{"role": "user", "content": "long"}], "stream": true,
                      "stream_options": {"include_usage": true}})
    .to_string();

    // The three readers take turns within each round, so that each meets the server in the
    // same state (node's heap and JIT change over a run), and each reads in a task of its own,
    // as a server's handler does: reading in `block_on`'s own future costs hyper twice as much
    // a frame (the stream drives its run, so the graph's reader is where the run goes on).
    let (mut raw_s, mut client_s, mut graph_s) = (Vec::new(), Vec::new(), Vec::new());
    let (mut ok, mut raw_bytes) = (true, 0);
    for run in 0..=STREAM_RUNS {
        let (url, client, body) = (mock.openai_base(), client.clone(), body.clone());
        let (raw, bytes) = tokio::spawn(async move {
            let mut response = client.post(format!("{url}/chat/completions")).body(body).send().await.unwrap();
            let (mut first, mut bytes) = (None, 0);
            while let Some(chunk) = response.chunk().await.unwrap() {
                first.get_or_insert_with(Instant::now);
                bytes += chunk.len();
            }
            (first.unwrap().elapsed().as_secs_f64(), bytes)
        })
        .await
        .unwrap();
        raw_bytes = bytes;

        let model = model.clone();
        let (alone, whole) = tokio::spawn(async move {
            let messages = [Message::user("long")];
            let mut sink = FirstPiece(None, 0);
            let settings = model.settings().clone();
            let request = ModelRequest { model: "bench", messages: &messages, settings: &settings, stream: true };
            let reply = model.generate(request, &mut sink).await.unwrap();
            let end = Instant::now();
            ((end - sink.0.unwrap()).as_secs_f64(), reply.message.content.len() == expected && sink.1 == expected)
        })
        .await
        .unwrap();
        ok &= whole;

        let mut stream = app.stream(relay::StateUpdate::new().messages(messages.to_vec()), &cfg, StreamMode::Messages);
        let (through, bytes) = tokio::spawn(async move {
            let (mut first, mut bytes) = (None, 0);
            while let Some(event) = stream.next().await {
                if let EventKind::Message { delta, .. } = event.kind {
                    first.get_or_insert_with(Instant::now);
                    bytes += delta.len();
                }
            }
            (first.unwrap().elapsed().as_secs_f64(), bytes)
        })
        .await
        .unwrap();
        ok &= bytes == expected;

        if run > 0 {
            raw_s.push(raw);
            client_s.push(alone);
            graph_s.push(through);
        }
    }
    // Each reader against the raw read of its own round: the server drifts between rounds.
    let over_raw = |times: &[f64]| median(times.iter().zip(&raw_s).map(|(t, raw)| t / raw).collect());
    let (client_over_raw, graph_over_raw) = (over_raw(&client_s), over_raw(&graph_s));
    let (client_s, graph_s, raw_s) = (median(client_s), median(graph_s), median(raw_s));
    line(&json!({
        "name": "stream_100k_tokens",
        "units": STREAM_TOKENS,
        "body_bytes": raw_bytes,
        "raw_s": raw_s,
        "client_s": client_s,
        "graph_s": graph_s,
        "client_over_raw": client_over_raw,
        "graph_over_raw": graph_over_raw,
        "ok": ok,
    }));
}

/// A fixture directory with one 100,000-token reply, four characters a token, a token a chunk.
fn long_reply_fixtures() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let fixture = json!({"fixtures": [{
        "match": {"userMessage": "long"},
        "response": {"content": "tok ".repeat(STREAM_TOKENS)},
        "chunkSize": 4,
    }]});
    std::fs::write(dir.path().join("long.json"), fixture.to_string()).unwrap();
    dir
}

fn main() {
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wanted = |name: &str| only.as_deref().is_none_or(|o| name.contains(o));
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    rt.block_on(async {
        if wanted("react_10_turns_aimock") {
            react_10_turns(&Aimock::start()).await;
        }
        if wanted("stream_100k_tokens") {
            let fixtures = long_reply_fixtures();
            let mock = Aimock::with_fixtures(fixtures.path());
            tokio::time::sleep(Duration::from_millis(100)).await;
            stream_100k(&mock).await;
        }
    });
}
