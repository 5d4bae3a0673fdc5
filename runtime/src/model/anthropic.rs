//! Anthropic Messages (`POST {base}/v1/messages`).

use super::http::{self, Connection, ErrorBody, invalid};
use super::reply::{FinishReason, ModelReply, ReplySink, ToolCallDelta};
use super::request::{ModelRequest, ToolChoice};
use super::sse;
use super::{ModelError, Usage};
use crate::message::{Message, Role, ToolCall};
use serde::Deserialize;
use serde_json::{Map, Value, json};

const PROVIDER: &str = "anthropic";
const DEFAULT_BASE_URL: &str = "https://api.anthropic.com";
const API_VERSION: &str = "2023-06-01";
/// Anthropic requires a reply length; this one is used when none is set.
const DEFAULT_MAX_TOKENS: u32 = 4096;

/// A client of Anthropic's Messages API.
///
/// `Anthropic::new(model)` reads the key from `ANTHROPIC_API_KEY` and the base URL from
/// `ANTHROPIC_BASE_URL` (default `https://api.anthropic.com`; requests go to
/// `{base}/v1/messages`). System messages become the request's `system` text, tool results
/// become `tool_result` blocks of a user turn, and consecutive turns of one role are merged, as
/// the API requires. Structured output is a forced tool named after the schema; its input is
/// the reply's text.
///
/// ```
/// use graphwright::model::{Anthropic, ChatModel};
///
/// let model = Anthropic::new("claude-sonnet-4-5").base_url("http://127.0.0.1:4010").max_tokens(512);
/// assert_eq!(model.endpoint(), "http://127.0.0.1:4010/v1/messages");
/// ```
#[derive(Clone)]
pub struct Anthropic {
    conn: Connection,
    betas: Vec<String>,
}

impl Anthropic {
    /// A client of `model`, keyed and addressed by `ANTHROPIC_API_KEY` and `ANTHROPIC_BASE_URL`.
    pub fn new(model: impl Into<String>) -> Self {
        let conn = Connection::from_env(model.into(), "ANTHROPIC_BASE_URL", DEFAULT_BASE_URL, "ANTHROPIC_API_KEY");
        Self { conn, betas: Vec::new() }
    }

    /// The server's base URL, without `/v1`.
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.conn.base_url = url.into();
        self
    }

    /// The API key, sent as `x-api-key`.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.conn.api_key = Some(key.into());
        self
    }

    /// A beta feature to enable (`anthropic-beta`).
    #[must_use]
    pub fn beta(mut self, feature: impl Into<String>) -> Self {
        self.betas.push(feature.into());
        self
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> String {
        let base = self.conn.base_url.trim_end_matches('/');
        let base = base.strip_suffix("/v1").unwrap_or(base);
        format!("{base}/v1/messages")
    }

    /// The request body.
    pub(crate) fn body(request: &ModelRequest<'_>) -> Value {
        let settings = request.settings;
        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        body.insert("max_tokens".into(), json!(settings.max_tokens.unwrap_or(DEFAULT_MAX_TOKENS)));
        let system: Vec<&str> =
            request.messages.iter().filter(|m| m.role == Role::System).map(|m| m.content.as_str()).collect();
        if !system.is_empty() {
            body.insert("system".into(), json!(system.join("\n\n")));
        }
        body.insert("messages".into(), Value::Array(turns(request.messages)));
        let mut tools: Vec<Value> = settings
            .tools
            .iter()
            .map(|t| json!({"name": t.name, "description": t.description, "input_schema": t.parameters}))
            .collect();
        let mut choice = match &settings.tool_choice {
            ToolChoice::Auto => json!({"type": "auto"}),
            ToolChoice::None => json!({"type": "none"}),
            ToolChoice::Required => json!({"type": "any"}),
            ToolChoice::Tool(name) => json!({"type": "tool", "name": name}),
        };
        if let Some(format) = &settings.response_format {
            tools.push(json!({
                "name": format.name,
                "description": "Give your answer by calling this tool: its input is the answer.",
                "input_schema": format.schema,
            }));
            choice = json!({"type": "tool", "name": format.name});
        }
        if !tools.is_empty() {
            if settings.parallel_tool_calls == Some(false) {
                choice["disable_parallel_tool_use"] = json!(true);
            }
            body.insert("tools".into(), Value::Array(tools));
            body.insert("tool_choice".into(), choice);
        }
        if let Some(temperature) = settings.temperature {
            body.insert("temperature".into(), json!(temperature));
        }
        if !settings.stop.is_empty() {
            body.insert("stop_sequences".into(), json!(settings.stop));
        }
        if request.stream {
            body.insert("stream".into(), json!(true));
        }
        Value::Object(body)
    }

    async fn send(&self, request: ModelRequest<'_>, sink: &mut dyn ReplySink) -> Result<ModelReply, ModelError> {
        let body = serde_json::to_vec(&Self::body(&request))
            .map_err(|e| ModelError::Config(format!("the request could not be encoded: {e}")))?;
        let mut builder = self.conn.http.post(self.endpoint()).header("anthropic-version", API_VERSION);
        if let Some(key) = &self.conn.api_key {
            builder = builder.header("x-api-key", key);
        }
        if !self.betas.is_empty() {
            builder = builder.header("anthropic-beta", self.betas.join(","));
        }
        let response = http::post(PROVIDER, builder, body).await?;
        let structured = request.settings.response_format.as_ref().map(|f| f.name.as_str());
        let reply = if request.stream {
            read_stream(response, sink).await?
        } else {
            let body = response.bytes().await.map_err(|e| http::transport(PROVIDER, &e))?;
            parse_message(&body)?
        };
        Ok(match structured {
            Some(name) => answer_of_forced_tool(reply, name),
            None => reply,
        })
    }
}

