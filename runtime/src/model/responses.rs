//! OpenAI's Responses API (`POST {base}/responses`), which [`OpenAi`](super::OpenAi) speaks
//! after [`OpenAi::responses`](super::OpenAi::responses): the request body, and the reply,
//! whole or as its named server-sent events.
//!
//! The conversation goes out whole on every call as `input` items (messages, `function_call`
//! and `function_call_output` items), with the system messages as `instructions` and
//! `store: false` unless the client says otherwise: the call is stateless, as every other
//! provider's is, and no `previous_response_id` is used.

use super::http::{self, ErrorBody, invalid};
use super::reply::{FinishReason, ModelReply, ReplySink, ToolCallDelta};
use super::request::{ModelRequest, ToolChoice};
use super::sse;
use super::{ModelError, Usage};
use crate::message::{Message, Role, ToolCall};
use crate::tool::schema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

/// The request body of `request`, stored by the provider when `store` says so.
///
/// The Responses API has no stop sequences: a request with some is refused rather than sent
/// without them.
pub(crate) fn body(request: &ModelRequest<'_>, store: bool) -> Result<Value, ModelError> {
    let settings = request.settings;
    if !settings.stop.is_empty() {
        return Err(ModelError::Config(
            "OpenAI's Responses API has no stop sequences: remove `stop(..)` from the model, or use Chat \
             Completions (an `OpenAi` client without `.responses()`)"
                .to_owned(),
        ));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(request.model));
    let system: Vec<&str> =
        request.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
    if !system.is_empty() {
        body.insert("instructions".into(), json!(system.join("\n\n")));
    }
    body.insert("input".into(), Value::Array(input_items(request.messages)));
    if !settings.tools.is_empty() {
        let strict = settings.strict();
        let tools = settings
            .tools
            .iter()
            .map(|t| {
                // The Responses API makes function tools strict unless told otherwise.
                let parameters = if strict { schema::strict(t.parameters.clone()) } else { t.parameters.clone() };
                json!({
                    "type": "function",
                    "name": t.name,
                    "description": t.description,
                    "parameters": parameters,
                    "strict": strict,
                })
            })
            .collect();
        body.insert("tools".into(), Value::Array(tools));
        let choice = match &settings.tool_choice {
            ToolChoice::Auto => json!("auto"),
            ToolChoice::None => json!("none"),
            ToolChoice::Required => json!("required"),
            ToolChoice::Tool(name) => json!({"type": "function", "name": name}),
        };
        body.insert("tool_choice".into(), choice);
        if let Some(parallel) = settings.parallel_tool_calls {
            body.insert("parallel_tool_calls".into(), json!(parallel));
        }
    }
    if let Some(temperature) = settings.temperature {
        body.insert("temperature".into(), json!(temperature));
    }
    if let Some(max) = settings.max_tokens {
        body.insert("max_output_tokens".into(), json!(max));
    }
    if let Some(format) = &settings.response_format {
        body.insert(
            "text".into(),
            json!({"format": {
                "type": "json_schema",
                "name": format.name,
                "strict": true,
                "schema": schema::strict(format.schema.clone()),
            }}),
        );
    }
    body.insert("store".into(), json!(store));
    if request.stream {
        body.insert("stream".into(), json!(true));
    }
    Ok(Value::Object(body))
}

/// The conversation (system messages aside) as input items: a message per user or assistant
/// turn, a `function_call` item per tool call, a `function_call_output` item per tool answer.
fn input_items(messages: &[Message]) -> Vec<Value> {
    let mut items = Vec::with_capacity(messages.len());
    for message in messages {
        match message.role {
            Role::System | Role::Remove => {}
            Role::User => items.push(json!({"role": "user", "content": message.content})),
            Role::Assistant => {
                if !message.content.is_empty() || message.tool_calls.is_empty() {
                    items.push(json!({"role": "assistant", "content": message.content}));
                }
                for call in &message.tool_calls {
                    let arguments = match &call.arguments {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    items.push(json!({
                        "type": "function_call",
                        "call_id": call.id,
                        "name": call.name,
                        "arguments": arguments,
                    }));
                }
            }
            Role::Tool => items.push(json!({
                "type": "function_call_output",
                "call_id": message.tool_call_id.as_deref().unwrap_or_default(),
                "output": message.content,
            })),
        }
    }
    items
}

/// A response object: the whole reply, or the one a lifecycle event carries.
#[derive(Deserialize)]
struct Response {
    id: Option<String>,
    model: Option<String>,
    status: Option<String>,
    #[serde(default)]
    output: Vec<Item>,
    usage: Option<WireUsage>,
    error: Option<Value>,
    incomplete_details: Option<Incomplete>,
}

#[derive(Deserialize)]
struct Incomplete {
    reason: Option<String>,
}

/// An output item; kinds this client does not read (reasoning, web searches, ...) are `Other`.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Item {
    Message {
        #[serde(default)]
        content: Vec<Part>,
    },
    FunctionCall {
        call_id: Option<String>,
        id: Option<String>,
        #[serde(default)]
        name: String,
        arguments: Option<Value>,
    },
    #[serde(other)]
    Other,
}

