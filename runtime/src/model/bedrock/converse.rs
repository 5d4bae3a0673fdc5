//! Chat on AWS Bedrock through the Converse API (`POST /model/{modelId}/converse`, and
//! `/converse-stream`, whose reply is an AWS event stream).

use super::aws::{Aws, PROVIDER, post, stream_exception, url};
use super::event_stream::Frames;
use crate::message::{Message, Role, ToolCall};
use crate::model::anthropic::answer_of_forced_tool;
use crate::model::http::{self, Connection, invalid};
use crate::model::reply::{FinishReason, ModelReply, ReplySink, ToolCallDelta};
use crate::model::request::{ModelRequest, ModelSettings, ToolChoice};
use crate::model::{ModelError, Usage, sse};
use aws_credential_types::Credentials as AwsCredentials;
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};

/// What the forced tool of structured output tells the model.
const ANSWER_TOOL: &str = "Give your answer by calling this tool: its input is the answer.";

/// A client of AWS Bedrock's Converse API: one request shape for every chat model Bedrock
/// serves (Anthropic Claude, Amazon Nova, Meta Llama, Mistral, Cohere, ...).
///
/// `Bedrock::new(model)` takes the model id (`anthropic.claude-3-5-haiku-20241022-v1:0`) or an
/// inference profile's id or ARN (`us.anthropic.claude-3-5-haiku-20241022-v1:0`), and reads
/// the rest from the environment, as AWS's SDKs do:
///
/// - the region from `AWS_REGION`, else `AWS_DEFAULT_REGION` (or [`region`](Self::region));
///   requests go to `https://bedrock-runtime.{region}.amazonaws.com`, or to
///   `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` / `AWS_ENDPOINT_URL` (or [`base_url`](Self::base_url):
///   a VPC endpoint, a proxy, a test server);
/// - credentials from `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and, for temporary ones,
///   `AWS_SESSION_TOKEN` (or [`credentials`](Self::credentials)); each request is signed with
///   Signature Version 4 ([`SigV4`](super::SigV4)). A Bedrock API key in
///   `AWS_BEARER_TOKEN_BEDROCK` (or [`api_key`](Self::api_key)) is sent as a bearer token
///   instead, as AWS's SDKs do when it is set.
///
/// Profiles and single sign-on in `~/.aws/config` and `~/.aws/credentials`, and the
/// credentials of an instance or container role, are not read: load them with AWS's
/// `aws-config` crate and pass them to [`credentials`](Self::credentials) (its `Credentials`
/// are this crate's [`AwsCredentials`]), or export a profile's with
/// `aws configure export-credentials --format env`.
///
/// The request: system messages become `system` blocks; tools are `toolSpec`s with their JSON
/// Schema; a tool's result is a `toolResult` block of a user turn (with `status: error` when
/// the tool failed); consecutive turns of one role are merged, as Converse requires. The tool
/// choice is `any` for [`ToolChoice::Required`] and `tool` for [`ToolChoice::Tool`], which
/// Bedrock accepts for the models that support them (Anthropic Claude, Amazon Nova, Mistral
/// Large); Converse has no `none`, so [`ToolChoice::None`] leaves the tools out, unless the
/// conversation already holds tool calls, which Bedrock accepts only beside a tool
/// configuration: then they are offered and the model chooses. Converse has no switch for
/// parallel tool calls and no JSON mode: structured output is a forced tool named after the
/// schema, whose input is the reply's text (as for [`Anthropic`](crate::model::Anthropic)).
/// Replies are streamed with `ConverseStream` (text and tool-call arguments as they arrive);
/// the usage is Converse's `inputTokens` (with the cache's reads and writes) and
/// `outputTokens`, the finish reason its `stopReason`, and the response id Bedrock's request
/// id. Failures are classified by Bedrock's error names: `ThrottlingException` is
/// [`ModelError::RateLimited`] and retried, `ValidationException` is
/// [`ModelError::BadRequest`] (or [`ModelError::ContextLength`]), `AccessDeniedException` is
/// [`ModelError::Auth`], neither retried.
///
/// ```
/// use graphwright::model::{AwsCredentials, Bedrock, ChatModel};
///
/// let key = AwsCredentials::new("AKIDEXAMPLE", "secret", None, None, "example");
/// let model = Bedrock::new("anthropic.claude-3-5-haiku-20241022-v1:0").region("eu-west-1").credentials(key);
/// assert_eq!((model.provider(), model.model()), ("bedrock", "anthropic.claude-3-5-haiku-20241022-v1:0"));
/// assert_eq!(
///     model.endpoint(true)?,
///     "https://bedrock-runtime.eu-west-1.amazonaws.com/model/anthropic.claude-3-5-haiku-20241022-v1%3A0/converse-stream"
/// );
/// assert!(!format!("{model:?}").contains("secret"));
/// # Ok::<(), graphwright::model::ModelError>(())
/// ```
///
/// A call, with the region and credentials of the environment:
///
/// ```no_run
/// use graphwright::model::{Bedrock, ChatModel};
/// use graphwright::{Message, Runtime};
///
/// # async fn run() -> Result<(), graphwright::model::ModelError> {
/// let model = Bedrock::new("us.anthropic.claude-3-5-haiku-20241022-v1:0").max_tokens(256).temperature(0.2);
/// let reply = model.respond(&[Message::system("Be brief."), Message::user("Hi!")], &Runtime::detached()).await?;
/// println!("{} ({} tokens in, {} out)", reply.message.content, reply.usage.input_tokens, reply.usage.output_tokens);
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Bedrock {
    conn: Connection,
    aws: Aws,
}

