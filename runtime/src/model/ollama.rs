//! Ollama's native chat API (`POST /api/chat`): replies whole or streamed as one JSON object
//! per line, tool calls, structured output by JSON schema (`format`), token counts.

use super::http::{self, Connection, ErrorBody, invalid};
use super::reply::{FinishReason, ModelReply, ReplySink, ToolCallDelta};
use super::request::{ModelRequest, ModelSettings, ToolChoice};
use super::sse;
use super::{ModelError, Usage};
use crate::message::{Message, Role, ToolCall};
use serde::Deserialize;
use serde_json::{Map, Value, json};

const PROVIDER: &str = "ollama";
const DEFAULT_BASE_URL: &str = "http://localhost:11434";

/// A client of Ollama's native chat API (`POST {base}/api/chat`).
///
/// `Ollama::new(model)` talks to `OLLAMA_HOST` (Ollama's own variable: `host:port` or a URL;
/// default `http://localhost:11434`), sending `OLLAMA_API_KEY` as a bearer token when it is
/// set (a hosted Ollama, or one behind a proxy). Ollama cannot be made to call a tool: with
/// [`ToolChoice::Tool`] only that tool is offered, with [`ToolChoice::Required`] every tool is
/// offered as with `Auto`, and with [`ToolChoice::None`] none is. Structured output is sent as
/// `format` (a JSON schema). Ollama gives tool calls no ids: each gets a fresh one.
///
/// ```
/// use graphwright::model::{ChatModel, Ollama};
///
/// let local = Ollama::new("qwen3").base_url("http://127.0.0.1:11434").temperature(0.2);
/// assert_eq!((local.provider(), local.model()), ("ollama", "qwen3"));
/// assert_eq!(local.endpoint(), "http://127.0.0.1:11434/api/chat");
/// ```
#[derive(Clone)]
pub struct Ollama {
    conn: Connection,
}

impl Ollama {
    /// A client of `model` on the server `OLLAMA_HOST` names (keyed by `OLLAMA_API_KEY`, if set).
    pub fn new(model: impl Into<String>) -> Self {
        Self { conn: connection(model.into()) }
    }

    /// The server's address (`http://host:11434`), without `/api`.
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.conn.base_url = url.into();
        self
    }

    /// A key sent as `Authorization: Bearer` (Ollama itself needs none).
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.conn.api_key = Some(key.into());
        self
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> String {
        format!("{}/api/chat", self.conn.base_url.trim_end_matches('/'))
    }

    /// The request body.
    pub(crate) fn body(request: &ModelRequest<'_>) -> Value {
        let settings = request.settings;
        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        body.insert("messages".into(), Value::Array(request.messages.iter().filter_map(wire_message).collect()));
        let tools = offered_tools(settings);
        if !tools.is_empty() {
            body.insert("tools".into(), Value::Array(tools));
        }
        let mut options = Map::new();
        if let Some(temperature) = settings.temperature {
            options.insert("temperature".into(), json!(temperature));
        }
        if let Some(max) = settings.max_tokens {
            options.insert("num_predict".into(), json!(max));
        }
        if !settings.stop.is_empty() {
            options.insert("stop".into(), json!(settings.stop));
        }
        if !options.is_empty() {
            body.insert("options".into(), Value::Object(options));
        }
        if let Some(format) = &settings.response_format {
            body.insert("format".into(), format.schema.clone());
        }
        body.insert("stream".into(), json!(request.stream));
        Value::Object(body)
    }

    async fn send(&self, request: ModelRequest<'_>, sink: &mut dyn ReplySink) -> Result<ModelReply, ModelError> {
        let body = serde_json::to_vec(&Self::body(&request))
            .map_err(|e| ModelError::Config(format!("the request could not be encoded: {e}")))?;
        let mut builder = self.conn.http.post(self.endpoint());
        if let Some(key) = &self.conn.api_key {
            builder = builder.bearer_auth(key);
        }
        let response = http::post(PROVIDER, builder, body).await?;
        if request.stream {
            read_stream(response, sink).await
        } else {
            let body = response.bytes().await.map_err(|e| http::transport(PROVIDER, &e))?;
            let chunk: Chunk = serde_json::from_slice(&body)
                .map_err(|e| invalid(&body, format!("the response is not an Ollama chat response: {e}")))?;
            let mut reply = Assembly::default();
            reply.take(chunk, &mut super::reply::Discard)?;
            reply.finish(&body)
        }
    }
}

chat_model_over_connection!(Ollama, |_client| PROVIDER);

/// A connection for `model` to the server `OLLAMA_HOST` names, keyed by `OLLAMA_API_KEY`.
pub(crate) fn connection(model: String) -> Connection {
    let mut conn = Connection::from_env(model, "OLLAMA_HOST", DEFAULT_BASE_URL, "OLLAMA_API_KEY");
    // Ollama's own variable is often only `host:port`.
    if !conn.base_url.contains("://") {
        conn.base_url = format!("http://{}", conn.base_url);
    }
    conn
}

