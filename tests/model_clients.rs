//! The model clients against real servers on loopback: aimock (OpenAI's Chat Completions and
//! Responses API, Azure OpenAI, Anthropic, Gemini and Ollama wire formats, OpenAI's, Cohere's,
//! Gemini's and Ollama's embeddings, injected errors, cut streams), llama.cpp's
//! server with a real model, and canned responses for shapes no server sends on purpose.

#[path = "support/model_servers.rs"]
mod model_servers;

use futures::StreamExt;
use graphwright::model::{
    Anthropic, ChatModel, CohereEmbeddings, Embeddings, FinishReason, Gemini, GeminiEmbeddings, ModelError, ModelRetry,
    Ollama, OllamaEmbeddings, OpenAi, OpenAiEmbeddings, ToolChoice, Usage, embeddings_from_spec,
};
use graphwright::prelude::*;
use graphwright::{EventKind, StreamMode};
use model_servers::{Aimock, Canned, LlamaServer, Loopback};
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use std::sync::Arc;
use std::time::{Duration, Instant};

fn openai(base: &str) -> OpenAi {
    OpenAi::new("test-model").base_url(base).api_key("sk-test")
}

fn anthropic(base: &str) -> Anthropic {
    Anthropic::new("test-model").base_url(base).api_key("sk-ant-test")
}

fn ask(text: &str) -> Vec<Message> {
    vec![Message::user(text)]
}

/// Get the weather for a city.
#[tool]
fn get_weather(
    /// The city.
    city: String,
) -> String {
    format!("sunny in {city}")
}

/// Get the time in a time zone.
#[tool]
fn get_time(
    /// The zone.
    tz: String,
) -> String {
    format!("noon in {tz}")
}

#[tokio::test]
async fn openai_text_reply_with_usage_and_the_request_it_sent() {
    let mock = Aimock::start();
    let model = openai(&mock.openai_base()).temperature(0.5).max_tokens(64);
    let reply = model.respond(&ask("say hello"), &Runtime::detached()).await.unwrap();
    assert_eq!(reply.message.content, "Hello there, friend!");
    assert_eq!(reply.usage, Usage { calls: 1, ..Usage::tokens(12, 5) });
    assert_eq!(reply.finish_reason, FinishReason::Stop);
    assert!(reply.response_id.is_some_and(|id| id.starts_with("chatcmpl-")));
    let sent = &mock.bodies("/v1/chat/completions").await[0];
    assert_eq!(sent["model"], "test-model");
    assert_eq!(sent["messages"], serde_json::json!([{"role": "user", "content": "say hello"}]));
    assert_eq!((sent["temperature"].as_f64(), sent["max_tokens"].as_u64()), (Some(0.5), Some(64)));
    assert!(sent.get("stream").is_none() && sent.get("tools").is_none());
}

#[graph(context = Arc<dyn ChatModel>)]
mod agent {
    use graphwright::model::ChatModel;
    use graphwright::prelude::*;
    use std::sync::Arc;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = END)]
    async fn call_model(state: &State, rt: &Runtime<Arc<dyn ChatModel>>) -> Result<StateUpdate, NodeError> {
        let reply = rt.context().invoke(&state.messages, rt).await?;
        Ok(StateUpdate::new().messages(vec![reply]))
    }
}

/// A streamed tool-call piece: message id, call index, id, name, arguments.
type Piece = (String, u32, Option<String>, Option<String>, String);

/// Runs the one-node agent with `model`, streaming `messages`: the final state and the
/// tool-call pieces streamed, as (message id, index, id, name, arguments).
async fn stream_agent(
    model: Arc<dyn ChatModel>,
    question: &str,
) -> (Result<agent::State, GraphError>, Vec<Piece>, String) {
    let app = agent::graph().compile().unwrap();
    let cfg = RunConfig::default().context(model);
    let mut stream = app.stream(agent::StateUpdate::new().messages(ask(question)), &cfg, StreamMode::Messages);
    let (mut calls, mut text, mut end) = (Vec::new(), String::new(), None);
    while let Some(event) = stream.next().await {
        match event.kind {
            EventKind::ToolCallDelta { message_id, index, id, name, arguments, .. } => {
                calls.push((message_id, index, id, name, arguments));
            }
            EventKind::Message { delta, .. } => text.push_str(&delta),
            EventKind::Finished { state, .. } => end = Some(Ok(state)),
            EventKind::Failed(error) => end = Some(Err(error)),
            _ => {}
        }
    }
    (end.expect("a terminal event"), calls, text)
}

fn check_parallel_calls(state: &agent::State, pieces: &[Piece]) {
    let reply = state.messages.last().unwrap();
    let calls: Vec<_> =
        reply.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone())).collect();
    assert_eq!(
        calls,
        [
            ("call_w", "get_weather", serde_json::json!({"city": "Paris"})),
            ("call_t", "get_time", serde_json::json!({"tz": "CET"}))
        ]
    );
    assert!(pieces.iter().all(|p| Some(&p.0) == reply.id.as_ref()), "pieces carry the reply's id");
    let names: Vec<_> = pieces.iter().filter_map(|p| p.3.clone().map(|n| (p.1, n))).collect();
    assert_eq!(names, [(0, "get_weather".to_owned()), (1, "get_time".to_owned())]);
    let args_of = |i| pieces.iter().filter(|p| p.1 == i).map(|p| p.4.as_str()).collect::<String>();
    assert_eq!(serde_json::from_str::<Value>(&args_of(0)).unwrap(), serde_json::json!({"city": "Paris"}));
}

/// The reply to "weather and time" of a provider that gives its own call ids (or none): the
/// two calls, by name and arguments.
fn assert_weather_and_time_calls(reply: &Message) {
    let calls: Vec<_> = reply.tool_calls.iter().map(|c| (c.name.as_str(), c.arguments.clone())).collect();
    assert_eq!(
        calls,
        [("get_weather", serde_json::json!({"city": "Paris"})), ("get_time", serde_json::json!({"tz": "CET"}))]
    );
}

#[tokio::test]
async fn openai_streamed_parallel_tool_calls_reach_the_state_and_the_messages_stream() {
    let mock = Aimock::start();
    let model = openai(&mock.openai_base()).bind_tools(&tools![GetWeather, GetTime]).parallel_tool_calls(true);
    let (state, pieces, _) = stream_agent(Arc::new(model), "weather and time").await;
    check_parallel_calls(&state.unwrap(), &pieces);
    let sent = &mock.bodies("/v1/chat/completions").await[0];
    assert_eq!(sent["stream"], true);
    assert_eq!(sent["stream_options"]["include_usage"], true);
    assert_eq!((sent["tool_choice"].as_str(), sent["parallel_tool_calls"].as_bool()), (Some("auto"), Some(true)));
    let function = &sent["tools"][0]["function"];
    assert_eq!((function["name"].as_str(), function["strict"].as_bool()), (Some("get_weather"), Some(true)));
    assert_eq!(function["parameters"]["additionalProperties"], false);
}

