//! `/metrics` after a load, read with the Prometheus project's own parser
//! (`tests/server/prometheus_samples.py`, Python's `prometheus_client`): 20 runs of a `ReAct`
//! agent whose model reports known token usage and whose tool fails on some inputs, a run
//! paused at a breakpoint, a run cancelled in the middle of its tool call, and a run whose model
//! call fails. Every count is exact: runs per graph and status, model calls per outcome, tokens
//! per type, tool calls per tool and outcome, and the histograms' counts.
//!
//! Run statuses are the Agent Server API's: a run that paused for interrupts ended as `success`
//! (its thread is `interrupted`), and `interrupted` is a run a client cancelled.
//!
//! `scripts/test` prepares the parser: `GRAPHWRIGHT_TEST_PYTHON` names the interpreter of a
//! virtualenv holding `prometheus_client`.

use futures::future::BoxFuture;
use graphwright::model::{ChatModel, ModelError, ModelReply, ModelRequest, ModelSettings, ReplySink, Usage};
use graphwright::prelude::*;
use graphwright_server::Server;
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// The runs of the load; the tool fails for every fourth.
const RUNS: u64 = 20;

/// Tokens of the first call of a run (the one that asks for the tool) and of the second.
fn asking() -> Usage {
    Usage::tokens(50, 10).with_cached(30)
}

fn answering() -> Usage {
    Usage::tokens(80, 5).with_cached(40)
}

/// Asks for `lookup` with the number in the user's message, answers once the tool has; fails
/// with a bad request when the user says `fail`.
#[derive(Clone, Debug, Default)]
struct Oracle {
    settings: ModelSettings,
}

impl ChatModel for Oracle {
    fn provider(&self) -> &'static str {
        "oracle"
    }

    fn model(&self) -> &'static str {
        "oracle-1"
    }

    fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ModelSettings {
        &mut self.settings
    }

    fn generate<'a>(
        &'a self,
        request: ModelRequest<'a>,
        _sink: &'a mut dyn ReplySink,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let last = request.messages.last().cloned().unwrap_or_else(|| Message::user(""));
        let reply = if last.role == Role::Tool {
            Ok(ModelReply { usage: answering(), ..ModelReply::new(Message::assistant("done")) })
        } else if last.content.starts_with("fail") {
            Err(ModelError::BadRequest { provider: "oracle".into(), status: 400, message: "no such thing".into() })
        } else {
            let n: u64 = last.content.trim_start_matches("look up ").parse().unwrap_or(0);
            let call = ToolCall::new(format!("call-{n}"), "lookup", json!({"n": n}));
            Ok(ModelReply { usage: asking(), ..ModelReply::new(Message::assistant("").with_tool_calls(vec![call])) })
        };
        Box::pin(std::future::ready(reply))
    }
}

/// The number `lookup` waits on until its run is cancelled.
const STUCK: u64 = 99;

/// Told when `lookup` starts waiting on [`STUCK`].
static STUCK_STARTED: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// Looks a number up; there is nothing under multiples of 4, and [`STUCK`] takes a minute.
#[tool]
async fn lookup(n: u64) -> Result<String, String> {
    if n == STUCK {
        STUCK_STARTED.notify_one();
        tokio::time::sleep(Duration::from_mins(1)).await;
    }
    if n.is_multiple_of(4) { Err(format!("nothing under {n}")) } else { Ok(format!("entry {n}")) }
}

/// The value of a variable `scripts/test` sets, or a panic saying how to get it.
fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}

/// Runs the agent statelessly with `message` (and `extra` fields in the request) until it ends.
async fn run(client: &reqwest::Client, url: &str, message: &str, extra: Value) -> Value {
    let mut body = json!({"assistant_id": "agent", "input": {"messages": [message]}});
    if let (Value::Object(body), Value::Object(extra)) = (&mut body, extra) {
        body.extend(extra);
    }
    post(client, &format!("{url}/runs/wait"), &body).await
}

