//! The `otel` feature's export, into a real receiver: Arize Phoenix on loopback
//! (`tests/support/phoenix.rs`), with the spans read back through Phoenix's API.
//!
//! - `examples/research_agent.rs`, run as a user runs it (`OTEL_EXPORTER_OTLP_ENDPOINT` set),
//!   over OTLP/HTTP and over gRPC: the span tree run → step → node → model call / tool call,
//!   the GenAI attributes, token counts equal to what the run reports, no prompt text under the
//!   default policy; and its trace on Phoenix's own page in Chromium.
//! - A run in this process, exported by `Otel::build` + `Telemetry::layer`: prompt and tool text
//!   present under `CapturePolicy::messages` (secrets redacted) and a failed tool call's error
//!   status.
//!
//! `scripts/test` prepares Phoenix (`GRAPHWRIGHT_TEST_PHOENIX`), playwright-core and Chromium.

#[path = "support/phoenix.rs"]
mod phoenix;

use graphwright::log::CapturePolicy;
use graphwright::model::{ModelReply, ScriptedModel, Usage};
use graphwright::otel::Otel;
use graphwright::prebuilt::{MessagesState, react_agent};
use graphwright::prelude::*;
use phoenix::{Phoenix, attr, named, run_bounded};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;

/// How long exported spans may take to be readable.
const STORED: Duration = Duration::from_mins(1);

/// The research agent's binary, built with the features this test was (the `otel` build),
/// beside this test's own: `cargo test` has built it already when it built every target, and
/// the build here is then a no-op.
fn research_agent() -> PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut build = Command::new(cargo);
    build
        .args(["build", "--workspace", "--all-features", "--example", "research_agent"])
        .current_dir(concat!(env!("CARGO_MANIFEST_DIR"), "/.."));
    let (status, _, stderr) = run_bounded(build, Duration::from_mins(20), "building the research agent");
    assert!(status.success(), "could not build the research agent:\n{stderr}");
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().and_then(|deps| deps.parent()).expect("target/<profile>/deps");
    profile.join("examples").join("research_agent")
}

/// Runs the research agent exporting over `protocol` to `endpoint`, into Phoenix's `project`;
/// the tokens it reports (input, output, model calls).
fn run_research_agent(protocol: &str, endpoint: &str, project: &str) -> (i64, i64, i64) {
    let mut command = Command::new(research_agent());
    for (name, _) in std::env::vars_os() {
        let name = name.to_string_lossy().into_owned();
        if name.starts_with("OTEL_") || name.starts_with("OPENAI_") {
            command.env_remove(name);
        }
    }
    command
        .env("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint)
        .env("OTEL_EXPORTER_OTLP_PROTOCOL", protocol)
        .env("OTEL_RESOURCE_ATTRIBUTES", format!("openinference.project.name={project}"))
        .env("OTEL_METRICS_EXPORTER", "none");
    let (status, stdout, stderr) = run_bounded(command, Duration::from_mins(2), "the research agent");
    assert!(status.success(), "the research agent failed:\n{stdout}\n{stderr}");
    let line =
        stdout.lines().find(|l| l.starts_with("tokens: ")).unwrap_or_else(|| panic!("no tokens line:\n{stdout}"));
    let numbers: Vec<i64> = line.split(|c: char| !c.is_ascii_digit()).filter_map(|n| n.parse().ok()).collect();
    let [input, output, calls] = numbers[..] else { panic!("{line}") };
    (input, output, calls)
}

fn span_id(span: &Value) -> &str {
    span["context"]["span_id"].as_str().unwrap()
}

fn int(span: &Value, key: &str) -> i64 {
    attr(span, key).and_then(Value::as_i64).unwrap_or_else(|| panic!("{} has no integer {key}: {span}", span["name"]))
}

fn text<'a>(span: &'a Value, key: &str) -> &'a str {
    attr(span, key).and_then(Value::as_str).unwrap_or_else(|| panic!("{} has no text {key}: {span}", span["name"]))
}

/// The spans whose parent is `parent`.
fn children<'a>(spans: &'a [Value], parent: &Value) -> Vec<&'a Value> {
    spans.iter().filter(|s| s["parent_id"].as_str() == Some(span_id(parent))).collect()
}