/// The tools offered, as the tool choice allows (Ollama has no way to force a call).
fn offered_tools(settings: &ModelSettings) -> Vec<Value> {
    let offered = |name: &str| match &settings.tool_choice {
        ToolChoice::None => false,
        ToolChoice::Tool(only) => only == name,
        ToolChoice::Auto | ToolChoice::Required => true,
    };
    settings
        .tools
        .iter()
        .filter(|t| offered(&t.name))
        .map(|t| {
            json!({"type": "function", "function": {"name": t.name, "description": t.description, "parameters": t.parameters}})
        })
        .collect()
}

/// A message in Ollama's form; `None` for what is not sent (remove markers).
fn wire_message(message: &Message) -> Option<Value> {
    Some(match message.role {
        Role::System => json!({"role": "system", "content": message.content}),
        Role::User => json!({"role": "user", "content": message.content}),
        Role::Assistant if message.tool_calls.is_empty() => json!({"role": "assistant", "content": message.content}),
        Role::Assistant => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|c| json!({"function": {"name": c.name, "arguments": c.arguments_object()}}))
                .collect();
            json!({"role": "assistant", "content": message.content, "tool_calls": calls})
        }
        Role::Tool => json!({"role": "tool", "content": message.content}),
        Role::Remove => return None,
    })
}

/// One response object: the whole reply, or one line of a streamed one.
#[derive(Deserialize)]
struct Chunk {
    model: Option<String>,
    message: Option<WireMessage>,
    #[serde(default)]
    done: bool,
    done_reason: Option<String>,
    prompt_eval_count: Option<u64>,
    eval_count: Option<u64>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct WireMessage {
    #[serde(default)]
    content: String,
    #[serde(default)]
    tool_calls: Vec<WireCall>,
}

#[derive(Deserialize)]
struct WireCall {
    function: WireFunction,
}

#[derive(Deserialize)]
struct WireFunction {
    name: String,
    #[serde(default)]
    arguments: Value,
}

/// A reply being put together from its chunks.
#[derive(Default)]
struct Assembly {
    text: String,
    calls: Vec<ToolCall>,
    model: Option<String>,
    done_reason: Option<String>,
    usage: Option<Usage>,
    done: bool,
    delivered: bool,
}

impl Assembly {
    fn take(&mut self, chunk: Chunk, sink: &mut dyn ReplySink) -> Result<(), ModelError> {
        if let Some(error) = chunk.error {
            let error = http::classify_event(PROVIDER, &ErrorBody::of(&error));
            return Err(if self.delivered { sse::broken(PROVIDER, true, error.to_string()) } else { error });
        }
        if self.model.is_none() {
            self.model = chunk.model;
        }
        if let Some(message) = chunk.message {
            if !message.content.is_empty() {
                sink.text(&message.content);
                self.text.push_str(&message.content);
                self.delivered = true;
            }
            for call in message.tool_calls {
                let index = u32::try_from(self.calls.len()).unwrap_or(u32::MAX);
                let id = format!("call_{}", crate::message::fresh_id());
                let arguments = match call.function.arguments {
                    Value::Null => json!({}),
                    other => other,
                };
                let text = arguments.to_string();
                sink.tool_call(ToolCallDelta {
                    index,
                    id: Some(&id),
                    name: Some(&call.function.name),
                    arguments: &text,
                });
                self.calls.push(ToolCall::new(id, call.function.name, arguments));
                self.delivered = true;
            }
        }
        if chunk.done {
            self.done = true;
            self.done_reason = chunk.done_reason;
            self.usage = Some(Usage::tokens(chunk.prompt_eval_count.unwrap_or(0), chunk.eval_count.unwrap_or(0)));
        }
        Ok(())
    }