/// POSTs `body` and reads the JSON answer, which must be a success.
async fn post(client: &reqwest::Client, url: &str, body: &Value) -> Value {
    let response =
        client.post(url).header("content-type", "application/json").body(body.to_string()).send().await.unwrap();
    assert!(response.status().is_success(), "{url}: {}", response.status());
    serde_json::from_slice(&response.bytes().await.unwrap()).unwrap()
}

/// Starts a run on a thread of its own that gets stuck in its tool call, and cancels it there.
async fn cancel_in_tool_call(client: &reqwest::Client, url: &str) {
    let thread = post(client, &format!("{url}/threads"), &json!({})).await;
    let thread = thread["thread_id"].as_str().unwrap();
    let input = json!({"assistant_id": "agent", "input": {"messages": [format!("look up {STUCK}")]}});
    let started = post(client, &format!("{url}/threads/{thread}/runs"), &input).await;
    let run = started["run_id"].as_str().unwrap();
    tokio::time::timeout(Duration::from_secs(30), STUCK_STARTED.notified()).await.expect("the tool call started");
    post(client, &format!("{url}/threads/{thread}/runs/{run}/cancel?wait=true&action=interrupt"), &json!({})).await;
    let record = client.get(format!("{url}/threads/{thread}/runs/{run}")).send().await.unwrap();
    let record: Value = serde_json::from_slice(&record.bytes().await.unwrap()).unwrap();
    assert_eq!(record["status"], "interrupted", "{record}");
}

/// What the parser read: each family's type, and each sample's value by name and labels.
struct Scraped {
    families: BTreeMap<String, String>,
    samples: BTreeMap<(String, BTreeMap<String, String>), Value>,
}

impl Scraped {
    /// `/metrics` of the server at `url`, through the parser.
    async fn from(url: &str) -> Self {
        let python = prepared("GRAPHWRIGHT_TEST_PYTHON", "prometheus_client");
        let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/prometheus_samples.py");
        let url = url.to_owned();
        let output =
            tokio::task::spawn_blocking(move || std::process::Command::new(python).arg(script).arg(url).output());
        let output = output.await.unwrap().expect("python starts");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(output.status.success(), "the parser failed:\n{stderr}");
        let parsed: Value = serde_json::from_slice(&output.stdout).unwrap();
        let families = serde_json::from_value(parsed["families"].clone()).unwrap();
        let samples: Vec<(String, BTreeMap<String, String>, Value)> =
            serde_json::from_value(parsed["samples"].clone()).unwrap();
        Self { families, samples: samples.into_iter().map(|(name, labels, value)| ((name, labels), value)).collect() }
    }

