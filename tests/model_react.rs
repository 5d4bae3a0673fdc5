//! A `ReAct` agent through every provider's wire format, against aimock on loopback: OpenAI's
//! Chat Completions and Responses API, Azure OpenAI, Anthropic, Gemini and Ollama. Each run is
//! streamed (updates and message pieces), asks for a tool call, runs the tool, sends its
//! answer back and ends with the model's answer, after a rate limit injected before the first
//! call was retried (`tests/fixtures/model/react.json` holds the two turns).

#[path = "support/model_servers.rs"]
mod model_servers;

use futures::StreamExt;
use graphwright::model::{Anthropic, ChatModel, Gemini, ModelRetry, Ollama, OpenAi};
use graphwright::prebuilt::{AGENT_NODE, MessagesState, TOOLS_NODE, react_agent};
use graphwright::prelude::*;
use graphwright::{EventKind, StreamMode};
use model_servers::Aimock;
use serde_json::Value;
use std::time::Duration;

const QUESTION: &str = "react: is it clear in Oslo?";

/// Look out of the window in a city.
#[tool]
fn look_outside(
    /// The city.
    city: String,
) -> String {
    format!("clear skies over {city}")
}

/// Retries that do not wait the second aimock asks for, so that the six runs stay quick.
fn quick_retries() -> ModelRetry {
    ModelRetry::default().initial_wait(Duration::from_millis(10)).max_asked_wait(Duration::ZERO)
}

/// What a streamed run showed.
#[derive(Default)]
struct Seen {
    /// The nodes whose updates arrived, in order.
    updates: Vec<String>,
    /// The text streamed, and the tool-call pieces' names and arguments.
    text: String,
    call_names: Vec<String>,
    call_arguments: String,
    end: Option<Result<MessagesState, GraphError>>,
}

/// Runs a `ReAct` agent over `model` with one tool, streaming updates and messages, after
/// making aimock refuse the first model call with a 429; then checks the run, and that the
/// requests to `path` were the refused one, its retry, and the call that carried the tool's
/// answer back.
async fn react_through(mock: &Aimock, model: impl ChatModel, path: &str) {
    let app = react_agent(model.retry(quick_retries()), tools![LookOutside]).compile().unwrap();
    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let input = MessagesState::new([Message::user(QUESTION)]);
    let mut events = app.stream(input, &RunConfig::default(), StreamMode::Updates | StreamMode::Messages);
    let mut seen = Seen::default();
    while let Some(event) = events.next().await {
        match event.kind {
            EventKind::Update { node, .. } => seen.updates.push(node),
            EventKind::Message { delta, .. } => seen.text.push_str(&delta),
            EventKind::ToolCallDelta { name, arguments, .. } => {
                seen.call_names.extend(name);
                seen.call_arguments.push_str(&arguments);
            }
            EventKind::Finished { state, .. } => seen.end = Some(Ok(state)),
            EventKind::Failed(error) => seen.end = Some(Err(error)),
            _ => {}
        }
    }
    let state = seen.end.expect("a terminal event").unwrap();

    assert_eq!(seen.updates, [AGENT_NODE, TOOLS_NODE, AGENT_NODE], "an update per step");
    assert_eq!(seen.call_names, ["look_outside"], "the call was streamed");
    assert_eq!(serde_json::from_str::<Value>(&seen.call_arguments).unwrap(), json!({"city": "Oslo"}));
    assert_eq!(seen.text, "Yes: clear skies over Oslo.", "the answer was streamed");
    let [_, asked, answered, reply] = state.messages.as_slice() else { panic!("{:#?}", state.messages) };
    assert_eq!(asked.tool_calls[0].name, "look_outside");
    assert_eq!(answered.tool_call_id.as_deref(), Some(asked.tool_calls[0].id.as_str()));
    assert_eq!((answered.content.as_str(), answered.is_error), ("clear skies over Oslo", false));
    assert_eq!(reply.content, "Yes: clear skies over Oslo.");

    let journal: Vec<Value> = mock.journal().await.into_iter().filter(|e| e["path"] == path).collect();
    let statuses: Vec<_> = journal.iter().map(|e| e["response"]["status"].as_u64()).collect();
    assert_eq!(statuses, [Some(429), Some(200), Some(200)], "the rate-limited call was sent again");
    // aimock journals every provider's request in the Chat Completions shape it matched on.
    let last = &journal[2]["body"]["messages"];
    let tool_answer = last.as_array().unwrap().iter().find(|m| m["role"] == "tool").expect("the tool's answer");
    assert!(tool_answer["content"].as_str().unwrap().contains("clear skies over Oslo"), "{tool_answer}");
}

#[tokio::test]
async fn openai_chat_completions() {
    let mock = Aimock::start();
    let model = OpenAi::new("test-model").base_url(mock.openai_base()).api_key("sk-test");
    react_through(&mock, model, "/v1/chat/completions").await;
}

#[tokio::test]
async fn openai_responses() {
    let mock = Aimock::start();
    let model = OpenAi::new("test-model").base_url(mock.openai_base()).api_key("sk-test").responses();
    react_through(&mock, model, "/v1/responses").await;
}

#[tokio::test]
async fn azure_openai() {
    let mock = Aimock::start();
    let model = OpenAi::azure_at(mock.url(), "gpt-4o-prod").api_key("azure-key").api_version("2024-10-21");
    react_through(&mock, model, "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21").await;
}

#[tokio::test]
async fn anthropic() {
    let mock = Aimock::start();
    let model = Anthropic::new("test-model").base_url(mock.url()).api_key("sk-ant-test");
    react_through(&mock, model, "/v1/messages").await;
}

#[tokio::test]
async fn gemini() {
    let mock = Aimock::start();
    let model = Gemini::new("test-model").base_url(format!("{}/v1beta", mock.url())).api_key("g-key");
    react_through(&mock, model, "/v1beta/models/test-model:streamGenerateContent?alt=sse").await;
}

#[tokio::test]
async fn ollama() {
    let mock = Aimock::start();
    let model = Ollama::new("test-model").base_url(mock.url());
    react_through(&mock, model, "/api/chat").await;
}