    /// The reply, once the chunk that says `done` came; `raw` is what was read, for the error.
    fn finish(self, raw: &[u8]) -> Result<ModelReply, ModelError> {
        if !self.done {
            return Err(invalid(raw, "the response never said it was done"));
        }
        let finish_reason = match self.done_reason.as_deref() {
            _ if !self.calls.is_empty() => FinishReason::ToolCalls,
            None | Some("stop") => FinishReason::Stop,
            Some("length") => FinishReason::Length,
            Some(other) => FinishReason::Other(other.to_owned()),
        };
        Ok(ModelReply {
            message: Message::assistant(self.text).with_tool_calls(self.calls),
            usage: self.usage.unwrap_or_default(),
            finish_reason,
            model: self.model.unwrap_or_default(),
            response_id: None,
        })
    }
}

/// A streamed reply: one JSON object per line, until the one that says `done`.
async fn read_stream(mut response: reqwest::Response, sink: &mut dyn ReplySink) -> Result<ModelReply, ModelError> {
    let mut reply = Assembly::default();
    let mut pending: Vec<u8> = Vec::new();
    loop {
        let piece = response.chunk().await.map_err(|e| {
            let error = http::transport(PROVIDER, &e);
            sse::broken(PROVIDER, reply.delivered, error.to_string())
        })?;
        let Some(piece) = piece else { break };
        pending.extend_from_slice(&piece);
        while let Some(end) = pending.iter().position(|&b| b == b'\n') {
            let line: Vec<u8> = pending.drain(..=end).collect();
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let chunk: Chunk = serde_json::from_slice(&line).map_err(|e| {
                let text = String::from_utf8_lossy(&line);
                sse::broken(
                    PROVIDER,
                    reply.delivered,
                    format!("a line is not an Ollama chat chunk ({e}): {}", text.trim()),
                )
            })?;
            reply.take(chunk, sink)?;
            if reply.done {
                return reply.finish(&line);
            }
        }
    }
    // The last line may come without its newline.
    if !pending.iter().all(u8::is_ascii_whitespace) {
        let chunk: Chunk = serde_json::from_slice(&pending).map_err(|e| {
            sse::broken(PROVIDER, reply.delivered, format!("the last line is not an Ollama chat chunk ({e})"))
        })?;
        reply.take(chunk, sink)?;
        if reply.done {
            return reply.finish(&pending);
        }
    }
    Err(sse::broken(PROVIDER, reply.delivered, "the stream ended before the reply was done"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::request::{ResponseFormat, ToolSpec};
    use std::sync::Arc;

    fn spec(name: &str) -> ToolSpec {
        ToolSpec { name: name.into(), description: format!("tool {name}"), parameters: json!({"type": "object"}) }
    }

    #[test]
    fn a_request_carries_tools_as_allowed_options_and_the_schema_as_format() {
        let mut settings = ModelSettings {
            temperature: Some(0.5),
            max_tokens: Some(64),
            response_format: Some(ResponseFormat { name: "Answer".into(), schema: json!({"type": "object"}) }),
            ..ModelSettings::default()
        };
        settings.tools = Arc::new([spec("a"), spec("b")]);
        settings.tool_choice = ToolChoice::Tool("b".into());
        let messages = [
            Message::user("hi"),
            Message::assistant("").with_tool_calls(vec![ToolCall::from_text("c1", "b", "{\"x\":1}")]),
            Message::tool("c1", "done"),
        ];
        let request = ModelRequest { model: "m", messages: &messages, settings: &settings, stream: true };
        let body = Ollama::body(&request);
        assert_eq!(body["tools"].as_array().map(Vec::len), Some(1), "only the chosen tool is offered");
        assert_eq!(body["tools"][0]["function"]["name"], "b");
        assert_eq!(body["options"], json!({"temperature": 0.5, "num_predict": 64}));
        assert_eq!(body["format"], json!({"type": "object"}));
        assert_eq!(body["messages"][1]["tool_calls"][0]["function"]["arguments"], json!({"x": 1}));
        assert_eq!(body["messages"][2], json!({"role": "tool", "content": "done"}));
        assert_eq!(body["stream"], true);
        settings.tool_choice = ToolChoice::None;
        let request = ModelRequest { model: "m", messages: &messages, settings: &settings, stream: false };
        assert!(Ollama::body(&request).get("tools").is_none(), "no tool is offered");
    }

    #[test]
    fn a_reply_gives_its_token_counts_and_why_it_stopped() {
        let raw = br#"{"model":"qwen3","message":{"role":"assistant","content":"Hel"},"done":false}"#;
        let mut reply = Assembly::default();
        reply.take(serde_json::from_slice(raw).unwrap(), &mut crate::model::Discard).unwrap();
        assert!(reply.delivered && !reply.done);
        let last = br#"{"model":"qwen3","message":{"content":"lo"},"done":true,"done_reason":"length",
            "prompt_eval_count":26,"eval_count":3}"#;
        reply.take(serde_json::from_slice(last).unwrap(), &mut crate::model::Discard).unwrap();
        let reply = reply.finish(last).unwrap();
        assert_eq!(reply.message.content, "Hello");
        assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens), (26, 3));
        assert_eq!((reply.finish_reason, reply.model.as_str()), (FinishReason::Length, "qwen3"));
        assert!(Assembly::default().finish(b"{}").is_err(), "a reply that never said it was done is an error");
    }

    #[test]
    fn an_error_after_text_breaks_the_stream_and_one_before_is_classified() {
        let error: Chunk = serde_json::from_str(r#"{"error":"model 'nope' not found"}"#).unwrap();
        let failed = Assembly::default().take(error, &mut crate::model::Discard).unwrap_err();
        assert!(!matches!(failed, ModelError::Stream { .. }) && failed.to_string().contains("not found"), "{failed}");
        let mut reply = Assembly::default();
        let text: Chunk = serde_json::from_str(r#"{"message":{"content":"Hi"},"done":false}"#).unwrap();
        reply.take(text, &mut crate::model::Discard).unwrap();
        let error: Chunk = serde_json::from_str(r#"{"error":"out of memory"}"#).unwrap();
        let broken = reply.take(error, &mut crate::model::Discard).unwrap_err();
        assert!(matches!(broken, ModelError::Stream { after_content: true, .. }), "{broken}");
    }

    #[test]
    fn requests_go_to_the_chat_api_under_the_servers_address() {
        let model = Ollama::new("m").base_url("http://10.0.0.2:11434/");
        assert_eq!(model.endpoint(), "http://10.0.0.2:11434/api/chat");
    }
}
