//! One trace from a client, through the server, to the model: a request that carries a W3C
//! `traceparent` is served in a span that continues it, the run it makes continues the
//! request's trace, and the run's model call sends its own `traceparent` to the provider
//! (aimock here), all exported over OTLP (gzip-compressed) into Arize Phoenix and read back
//! through its API. A client's trace that it does not sample is followed too: nothing of it is
//! exported, and the model request carries it, not sampled.
//!
//! Alone in its binary: it sets the process's global subscriber (the server's runs execute on
//! the runtime's other threads). `scripts/test` prepares Phoenix (`GRAPHWRIGHT_TEST_PHOENIX`).

#[path = "support/model_servers.rs"]
mod model_servers;
#[path = "support/phoenix.rs"]
mod phoenix;

use graphwright::model::OpenAi;
use graphwright::otel::Otel;
use graphwright::prelude::*;
use graphwright_server::Server;
use model_servers::Aimock;
use phoenix::{Phoenix, attr};
use serde_json::Value;
use std::sync::OnceLock;
use std::time::Duration;
use tracing_subscriber::layer::SubscriberExt;

/// The model the served graph calls: OpenAI's API on aimock.
static MODEL: OnceLock<OpenAi> = OnceLock::new();

#[graph]
mod greet {
    use super::MODEL;
    use graphwright::model::ChatModel;
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = END)]
    async fn reply(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let model = MODEL.get().expect("the test sets the model first");
        let reply = model.invoke(&state.messages, rt).await?;
        Ok(StateUpdate::new().messages(vec![reply]))
    }
}

/// The client's trace and span, as its `traceparent` names them.
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT_SPAN: &str = "00f067aa0ba902b7";
/// A trace the client does not sample.
const UNSAMPLED_TRACE: &str = "0af7651916cd43dd8448eb211c80319c";

fn span_with<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans.iter().find(|s| s["name"] == name).unwrap_or_else(|| {
        let names: Vec<&Value> = spans.iter().map(|s| &s["name"]).collect();
        panic!("no span `{name}` among {names:?}")
    })
}