chat_model_over_connection!(Anthropic, |_client| PROVIDER);

/// The conversation as alternating user and assistant turns of content blocks.
fn turns(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::System | Role::Remove => continue,
            Role::User => ("user", vec![json!({"type": "text", "text": message.content})]),
            Role::Tool => (
                "user",
                vec![json!({
                    "type": "tool_result",
                    "tool_use_id": message.tool_call_id.as_deref().unwrap_or_default(),
                    "content": message.content,
                    "is_error": message.is_error,
                })],
            ),
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !message.content.is_empty() {
                    blocks.push(json!({"type": "text", "text": message.content}));
                }
                for call in &message.tool_calls {
                    let input = call.arguments_object();
                    blocks.push(json!({"type": "tool_use", "id": call.id, "name": call.name, "input": input}));
                }
                if blocks.is_empty() {
                    continue;
                }
                ("assistant", blocks)
            }
        };
        match turns.last_mut() {
            Some((last, content)) if *last == role => content.extend(blocks),
            _ => turns.push((role, blocks)),
        }
    }
    turns.into_iter().map(|(role, content)| json!({"role": role, "content": content})).collect()
}

/// A structured reply: the forced tool's input, as the reply's text (also Bedrock's).
pub(super) fn answer_of_forced_tool(mut reply: ModelReply, tool: &str) -> ModelReply {
    if let Some(at) = reply.message.tool_calls.iter().position(|c| c.name == tool) {
        let call = reply.message.tool_calls.remove(at);
        reply.message.content = match call.arguments {
            Value::String(text) => text,
            other => other.to_string(),
        };
        reply.finish_reason = FinishReason::Stop;
    }
    reply
}

#[derive(Deserialize)]
struct WireMessage {
    id: Option<String>,
    model: Option<String>,
    content: Option<Vec<Value>>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
    #[serde(rename = "type")]
    kind: Option<String>,
    error: Option<Value>,
}

// The provider's field names.
#[allow(clippy::struct_field_names)]
#[derive(Deserialize, Default, Clone, Copy)]
struct WireUsage {
    #[serde(default)]
    input_tokens: Option<u64>,
    #[serde(default)]
    output_tokens: Option<u64>,
    #[serde(default)]
    cache_read_input_tokens: Option<u64>,
    #[serde(default)]
    cache_creation_input_tokens: Option<u64>,
}

