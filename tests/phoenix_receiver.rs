//! Arize Phoenix as the trace export tests' OpenTelemetry receiver (`tests/support/phoenix.rs`),
//! checked end to end with a sender known to be right: the OpenTelemetry SDK's own OTLP
//! exporters (`tests/support/otlp_send.py`, in Phoenix's virtualenv), over HTTP and over gRPC.
//! What the harness reads back (the span tree, `gen_ai.*` attributes, error status and message,
//! events, the project chosen by the resource) and the trace's page in Phoenix's UI are what
//! the exporter's tests rely on, so an upgrade of Phoenix that changes any of it fails here.
//!
//! `scripts/test` prepares Phoenix (`GRAPHWRIGHT_TEST_PHOENIX`), playwright-core and Chromium.

#[path = "support/phoenix.rs"]
mod phoenix;

use phoenix::{Phoenix, attr, named, run_bounded};
use serde_json::{Value, json};
use std::process::Command;
use std::time::Duration;

/// How long an exported trace may take to be readable.
const STORED: Duration = Duration::from_secs(30);

/// The ids (lowercase hex) of the trace `otlp_send.py` sent: the trace's, and its two spans'.
struct Sent {
    trace: String,
    parent: String,
    child: String,
}

/// Sends the reference trace over `protocol` (`http` or `grpc`) to `endpoint`, into `project`
/// (`-`: no `openinference.project.name`).
fn send(protocol: &str, endpoint: &str, project: &str) -> Sent {
    let python = std::env::var("GRAPHWRIGHT_TEST_PHOENIX").expect("scripts/test sets GRAPHWRIGHT_TEST_PHOENIX");
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/support/otlp_send.py");
    let mut command = Command::new(python);
    command.args([script, protocol, endpoint, project]);
    // The SDK would fold these into the resource, which is what picks the project.
    for (name, _) in std::env::vars_os() {
        if name.to_string_lossy().starts_with("OTEL_") {
            command.env_remove(name);
        }
    }
    let (status, stdout, stderr) = run_bounded(command, Duration::from_mins(1), "the OTLP sender");
    assert!(status.success(), "the OTLP {protocol} export failed ({status}):\n{stderr}");
    let ids: Value = serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"));
    let id = |name: &str| ids[name].as_str().unwrap().to_owned();
    Sent { trace: id("trace_id"), parent: id("parent_span_id"), child: id("child_span_id") }
}