/// A part of a message item.
#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum Part {
    OutputText {
        #[serde(default)]
        text: String,
    },
    Refusal {
        #[serde(default)]
        refusal: String,
    },
    #[serde(other)]
    Other,
}

/// A message item's text: its text parts, or its refusal when it has no text.
fn message_text(parts: &[Part]) -> String {
    let text: String = parts
        .iter()
        .filter_map(|p| match p {
            Part::OutputText { text } => Some(text.as_str()),
            _ => None,
        })
        .collect();
    if !text.is_empty() {
        return text;
    }
    parts
        .iter()
        .filter_map(|p| match p {
            Part::Refusal { refusal } => Some(refusal.as_str()),
            _ => None,
        })
        .collect()
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    input_tokens_details: Option<InputDetails>,
}

#[derive(Deserialize)]
struct InputDetails {
    cached_tokens: Option<u64>,
}

impl WireUsage {
    /// Reasoning tokens are part of `output_tokens`, as they are billed; cached ones part of
    /// `input_tokens`.
    fn usage(&self) -> Usage {
        let cached = self.input_tokens_details.as_ref().and_then(|d| d.cached_tokens).unwrap_or(0);
        Usage::tokens(self.input_tokens, self.output_tokens).with_cached(cached)
    }
}

/// Tool-call arguments as sent: a JSON string, or (from lenient servers) an object.
fn arguments_text(arguments: Option<&Value>) -> String {
    match arguments {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(other) => other.to_string(),
    }
}

/// A tool call whose arguments arrived as text; an empty text is no arguments.
fn tool_call(id: String, name: String, arguments: &str) -> ToolCall {
    if arguments.trim().is_empty() {
        ToolCall::new(id, name, json!({}))
    } else {
        ToolCall::from_text(id, name, arguments)
    }
}

/// The error an `error` member (of a failed response or an `error` event) stands for. The
/// Responses API names the kind in `code` (`rate_limit_exceeded`, `server_error`, ...) where
/// Chat Completions has `type`.
fn classify(provider: &str, error: &Value) -> ModelError {
    let mut body = ErrorBody::of(error);
    if body.kind.is_empty() || body.kind == "error" {
        body.kind.clone_from(&body.code);
    }
    // Kinds the shared classification reads by their type, named here by their code.
    match body.kind.as_str() {
        "insufficient_quota" => "rate_limit_error".clone_into(&mut body.kind),
        "context_length_exceeded" | "invalid_prompt" => "invalid_request_error".clone_into(&mut body.kind),
        _ => {}
    }
    if body.message.is_empty() && body.kind.is_empty() {
        "the response failed without saying why".clone_into(&mut body.message);
    }
    http::classify_event(provider, &body)
}

/// Why a response with `status` and `incomplete` details stopped, given whether it asked for
/// tool calls.
fn finish_reason(status: Option<&str>, incomplete: Option<&str>, has_calls: bool) -> FinishReason {
    match (status, incomplete) {
        _ if has_calls => FinishReason::ToolCalls,
        (Some("completed"), _) => FinishReason::Stop,
        (_, Some("max_output_tokens")) => FinishReason::Length,
        (_, Some("content_filter")) => FinishReason::ContentFilter,
        (_, Some(reason)) => FinishReason::Other(reason.to_owned()),
        (Some(other), None) => FinishReason::Other(other.to_owned()),
        (None, None) => FinishReason::Unknown,
    }
}