    /// The value of sample `name` with exactly `labels`, a count.
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> u64 {
        let labels: BTreeMap<String, String> = labels.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned())).collect();
        let value = self.samples.get(&(name.to_owned(), labels.clone())).unwrap_or_else(|| {
            let of_name: Vec<_> = self.samples.keys().filter(|(n, _)| n == name).map(|(_, l)| l).collect();
            panic!("no sample {name} with {labels:?}; there are: {of_name:#?}")
        });
        value.as_u64().unwrap_or_else(|| panic!("{name} {labels:?} is {value}, not a count"))
    }

    /// How many samples `name` has (one per set of labels).
    fn series(&self, name: &str) -> usize {
        self.samples.keys().filter(|(n, _)| n == name).count()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_count_runs_tokens_and_tool_calls_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let agent = graphwright::prebuilt::react_agent(Oracle::default(), tools![Lookup]).compile().unwrap();
    let server = Server::new().graph("agent", agent).sqlite(dir.path().join("server.db"));
    let bound = server.bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", bound.local_addr().unwrap());
    tokio::spawn(bound.run());
    let client = reqwest::Client::new();

    let asked: Vec<String> = (0..RUNS).map(|n| format!("look up {n}")).collect();
    let load = asked.iter().map(|message| run(&client, &url, message, json!({})));
    let ended = tokio::time::timeout(Duration::from_mins(2), futures::future::join_all(load)).await.unwrap();
    for (n, state) in ended.iter().enumerate() {
        let messages = state["messages"].as_array().unwrap();
        assert_eq!(messages.last().unwrap()["content"], "done", "run {n}: {state}");
    }
    let paused = run(&client, &url, "look up 21", json!({"interrupt_before": ["tools"]})).await;
    let messages = paused["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 2, "paused before the tool ran: {paused}");
    assert_eq!(messages[1]["tool_calls"][0]["name"], "lookup", "{paused}");
    cancel_in_tool_call(&client, &url).await;
    let failed = run(&client, &url, "fail now", json!({})).await;
    assert!(failed["__error__"]["message"].as_str().is_some_and(|m| m.contains("no such thing")), "{failed}");

    let got = Scraped::from(&url).await;
    for (family, kind) in [
        ("graphwright_runs_started", "counter"),
        ("graphwright_runs_ended", "counter"),
        ("graphwright_run_duration_seconds", "histogram"),
        ("graphwright_model_calls", "counter"),
        ("graphwright_model_tokens", "counter"),
        ("graphwright_model_call_duration_seconds", "histogram"),
        ("graphwright_tool_calls", "counter"),
        ("graphwright_tool_call_duration_seconds", "histogram"),
    ] {
        assert_eq!(got.families.get(family).map(String::as_str), Some(kind), "{family}");
    }

    let graph = ("graph", "agent");
    assert_eq!(got.value("graphwright_runs_started_total", &[graph]), RUNS + 3);
    let ended = |status| got.value("graphwright_runs_ended_total", &[graph, ("status", status)]);
    assert_eq!(ended("success"), RUNS + 1, "the load and the paused run");
    assert_eq!(ended("interrupted"), 1, "the cancelled run");
    assert_eq!(ended("error"), 1, "the run whose model call failed");
    assert_eq!(got.value("graphwright_run_duration_seconds_count", &[graph]), RUNS + 3);

    let model = [graph, ("provider", "oracle"), ("model", "oracle-1")];
    let with = |label: (&'static str, &'static str)| [&model[..], &[label]].concat();
    // Two calls per run of the load, one each for the paused and the cancelled run, one that failed.
    assert_eq!(got.value("graphwright_model_calls_total", &with(("outcome", "ok"))), 2 * RUNS + 2);
    assert_eq!(got.value("graphwright_model_calls_total", &with(("outcome", "bad_request"))), 1);
    assert_eq!(got.series("graphwright_model_calls_total"), 2);
    assert_eq!(got.value("graphwright_model_call_duration_seconds_count", &model), 2 * RUNS + 3);
    let tokens = |kind, of: fn(Usage) -> u64| {
        let expected = RUNS * (of(asking()) + of(answering())) + 2 * of(asking());
        assert_eq!(got.value("graphwright_model_tokens_total", &with(("type", kind))), expected, "{kind}");
        expected
    };
    assert_eq!(tokens("input", |u| u.input_tokens), 2_700);
    assert_eq!(tokens("output", |u| u.output_tokens), 320);
    assert_eq!(tokens("cached", |u| u.cached_tokens), 1_460);
    assert_eq!(got.series("graphwright_model_tokens_total"), 3);

    let tool = [graph, ("tool", "lookup")];
    let failing = (0..RUNS).filter(|n| n.is_multiple_of(4)).count() as u64;
    let calls = |outcome| got.value("graphwright_tool_calls_total", &[&tool[..], &[("outcome", outcome)]].concat());
    assert_eq!(calls("ok"), RUNS - failing);
    assert_eq!(calls("failed"), failing);
    assert_eq!(
        got.series("graphwright_tool_calls_total"),
        2,
        "the paused run ran no tool, the cancelled one ended none"
    );
    assert_eq!(got.value("graphwright_tool_call_duration_seconds_count", &tool), RUNS);
    let buckets =
        got.samples.keys().filter(|(n, l)| n == "graphwright_tool_call_duration_seconds_bucket" && l["le"] == "+Inf");
    assert_eq!(buckets.count(), 1, "one histogram per graph and tool");
}