impl Bedrock {
    /// A client of `model` (a model id, an inference profile's id, or an ARN), with the region,
    /// credentials and endpoint the environment gives.
    pub fn new(model: impl Into<String>) -> Self {
        let (conn, aws) = Aws::from_env(model.into());
        Self { conn, aws }
    }

    /// The URL a request goes to, streamed (`ConverseStream`) or not (Converse); an error when
    /// no endpoint is given and no region is known.
    pub fn endpoint(&self, stream: bool) -> Result<String, ModelError> {
        url(&self.conn, &self.aws, if stream { "converse-stream" } else { "converse" })
    }

    /// The request body.
    pub(crate) fn body(request: &ModelRequest<'_>) -> Value {
        let settings = request.settings;
        let mut body = Map::new();
        body.insert("messages".into(), Value::Array(turns(request.messages)));
        let system: Vec<Value> =
            request.messages.iter().filter(|m| m.role == Role::System).map(|m| json!({"text": m.content})).collect();
        if !system.is_empty() {
            body.insert("system".into(), Value::Array(system));
        }
        let mut inference = Map::new();
        if let Some(max) = settings.max_tokens {
            inference.insert("maxTokens".into(), json!(max));
        }
        if let Some(temperature) = settings.temperature {
            inference.insert("temperature".into(), json!(temperature));
        }
        if !settings.stop.is_empty() {
            inference.insert("stopSequences".into(), json!(settings.stop));
        }
        if !inference.is_empty() {
            body.insert("inferenceConfig".into(), Value::Object(inference));
        }
        let holds_tool_calls = request.messages.iter().any(|m| m.role == Role::Tool || !m.tool_calls.is_empty());
        if let Some(config) = tool_config(settings, holds_tool_calls) {
            body.insert("toolConfig".into(), config);
        }
        Value::Object(body)
    }

    async fn send(&self, request: ModelRequest<'_>, sink: &mut dyn ReplySink) -> Result<ModelReply, ModelError> {
        let body = serde_json::to_vec(&Self::body(&request))
            .map_err(|e| ModelError::Config(format!("the request could not be encoded: {e}")))?;
        let url = self.endpoint(request.stream)?;
        let accept = if request.stream { "application/vnd.amazon.eventstream" } else { "application/json" };
        let response = post(&self.conn, &self.aws, &url, body, accept).await?;
        let request_id = response.headers().get("x-amzn-requestid").and_then(|v| v.to_str().ok()).map(str::to_owned);
        let mut reply = if request.stream {
            read_stream(response, sink).await?
        } else {
            let raw = response.bytes().await.map_err(|e| http::transport(PROVIDER, &e))?;
            parse_response(&raw)?
        };
        request.model.clone_into(&mut reply.model);
        reply.response_id = request_id;
        Ok(match &request.settings.response_format {
            Some(format) => answer_of_forced_tool(reply, &format.name),
            None => reply,
        })
    }
}

chat_model_over_connection!(Bedrock, |_client| PROVIDER);
aws_builders!(Bedrock);