impl WireUsage {
    /// Anthropic counts cache reads and writes apart from `input_tokens`; `Usage` counts every
    /// prompt token as input.
    fn usage(self) -> Usage {
        let cached = self.cache_read_input_tokens.unwrap_or(0);
        let input = self.input_tokens.unwrap_or(0) + cached + self.cache_creation_input_tokens.unwrap_or(0);
        Usage::tokens(input, self.output_tokens.unwrap_or(0)).with_cached(cached)
    }
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None => FinishReason::Unknown,
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("refusal") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// The input of a `tool_use` block: an object.
fn tool_input(id: &str, name: &str, input: Option<&Value>) -> ToolCall {
    ToolCall::new(id, name, input.cloned().filter(|v| !v.is_null()).unwrap_or_else(|| json!({})))
}

/// A non-streamed reply.
fn parse_message(raw: &[u8]) -> Result<ModelReply, ModelError> {
    let message: WireMessage =
        serde_json::from_slice(raw).map_err(|e| invalid(raw, format!("the response is not a message: {e}")))?;
    if message.kind.as_deref() == Some("error") || message.error.is_some() {
        return Err(http::classify_event(PROVIDER, &ErrorBody::parse(raw)));
    }
    let Some(blocks) = message.content else {
        return Err(invalid(raw, "the response has no `content`"));
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    for (index, block) in blocks.iter().enumerate() {
        match block.get("type").and_then(Value::as_str) {
            Some("text") => text.push_str(block.get("text").and_then(Value::as_str).unwrap_or_default()),
            Some("tool_use") => {
                let field = |name| block.get(name).and_then(Value::as_str).filter(|s| !s.is_empty());
                let (Some(id), Some(name)) = (field("id"), field("name")) else {
                    return Err(invalid(raw, format!("tool_use block {index} lacks its id or name")));
                };
                calls.push(tool_input(id, name, block.get("input")));
            }
            // Thinking, citations and block types added later carry nothing a `Message` holds.
            _ => {}
        }
    }
    Ok(ModelReply {
        message: Message::assistant(text).with_tool_calls(calls),
        usage: message.usage.map(WireUsage::usage).unwrap_or_default(),
        finish_reason: finish_reason(message.stop_reason.as_deref()),
        model: message.model.unwrap_or_default(),
        response_id: message.id,
    })
}

#[derive(Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum StreamEvent {
    MessageStart {
        message: StartedMessage,
    },
    ContentBlockStart {
        index: u32,
        content_block: Value,
    },
    ContentBlockDelta {
        index: u32,
        delta: Value,
    },
    ContentBlockStop {},
    MessageDelta {
        delta: Option<Value>,
        usage: Option<WireUsage>,
    },
    MessageStop {},
    Ping {},
    Error {
        error: Value,
    },
    #[serde(other)]
    Unknown,
}

#[derive(Deserialize)]
struct StartedMessage {
    id: Option<String>,
    model: Option<String>,
    usage: Option<WireUsage>,
}

/// A content block being streamed.
enum Block {
    Text,
    /// A tool call: its position among the reply's calls.
    Call(usize),
    Other,
}

/// A streamed reply being assembled.
#[derive(Default)]
struct Assembly {
    text: String,
    calls: Vec<(String, String, String)>,
    blocks: Vec<(u32, Block)>,
    usage: WireUsage,
    stop: Option<String>,
    id: Option<String>,
    model: Option<String>,
    delivered: bool,
}

impl Assembly {
    fn block(&self, index: u32) -> Option<&Block> {
        self.blocks.iter().rev().find(|(i, _)| *i == index).map(|(_, b)| b)
    }