/// Checks the research agent's trace in `spans`: the tree, the attributes, the tokens.
fn check_research_trace(spans: &[Value], (input, output, calls): (i64, i64, i64)) {
    let run = named(spans, "invoke_agent research");
    assert!(run["parent_id"].is_null(), "the run is the root");
    assert_eq!(run["span_kind"], "AGENT", "Phoenix reads the conventions: {run}");
    assert_eq!(text(run, "gen_ai.conversation.id"), "research-1");
    assert_eq!(text(run, "graphwright.run.status"), "success");
    assert_eq!(run["status_code"], "OK");
    assert_eq!((int(run, "gen_ai.usage.input_tokens"), int(run, "gen_ai.usage.output_tokens")), (input, output));

    let steps = children(spans, run);
    let step_names: Vec<&str> =
        steps.iter().filter_map(|s| s["name"].as_str()).filter(|n| n.starts_with("step ")).collect();
    assert!(step_names.len() >= 8, "a span per super-step: {step_names:?}");
    let chats: Vec<&Value> = spans.iter().filter(|s| s["name"] == "chat scripted").collect();
    assert_eq!(i64::try_from(chats.len()).unwrap(), calls, "a span per model call");
    let (span_input, span_output) = chats
        .iter()
        .fold((0, 0), |(i, o), s| (i + int(s, "gen_ai.usage.input_tokens"), o + int(s, "gen_ai.usage.output_tokens")));
    assert_eq!((span_input, span_output), (input, output), "the calls' tokens add up to the run's");
    for chat in &chats {
        assert_eq!(chat["span_kind"], "LLM");
        assert_eq!(text(chat, "gen_ai.operation.name"), "chat");
        assert_eq!(text(chat, "gen_ai.provider.name"), "scripted");
        assert_eq!(text(chat, "gen_ai.request.model"), "scripted");
        assert!(attr(chat, "gen_ai.input.messages").is_none(), "no prompt under the default policy: {chat}");
        assert!(attr(chat, "gen_ai.output.messages").is_none());
        assert!(!chat.to_string().contains("How many more people"), "the question stays in the process");
        // chat ← node ← step ← run
        let node = spans.iter().find(|s| s["context"]["span_id"] == chat["parent_id"]).expect("the call's node");
        let step = spans.iter().find(|s| s["context"]["span_id"] == node["parent_id"]).expect("the node's step");
        assert_eq!(step["parent_id"].as_str(), Some(span_id(run)));
        assert!(["planner", "verifier", "generator", "summarizer"].contains(&node["name"].as_str().unwrap()));
    }
    let tools: Vec<&Value> =
        spans.iter().filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with("execute_tool "))).collect();
    assert_eq!(tools.len(), 3, "two searches and a calculation");
    for tool in &tools {
        assert_eq!(tool["span_kind"], "TOOL");
        assert_eq!(text(tool, "graphwright.tool.outcome"), "ok");
        let node = spans.iter().find(|s| s["context"]["span_id"] == tool["parent_id"]).unwrap();
        assert_eq!(node["name"], "executor");
    }
    let writes: Vec<&Value> = spans.iter().filter(|s| s["name"] == "checkpoint_write").collect();
    assert!(!writes.is_empty() && writes.iter().all(|w| int(w, "graphwright.checkpoint.bytes") > 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_research_agents_trace_over_http_and_grpc() {
    let phoenix = Phoenix::shared();
    let complete = |spans: &[Value]| spans.iter().any(|s| s["name"] == "invoke_agent research");
    for (protocol, endpoint, project) in [
        ("http/protobuf", phoenix.otlp_http_endpoint(), "research-http"),
        ("grpc", phoenix.otlp_grpc_endpoint(), "research-grpc"),
    ] {
        let reported = run_research_agent(protocol, &endpoint, project);
        assert!(reported.0 > 0 && reported.2 == 6, "{reported:?}");
        let spans = phoenix.wait_for_spans(project, complete, STORED).await;
        check_research_trace(&spans, reported);
    }

    // The trace as Phoenix's own page shows it.
    let spans = phoenix.spans("research-http").await;
    let trace = named(&spans, "invoke_agent research")["context"]["trace_id"].as_str().unwrap().to_owned();
    let picture = PathBuf::from(concat!(env!("CARGO_TARGET_TMPDIR"), "/research-agent-trace.png"));
    let page = phoenix
        .screenshot_trace(&trace, &["invoke_agent research", "chat scripted", "execute_tool search"], &picture)
        .await;
    assert!(page.contains("planner") && page.contains("executor"), "the page shows the nodes: {page}");
}

/// Look a place up.
#[tool]
fn lookup(place: String, api_key: String) -> String {
    let _ = api_key;
    format!("{place}: 717,000 people")
}

/// Fails, as a broken service would.
#[tool]
fn broken(query: String) -> Result<String, ToolError> {
    Err(ToolError::msg("broken", format!("the service is down for {query}")))
}

fn replied(message: Message, input: u64, output: u64) -> ModelReply {
    let mut reply = ModelReply::new(message);
    reply.usage = Usage::tokens(input, output);
    reply
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn text_goes_out_only_when_the_policy_allows_it_and_a_failed_tool_says_why() {
    let phoenix = Phoenix::shared();
    let telemetry = Otel::from_env()
        .endpoint(phoenix.otlp_http_endpoint())
        .protocol(graphwright::otel::Protocol::HttpProtobuf)
        .attribute("openinference.project.name", "in-process")
        .metrics(false)
        .build()
        .unwrap();
    let subscriber = tracing_subscriber::registry().with(telemetry.layer());
    let _listening = tracing::subscriber::set_global_default(subscriber);

    let script = || {
        ScriptedModel::new([
            replied(
                Message::assistant("").with_tool_calls(vec![
                    ToolCall::new("c1", "lookup", json!({"place": "Oslo", "api_key": "sk-hidden"})),
                    ToolCall::new("c2", "broken", json!({"query": "Bergen"})),
                ]),
                120,
                30,
            ),
            replied(Message::assistant("Oslo has 717,000 people; Bergen is unknown."), 200, 15),
        ])
    };
    let question = "How many live in Oslo and Bergen?";
    for (thread, policy) in [("told", Some(CapturePolicy::messages())), ("quiet", None)] {
        let app = react_agent(script(), tools![Lookup, Broken]).compile().unwrap();
        let mut cfg = RunConfig::thread(thread);
        if let Some(policy) = policy {
            cfg = cfg.capture(policy);
        }
        app.invoke(MessagesState::new([Message::user(question)]), &cfg).await.unwrap();
    }
    tokio::task::spawn_blocking(move || telemetry.flush().unwrap()).await.unwrap();

    let two_runs = |spans: &[Value]| spans.iter().filter(|s| s["name"] == "invoke_agent agent").count() == 2;
    let spans = phoenix.wait_for_spans("in-process", two_runs, STORED).await;
    let trace_of = |thread: &str| {
        let run = spans
            .iter()
            .find(|s| s["name"] == "invoke_agent agent" && attr(s, "gen_ai.conversation.id") == Some(&json!(thread)))
            .unwrap();
        let trace = run["context"]["trace_id"].clone();
        spans.iter().filter(|s| s["context"]["trace_id"] == trace).cloned().collect::<Vec<Value>>()
    };

    let told = trace_of("told");
    // The first call saw the shortest prompt.
    let first = told
        .iter()
        .filter(|s| s["name"] == "chat scripted")
        .min_by_key(|s| int(s, "gen_ai.usage.input_tokens"))
        .expect("the model calls' spans");
    let input: Value = serde_json::from_str(text(first, "gen_ai.input.messages")).unwrap();
    assert_eq!(input[0]["parts"][0]["content"], question);
    let output: Value = serde_json::from_str(text(first, "gen_ai.output.messages")).unwrap();
    assert_eq!(output[0]["parts"][0]["arguments"]["api_key"], "[redacted]");
    let lookup = told.iter().find(|s| s["name"] == "execute_tool lookup").unwrap();
    assert_eq!(text(lookup, "gen_ai.tool.call.result"), "Oslo: 717,000 people");
    assert!(!lookup.to_string().contains("sk-hidden"), "a secret argument never leaves: {lookup}");

    let quiet = trace_of("quiet");
    assert!(!quiet.is_empty());
    for span in &quiet {
        assert!(!span.to_string().contains("Oslo"), "no text under the default policy: {span}");
    }
    let broken = quiet.iter().find(|s| s["name"] == "execute_tool broken").unwrap();
    assert_eq!(broken["status_code"], "ERROR");
    assert!(broken["status_message"].as_str().unwrap().contains("the service is down"), "{broken}");
    assert_eq!(text(broken, "graphwright.tool.outcome"), "failed");
}