/// The `toolConfig`: the tools the choice allows and the choice, and structured output's
/// forced tool; `None` when no tool is offered.
fn tool_config(settings: &ModelSettings, holds_tool_calls: bool) -> Option<Value> {
    let spec = |name: &str, description: &str, schema: &Value| {
        let mut spec = json!({"name": name, "inputSchema": {"json": schema}});
        if !description.is_empty() {
            spec["description"] = json!(description);
        }
        json!({"toolSpec": spec})
    };
    let offered = settings.tool_choice != ToolChoice::None || holds_tool_calls;
    let mut tools: Vec<Value> = if offered {
        settings.tools.iter().map(|t| spec(&t.name, &t.description, &t.parameters)).collect()
    } else {
        Vec::new()
    };
    let mut choice = match &settings.tool_choice {
        ToolChoice::Auto | ToolChoice::None => None,
        ToolChoice::Required => Some(json!({"any": {}})),
        ToolChoice::Tool(name) => Some(json!({"tool": {"name": name}})),
    };
    if let Some(format) = &settings.response_format {
        tools.push(spec(&format.name, ANSWER_TOOL, &format.schema));
        choice = Some(json!({"tool": {"name": format.name}}));
    }
    if tools.is_empty() {
        return None;
    }
    let mut config = json!({"tools": tools});
    if let Some(choice) = choice {
        config["toolChoice"] = choice;
    }
    Some(config)
}