    /// Takes one event; `Ok(true)` when the reply is complete.
    fn take(&mut self, event: StreamEvent, sink: &mut dyn ReplySink) -> Result<bool, ModelError> {
        match event {
            StreamEvent::MessageStart { message } => {
                self.id = message.id;
                self.model = message.model;
                if let Some(usage) = message.usage {
                    self.usage = usage;
                }
            }
            StreamEvent::ContentBlockStart { index, content_block } => {
                let field = |name| content_block.get(name).and_then(Value::as_str).unwrap_or_default().to_owned();
                let block = match content_block.get("type").and_then(Value::as_str) {
                    Some("text") => Block::Text,
                    Some("tool_use") => {
                        let (id, name) = (field("id"), field("name"));
                        if id.is_empty() || name.is_empty() {
                            return Err(ModelError::InvalidOutput {
                                raw: content_block.to_string(),
                                reason: format!("streamed tool_use block {index} lacks its id or name"),
                            });
                        }
                        let at = self.calls.len();
                        self.delivered = true;
                        sink.tool_call(ToolCallDelta {
                            index: at as u32,
                            id: Some(&id),
                            name: Some(&name),
                            arguments: "",
                        });
                        self.calls.push((id, name, String::new()));
                        Block::Call(at)
                    }
                    _ => Block::Other,
                };
                self.blocks.push((index, block));
            }
            StreamEvent::ContentBlockDelta { index, delta } => {
                let piece = |name| delta.get(name).and_then(Value::as_str).unwrap_or_default();
                match (self.block(index), delta.get("type").and_then(Value::as_str)) {
                    (Some(Block::Text), Some("text_delta")) => {
                        let text = piece("text");
                        if !text.is_empty() {
                            self.delivered = true;
                            sink.text(text);
                            self.text.push_str(text);
                        }
                    }
                    (Some(&Block::Call(at)), Some("input_json_delta")) => {
                        let json = piece("partial_json");
                        self.delivered = true;
                        sink.tool_call(ToolCallDelta { index: at as u32, id: None, name: None, arguments: json });
                        self.calls[at].2.push_str(json);
                    }
                    (None, _) => {
                        return Err(sse::broken(
                            PROVIDER,
                            self.delivered,
                            format!("a delta for block {index}, which never started"),
                        ));
                    }
                    _ => {}
                }
            }
            StreamEvent::MessageDelta { delta, usage } => {
                if let Some(reason) = delta.as_ref().and_then(|d| d.get("stop_reason")).and_then(Value::as_str) {
                    self.stop = Some(reason.to_owned());
                }
                // `message_delta` usage is cumulative: it replaces, never adds.
                if let Some(usage) = usage {
                    self.usage.output_tokens = usage.output_tokens.or(self.usage.output_tokens);
                    self.usage.input_tokens = usage.input_tokens.or(self.usage.input_tokens);
                    self.usage.cache_read_input_tokens =
                        usage.cache_read_input_tokens.or(self.usage.cache_read_input_tokens);
                }
            }
            StreamEvent::MessageStop {} => return Ok(true),
            StreamEvent::Error { error } => {
                let error = http::classify_event(PROVIDER, &ErrorBody::of(&error));
                return Err(if self.delivered { sse::broken(PROVIDER, true, error.to_string()) } else { error });
            }
            StreamEvent::ContentBlockStop {} | StreamEvent::Ping {} | StreamEvent::Unknown => {}
        }
        Ok(false)
    }