/// Azure OpenAI: a deployment's URL with its API version, the key in `api-key` (or an Entra ID
/// token as a bearer), replies whole and streamed, errors named `azure`.
#[tokio::test]
async fn azure_speaks_to_a_deployment_with_its_api_version_and_key_header() {
    let mock = Aimock::start();
    let azure = || OpenAi::azure_at(mock.url(), "gpt-4o-prod").api_key("azure-key").api_version("2024-10-21");
    assert!(azure().endpoint().ends_with("/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"));
    let reply = azure().max_tokens(32).invoke(&ask("say hello"), &Runtime::detached()).await.unwrap();
    assert_eq!(reply.content, "Hello there, friend!");
    let streamed = azure().azure_ad_token("entra-token").streaming(true);
    assert_eq!(streamed.invoke(&ask("say hello"), &Runtime::detached()).await.unwrap().content, "Hello there, friend!");
    let journal = mock.journal().await;
    for entry in &journal {
        assert_eq!(entry["path"], "/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21");
    }
    let has = |at: usize, header: &str| journal[at]["headers"].get(header).is_some();
    assert!(has(0, "api-key") && !has(0, "authorization"), "a key goes in `api-key`");
    assert!(has(1, "authorization") && !has(1, "api-key"), "an Entra ID token is a bearer");
    assert_eq!(journal[0]["body"]["max_completion_tokens"], 32, "Azure takes OpenAI's own name for the limit");

    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let error = azure().retry(ModelRetry::none()).invoke(&ask("say hello"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(error, ModelError::RateLimited { .. }) && error.to_string().starts_with("azure "), "{error}");
}

/// OpenAI's Responses API on aimock: a whole reply with usage and its response id, streamed
/// parallel function calls reaching the state and the `messages` stream, structured output
/// by `text.format`, an Azure resource's v1 route, and a rate limit classified.
#[tokio::test]
async fn openai_responses_replies_streams_function_calls_and_classified_errors() {
    let mock = Aimock::start();
    let responses = || openai(&mock.openai_base()).responses();
    let reply = responses().max_tokens(64).respond(&ask("say hello"), &Runtime::detached()).await.unwrap();
    assert_eq!((reply.message.content.as_str(), reply.finish_reason), ("Hello there, friend!", FinishReason::Stop));
    assert_eq!(reply.usage, Usage::tokens(12, 5));
    assert!(reply.response_id.is_some_and(|id| id.starts_with("resp")));
    // aimock journals a Responses request in the Chat Completions shape it matched on.
    let sent = &mock.bodies("/v1/responses").await[0];
    assert_eq!((sent["model"].as_str(), sent["max_tokens"].as_u64()), (Some("test-model"), Some(64)));

    let model = responses().bind_tools(&tools![GetWeather, GetTime]).parallel_tool_calls(true);
    let (state, pieces, _) = stream_agent(Arc::new(model), "weather and time").await;
    check_parallel_calls(&state.unwrap(), &pieces);
    let sent = &mock.bodies("/v1/responses").await[1];
    assert_eq!((sent["stream"].as_bool(), sent["tool_choice"].as_str()), (Some(true), Some("auto")));
    assert_eq!(sent["tools"][1]["function"]["name"], "get_time");

    let expected = Verdict { approve: true, reason: "fine".into() };
    let verdict = responses().structured::<Verdict>().invoke(&ask("verdict as text"), &Runtime::detached()).await;
    assert_eq!(verdict.unwrap(), expected);

    let azure = OpenAi::azure_at(mock.url(), "gpt-4o-prod").api_key("azure-key").responses();
    assert_eq!(azure.invoke(&ask("say hello"), &Runtime::detached()).await.unwrap().content, "Hello there, friend!");
    let last = mock.journal().await.pop().unwrap();
    assert_eq!(last["path"], "/openai/v1/responses", "Azure's Responses API is its v1 API");
    assert!(last["headers"].get("api-key").is_some() && last["headers"].get("authorization").is_none());

    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let error =
        responses().retry(ModelRetry::none()).invoke(&ask("say hello"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(error, ModelError::RateLimited { .. }) && error.to_string().starts_with("openai "), "{error}");
}

/// The exact Responses API request (instructions, input items for the tool turn, flat tools,
/// `text.format`, `store: false`), a whole reply read, and streams that fail: an `error`
/// event, a `response.failed` one, an event that is not JSON, and a stream that ends early.
#[tokio::test]
async fn openai_responses_requests_and_failing_streams() {
    let reply = r#"{"id": "resp_9", "object": "response", "status": "completed", "model": "gpt-4.1-2025-04-14",
        "output": [{"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "{\"approve\": false, \"reason\": \"no\"}"}]}],
        "usage": {"input_tokens": 9, "output_tokens": 4, "input_tokens_details": {"cached_tokens": 8}}}"#;
    let server = Loopback::serve(vec![Canned::new(200, "application/json", reply)]).await;
    let model = openai(&format!("{}/v1", server.url()))
        .responses()
        .bind_tools(&tools![GetWeather])
        .tool_choice(ToolChoice::Tool("get_weather".into()))
        .temperature(0.1);
    let conversation = [
        Message::system("be brief"),
        Message::user("weather?"),
        Message::assistant("").with_tool_calls(vec![ToolCall::new(
            "call_0",
            "get_weather",
            serde_json::json!({"city": "Oslo"}),
        )]),
        Message::tool("call_0", "sunny"),
    ];
    let whole = model.respond(&conversation, &Runtime::detached()).await.unwrap();
    assert_eq!((whole.usage.cached_tokens, whole.response_id.as_deref()), (8, Some("resp_9")));
    let verdict = model.structured::<Verdict>().invoke(&conversation, &Runtime::detached()).await.unwrap();
    assert_eq!(verdict, Verdict { approve: false, reason: "no".into() });
    let requests = server.requests();
    assert!(requests[0].starts_with("POST /v1/responses "), "{}", requests[0]);
    assert!(requests[0].contains("authorization: Bearer sk-test"), "{}", requests[0]);
    let first = body_of(&requests[0]);
    assert_eq!(first["instructions"], "be brief");
    assert_eq!(
        first["input"],
        serde_json::json!([
            {"role": "user", "content": "weather?"},
            {"type": "function_call", "call_id": "call_0", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
            {"type": "function_call_output", "call_id": "call_0", "output": "sunny"},
        ])
    );
    assert_eq!(first["tools"][0]["name"], "get_weather");
    assert_eq!(first["tool_choice"], serde_json::json!({"type": "function", "name": "get_weather"}));
    assert_eq!((first["store"].as_bool(), first["temperature"].as_f64()), (Some(false), Some(0.1)));
    let format = &body_of(&requests[1])["text"]["format"];
    assert_eq!((format["type"].as_str(), format["name"].as_str()), (Some("json_schema"), Some("Verdict")));
    assert_eq!(format["schema"]["required"], serde_json::json!(["approve", "reason"]));

    let event = |kind: &str, data: &str| format!("event: {kind}\ndata: {data}");
    let text = event(
        "response.output_text.delta",
        r#"{"type": "response.output_text.delta", "output_index": 0, "delta": "Hel"}"#,
    );
    let limited = event("error", r#"{"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}"#);
    let failed = event(
        "response.failed",
        r#"{"type": "response.failed", "response": {"status": "failed", "error": {"code": "server_error", "message": "model crashed"}}}"#,
    );
    let error_of = |events: Vec<String>| async move {
        let events: Vec<&str> = events.iter().map(String::as_str).collect();
        let server = Loopback::serve(vec![Canned::stream(&events, Duration::from_millis(2))]).await;
        let model = openai(&format!("{}/v1", server.url())).responses().streaming(true).retry(ModelRetry::none());
        model.invoke(&ask("hi"), &Runtime::detached()).await.unwrap_err()
    };
    let error = error_of(vec![limited.clone()]).await;
    assert!(matches!(&error, ModelError::RateLimited { message, .. } if message.contains("slow down")), "{error}");
    let error = error_of(vec![failed]).await;
    assert!(matches!(&error, ModelError::Server { message, .. } if message.contains("model crashed")), "{error}");
    let error = error_of(vec![text.clone(), limited]).await;
    assert!(matches!(error, ModelError::Stream { after_content: true, .. }), "{error}");
    let error = error_of(vec![text.clone(), "data: {not json".to_owned()]).await;
    assert!(
        matches!(&error, ModelError::Stream { message, .. } if message.contains("not a Responses API event")),
        "{error}"
    );
    let error = error_of(vec![text]).await;
    assert!(
        matches!(&error, ModelError::Stream { message, .. } if message.contains("before the response completed")),
        "{error}"
    );
    let stopped = openai("http://127.0.0.1:9/v1").responses().stop("END");
    let error = stopped.invoke(&ask("hi"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(&error, ModelError::Config(message) if message.contains("no stop sequences")), "{error}");
}

/// Gemini's native API: a whole reply and the request it sent (path, key header, system
/// instruction), a streamed one (server-sent events) through a graph's `messages` stream,
/// streamed function calls reaching the state, and an error classified and named.
#[tokio::test]
async fn gemini_replies_streams_function_calls_and_classified_errors() {
    let mock = Aimock::start();
    let gemini = || Gemini::new("test-model").base_url(format!("{}/v1beta", mock.url())).api_key("g-key");
    let messages = [Message::system("be brief"), Message::user("say hello")];
    let reply = gemini().max_tokens(64).respond(&messages, &Runtime::detached()).await.unwrap();
    assert_eq!((reply.message.content.as_str(), reply.finish_reason), ("Hello there, friend!", FinishReason::Stop));
    let journal = mock.journal().await;
    assert_eq!(journal[0]["path"], "/v1beta/models/test-model:generateContent");
    assert!(journal[0]["headers"].get("x-goog-api-key").is_some(), "the key goes in x-goog-api-key");

    let (state, _, text) = stream_agent(Arc::new(gemini().streaming(true)), "say hello").await;
    assert_eq!(text, "Hello there, friend!", "the text arrived on the messages stream");
    assert_eq!(state.unwrap().messages.last().unwrap().content, "Hello there, friend!");
    let streamed = &mock.journal().await[1];
    assert_eq!(streamed["path"], "/v1beta/models/test-model:streamGenerateContent?alt=sse");

    let model = gemini().streaming(true).bind_tools(&tools![GetWeather, GetTime]);
    let (state, pieces, _) = stream_agent(Arc::new(model), "weather and time").await;
    let state = state.unwrap();
    let reply = state.messages.last().unwrap();
    assert_weather_and_time_calls(reply);
    let names: Vec<_> = pieces.iter().filter_map(|p| p.3.clone()).collect();
    assert_eq!(names, ["get_weather", "get_time"], "each call is streamed whole");

    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let error = gemini().retry(ModelRetry::none()).invoke(&ask("say hello"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(error, ModelError::RateLimited { .. }) && error.to_string().starts_with("gemini "), "{error}");
}

/// Ollama's native API: a whole reply, a streamed one (one JSON object per line), streamed tool
/// calls reaching the state and the `messages` stream, the request it sent, and an error
/// classified and named.
#[tokio::test]
async fn ollama_replies_streams_tool_calls_and_classified_errors() {
    let mock = Aimock::start();
    let ollama = || Ollama::new("test-model").base_url(mock.url());
    let reply = ollama().temperature(0.5).respond(&ask("say hello"), &Runtime::detached()).await.unwrap();
    assert_eq!((reply.message.content.as_str(), reply.finish_reason), ("Hello there, friend!", FinishReason::Stop));
    let sent = &mock.bodies("/api/chat").await[0];
    assert_eq!((sent["model"].as_str(), sent["stream"].as_bool()), (Some("test-model"), Some(false)));
    assert_eq!(sent["messages"], serde_json::json!([{"role": "user", "content": "say hello"}]));
    // aimock journals the request as it read it: `options.temperature` as `temperature`.
    assert_eq!(sent["temperature"], 0.5);

    let (state, _, text) = stream_agent(Arc::new(ollama().streaming(true)), "say hello").await;
    assert_eq!(text, "Hello there, friend!", "the text arrived in pieces on the messages stream");
    assert_eq!(state.unwrap().messages.last().unwrap().content, "Hello there, friend!");

    let model = ollama().streaming(true).bind_tools(&tools![GetWeather, GetTime]);
    let (state, pieces, _) = stream_agent(Arc::new(model), "weather and time").await;
    let state = state.unwrap();
    let reply = state.messages.last().unwrap();
    assert_weather_and_time_calls(reply);
    assert!(reply.tool_calls[0].id != reply.tool_calls[1].id, "each call gets an id of its own");
    let streamed: Vec<_> = pieces.iter().map(|p| (p.1, p.2.clone(), p.3.clone())).collect();
    let expected: Vec<_> = reply
        .tool_calls
        .iter()
        .enumerate()
        .map(|(i, c)| (i as u32, Some(c.id.clone()), Some(c.name.clone())))
        .collect();
    assert_eq!(streamed, expected, "each call is streamed whole under the id it keeps");

    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let error = ollama().retry(ModelRetry::none()).invoke(&ask("say hello"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(error, ModelError::RateLimited { .. }) && error.to_string().starts_with("ollama "), "{error}");
}

#[tokio::test]
async fn anthropic_streamed_and_whole_tool_calls_and_the_request_it_sent() {
    let mock = Aimock::start();
    let model = anthropic(mock.url())
        .bind_tools(&tools![GetWeather, GetTime])
        .tool_choice(ToolChoice::Required)
        .parallel_tool_calls(false);
    let (state, pieces, _) = stream_agent(Arc::new(model.clone()), "weather and time").await;
    check_parallel_calls(&state.unwrap(), &pieces);
    let whole = model
        .invoke(&[Message::system("be brief"), Message::user("weather and time")], &Runtime::detached())
        .await
        .unwrap();
    assert_eq!(whole.tool_calls.len(), 2);
    // aimock journals Anthropic requests translated to the OpenAI shape; the exact body is
    // checked against a loopback server below.
    let sent = mock.bodies("/v1/messages").await;
    assert_eq!(sent.len(), 2);
    assert_eq!(sent[1]["messages"][0], serde_json::json!({"role": "system", "content": "be brief"}));
    assert_eq!(sent[1]["max_tokens"], 4096);
    assert_eq!(sent[1]["tools"][1]["function"]["name"], "get_time");
    assert_eq!(mock.journal().await[0]["headers"]["anthropic-version"], "2023-06-01");
}

/// The JSON body of a raw request a loopback server recorded.
fn body_of(request: &str) -> Value {
    serde_json::from_str(&request[request.find("\r\n\r\n").unwrap() + 4..]).unwrap()
}

#[tokio::test]
async fn anthropic_requests_are_messages_api_requests() {
    let reply = r#"{"id": "msg_1", "type": "message", "content": [{"type": "tool_use", "id": "toolu_1", "name": "Verdict", "input": {"approve": false, "reason": "no"}}], "stop_reason": "tool_use", "usage": {"input_tokens": 3, "output_tokens": 4}}"#;
    let server = Loopback::serve(vec![Canned::new(200, "application/json", reply)]).await;
    let model = anthropic(server.url())
        .bind_tools(&tools![GetWeather, GetTime])
        .tool_choice(ToolChoice::Required)
        .parallel_tool_calls(false);
    let conversation = [
        Message::system("be brief"),
        Message::user("weather?"),
        Message::assistant("").with_tool_calls(vec![ToolCall::new(
            "toolu_0",
            "get_weather",
            serde_json::json!({"city": "Oslo"}),
        )]),
        Message::tool("toolu_0", "sunny"),
    ];
    let whole = model.respond(&conversation, &Runtime::detached()).await.unwrap();
    assert_eq!(whole.message.tool_calls[0].name, "Verdict");
    let verdict = model.structured::<Verdict>().invoke(&conversation, &Runtime::detached()).await.unwrap();
    assert_eq!(verdict, Verdict { approve: false, reason: "no".into() });
    let requests = server.requests();
    let head = requests[0].to_lowercase();
    assert!(head.starts_with("post /v1/messages "), "{head}");
    assert!(head.contains("x-api-key: sk-ant-test") && head.contains("anthropic-version: 2023-06-01"));
    let first = body_of(&requests[0]);
    assert_eq!(first["system"], "be brief");
    assert_eq!(first["tool_choice"], serde_json::json!({"type": "any", "disable_parallel_tool_use": true}));
    assert_eq!(first["tools"][1]["name"], "get_time");
    assert!(first["tools"][1]["input_schema"].is_object());
    assert_eq!(first["messages"][2]["content"][0]["type"], "tool_result");
    let structured = body_of(&requests[1]);
    assert_eq!(structured["tool_choice"]["type"], "tool");
    assert_eq!(structured["tool_choice"]["name"], "Verdict");
    assert_eq!(structured["tools"].as_array().unwrap().len(), 1, "bound tools are not offered for structured output");
}

#[tokio::test]
async fn a_rate_limited_call_waits_the_asked_second_and_is_sent_once_more() {
    let mock = Aimock::start();
    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let started = Instant::now();
    let reply = openai(&mock.openai_base()).invoke(&ask("say hello"), &Runtime::detached()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After: 1 is honoured ({:?})", started.elapsed());
    assert_eq!(reply.content, "Hello there, friend!");
    assert_eq!(mock.journal().await.len(), 2, "one failed attempt, one retry");

    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let error = openai(&mock.openai_base())
        .retry(ModelRetry::none())
        .invoke(&ask("say hello"), &Runtime::detached())
        .await
        .unwrap_err();
    let ModelError::RateLimited { retry_after, message, .. } = &error else { panic!("{error}") };
    assert_eq!(*retry_after, Some(Duration::from_secs(1)));
    assert!(message.contains("Rate limit reached"), "{message}");
}

/// Texts are embedded in batches, their vectors come back in the texts' order (aimock's vector
/// of a text is a hash of it: the same text, the same vector), a query is embedded as a text,
/// and a rate-limited batch is sent again after the second the server asked for.
#[tokio::test]
async fn embeddings_come_in_batches_in_order_and_a_rate_limited_batch_is_sent_again() {
    let mock = Aimock::start();
    let embed = OpenAiEmbeddings::new("text-embedding-3-small")
        .base_url(mock.openai_base())
        .api_key("test-key")
        .dimensions(8)
        .batch_size(2);
    let texts: Vec<String> = ["tides", "moon", "salt", "wind", "tides"].map(String::from).to_vec();
    let vectors = embed.embed(&texts).await.unwrap();
    assert_eq!(vectors.len(), 5);
    assert!(vectors.iter().all(|v| v.len() == 8), "the dimensions asked for");
    assert_eq!(vectors[0], vectors[4], "the same text, the same vector");
    assert_ne!(vectors[0], vectors[1]);
    let batches: Vec<Value> = mock.bodies("/v1/embeddings").await.iter().map(|b| b["embeddingInput"].clone()).collect();
    assert_eq!(batches, ["tides moon", "salt wind", "tides"], "batches of two, in order");
    assert_eq!(embed.embed_query("moon").await.unwrap(), vectors[1]);

    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let started = Instant::now();
    assert_eq!(embed.embed(&texts[..1]).await.unwrap(), vectors[..1]);
    assert!(started.elapsed() >= Duration::from_secs(1), "Retry-After: 1 is honoured ({:?})", started.elapsed());
    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let error = embed.clone().retry(ModelRetry::none()).embed(&texts[..1]).await.unwrap_err();
    assert!(matches!(&error, ModelError::RateLimited { retry_after: Some(_), .. }), "{error}");
    mock.fail_next(401, "invalid_api_key", "Incorrect API key provided").await;
    let error = embed.embed(&texts[..1]).await.unwrap_err();
    assert!(matches!(&error, ModelError::Auth { status: 401, .. }), "not retried: {error}");
}

/// Cohere's embed API: texts in batches (aimock's vectors: 1024 numbers, a hash of the text),
/// stored texts sent as `search_document` and queries as `search_query`, a rate-limited batch
/// sent again.
#[tokio::test]
async fn cohere_embeds_documents_and_queries_apart_in_batches() {
    let mock = Aimock::start();
    let cohere = CohereEmbeddings::new("embed-english-v3.0").base_url(mock.url()).api_key("co-key").batch_size(2);
    let texts: Vec<String> = ["tides", "moon", "tides"].map(String::from).to_vec();
    let vectors = cohere.embed(&texts).await.unwrap();
    assert!(vectors.len() == 3 && vectors.iter().all(|v| v.len() == 1024));
    assert_eq!(vectors[0], vectors[2]);
    assert_eq!(mock.bodies("/v2/embed").await.len(), 2, "batches of two");
    mock.fail_next(429, "rate_limit_error", "Too many requests").await;
    assert_eq!(cohere.embed(&texts[..1]).await.unwrap(), vectors[..1]);

    let reply = r#"{"id": "e1", "embeddings": {"float": [[0.25, 0.5]]}, "texts": ["x"]}"#;
    let server = Loopback::serve(vec![Canned::new(200, "application/json", reply); 3]).await;
    let canned = CohereEmbeddings::new("embed-english-v3.0").base_url(server.url()).api_key("co-key");
    assert_eq!(canned.embed_query("what moves the sea?").await.unwrap(), [0.25, 0.5]);
    assert_eq!(canned.embed(&["the moon".to_owned()]).await.unwrap(), [vec![0.25, 0.5]]);
    let error = canned.embed(&["a".to_owned(), "b".to_owned()]).await.unwrap_err().to_string();
    assert!(error.contains("1 vectors for 2 texts"), "{error}");
    let sent: Vec<Value> = server.requests().iter().map(|r| body_of(r)).collect();
    assert_eq!(sent[0]["input_type"], "search_query");
    assert_eq!(sent[1]["input_type"], "search_document");
    assert_eq!(sent[1]["texts"], serde_json::json!(["the moon"]));
    assert!(server.requests()[0].contains("authorization: Bearer co-key"), "{}", server.requests()[0]);
}

/// Gemini's native embeddings: one text through `embedContent` on aimock (its vectors are a
/// hash of the text, `outputDimensionality` long; the key in `x-goog-api-key`), a rate limit
/// retried and a bad key not; several texts through `batchEmbedContents` on canned replies,
/// with the task types and dimensions they carry, and replies of the wrong count or length
/// refused saying which.
#[tokio::test]
async fn gemini_embeds_one_text_by_embed_content_and_many_by_batches() {
    let mock = Aimock::start();
    let gemini = GeminiEmbeddings::new("gemini-embedding-001")
        .base_url(format!("{}/v1beta", mock.url()))
        .api_key("g-key")
        .retry(ModelRetry::default().initial_wait(Duration::from_millis(10)).max_asked_wait(Duration::ZERO));
    let query = gemini.embed_query("moon").await.unwrap();
    assert_eq!(query.len(), 768, "Gemini's default length");
    let short = gemini.clone().dimensions(8);
    let tides = short.embed(&["tides".to_owned()]).await.unwrap();
    assert_eq!(tides[0].len(), 8, "the dimensions asked for");
    assert_eq!(short.embed(&["tides".to_owned()]).await.unwrap(), tides, "the same text, the same vector");
    let journal = mock.journal().await;
    assert_eq!(journal[0]["path"], "/v1beta/models/gemini-embedding-001:embedContent");
    assert!(journal[0]["headers"].get("x-goog-api-key").is_some(), "the key goes in x-goog-api-key");
    assert_eq!(journal[1]["body"]["embeddingInput"], "tides");
    mock.fail_next(429, "RESOURCE_EXHAUSTED", "Quota exceeded").await;
    assert_eq!(short.embed(&["tides".to_owned()]).await.unwrap(), tides);
    assert_eq!(mock.journal().await.len(), 5, "the rate-limited request was sent again");
    mock.fail_next(401, "UNAUTHENTICATED", "API key not valid").await;
    let error = short.embed(&["tides".to_owned()]).await.unwrap_err();
    assert!(
        matches!(&error, ModelError::Auth { status: 401, .. }) && error.to_string().starts_with("gemini "),
        "{error}"
    );
    assert_eq!(mock.journal().await.len(), 6, "a bad key is not retried");

    let two = r#"{"embeddings": [{"values": [0.5, 1, 2]}, {"values": [3, 4, 5]}]}"#;
    let one = r#"{"embeddings": [{"values": [0.5, 1, 2]}]}"#;
    let short_vector = r#"{"embeddings": [{"values": [0.5, 1, 2]}, {"values": [3, 4]}]}"#;
    let server = Loopback::serve(vec![
        Canned::new(200, "application/json", two),
        Canned::new(200, "application/json", one),
        Canned::new(200, "application/json", short_vector),
    ])
    .await;
    let canned = GeminiEmbeddings::new("models/gemini-embedding-001")
        .base_url(format!("{}/v1beta", server.url()))
        .api_key("g-key")
        .dimensions(3);
    let texts = ["the moon".to_owned(), "the tides".to_owned()];
    assert_eq!(canned.embed(&texts).await.unwrap(), [vec![0.5, 1.0, 2.0], vec![3.0, 4.0, 5.0]]);
    let error = canned.embed(&texts).await.unwrap_err().to_string();
    assert!(error.contains("1 vectors for 2 texts"), "{error}");
    let error = canned.embed(&texts).await.unwrap_err().to_string();
    assert!(error.contains("vector 1 has 2 numbers where 3 were asked for"), "{error}");
    let request = &server.requests()[0];
    assert!(request.starts_with("POST /v1beta/models/gemini-embedding-001:batchEmbedContents "), "{request}");
    assert!(request.contains("x-goog-api-key: g-key"), "{request}");
    let sent = body_of(request);
    assert_eq!(
        sent["requests"][1],
        serde_json::json!({"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "the tides"}]},
                           "taskType": "RETRIEVAL_DOCUMENT", "outputDimensionality": 3})
    );
}

/// Ollama's native `/api/embed`: one text at a time on aimock (which answers in the older
/// one-vector shape, read for a request of one text), a batch of two refused there for the
/// count of its vectors; batches on canned replies of the current shape (`embeddings`), with
/// vectors of different lengths refused saying which; a rate limit retried.
#[tokio::test]
async fn ollama_embeds_texts_in_batches_through_its_native_api() {
    let mock = Aimock::start();
    let ollama = OllamaEmbeddings::new("nomic-embed-text")
        .base_url(mock.url())
        .retry(ModelRetry::default().initial_wait(Duration::from_millis(10)).max_asked_wait(Duration::ZERO));
    let texts: Vec<String> = ["tides", "moon", "tides"].map(String::from).to_vec();
    let vectors = ollama.clone().batch_size(1).embed(&texts).await.unwrap();
    assert!(vectors.len() == 3 && !vectors[0].is_empty());
    assert_eq!(vectors[0], vectors[2]);
    assert_ne!(vectors[0], vectors[1]);
    assert_eq!(ollama.embed_query("moon").await.unwrap(), vectors[1]);
    let journal = mock.journal().await;
    assert!(journal.iter().all(|e| e["path"] == "/api/embed"), "{journal:?}");
    let error = ollama.embed(&texts[..2]).await.unwrap_err().to_string();
    assert!(error.contains("1 vectors for 2 texts"), "aimock's one vector for a batch: {error}");
    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    assert_eq!(ollama.embed(&texts[..1]).await.unwrap(), vectors[..1]);
    assert_eq!(mock.journal().await.len(), 7, "the rate-limited request was sent again");

    let two = r#"{"model": "nomic-embed-text", "embeddings": [[0.5, 1], [2, 3]], "prompt_eval_count": 4}"#;
    let uneven = r#"{"model": "nomic-embed-text", "embeddings": [[0.5, 1], [2]]}"#;
    let server = Loopback::serve(vec![
        Canned::new(200, "application/json", two),
        Canned::new(200, "application/json", uneven),
        Canned::new(401, "application/json", r#"{"error": "unauthorized"}"#),
    ])
    .await;
    let canned = OllamaEmbeddings::new("nomic-embed-text").base_url(server.url()).api_key("o-key").dimensions(2);
    assert_eq!(canned.embed(&texts[..2]).await.unwrap(), [vec![0.5, 1.0], vec![2.0, 3.0]]);
    let error = canned.embed(&texts[..2]).await.unwrap_err().to_string();
    assert!(error.contains("vector 1 has 1 numbers where 2 were asked for"), "{error}");
    let error = canned.embed(&texts[..1]).await.unwrap_err();
    assert!(
        matches!(&error, ModelError::Auth { status: 401, .. }) && error.to_string().starts_with("ollama "),
        "{error}"
    );
    assert_eq!(server.requests().len(), 3, "a bad key is not retried");
    let request = &server.requests()[0];
    assert!(request.starts_with("POST /api/embed ") && request.contains("authorization: Bearer o-key"), "{request}");
    assert_eq!(
        body_of(request),
        serde_json::json!({"model": "nomic-embed-text", "input": ["tides", "moon"], "dimensions": 2})
    );
}

/// Azure OpenAI embeddings: a deployment's URL with its API version and the key in `api-key`;
/// and `embeddings_from_spec` naming the clients.
#[tokio::test]
async fn azure_embeddings_and_embeddings_by_spec() {
    let mock = Aimock::start();
    let azure = OpenAiEmbeddings::azure_at(mock.url(), "embed-prod").api_key("azure-key").api_version("2024-10-21");
    let vectors = azure.clone().dimensions(8).embed(&["tides".to_owned(), "moon".to_owned()]).await.unwrap();
    assert!(vectors.len() == 2 && vectors.iter().all(|v| v.len() == 8));
    let entry = &mock.journal().await[0];
    assert_eq!(entry["path"], "/openai/deployments/embed-prod/embeddings?api-version=2024-10-21");
    assert!(entry["headers"].get("api-key").is_some() && entry["headers"].get("authorization").is_none());
    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let error = azure.retry(ModelRetry::none()).embed(&["tides".to_owned()]).await.unwrap_err();
    assert!(matches!(error, ModelError::RateLimited { .. }) && error.to_string().starts_with("azure "), "{error}");

    for spec in [
        "openai:text-embedding-3-small",
        "cohere:embed-english-v3.0",
        "google:gemini-embedding-001",
        "ollama:all-minilm",
        "mistral:mistral-embed",
        "llamacpp:nomic",
    ] {
        assert!(embeddings_from_spec(spec).is_ok(), "{spec}");
    }
    let error = embeddings_from_spec("groq:some-model").unwrap_err().to_string();
    assert!(
        error.contains("`groq` serves no embeddings API") && error.contains("vllm") && !error.contains("deepseek"),
        "{error}"
    );
}

/// A known OpenAI-compatible service (here `groq`, moved onto aimock) is spoken to as OpenAI,
/// streamed or not, and its errors name it.
#[tokio::test]
async fn a_compatible_service_speaks_openai_and_its_errors_name_it() {
    let mock = Aimock::start();
    let groq = || OpenAi::compatible("groq", "test-model").unwrap().base_url(mock.openai_base()).api_key("gsk-test");
    assert_eq!(groq().provider(), "groq");
    let reply = groq().invoke(&ask("say hello"), &Runtime::detached()).await.unwrap();
    assert_eq!(reply.content, "Hello there, friend!");
    let streamed = groq().streaming(true).invoke(&ask("say hello"), &Runtime::detached()).await.unwrap();
    assert_eq!(streamed.content, "Hello there, friend!");

    mock.fail_next(429, "rate_limit_error", "Rate limit reached").await;
    let error = groq().retry(ModelRetry::none()).invoke(&ask("say hello"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(error, ModelError::RateLimited { .. }) && error.to_string().starts_with("groq "), "{error}");
}

#[tokio::test]
async fn anthropic_overload_is_retried_and_server_errors_are_classified() {
    let mock = Aimock::start();
    mock.fail_next(529, "overloaded_error", "Overloaded").await;
    let model = anthropic(mock.url()).retry(ModelRetry::default().initial_wait(Duration::from_millis(20)));
    let reply = model.invoke(&ask("say hello"), &Runtime::detached()).await.unwrap();
    assert_eq!(reply.content, "Hello there, friend!");
    assert_eq!(mock.journal().await.len(), 2);

    let once = anthropic(mock.url()).retry(ModelRetry::none());
    mock.fail_next(529, "overloaded_error", "Overloaded").await;
    assert!(matches!(once.invoke(&ask("say hello"), &Runtime::detached()).await, Err(ModelError::Overloaded { .. })));
    mock.fail_next(500, "api_error", "Internal").await;
    assert!(matches!(
        once.invoke(&ask("say hello"), &Runtime::detached()).await,
        Err(ModelError::Server { status: 500, .. })
    ));
    mock.fail_next(401, "authentication_error", "invalid x-api-key").await;
    let error = model.invoke(&ask("say hello"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(error, ModelError::Auth { status: 401, .. }), "{error}");
    assert_eq!(mock.journal().await.len(), 5, "an auth error is not retried");
}

#[tokio::test]
async fn a_stream_dropped_before_any_content_is_sent_again() {
    let mock = Aimock::start();
    let model = openai(&mock.openai_base())
        .streaming(true)
        .retry(ModelRetry::default().initial_wait(Duration::from_millis(10)));
    let reply = model.invoke(&ask("flaky"), &Runtime::detached()).await.unwrap();
    assert_eq!(reply.content, "second time lucky");
    assert_eq!(mock.journal().await.len(), 2);
}

#[tokio::test]
async fn a_stream_cut_after_content_is_an_error_and_never_sent_again() {
    let mock = Aimock::start();
    let model = openai(&mock.openai_base()).retry(ModelRetry::default().initial_wait(Duration::from_millis(10)));
    let (end, _, text) = stream_agent(Arc::new(model), "cut me off").await;
    let Err(GraphError::Node { source, .. }) = end else { panic!("{end:?}") };
    let error = source.downcast_ref::<ModelError>().unwrap();
    assert!(matches!(error, ModelError::Stream { after_content: true, .. }), "{error}");
    assert!(!text.is_empty(), "part of the reply was streamed before the cut");
    assert_eq!(mock.journal().await.len(), 1, "a stream that delivered content is not re-sent");
}

#[tokio::test]
async fn malformed_tool_arguments_arrive_as_text_for_the_tool_node_to_report() {
    let mock = Aimock::start();
    for model in [
        Arc::new(openai(&mock.openai_base())) as Arc<dyn ChatModel>,
        Arc::new(openai(&mock.openai_base()).streaming(true)),
    ] {
        let reply = model.invoke(&ask("broken arguments"), &Runtime::detached()).await.unwrap();
        assert_eq!(reply.tool_calls[0].arguments, Value::String("{\"city\": \"Par".into()));
    }
}

#[derive(Debug, Deserialize, JsonSchema, PartialEq)]
struct Verdict {
    approve: bool,
    reason: String,
}

#[tokio::test]
async fn structured_output_by_response_format_and_by_forced_tool() {
    let mock = Aimock::start();
    let expected = Verdict { approve: true, reason: "fine".into() };
    let by_format = openai(&mock.openai_base()).structured::<Verdict>();
    assert_eq!(by_format.invoke(&ask("verdict as text"), &Runtime::detached()).await.unwrap(), expected);
    let by_tool = anthropic(mock.url()).structured::<Verdict>();
    assert_eq!(by_tool.invoke(&ask("verdict as a tool"), &Runtime::detached()).await.unwrap(), expected);
    let sent = mock.journal().await;
    let format = &sent[0]["body"]["response_format"];
    assert_eq!((format["type"].as_str(), format["json_schema"]["strict"].as_bool()), (Some("json_schema"), Some(true)));
    assert_eq!(format["json_schema"]["schema"]["required"], serde_json::json!(["approve", "reason"]));
}

/// One canned response for an OpenAI-compatible client, and the error it gives.
async fn canned_error(canned: Canned) -> ModelError {
    let server = Loopback::serve(vec![canned]).await;
    let model = openai(&format!("{}/v1", server.url())).retry(ModelRetry::none());
    model.invoke(&ask("hi"), &Runtime::detached()).await.unwrap_err()
}

#[tokio::test]
async fn every_malformed_response_shape_is_a_typed_error() {
    let json = "application/json";
    let error = canned_error(Canned::new(200, json, r#"{"id": "x", "choices": []}"#)).await;
    assert!(matches!(&error, ModelError::InvalidOutput { reason, .. } if reason.contains("no choices")), "{error}");
    let error = canned_error(Canned::new(200, json, "<html>oops</html>")).await;
    assert!(
        matches!(&error, ModelError::InvalidOutput { reason, .. } if reason.contains("not a chat completion")),
        "{error}"
    );
    let error = canned_error(Canned::new(
        200,
        json,
        r#"{"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"arguments": "{}"}}]}}]}"#,
    ))
    .await;
    assert!(matches!(&error, ModelError::InvalidOutput { reason, .. } if reason.contains("no name")), "{error}");
    let error = canned_error(Canned::new(400, json, r#"{"error": {"code": 400, "message": "the request exceeds the available context size", "type": "exceed_context_size_error"}}"#)).await;
    assert!(matches!(error, ModelError::ContextLength { .. }), "{error}");
    let error = canned_error(Canned::new(502, "text/html", "<html>Bad Gateway</html>")).await;
    assert!(
        matches!(&error, ModelError::Server { status: 502, message, .. } if message.contains("Bad Gateway")),
        "{error}"
    );
    let error = canned_error(Canned::new(
        429,
        json,
        r#"{"error": {"code": "insufficient_quota", "message": "out of credit"}}"#,
    ))
    .await;
    assert!(matches!(error, ModelError::QuotaExhausted { .. }), "{error}");

    let stream = |events: &[&str]| Canned::stream(events, Duration::from_millis(5));
    let model_of =
        |server: &Loopback| openai(&format!("{}/v1", server.url())).streaming(true).retry(ModelRetry::none());
    let garbage = Loopback::serve(vec![stream(&[
        "data: {\"choices\": [{\"delta\": {\"content\": \"Hi\"}}]}",
        "data: {not json",
    ])])
    .await;
    let error = model_of(&garbage).invoke(&ask("hi"), &Runtime::detached()).await.unwrap_err();
    assert!(
        matches!(&error, ModelError::Stream { after_content: true, message, .. } if message.contains("not a chat completion chunk")),
        "{error}"
    );
    let unfinished =
        Loopback::serve(vec![stream(&["data: {\"choices\": [{\"delta\": {\"content\": \"Hi\"}}]}"])]).await;
    let error = model_of(&unfinished).invoke(&ask("hi"), &Runtime::detached()).await.unwrap_err();
    assert!(
        matches!(&error, ModelError::Stream { after_content: true, message, .. } if message.contains("ended before")),
        "{error}"
    );
    let in_stream = Loopback::serve(vec![stream(&[
        "data: {\"error\": {\"message\": \"model crashed\", \"type\": \"server_error\", \"code\": 500}}",
    ])])
    .await;
    let error = model_of(&in_stream).invoke(&ask("hi"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(&error, ModelError::Server { message, .. } if message.contains("model crashed")), "{error}");
}

/// A text chunk as servers send them, every one the same bytes around its text.
fn same_shape(text: &str) -> String {
    format!(
        r#"data: {{"id":"c1","object":"chat.completion.chunk","choices":[{{"index":0,"delta":{{"content":"{text}"}},"finish_reason":null}}]}}"#
    )
}

#[tokio::test]
async fn server_sent_events_are_read_however_the_bytes_are_cut() {
    let [he, l, quoted, wo, rld, bang, query] = ["He", "l", r#"l\"o"#, " wö", "rld", "!!", "?"].map(same_shape);
    let pieces: Vec<Vec<u8>> = vec![
        // A comment and an event name first, lines ending in CR LF.
        format!(": keep-alive\r\nevent: chunk\r\n{he}\r\n\r\n").into_bytes(),
        // No space after the colon; then an event cut mid-line.
        format!("{}\n\n{}", l.replacen("data: ", "data:", 1), &quoted[..40]).into_bytes(),
        format!("{}\n", &quoted[40..]).into_bytes(),
        // The blank line that ends it comes alone, then an event of two data lines.
        b"\ndata: {\"choices\":[{\"index\":0,\"delta\":\ndata: {\"content\":\"!\"}}]}\n\n".to_vec(),
        // Two events at once, lines ending in CR; the text of the first cut inside its `ö`.
        format!("{wo}\r\r{rld}").as_bytes()[..wo.len() - 27].to_vec(),
        format!("{wo}\r\r{rld}").as_bytes()[wo.len() - 27..].to_vec(),
        // Two events of the learned shape at once, read by comparison.
        format!("\r\r{bang}\n\n{query}\n\n").into_bytes(),
        b"data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n".to_vec(),
    ];
    let pieces: Vec<&[u8]> = pieces.iter().map(Vec::as_slice).collect();
    let server = Loopback::serve(vec![Canned::stream_bytes(&pieces, Duration::from_millis(5))]).await;
    let model = openai(&format!("{}/v1", server.url())).streaming(true).retry(ModelRetry::none());
    let reply = model.respond(&ask("hi"), &Runtime::detached()).await.unwrap();
    assert_eq!(reply.message.content, "Hell\"o! wörld!!?");
    assert_eq!(reply.finish_reason, FinishReason::Stop);
}

#[tokio::test]
async fn a_stream_that_is_not_utf8_is_an_error_saying_so() {
    let mut broken = same_shape("x\u{e9}y").into_bytes();
    let at = broken.iter().position(|&b| b == 0xc3).unwrap();
    broken.remove(at); // `é` without its first byte
    broken.extend_from_slice(b"\n\n");
    let first = format!("{}\n\n", same_shape("ok"));
    let stream = |pieces: &[&[u8]]| Canned::stream_bytes(pieces, Duration::from_millis(1));
    // The bad chunk first, and after a chunk of the same shape was read.
    for canned in [stream(&[&broken]), stream(&[first.as_bytes(), &broken])] {
        let server = Loopback::serve(vec![canned]).await;
        let model = openai(&format!("{}/v1", server.url())).streaming(true).retry(ModelRetry::none());
        let error = model.respond(&ask("hi"), &Runtime::detached()).await.unwrap_err();
        assert!(matches!(&error, ModelError::Stream { message, .. } if message.contains("not UTF-8")), "{error}");
    }
    // Anthropic's reader too.
    let server = Loopback::serve(vec![stream(&[b"event: ping\ndata: {\"type\": \"p\xffng\"}\n\n"])]).await;
    let model = anthropic(server.url()).streaming(true).retry(ModelRetry::none());
    let error = model.respond(&ask("hi"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(&error, ModelError::Stream { message, .. } if message.contains("not UTF-8")), "{error}");
}

#[tokio::test]
async fn lenient_shapes_of_compatible_servers_are_read() {
    // Old Ollama: each call whole, no `index`; a finish reason nobody documented; no usage.
    let events = [
        r#"data: {"choices": [{"delta": {"tool_calls": [{"id": "a", "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]}}]}"#,
        r#"data: {"choices": [{"delta": {"tool_calls": [{"id": "b", "function": {"name": "get_time", "arguments": {"tz": "CET"}}}]}}]}"#,
        r#"data: {"choices": [{"delta": {}, "finish_reason": "eos_token"}]}"#,
    ];
    let server = Loopback::serve(vec![Canned::stream(&events, Duration::from_millis(1))]).await;
    let model = openai(&format!("{}/v1", server.url())).streaming(true);
    let reply = model.respond(&ask("hi"), &Runtime::detached()).await.unwrap();
    let calls: Vec<_> = reply.message.tool_calls.iter().map(|c| (c.id.as_str(), c.arguments.clone())).collect();
    assert_eq!(calls, [("a", serde_json::json!({"city": "Oslo"})), ("b", serde_json::json!({"tz": "CET"}))]);
    assert_eq!(reply.finish_reason, FinishReason::Other("eos_token".into()));
    assert!(
        server.requests()[0].contains("authorization: Bearer sk-test")
            || server.requests()[0].contains("Authorization: Bearer sk-test")
    );
}

#[tokio::test]
async fn retry_after_ms_is_honoured_over_retry_after() {
    let limited =
        Canned::new(429, "application/json", r#"{"error": {"message": "slow down", "type": "rate_limit_error"}}"#)
            .header("retry-after-ms: 300")
            .header("retry-after: 30");
    let ok = Canned::new(
        200,
        "application/json",
        r#"{"choices": [{"message": {"content": "ok"}, "finish_reason": "stop"}]}"#,
    );
    let server = Loopback::serve(vec![limited, ok]).await;
    let started = Instant::now();
    let reply = openai(&format!("{}/v1", server.url())).invoke(&ask("hi"), &Runtime::detached()).await.unwrap();
    let waited = started.elapsed();
    assert_eq!(reply.content, "ok");
    assert!(waited >= Duration::from_millis(300) && waited < Duration::from_secs(5), "{waited:?}");
    assert_eq!(server.requests().len(), 2);
}

#[tokio::test]
async fn a_server_that_never_answers_times_out_per_attempt() {
    let silent = Canned::stream(&["data: {\"choices\": []}"], Duration::from_secs(30));
    let server = Loopback::serve(vec![silent]).await;
    let model = openai(&format!("{}/v1", server.url())).timeout(Duration::from_millis(200)).retry(ModelRetry::none());
    let started = Instant::now();
    let error = model.invoke(&ask("hi"), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(error, ModelError::Timeout { .. }), "{error}");
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[tokio::test]
async fn llama_cpp_streams_real_text_with_usage() {
    let server = LlamaServer::shared();
    let model = openai(&server.openai_base()).streaming(true).max_tokens(24);
    let (state, _, streamed) = stream_agent(Arc::new(model), "Name a color.").await;
    let state = state.unwrap();
    let reply = state.messages.last().unwrap();
    assert!(!reply.content.trim().is_empty());
    assert_eq!(streamed, reply.content, "the stream carried the whole reply");
    let whole =
        openai(&server.openai_base()).max_tokens(8).respond(&ask("Say hi."), &Runtime::detached()).await.unwrap();
    assert!(whole.usage.input_tokens > 0 && whole.usage.output_tokens > 0, "{:?}", whole.usage);
    assert!(matches!(whole.finish_reason, FinishReason::Length | FinishReason::Stop));
}

#[derive(Debug, Deserialize, JsonSchema)]
struct City {
    name: String,
    population: u64,
}

#[tokio::test]
async fn llama_cpp_structured_output_follows_the_schema() {
    let server = LlamaServer::shared();
    let model = openai(&server.openai_base()).max_tokens(128).structured::<City>();
    let city = model.invoke(&ask("Describe Paris as JSON."), &Runtime::detached()).await.unwrap();
    assert!(!city.name.is_empty());
    let _ = city.population;
}

#[tokio::test]
async fn llama_cpp_speaks_anthropic_messages_and_rejects_bad_requests() {
    let server = LlamaServer::shared();
    let reply = anthropic(server.url())
        .max_tokens(8)
        .streaming(true)
        .respond(&ask("Say hi."), &Runtime::detached())
        .await
        .unwrap();
    assert!(!reply.message.content.is_empty());
    assert!(reply.usage.output_tokens > 0);
    // The server's context is 4096 tokens: a longer prompt is its real 400.
    let long = "word ".repeat(6000);
    let error = openai(&server.openai_base()).invoke(&ask(&long), &Runtime::detached()).await.unwrap_err();
    assert!(matches!(error, ModelError::ContextLength { .. }), "{error}");
}