/// The conversation as alternating user and assistant turns of content blocks.
fn turns(messages: &[Message]) -> Vec<Value> {
    let mut turns: Vec<(&str, Vec<Value>)> = Vec::new();
    for message in messages {
        let (role, blocks) = match message.role {
            Role::System | Role::Remove => continue,
            Role::User => ("user", vec![json!({"text": message.content})]),
            Role::Tool => {
                let mut result = json!({
                    "toolUseId": message.tool_call_id.as_deref().unwrap_or_default(),
                    "content": [{"text": message.content}],
                });
                if message.is_error {
                    result["status"] = json!("error");
                }
                ("user", vec![json!({"toolResult": result})])
            }
            Role::Assistant => {
                let mut blocks = Vec::new();
                if !message.content.is_empty() {
                    blocks.push(json!({"text": message.content}));
                }
                for call in &message.tool_calls {
                    let input = call.arguments_object();
                    blocks.push(json!({"toolUse": {"toolUseId": call.id, "name": call.name, "input": input}}));
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

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None => FinishReason::Unknown,
        Some("end_turn" | "stop_sequence") => FinishReason::Stop,
        Some("max_tokens" | "model_context_window_exceeded") => FinishReason::Length,
        Some("tool_use") => FinishReason::ToolCalls,
        Some("guardrail_intervened" | "content_filtered") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// Converse's token counts.
#[allow(clippy::struct_field_names)] // the provider's field names
#[derive(Deserialize, Default, Clone, Copy)]
#[serde(rename_all = "camelCase")]
struct WireUsage {
    #[serde(default)]
    input_tokens: u64,
    #[serde(default)]
    output_tokens: u64,
    #[serde(default)]
    cache_read_input_tokens: u64,
    #[serde(default)]
    cache_write_input_tokens: u64,
}

impl WireUsage {
    /// Converse counts the prompt tokens read from and written to the cache apart from
    /// `inputTokens`; `Usage` counts every prompt token as input.
    fn usage(self) -> Usage {
        let input = self.input_tokens + self.cache_read_input_tokens + self.cache_write_input_tokens;
        Usage::tokens(input, self.output_tokens).with_cached(self.cache_read_input_tokens)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Response {
    output: Option<Output>,
    stop_reason: Option<String>,
    usage: Option<WireUsage>,
}

#[derive(Deserialize)]
struct Output {
    message: Option<OutputMessage>,
}

#[derive(Deserialize)]
struct OutputMessage {
    #[serde(default)]
    content: Vec<Value>,
}

/// A whole reply (Converse).
fn parse_response(raw: &[u8]) -> Result<ModelReply, ModelError> {
    let response: Response = serde_json::from_slice(raw)
        .map_err(|e| invalid(raw, format!("the response is not a Converse response: {e}")))?;
    let Some(message) = response.output.and_then(|o| o.message) else {
        return Err(invalid(raw, "the response has no `output.message`"));
    };
    let mut text = String::new();
    let mut calls = Vec::new();
    for (index, block) in message.content.iter().enumerate() {
        if let Some(piece) = block.get("text").and_then(Value::as_str) {
            text.push_str(piece);
        } else if let Some(call) = block.get("toolUse") {
            let field = |name| call.get(name).and_then(Value::as_str).filter(|s| !s.is_empty());
            let (Some(id), Some(name)) = (field("toolUseId"), field("name")) else {
                return Err(invalid(raw, format!("toolUse block {index} lacks its toolUseId or name")));
            };
            let input = call.get("input").cloned().filter(|v| !v.is_null()).unwrap_or_else(|| json!({}));
            calls.push(ToolCall::new(id, name, input));
        }
        // Reasoning, citations, guardrail and block kinds added later carry nothing a
        // `Message` holds.
    }
    Ok(ModelReply {
        message: Message::assistant(text).with_tool_calls(calls),
        usage: response.usage.map(WireUsage::usage).unwrap_or_default(),
        finish_reason: finish_reason(response.stop_reason.as_deref()),
        model: String::new(),
        response_id: None,
    })
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockStart {
    content_block_index: u64,
    #[serde(default)]
    start: Option<StartOf>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct StartOf {
    tool_use: Option<ToolUseStart>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ToolUseStart {
    #[serde(default)]
    tool_use_id: String,
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct BlockDelta {
    content_block_index: u64,
    delta: DeltaOf,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct DeltaOf {
    text: Option<String>,
    tool_use: Option<ToolUseDelta>,
}

#[derive(Deserialize)]
struct ToolUseDelta {
    #[serde(default)]
    input: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct MessageStop {
    stop_reason: Option<String>,
}

#[derive(Deserialize)]
struct Metadata {
    usage: Option<WireUsage>,
}

/// A streamed reply being assembled from `ConverseStream`'s events.
#[derive(Default)]
struct Assembly {
    text: String,
    /// The tool calls: id, name, and the arguments' JSON so far.
    calls: Vec<(String, String, String)>,
    /// Which call each tool-use content block is (by `contentBlockIndex`).
    blocks: Vec<(u64, usize)>,
    stop: Option<String>,
    usage: Option<WireUsage>,
    delivered: bool,
}

impl Assembly {
    fn parse<T: DeserializeOwned>(&self, kind: &str, payload: &[u8]) -> Result<T, ModelError> {
        serde_json::from_slice(payload).map_err(|e| {
            let text = String::from_utf8_lossy(payload);
            sse::broken(PROVIDER, self.delivered, format!("a `{kind}` event is not ConverseStream's ({e}): {text}"))
        })
    }

    /// Takes one event; `Ok(true)` when the reply is complete (its `metadata`, after
    /// `messageStop`).
    fn take(&mut self, kind: &str, payload: &[u8], sink: &mut dyn ReplySink) -> Result<bool, ModelError> {
        match kind {
            "contentBlockStart" => {
                let start: BlockStart = self.parse(kind, payload)?;
                let Some(tool) = start.start.and_then(|s| s.tool_use) else { return Ok(false) };
                if tool.tool_use_id.is_empty() || tool.name.is_empty() {
                    return Err(sse::broken(
                        PROVIDER,
                        self.delivered,
                        format!("tool-use block {} lacks its toolUseId or name", start.content_block_index),
                    ));
                }
                let at = self.calls.len();
                self.delivered = true;
                let delta = ToolCallDelta {
                    index: at as u32,
                    id: Some(&tool.tool_use_id),
                    name: Some(&tool.name),
                    arguments: "",
                };
                sink.tool_call(delta);
                self.blocks.push((start.content_block_index, at));
                self.calls.push((tool.tool_use_id, tool.name, String::new()));
            }
            "contentBlockDelta" => {
                let delta: BlockDelta = self.parse(kind, payload)?;
                if let Some(text) = delta.delta.text.filter(|t| !t.is_empty()) {
                    self.delivered = true;
                    sink.text(&text);
                    self.text.push_str(&text);
                } else if let Some(piece) = delta.delta.tool_use {
                    let index = delta.content_block_index;
                    let Some(&(_, at)) = self.blocks.iter().rev().find(|(block, _)| *block == index) else {
                        return Err(sse::broken(
                            PROVIDER,
                            self.delivered,
                            format!("tool-use input for block {index}, which never started"),
                        ));
                    };
                    self.delivered = true;
                    sink.tool_call(ToolCallDelta { index: at as u32, id: None, name: None, arguments: &piece.input });
                    self.calls[at].2.push_str(&piece.input);
                }
                // Reasoning deltas (and kinds added later) are not part of the reply.
            }
            "messageStop" => {
                let stop: MessageStop = self.parse(kind, payload)?;
                self.stop = Some(stop.stop_reason.unwrap_or_default());
            }
            "metadata" => {
                let metadata: Metadata = self.parse(kind, payload)?;
                self.usage = metadata.usage.or(self.usage);
                return Ok(self.stop.is_some());
            }
            // `messageStart`, `contentBlockStop`, and event types added later.
            _ => {}
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
            usage: self.usage.map(WireUsage::usage).unwrap_or_default(),
            finish_reason: finish_reason(self.stop.as_deref().filter(|s| !s.is_empty())),
            model: String::new(),
            response_id: None,
        }
    }
}

/// A streamed reply: frames until `metadata` after `messageStop` (or the body's end after
/// `messageStop`); an exception frame is the error it names.
async fn read_stream(response: reqwest::Response, sink: &mut dyn ReplySink) -> Result<ModelReply, ModelError> {
    let mut frames = Frames::new(response);
    let mut reply = Assembly::default();
    while let Some(frame) = frames.next().await.map_err(|message| sse::broken(PROVIDER, reply.delivered, message))? {
        match frame.message_type.as_str() {
            "exception" => {
                let payload: Value = serde_json::from_slice(&frame.payload).unwrap_or(Value::Null);
                let message = payload
                    .get("message")
                    .or_else(|| payload.get("Message"))
                    .and_then(Value::as_str)
                    .map_or_else(|| String::from_utf8_lossy(&frame.payload).into_owned(), str::to_owned);
                return Err(stream_exception(&frame.kind, &message, reply.delivered));
            }
            "error" => {
                let message = frame.error_message.unwrap_or_default();
                return Err(stream_exception(&frame.kind, &message, reply.delivered));
            }
            _ => {
                if reply.take(&frame.kind, &frame.payload, sink)? {
                    return Ok(reply.finish());
                }
            }
        }
    }
    if reply.stop.is_some() {
        return Ok(reply.finish());
    }
    Err(sse::broken(PROVIDER, reply.delivered, "the stream ended before `messageStop`"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::reply::Discard;
    use crate::model::request::{ResponseFormat, ToolSpec};
    use std::sync::Arc;

    fn body_of(messages: &[Message], settings: &ModelSettings) -> Value {
        Bedrock::body(&ModelRequest { model: "m", messages, settings, stream: false })
    }

    #[test]
    fn turns_alternate_tool_results_are_user_blocks_and_the_config_follows_the_choice() {
        let mut settings = ModelSettings {
            max_tokens: Some(64),
            temperature: Some(0.5),
            stop: vec!["END".into()],
            ..Default::default()
        };
        settings.tools = Arc::new([ToolSpec {
            name: "weather".into(),
            description: "the weather".into(),
            parameters: json!({"type": "object"}),
        }]);
        settings.tool_choice = ToolChoice::Required;
        let messages = [
            Message::system("be brief"),
            Message::user("weather?"),
            Message::assistant("").with_tool_calls(vec![
                ToolCall::new("t1", "weather", json!({"city": "Oslo"})),
                ToolCall::new("t2", "weather", json!("{broken")),
            ]),
            Message::tool("t1", "4C"),
            Message::tool_error("t2", "bad arguments"),
            Message::user("thanks"),
        ];
        let body = body_of(&messages, &settings);
        assert_eq!(body["system"], json!([{"text": "be brief"}]));
        let turns = body["messages"].as_array().unwrap();
        let roles: Vec<_> = turns.iter().map(|t| t["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["user", "assistant", "user"]);
        assert_eq!(
            turns[1]["content"][0]["toolUse"],
            json!({"toolUseId": "t1", "name": "weather", "input": {"city": "Oslo"}})
        );
        assert_eq!(turns[1]["content"][1]["toolUse"]["input"], json!({}), "unparseable arguments go as an empty input");
        assert_eq!(turns[2]["content"][0], json!({"toolResult": {"toolUseId": "t1", "content": [{"text": "4C"}]}}));
        assert_eq!(turns[2]["content"][1]["toolResult"]["status"], "error");
        assert_eq!(turns[2]["content"][2], json!({"text": "thanks"}));
        assert_eq!(body["inferenceConfig"], json!({"maxTokens": 64, "temperature": 0.5, "stopSequences": ["END"]}));
        let config = &body["toolConfig"];
        assert_eq!(config["toolChoice"], json!({"any": {}}));
        assert_eq!(
            config["tools"][0],
            json!({"toolSpec": {"name": "weather", "description": "the weather", "inputSchema": {"json": {"type": "object"}}}})
        );

        settings.tool_choice = ToolChoice::None;
        assert!(body_of(&messages[..2], &settings).get("toolConfig").is_none(), "no tools, no config");
        let kept = body_of(&messages, &settings);
        assert!(kept["toolConfig"]["toolChoice"].is_null(), "a conversation with tool calls keeps the tools");
        settings.response_format = Some(ResponseFormat { name: "Verdict".into(), schema: json!({"type": "object"}) });
        let forced = body_of(&messages[..2], &settings);
        assert_eq!(forced["toolConfig"]["toolChoice"], json!({"tool": {"name": "Verdict"}}));
        assert_eq!(forced["toolConfig"]["tools"][0]["toolSpec"]["name"], "Verdict");
    }

    #[test]
    fn whole_replies_give_text_calls_usage_and_reason_and_odd_shapes_are_errors() {
        let raw = br#"{"output": {"message": {"role": "assistant", "content": [
            {"reasoningContent": {"reasoningText": {"text": "hm"}}}, {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_1", "name": "weather", "input": {"city": "Oslo"}}}]}},
            "stopReason": "tool_use",
            "usage": {"inputTokens": 10, "outputTokens": 5, "totalTokens": 19, "cacheReadInputTokens": 4}}"#;
        let reply = parse_response(raw).unwrap();
        assert_eq!(reply.message.content, "Checking.");
        assert_eq!(reply.message.tool_calls, [ToolCall::new("tooluse_1", "weather", json!({"city": "Oslo"}))]);
        assert_eq!(reply.usage, Usage::tokens(14, 5).with_cached(4));
        assert_eq!(reply.finish_reason, FinishReason::ToolCalls);
        assert!(parse_response(b"<html>").unwrap_err().to_string().contains("not a Converse response"));
        assert!(parse_response(b"{}").unwrap_err().to_string().contains("no `output.message`"));
        let nameless = br#"{"output": {"message": {"content": [{"toolUse": {"toolUseId": "t"}}]}}}"#;
        assert!(parse_response(nameless).unwrap_err().to_string().contains("toolUseId or name"));
        let filtered = br#"{"output": {"message": {"content": []}}, "stopReason": "guardrail_intervened"}"#;
        assert_eq!(parse_response(filtered).unwrap().finish_reason, FinishReason::ContentFilter);
    }

    #[test]
    fn streamed_events_assemble_a_reply_and_a_delta_to_no_call_is_an_error() {
        let mut reply = Assembly::default();
        let events = [
            ("messageStart", json!({"role": "assistant"})),
            ("contentBlockDelta", json!({"contentBlockIndex": 0, "delta": {"text": "Hi"}})),
            (
                "contentBlockStart",
                json!({"contentBlockIndex": 1, "start": {"toolUse": {"toolUseId": "t1", "name": "w"}}}),
            ),
            ("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "{\"a\":"}}})),
            ("contentBlockDelta", json!({"contentBlockIndex": 1, "delta": {"toolUse": {"input": "1}"}}})),
            ("messageStop", json!({"stopReason": "tool_use"})),
        ];
        for (kind, payload) in events {
            assert!(!reply.take(kind, payload.to_string().as_bytes(), &mut Discard).unwrap());
        }
        let usage = json!({"usage": {"inputTokens": 3, "outputTokens": 2}}).to_string();
        assert!(reply.take("metadata", usage.as_bytes(), &mut Discard).unwrap());
        let done = reply.finish();
        assert_eq!(done.message.content, "Hi");
        assert_eq!(done.message.tool_calls, [ToolCall::new("t1", "w", json!({"a": 1}))]);
        assert_eq!((done.usage, done.finish_reason), (Usage::tokens(3, 2), FinishReason::ToolCalls));

        let mut reply = Assembly::default();
        let stray = json!({"contentBlockIndex": 4, "delta": {"toolUse": {"input": "{}"}}}).to_string();
        assert!(matches!(
            reply.take("contentBlockDelta", stray.as_bytes(), &mut Discard),
            Err(ModelError::Stream { .. })
        ));
        assert!(matches!(reply.take("messageStop", b"[1]", &mut Discard), Err(ModelError::Stream { .. })));
    }
}