/// A whole (not streamed) response from `provider`.
pub(crate) fn parse_response(raw: &[u8], provider: &str) -> Result<ModelReply, ModelError> {
    let response: Response = serde_json::from_slice(raw)
        .map_err(|e| invalid(raw, format!("the response is not a Responses API response: {e}")))?;
    if response.status.as_deref() == Some("failed") || response.error.as_ref().is_some_and(|e| !e.is_null()) {
        return Err(classify(provider, response.error.as_ref().unwrap_or(&Value::Null)));
    }
    let mut text = String::new();
    let mut calls = Vec::new();
    for item in response.output {
        match item {
            Item::Message { content } => text.push_str(&message_text(&content)),
            Item::FunctionCall { call_id, id, name, arguments } => {
                if name.is_empty() {
                    return Err(invalid(raw, format!("function call {} has no name", calls.len())));
                }
                let id = call_id.or(id).filter(|i| !i.is_empty()).unwrap_or_else(|| format!("call_{}", calls.len()));
                calls.push(tool_call(id, name, &arguments_text(arguments.as_ref())));
            }
            Item::Other => {}
        }
    }
    let incomplete = response.incomplete_details.and_then(|d| d.reason);
    Ok(ModelReply {
        finish_reason: finish_reason(response.status.as_deref(), incomplete.as_deref(), !calls.is_empty()),
        message: Message::assistant(text).with_tool_calls(calls),
        usage: response.usage.map(|u| u.usage()).unwrap_or_default(),
        model: response.model.unwrap_or_default(),
        response_id: response.id,
    })
}

/// The kind of a streamed event, read before the rest of it.
#[derive(Deserialize)]
struct Head<'a> {
    #[serde(rename = "type", borrow)]
    kind: Cow<'a, str>,
}

/// `response.output_text.delta`, `response.refusal.delta` and
/// `response.function_call_arguments.delta`.
#[derive(Deserialize)]
struct Piece<'a> {
    output_index: Option<u32>,
    #[serde(borrow)]
    item_id: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    delta: Cow<'a, str>,
}

/// `response.function_call_arguments.done`.
#[derive(Deserialize)]
struct ArgumentsDone {
    output_index: Option<u32>,
    item_id: Option<String>,
    arguments: Option<Value>,
}

/// `response.output_item.added` and `response.output_item.done`.
#[derive(Deserialize)]
struct ItemEvent {
    output_index: Option<u32>,
    item: Item,
}

/// `response.created`, `.in_progress`, `.completed`, `.incomplete`, `.failed`.
#[derive(Deserialize)]
struct Lifecycle {
    response: Response,
}

/// A function call being assembled from its events.
struct Partial {
    output_index: Option<u32>,
    item_id: Option<String>,
    id: String,
    name: String,
    arguments: String,
}

/// A streamed reply being assembled.
#[derive(Default)]
struct Assembly {
    text: String,
    /// Where in `text` each message item's streamed text lies, by output index.
    texts: Vec<(Option<u32>, std::ops::Range<usize>)>,
    calls: Vec<Partial>,
    /// Whether any output item was announced or finished.
    items: bool,
    id: Option<String>,
    model: Option<String>,
    usage: Option<Usage>,
    status: Option<String>,
    incomplete: Option<String>,
    done: bool,
    delivered: bool,
    provider: &'static str,
}

impl Assembly {
    /// The call an event addresses, by output index or item id; a new nameless one when none
    /// is known yet (a stream that never names it ends in an error naming the call).
    fn slot(&mut self, output_index: Option<u32>, item_id: Option<&str>) -> usize {
        let found = self.calls.iter().position(|c| {
            (output_index.is_some() && c.output_index == output_index)
                || (item_id.is_some() && c.item_id.as_deref() == item_id)
        });
        found.unwrap_or_else(|| {
            self.calls.push(Partial {
                output_index,
                item_id: item_id.map(str::to_owned),
                id: String::new(),
                name: String::new(),
                arguments: String::new(),
            });
            self.calls.len() - 1
        })
    }

    fn text(&mut self, output_index: Option<u32>, text: &str, sink: &mut dyn ReplySink) {
        if text.is_empty() {
            return;
        }
        self.delivered = true;
        sink.text(text);
        let start = self.text.len();
        self.text.push_str(text);
        match self.texts.last_mut() {
            Some((at, range)) if *at == output_index && range.end == start => range.end = self.text.len(),
            _ => self.texts.push((output_index, start..self.text.len())),
        }
    }