    fn finish(self) -> ModelReply {
        let calls = self
            .calls
            .into_iter()
            .map(|(id, name, json)| {
                if json.trim().is_empty() {
                    ToolCall::new(id, name, json!({}))
                } else {
                    ToolCall::from_text(id, name, &json)
                }
            })
            .collect();
        ModelReply {
            message: Message::assistant(self.text).with_tool_calls(calls),
            usage: self.usage.usage(),
            finish_reason: finish_reason(self.stop.as_deref()),
            model: self.model.unwrap_or_default(),
            response_id: self.id,
        }
    }
}

/// A streamed reply: events until `message_stop`.
async fn read_stream(response: reqwest::Response, sink: &mut dyn ReplySink) -> Result<ModelReply, ModelError> {
    let mut events = sse::Events::new(response);
    let mut reply = Assembly::default();
    while events.next().await.map_err(|message| sse::broken(PROVIDER, reply.delivered, message))? {
        let data = events.text().map_err(|message| sse::broken(PROVIDER, reply.delivered, message))?;
        if data.trim().is_empty() {
            continue;
        }
        let parsed: StreamEvent = serde_json::from_str(data).map_err(|e| {
            sse::broken(PROVIDER, reply.delivered, format!("an event is not a Messages stream event ({e}): {data}"))
        })?;
        if reply.take(parsed, sink)? {
            return Ok(reply.finish());
        }
    }
    Err(sse::broken(PROVIDER, reply.delivered, "the stream ended before `message_stop`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::ModelSettings;
    use crate::model::reply::Discard;

    #[test]
    fn turns_alternate_and_tool_results_are_user_blocks() {
        let messages = [
            Message::system("be brief"),
            Message::user("weather?"),
            Message::assistant("").with_tool_calls(vec![
                ToolCall::new("t1", "weather", json!({"city": "Oslo"})),
                ToolCall::new("t2", "time", json!("{broken")),
            ]),
            Message::tool("t1", "4C"),
            Message::tool_error("t2", "bad arguments"),
            Message::user("thanks"),
        ];
        let settings = ModelSettings::default();
        let body =
            Anthropic::body(&ModelRequest { model: "m", messages: &messages, settings: &settings, stream: false });
        assert_eq!(body["system"], "be brief");
        let turns = body["messages"].as_array().unwrap();
        let roles: Vec<_> = turns.iter().map(|t| t["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(turns[1]["content"][1]["input"], json!({}), "unparseable arguments are sent as an empty input");
        assert_eq!(turns[2]["content"][1]["is_error"], true);
        assert_eq!(turns[2]["content"][2]["text"], "thanks");
        assert_eq!(body["max_tokens"], DEFAULT_MAX_TOKENS);
    }

    #[test]
    fn stream_usage_is_cumulative_and_a_delta_to_no_block_is_an_error() {
        let mut reply = Assembly::default();
        let events = [
            json!({"type": "message_start", "message": {"id": "m1", "model": "c", "usage": {"input_tokens": 10, "cache_read_input_tokens": 4, "output_tokens": 1}}}),
            json!({"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
            json!({"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "Hi"}}),
            json!({"type": "message_delta", "delta": {"stop_reason": "end_turn"}, "usage": {"output_tokens": 5}}),
            json!({"type": "message_delta", "delta": {}, "usage": {"output_tokens": 7}}),
        ];
        for event in events {
            assert!(!reply.take(serde_json::from_value(event).unwrap(), &mut Discard).unwrap());
        }
        let done = reply.finish();
        assert_eq!(done.usage, Usage::tokens(14, 7).with_cached(4));
        assert_eq!(done.message.content, "Hi");
        let mut reply = Assembly::default();
        let stray = json!({"type": "content_block_delta", "index": 3, "delta": {"type": "text_delta", "text": "x"}});
        assert!(matches!(
            reply.take(serde_json::from_value(stray).unwrap(), &mut Discard),
            Err(ModelError::Stream { .. })
        ));
    }

    #[test]
    fn replies_of_odd_shapes_are_typed_errors() {
        assert!(matches!(parse_message(b"{}"), Err(ModelError::InvalidOutput { .. })));
        assert!(matches!(parse_message(b"[1]"), Err(ModelError::InvalidOutput { .. })));
        let nameless = br#"{"content": [{"type": "tool_use", "id": "t", "input": {}}]}"#;
        assert!(
            matches!(parse_message(nameless), Err(ModelError::InvalidOutput { reason, .. }) if reason.contains("id or name"))
        );
        let overloaded = br#"{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}"#;
        assert!(matches!(parse_message(overloaded), Err(ModelError::Overloaded { .. })));
        let thinking = br#"{"content": [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "ok"}], "stop_reason": "pause_turn"}"#;
        let reply = parse_message(thinking).unwrap();
        assert_eq!(reply.message.content, "ok");
        assert_eq!(reply.finish_reason, FinishReason::Other("pause_turn".into()));
    }
}
