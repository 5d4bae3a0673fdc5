//! Trace context across MCP: a call made inside a span carries its `traceparent` in `_meta`,
//! and the served call's span continues it: one trace from the caller's tool call to the tool
//! that answers it in the MCP server (here this process's own, over streamable HTTP).
//!
//! Alone in its binary: it sets the process's global subscriber and propagator, which the
//! server's tasks (on other threads) need to see.

use graphwright::mcp::McpClient;
use graphwright::prelude::*;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::{InMemorySpanExporter, SdkTracerProvider};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

/// Add two integers.
#[tool]
fn add(a: i64, b: i64) -> i64 {
    a + b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_served_call_continues_the_callers_trace() {
    let exporter = InMemorySpanExporter::default();
    let provider = SdkTracerProvider::builder().with_simple_exporter(exporter.clone()).build();
    let layer = tracing_opentelemetry::layer().with_tracer(provider.tracer("test"));
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(layer)).unwrap();
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());

    let server = tools![Add].serve_mcp_http("127.0.0.1:0").await.unwrap();
    let client = McpClient::http(server.url()).await.unwrap();
    let caller = tracing::info_span!("caller");
    let answer = client.call("add", json!({"a": 40, "b": 2})).instrument(caller).await.unwrap();
    assert_eq!(answer.into_content(), "42");
    // An untraced call (no span around it) starts no trace on the server's side.
    client.call("add", json!({"a": 1, "b": 1})).await.unwrap();
    provider.force_flush().unwrap();

    let spans = exporter.get_finished_spans().unwrap();
    let caller = spans.iter().find(|s| s.name == "caller").expect("the caller's span");
    let answered: Vec<_> = spans.iter().filter(|s| s.name == "execute_tool add").collect();
    assert_eq!(answered.len(), 2, "one span per served call");
    let continued: Vec<_> =
        answered.iter().filter(|s| s.span_context.trace_id() == caller.span_context.trace_id()).collect();
    assert_eq!(continued.len(), 1, "the traced call's span is in the caller's trace");
    assert_eq!(continued[0].parent_span_id, caller.span_context.span_id(), "and a child of the caller's span");
    assert!(continued[0].parent_span_is_remote, "its parent came over the wire");
    let other = answered.iter().find(|s| s.span_context.trace_id() != caller.span_context.trace_id()).unwrap();
    assert!(!other.parent_span_is_remote, "the untraced call continues no caller's trace");
    server.shutdown().await.unwrap();
}