    /// The text streamed for the message item at `output_index` (an event without an index
    /// matches any).
    fn streamed_text(&self, output_index: Option<u32>) -> &str {
        let found =
            self.texts.iter().rev().find(|(at, _)| at.is_none() || output_index.is_none() || *at == output_index);
        found.map_or("", |(_, range)| &self.text[range.clone()])
    }

    /// More arguments of call `at`.
    fn arguments(&mut self, at: usize, arguments: &str, sink: &mut dyn ReplySink) {
        if arguments.is_empty() {
            return;
        }
        self.calls[at].arguments.push_str(arguments);
        self.delivered = true;
        sink.tool_call(ToolCallDelta { index: at as u32, id: None, name: None, arguments });
    }

    /// The whole arguments of call `at`: what was not streamed yet is streamed now; arguments
    /// that contradict the streamed ones replace them.
    fn arguments_done(&mut self, at: usize, arguments: &str, sink: &mut dyn ReplySink) {
        let streamed = &self.calls[at].arguments;
        match arguments.strip_prefix(streamed.as_str()) {
            Some(rest) => {
                let rest = rest.to_owned();
                self.arguments(at, &rest, sink);
            }
            None => arguments.clone_into(&mut self.calls[at].arguments),
        }
    }

    /// An announced or finished output item.
    fn item(&mut self, output_index: Option<u32>, item: Item, sink: &mut dyn ReplySink) {
        self.items = true;
        match item {
            Item::FunctionCall { call_id, id, name, arguments } => {
                let at = self.slot(output_index, id.as_deref());
                let call = &mut self.calls[at];
                let new_id = call_id.filter(|i| !i.is_empty() && call.id.is_empty());
                if let Some(new_id) = &new_id {
                    call.id.clone_from(new_id);
                }
                let new_name = Some(name).filter(|n| !n.is_empty() && call.name.is_empty());
                if let Some(new_name) = &new_name {
                    call.name.clone_from(new_name);
                }
                if call.item_id.is_none() {
                    call.item_id = id;
                }
                if new_id.is_some() || new_name.is_some() {
                    self.delivered = true;
                    sink.tool_call(ToolCallDelta {
                        index: at as u32,
                        id: new_id.as_deref(),
                        name: new_name.as_deref(),
                        arguments: "",
                    });
                }
                let arguments = arguments_text(arguments.as_ref());
                if !arguments.is_empty() {
                    self.arguments_done(at, &arguments, sink);
                }
            }
            Item::Message { content } => {
                // A finished message's text past what its deltas brought (a server that sends
                // the text only whole).
                let whole = message_text(&content);
                if let Some(rest) = whole.strip_prefix(self.streamed_text(output_index)) {
                    let rest = rest.to_owned();
                    self.text(output_index, &rest, sink);
                }
            }
            Item::Other => {}
        }
    }

    /// The final response of `response.completed` or `response.incomplete`: its usage and
    /// status, and its output when the stream announced none of it.
    fn complete(&mut self, response: Response, sink: &mut dyn ReplySink) {
        if let Some(id) = response.id {
            self.id = Some(id);
        }
        if let Some(model) = response.model {
            self.model = Some(model);
        }
        self.usage = response.usage.map(|u| u.usage());
        self.status = response.status;
        self.incomplete = response.incomplete_details.and_then(|d| d.reason);
        if !self.items && self.text.is_empty() && self.calls.is_empty() {
            for (index, item) in response.output.into_iter().enumerate() {
                self.item(u32::try_from(index).ok(), item, sink);
            }
        }
        self.done = true;
    }

    /// An error the stream reported: classified before any of the reply arrived, a broken
    /// stream after.
    fn failed(&self, error: ModelError) -> ModelError {
        if self.delivered { sse::broken(self.provider, true, error.to_string()) } else { error }
    }