fn parent_of<'a>(spans: &'a [Value], span: &Value) -> &'a Value {
    spans
        .iter()
        .find(|s| s["context"]["span_id"] == span["parent_id"])
        .unwrap_or_else(|| panic!("the parent of {} is not in the trace", span["name"]))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_trace_runs_through_the_server_and_its_run_to_the_model() {
    let phoenix = Phoenix::shared();
    // Compressed, as a receiver across a network would take it: Phoenix unpacks gzip.
    let telemetry = Otel::from_env()
        .endpoint(phoenix.otlp_http_endpoint())
        .attribute("openinference.project.name", "server")
        .metrics(false)
        .gzip()
        .build()
        .unwrap();
    tracing::subscriber::set_global_default(tracing_subscriber::registry().with(telemetry.layer())).unwrap();

    let aimock = tokio::task::spawn_blocking(Aimock::start).await.unwrap();
    MODEL.set(OpenAi::new("test-model").base_url(aimock.openai_base()).api_key("sk-test")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let server = Server::new().graph("greet", greet::graph().compile().unwrap()).sqlite(dir.path().join("server.db"));
    let bound = server.bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", bound.local_addr().unwrap());
    tokio::spawn(bound.run());

    let http = reqwest::Client::new();
    let thread: Value =
        http.post(format!("{url}/threads")).json(&json!({})).send().await.unwrap().json().await.unwrap();
    let thread_id = thread["thread_id"].as_str().unwrap().to_owned();
    let body = json!({"assistant_id": "greet", "input": {"messages": [{"type": "human", "content": "say hello"}]}});
    // A run on the thread, in the client's trace that `traceparent` names: its final values.
    let run_in = async |traceparent: String| {
        let answer = http
            .post(format!("{url}/threads/{thread_id}/runs/wait"))
            .header("traceparent", traceparent)
            .json(&body)
            .send()
            .await
            .unwrap();
        let (status, text) = (answer.status(), answer.text().await.unwrap());
        assert!(status.is_success(), "{text}");
        serde_json::from_str::<Value>(&text).unwrap()
    };
    let values = run_in(format!("00-{CLIENT_TRACE}-{CLIENT_SPAN}-01")).await;
    assert_eq!(values["messages"][1]["content"], "Hello there, friend!");
    // A client that does not sample its trace: the server and the run follow its decision.
    run_in(format!("00-{UNSAMPLED_TRACE}-{CLIENT_SPAN}-00")).await;
    let journal = aimock.journal().await;
    let sent = journal.iter().rev().find(|e| e["path"] == "/v1/chat/completions").expect("the model was called");
    let traceparent = sent["headers"]["traceparent"].as_str().unwrap_or_else(|| panic!("no traceparent: {sent}"));
    assert!(
        traceparent.starts_with(&format!("00-{UNSAMPLED_TRACE}-")) && traceparent.ends_with("-00"),
        "the model request goes on in the client's trace, not sampled: {traceparent}"
    );
    // A request without one starts a trace of its own.
    http.get(format!("{url}/threads/{thread_id}")).send().await.unwrap();
    tokio::task::spawn_blocking(move || telemetry.flush().unwrap()).await.unwrap();

    let ours = |spans: &[Value]| {
        spans.iter().filter(|s| s["context"]["trace_id"] == CLIENT_TRACE).any(|s| s["name"] == "chat test-model")
    };
    let spans = phoenix.wait_for_spans("server", ours, Duration::from_mins(1)).await;
    let (traced, others): (Vec<Value>, Vec<Value>) =
        spans.into_iter().partition(|s| s["context"]["trace_id"] == CLIENT_TRACE);

    // client → request → run → invoke_agent → step → node → chat, in one trace
    let request = span_with(&traced, "POST /threads/{id}/runs/wait");
    assert_eq!(request["parent_id"], CLIENT_SPAN, "the request continues the client's span");
    assert_eq!(attr(request, "http.response.status_code"), Some(&json!(200)));
    let run = span_with(&traced, "run greet");
    assert_eq!(run["parent_id"], request["context"]["span_id"], "the run continues its request");
    assert_eq!(attr(run, "gen_ai.conversation.id"), Some(&json!(thread_id)));
    let agent = span_with(&traced, "invoke_agent greet");
    assert_eq!(agent["parent_id"], run["context"]["span_id"]);
    let chat = span_with(&traced, "chat test-model");
    assert_eq!(attr(chat, "gen_ai.usage.input_tokens"), Some(&json!(12)));
    assert_eq!(attr(chat, "gen_ai.provider.name"), Some(&json!("openai")));
    let node = parent_of(&traced, chat);
    assert_eq!(node["name"], "reply");
    assert_eq!(parent_of(&traced, parent_of(&traced, node))["name"], "invoke_agent greet");

    // The model call's request carried the same trace, with the call's span as its parent.
    let sent = journal
        .iter()
        .filter(|e| e["path"] == "/v1/chat/completions")
        .find(|e| e["headers"]["traceparent"].as_str().is_some_and(|t| t.contains(CLIENT_TRACE)))
        .expect("the model was called in the client's trace");
    let traceparent = sent["headers"]["traceparent"].as_str().unwrap_or_else(|| panic!("no traceparent: {sent}"));
    let chat_span = chat["context"]["span_id"].as_str().unwrap();
    assert_eq!(traceparent, format!("00-{CLIENT_TRACE}-{chat_span}-01"));

    assert!(
        !others.iter().any(|s| s["context"]["trace_id"] == UNSAMPLED_TRACE),
        "nothing of the trace the client did not sample was exported"
    );
    let unrelated = others.iter().find(|s| s["name"] == "GET /threads/{id}").expect("the untraced request's span");
    assert!(unrelated["parent_id"].is_null(), "a request without traceparent is a root: {unrelated}");
}