/// Checks that `spans` are exactly the reference trace `sent` over `protocol`.
fn check_trace(spans: &[Value], sent: &Sent, protocol: &str) {
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let parent = named(spans, "invoke_agent support");
    let child = named(spans, "chat gpt-4o-mini");
    for span in [parent, child] {
        assert_eq!(span["context"]["trace_id"], sent.trace.as_str(), "{span:#}");
    }
    assert_eq!(parent["context"]["span_id"], sent.parent.as_str());
    assert_eq!(parent["parent_id"], Value::Null, "the parent is the root");
    assert_eq!(child["context"]["span_id"], sent.child.as_str());
    assert_eq!(child["parent_id"], sent.parent.as_str(), "the child hangs under the parent");

    assert_eq!(parent["status_code"], "UNSET");
    assert_eq!(child["status_code"], "ERROR");
    assert_eq!(child["status_message"], "rate limited by the provider");

    assert_eq!(attr(parent, "gen_ai.operation.name"), Some(&json!("invoke_agent")));
    assert_eq!(attr(parent, "gen_ai.agent.name"), Some(&json!("support")));
    assert_eq!(attr(parent, "graphwright.protocol"), Some(&json!(protocol)));
    assert_eq!(attr(child, "gen_ai.request.model"), Some(&json!("gpt-4o-mini")));
    assert_eq!(attr(child, "gen_ai.request.temperature"), Some(&json!(0.25)));
    assert_eq!(attr(child, "gen_ai.usage.input_tokens"), Some(&json!(42)), "integers stay integers");
    assert_eq!(attr(child, "gen_ai.usage.output_tokens"), Some(&json!(7)));
    assert_eq!(attr(child, "gen_ai.response.finish_reasons"), Some(&json!(["length"])), "arrays stay arrays");
    assert_eq!(attr(child, "gen_ai.system"), Some(&json!("openai")));

    // Phoenix's reading of the gen_ai conventions, which its UI shows.
    assert_eq!(parent["span_kind"], "AGENT");
    assert_eq!(child["span_kind"], "LLM");
    assert_eq!(attr(child, "llm.model_name"), Some(&json!("gpt-4o-mini")));
    assert_eq!(attr(child, "llm.token_count.total"), Some(&json!(49)));

    assert_eq!(parent["events"], json!([]));
    let events = child["events"].as_array().unwrap();
    let names: Vec<&str> = events.iter().map(|e| e["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["gen_ai.choice", "exception"]);
    assert_eq!(attr(&events[0], "finish_reason"), Some(&json!("length")));
    assert_eq!(attr(&events[1], "exception.type"), Some(&json!("RateLimitError")));
    assert_eq!(attr(&events[1], "exception.message"), Some(&json!("rate limited by the provider")));
}

/// A trace sent over OTLP/HTTP and one sent over OTLP/gRPC each come back whole in the project
/// their resource names: both spans with their ids, the tree, the attributes with their types,
/// the error status and message, and the events.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spans_sent_over_http_and_grpc_come_back_with_tree_attributes_status_and_events() {
    let phoenix = Phoenix::shared();
    let over_http = send("http", &phoenix.otlp_http_endpoint(), "receiver-http");
    let over_grpc = send("grpc", &phoenix.otlp_grpc_endpoint(), "receiver-grpc");

    let spans = phoenix.wait_for_spans("receiver-http", |spans| spans.len() >= 2, STORED).await;
    check_trace(&spans, &over_http, "http");
    let spans = phoenix.wait_for_spans("receiver-grpc", |spans| spans.len() >= 2, STORED).await;
    check_trace(&spans, &over_grpc, "grpc");
}

/// Without `openinference.project.name` the spans go to the project `default`: the resource's
/// `service.name` does not make a project. On a server of the test's own, which is gone once
/// dropped.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_a_project_attribute_spans_go_to_the_default_project() {
    let phoenix = Phoenix::start();
    let sent = send("http", &phoenix.otlp_http_endpoint(), "-");
    let spans = phoenix.wait_for_spans("default", |spans| spans.len() >= 2, STORED).await;
    check_trace(&spans, &sent, "http");
    assert_eq!(
        phoenix.spans("graphwright-otlp-send").await,
        Vec::<Value>::new(),
        "no project is named after the service"
    );

    let address = phoenix.ui_url().trim_start_matches("http://").to_owned();
    drop(phoenix);
    assert!(std::net::TcpStream::connect(&address).is_err(), "nothing listens on {address} once Phoenix is dropped");
}

/// The trace's page in Phoenix's UI shows both spans; the screenshot is kept for review
/// (`target/tmp/phoenix-trace.png`).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_trace_is_shown_in_phoenix_page() {
    let phoenix = Phoenix::shared();
    let sent = send("grpc", &phoenix.otlp_grpc_endpoint(), "receiver-page");
    phoenix.wait_for_spans("receiver-page", |spans| spans.len() >= 2, STORED).await;
    let picture = std::path::Path::new(env!("CARGO_TARGET_TMPDIR")).join("phoenix-trace.png");
    // The root span's id is shown in the details pane, which fills in after the span tree: the
    // page is waited on until it shows the id too.
    let shown = ["invoke_agent support", "chat gpt-4o-mini", sent.parent.as_str()];
    let text = phoenix.screenshot_trace(&sent.trace, &shown, &picture).await;
    assert!(text.contains(&sent.parent), "the selected root span's id is shown:\n{text}");
}

/// `attr` finds a dotted attribute whether it is stored flat, nested at its dots, or a mix.
#[test]
fn attr_reads_flat_and_nested_keys() {
    let span = json!({"attributes": {
        "gen_ai.request.model": "flat",
        "gen_ai": {"usage": {"input_tokens": 3}, "response.id": "mixed"},
        "plain": 1,
    }});
    assert_eq!(attr(&span, "gen_ai.request.model"), Some(&json!("flat")));
    assert_eq!(attr(&span, "gen_ai.usage.input_tokens"), Some(&json!(3)));
    assert_eq!(attr(&span, "gen_ai.response.id"), Some(&json!("mixed")));
    assert_eq!(attr(&span, "plain"), Some(&json!(1)));
    assert_eq!(attr(&span, "gen_ai.usage.output_tokens"), None);
    assert_eq!(attr(&json!({}), "plain"), None);
}