    /// Reads one event's data.
    fn event(&mut self, data: &[u8], sink: &mut dyn ReplySink) -> Result<(), ModelError> {
        if data.iter().all(u8::is_ascii_whitespace) {
            return Ok(());
        }
        let data =
            std::str::from_utf8(data).map_err(|e| sse::broken(self.provider, self.delivered, sse::not_utf8(e)))?;
        let bad = |what: &str, e: serde_json::Error| {
            sse::broken(self.provider, self.delivered, format!("{what} is not a Responses API event ({e}): {data}"))
        };
        let head: Head<'_> = serde_json::from_str(data).map_err(|e| bad("an event", e))?;
        match head.kind.as_ref() {
            "response.output_text.delta" | "response.refusal.delta" => {
                let delta: Piece<'_> = serde_json::from_str(data).map_err(|e| bad("a text delta", e))?;
                self.text(delta.output_index, &delta.delta, sink);
            }
            "response.function_call_arguments.delta" => {
                let delta: Piece<'_> = serde_json::from_str(data).map_err(|e| bad("an arguments delta", e))?;
                let at = self.slot(delta.output_index, delta.item_id.as_deref());
                self.arguments(at, &delta.delta, sink);
            }
            "response.function_call_arguments.done" => {
                let done: ArgumentsDone = serde_json::from_str(data).map_err(|e| bad("the end of arguments", e))?;
                let at = self.slot(done.output_index, done.item_id.as_deref());
                self.arguments_done(at, &arguments_text(done.arguments.as_ref()), sink);
            }
            "response.output_item.added" | "response.output_item.done" => {
                let event: ItemEvent = serde_json::from_str(data).map_err(|e| bad("an output item", e))?;
                self.item(event.output_index, event.item, sink);
            }
            "response.created" | "response.in_progress" | "response.queued" => {
                let event: Lifecycle = serde_json::from_str(data).map_err(|e| bad("a response", e))?;
                self.id = self.id.take().or(event.response.id);
                self.model = self.model.take().or(event.response.model);
            }
            "response.completed" | "response.incomplete" => {
                let event: Lifecycle = serde_json::from_str(data).map_err(|e| bad("the final response", e))?;
                self.complete(event.response, sink);
            }
            "response.failed" => {
                let event: Lifecycle = serde_json::from_str(data).map_err(|e| bad("a failed response", e))?;
                let error = event.response.error.unwrap_or(Value::Null);
                return Err(self.failed(classify(self.provider, &error)));
            }
            "error" => {
                let event: Value = serde_json::from_str(data).map_err(|e| bad("an error", e))?;
                let error = match event.get("error") {
                    Some(inner) if inner.is_object() => inner.clone(),
                    _ => event,
                };
                return Err(self.failed(classify(self.provider, &error)));
            }
            // Reasoning summaries, content-part and text boundaries, tool progress, ...
            _ => {}
        }
        Ok(())
    }

    fn finish(self) -> Result<ModelReply, ModelError> {
        let mut calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(ModelError::InvalidOutput {
                    raw: call.arguments,
                    reason: format!("streamed function call {index} never got a name"),
                });
            }
            let id = if call.id.is_empty() { format!("call_{index}") } else { call.id };
            calls.push(tool_call(id, call.name, &call.arguments));
        }
        Ok(ModelReply {
            finish_reason: finish_reason(self.status.as_deref(), self.incomplete.as_deref(), !calls.is_empty()),
            message: Message::assistant(self.text).with_tool_calls(calls),
            usage: self.usage.unwrap_or_default(),
            model: self.model.unwrap_or_default(),
            response_id: self.id,
        })
    }
}

/// A streamed response from `provider`: named events until `response.completed` (or
/// `response.incomplete`); `response.failed` and `error` events are its classified errors.
pub(crate) async fn read_stream(
    response: reqwest::Response,
    sink: &mut dyn ReplySink,
    provider: &'static str,
) -> Result<ModelReply, ModelError> {
    let mut events = sse::Events::new(response);
    let mut reply = Assembly { provider, ..Assembly::default() };
    while events.next().await.map_err(|message| sse::broken(provider, reply.delivered, message))? {
        reply.event(events.bytes(), sink)?;
        if reply.done {
            return reply.finish();
        }
    }
    Err(sse::broken(provider, reply.delivered, "the stream ended before the response completed"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::request::{ModelSettings, ResponseFormat, ToolSpec};
    use std::sync::Arc;

    struct Pieces(Vec<String>);

    impl ReplySink for Pieces {
        fn text(&mut self, delta: &str) {
            self.0.push(format!("text:{delta}"));
        }
        fn tool_call(&mut self, delta: ToolCallDelta<'_>) {
            self.0.push(format!("call{}:{:?}:{:?}:{}", delta.index, delta.id, delta.name, delta.arguments));
        }
    }

    fn assemble(events: &[Value]) -> (Result<ModelReply, ModelError>, Vec<String>) {
        let mut sink = Pieces(Vec::new());
        let mut reply = Assembly { provider: "openai", ..Assembly::default() };
        for event in events {
            if let Err(e) = reply.event(event.to_string().as_bytes(), &mut sink) {
                return (Err(e), sink.0);
            }
        }
        assert!(reply.done, "the events end the response");
        (reply.finish(), sink.0)
    }

    fn completed(status: &str, extra: Value) -> Value {
        let mut response = json!({"id": "resp_1", "model": "gpt-4.1", "status": status, "output": [],
            "usage": {"input_tokens": 20, "output_tokens": 7, "input_tokens_details": {"cached_tokens": 4},
                      "output_tokens_details": {"reasoning_tokens": 3}}});
        if let (Value::Object(response), Value::Object(extra)) = (&mut response, extra) {
            response.extend(extra);
        }
        json!({"type": "response.completed", "response": response})
    }

    #[test]
    fn a_request_has_instructions_input_items_flat_tools_and_the_schema_as_text_format() {
        let mut settings = ModelSettings {
            max_tokens: Some(64),
            temperature: Some(0.2),
            response_format: Some(ResponseFormat { name: "Answer".into(), schema: json!({"type": "object"}) }),
            parallel_tool_calls: Some(false),
            ..ModelSettings::default()
        };
        settings.tools = Arc::new([ToolSpec {
            name: "get_weather".into(),
            description: "the weather".into(),
            parameters: json!({"type": "object", "properties": {"city": {"type": "string"}}}),
        }]);
        settings.tool_choice = ToolChoice::Tool("get_weather".into());
        let messages = [
            Message::system("be brief"),
            Message::user("weather?"),
            Message::assistant("Checking.").with_tool_calls(vec![ToolCall::new(
                "c1",
                "get_weather",
                json!({"city": "Oslo"}),
            )]),
            Message::tool("c1", "sunny"),
            Message::system("answer in English"),
        ];
        let request = ModelRequest { model: "gpt-4.1", messages: &messages, settings: &settings, stream: true };
        let sent = body(&request, false).unwrap();
        assert_eq!(sent["instructions"], "be brief\n\nanswer in English");
        assert_eq!(
            sent["input"],
            json!([
                {"role": "user", "content": "weather?"},
                {"role": "assistant", "content": "Checking."},
                {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"},
                {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            ])
        );
        let tool = &sent["tools"][0];
        assert_eq!(
            (tool["type"].as_str(), tool["name"].as_str(), tool["strict"].as_bool()),
            (Some("function"), Some("get_weather"), Some(true))
        );
        assert_eq!(tool["parameters"]["additionalProperties"], false);
        assert_eq!(sent["tool_choice"], json!({"type": "function", "name": "get_weather"}));
        assert_eq!(sent["parallel_tool_calls"], false);
        assert_eq!((sent["max_output_tokens"].as_u64(), sent["temperature"].as_f64()), (Some(64), Some(0.2)));
        assert_eq!(sent["text"]["format"]["type"], "json_schema");
        assert_eq!(sent["text"]["format"]["name"], "Answer");
        assert_eq!((sent["store"].as_bool(), sent["stream"].as_bool()), (Some(false), Some(true)));

        settings.strict_tools = Some(false);
        settings.stop = vec!["END".into()];
        let request = ModelRequest { model: "m", messages: &messages[1..2], settings: &settings, stream: false };
        let error = body(&request, true).unwrap_err();
        assert!(error.to_string().contains("no stop sequences"), "{error}");
        settings.stop.clear();
        let request = ModelRequest { model: "m", messages: &messages[1..2], settings: &settings, stream: false };
        let sent = body(&request, true).unwrap();
        assert_eq!(sent["tools"][0]["strict"], false, "not strict is said, the API's default is strict");
        assert!(sent.get("instructions").is_none() && sent.get("stream").is_none());
        assert_eq!(sent["store"], true);
    }

    #[test]
    fn streamed_text_and_calls_assemble_with_usage_and_the_response_id() {
        let (reply, pieces) = assemble(&[
            json!({"type": "response.created", "response": {"id": "resp_1", "model": "gpt-4.1", "status": "in_progress", "output": []}}),
            json!({"type": "response.output_item.added", "output_index": 0, "item": {"type": "reasoning", "id": "rs_1", "summary": []}}),
            json!({"type": "response.output_item.added", "output_index": 1, "item": {"type": "message", "id": "msg_1", "role": "assistant", "content": []}}),
            json!({"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_1", "content_index": 0, "delta": "Let me "}),
            json!({"type": "response.output_text.delta", "output_index": 1, "item_id": "msg_1", "content_index": 0, "delta": "check."}),
            json!({"type": "response.output_item.done", "output_index": 1, "item": {"type": "message", "content": [{"type": "output_text", "text": "Let me check."}]}}),
            json!({"type": "response.output_item.added", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get_weather", "arguments": ""}}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2, "item_id": "fc_1", "delta": "{\"city\":"}),
            json!({"type": "response.function_call_arguments.delta", "output_index": 2, "item_id": "fc_1", "delta": "\"Oslo\"}"}),
            json!({"type": "response.function_call_arguments.done", "output_index": 2, "item_id": "fc_1", "arguments": "{\"city\":\"Oslo\"}"}),
            json!({"type": "response.output_item.done", "output_index": 2, "item": {"type": "function_call", "id": "fc_1", "call_id": "call_a", "name": "get_weather", "arguments": "{\"city\":\"Oslo\"}"}}),
            // A call announced whole at its end only.
            json!({"type": "response.output_item.done", "output_index": 3, "item": {"type": "function_call", "id": "fc_2", "call_id": "call_b", "name": "get_time", "arguments": "{}"}}),
            json!({"type": "response.some_future_event", "delta": {"odd": true}}),
            completed("completed", json!({})),
        ]);
        let reply = reply.unwrap();
        assert_eq!(reply.message.content, "Let me check.");
        let calls: Vec<_> =
            reply.message.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), c.arguments.clone())).collect();
        assert_eq!(calls, [("call_a", "get_weather", json!({"city": "Oslo"})), ("call_b", "get_time", json!({}))]);
        assert_eq!(reply.finish_reason, FinishReason::ToolCalls);
        assert_eq!(reply.usage, Usage::tokens(20, 7).with_cached(4));
        assert_eq!((reply.response_id.as_deref(), reply.model.as_str()), (Some("resp_1"), "gpt-4.1"));
        assert_eq!(
            pieces,
            [
                "text:Let me ",
                "text:check.",
                "call0:Some(\"call_a\"):Some(\"get_weather\"):",
                "call0:None:None:{\"city\":",
                "call0:None:None:\"Oslo\"}",
                "call1:Some(\"call_b\"):Some(\"get_time\"):",
                "call1:None:None:{}",
            ]
        );
    }

    #[test]
    fn a_completed_response_alone_delivers_its_output_and_incomplete_ones_say_why() {
        let output = json!({"output": [{"type": "message", "content": [{"type": "output_text", "text": "Hi"}]}],
                            "incomplete_details": {"reason": "max_output_tokens"}});
        let (reply, pieces) = assemble(&[completed("incomplete", output)]);
        let reply = reply.unwrap();
        assert_eq!((reply.message.content.as_str(), reply.finish_reason), ("Hi", FinishReason::Length));
        assert_eq!(pieces, ["text:Hi"]);
        let filtered = json!({"incomplete_details": {"reason": "content_filter"}});
        let (reply, _) = assemble(&[completed("incomplete", filtered)]);
        assert_eq!(reply.unwrap().finish_reason, FinishReason::ContentFilter);
    }

    #[test]
    fn failures_in_the_stream_are_classified_and_break_a_stream_that_delivered() {
        let failed = |code: &str| {
            json!({"type": "response.failed", "response": {"id": "r", "status": "failed", "output": [],
                   "error": {"code": code, "message": "no luck"}}})
        };
        let (reply, _) = assemble_failing(&[failed("rate_limit_exceeded")]);
        assert!(matches!(reply, ModelError::RateLimited { .. }), "{reply}");
        let (reply, _) = assemble_failing(&[failed("server_error")]);
        assert!(matches!(reply, ModelError::Server { .. }), "{reply}");
        let (reply, _) = assemble_failing(&[failed("insufficient_quota")]);
        assert!(matches!(reply, ModelError::QuotaExhausted { .. }), "{reply}");
        let (reply, _) = assemble_failing(&[failed("context_length_exceeded")]);
        assert!(matches!(reply, ModelError::ContextLength { .. }), "{reply}");
        let error_event =
            json!({"type": "error", "code": "rate_limit_exceeded", "message": "slow down", "param": null});
        let (reply, _) = assemble_failing(std::slice::from_ref(&error_event));
        assert!(matches!(&reply, ModelError::RateLimited { message, .. } if message.contains("slow down")), "{reply}");
        let text = json!({"type": "response.output_text.delta", "output_index": 0, "delta": "Hel"});
        let (reply, _) = assemble_failing(&[text, error_event]);
        assert!(matches!(reply, ModelError::Stream { after_content: true, .. }), "{reply}");
        let nested = json!({"type": "error", "error": {"type": "invalid_request_error", "message": "bad input"}});
        let (reply, _) = assemble_failing(&[nested]);
        assert!(matches!(reply, ModelError::BadRequest { .. }), "{reply}");
        let (reply, _) = assemble_failing(&[json!({"no": "type"})]);
        assert!(
            matches!(&reply, ModelError::Stream { message, .. } if message.contains("not a Responses API event")),
            "{reply}"
        );
        let nameless = json!({"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{}"});
        let mut reply = Assembly { provider: "openai", ..Assembly::default() };
        reply.event(nameless.to_string().as_bytes(), &mut crate::model::Discard).unwrap();
        assert!(
            matches!(reply.finish(), Err(ModelError::InvalidOutput { reason, .. }) if reason.contains("never got a name"))
        );
    }

    fn assemble_failing(events: &[Value]) -> (ModelError, Vec<String>) {
        let mut sink = Pieces(Vec::new());
        let mut reply = Assembly { provider: "openai", ..Assembly::default() };
        for event in events {
            if let Err(e) = reply.event(event.to_string().as_bytes(), &mut sink) {
                return (e, sink.0);
            }
        }
        panic!("the events did not fail: {:?}", sink.0)
    }

    #[test]
    fn whole_responses_of_every_shape_are_read_or_refused() {
        let parse = |body: Value| parse_response(body.to_string().as_bytes(), "openai");
        let reply = parse(json!({"id": "resp_2", "status": "completed", "model": "gpt-4.1",
            "output": [{"type": "reasoning", "summary": []},
                       {"type": "message", "content": [{"type": "refusal", "refusal": "I can't."}]},
                       {"type": "function_call", "call_id": "c9", "name": "f", "arguments": "{\"a\":"}],
            "usage": {"input_tokens": 5, "output_tokens": 2}}))
        .unwrap();
        assert_eq!(reply.message.content, "I can't.", "a refusal is the text when there is no other");
        assert_eq!(
            reply.message.tool_calls[0].arguments,
            json!("{\"a\":"),
            "broken arguments reach the tool node as text"
        );
        assert_eq!((reply.finish_reason, reply.usage.total_tokens()), (FinishReason::ToolCalls, 7));
        let error =
            parse(json!({"status": "failed", "error": {"code": "server_error", "message": "boom"}})).unwrap_err();
        assert!(matches!(&error, ModelError::Server { message, .. } if message.contains("boom")), "{error}");
        let error = parse(json!({"status": "failed", "error": null})).unwrap_err();
        assert!(error.to_string().contains("without saying why"), "{error}");
        let error = parse_response(b"<html>", "openai").unwrap_err();
        assert!(error.to_string().contains("not a Responses API response"), "{error}");
        let error = parse(json!({"output": [{"type": "function_call", "call_id": "c"}]})).unwrap_err();
        assert!(error.to_string().contains("function call 0 has no name"), "{error}");
        let error = parse(json!({"output": [{"type": "message", "content": "text, not parts"}]})).unwrap_err();
        assert!(matches!(error, ModelError::InvalidOutput { .. }), "{error}");
        assert_eq!(
            parse(json!({"status": "cancelled"})).unwrap().finish_reason,
            FinishReason::Other("cancelled".into())
        );
    }
}
