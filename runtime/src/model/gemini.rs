//! Google Gemini's native API (`generateContent`, and `streamGenerateContent` as server-sent
//! events): function calling, structured output by JSON schema, token counts.

use super::http::{self, Connection, ErrorBody, invalid};
use super::reply::{FinishReason, ModelReply, ReplySink, ToolCallDelta};
use super::request::{ModelRequest, ToolChoice};
use super::sse;
use super::{ModelError, Usage};
use crate::message::{Message, Role, ToolCall};
use serde::Deserialize;
use serde_json::{Map, Value, json};

const PROVIDER: &str = "gemini";
const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";

/// A client of the Gemini API's native endpoints (`POST {base}/models/{model}:generateContent`,
/// `:streamGenerateContent?alt=sse` when streaming).
///
/// `Gemini::new(model)` reads the key from `GEMINI_API_KEY` (or `GOOGLE_API_KEY`), sent as
/// `x-goog-api-key`, and the base URL from `GEMINI_BASE_URL` (default
/// `https://generativelanguage.googleapis.com/v1beta`). System messages become the request's
/// `systemInstruction`; tools are function declarations, and the tool choice is Gemini's
/// function-calling mode (`AUTO`, `ANY`, `NONE`, or `ANY` limited to one function); structured
/// output is sent as `responseJsonSchema`. Gemini may give function calls no ids: those get a
/// fresh one.
///
/// ```
/// use graphwright::model::{ChatModel, Gemini};
///
/// let model = Gemini::new("gemini-2.5-flash").base_url("http://127.0.0.1:4010/v1beta").api_key("key");
/// assert_eq!((model.provider(), model.model()), ("gemini", "gemini-2.5-flash"));
/// assert_eq!(model.endpoint(false), "http://127.0.0.1:4010/v1beta/models/gemini-2.5-flash:generateContent");
/// ```
#[derive(Clone)]
pub struct Gemini {
    conn: Connection,
}

impl Gemini {
    /// A client of `model`, keyed by `GEMINI_API_KEY` (or `GOOGLE_API_KEY`) and addressed by
    /// `GEMINI_BASE_URL`.
    pub fn new(model: impl Into<String>) -> Self {
        let mut conn = Connection::from_env(model.into(), "GEMINI_BASE_URL", DEFAULT_BASE_URL, "GEMINI_API_KEY");
        if conn.api_key.is_none() {
            conn.api_key = std::env::var("GOOGLE_API_KEY").ok().filter(|key| !key.trim().is_empty());
        }
        Self { conn }
    }

    /// The API's base URL, up to and including its version (`…/v1beta`).
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.conn.base_url = url.into();
        self
    }

    /// The API key, sent as `x-goog-api-key`.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.conn.api_key = Some(key.into());
        self
    }

    /// The URL a request goes to, streamed or not.
    pub fn endpoint(&self, stream: bool) -> String {
        let base = self.conn.base_url.trim_end_matches('/');
        let model = &self.conn.model;
        if stream {
            format!("{base}/models/{model}:streamGenerateContent?alt=sse")
        } else {
            format!("{base}/models/{model}:generateContent")
        }
    }

    /// The request body.
    pub(crate) fn body(request: &ModelRequest<'_>) -> Value {
        let settings = request.settings;
        let mut body = Map::new();
        let system: Vec<Value> =
            request.messages.iter().filter(|m| m.role == Role::System).map(|m| json!({"text": m.content})).collect();
        if !system.is_empty() {
            body.insert("systemInstruction".into(), json!({"parts": system}));
        }
        body.insert("contents".into(), Value::Array(contents(request.messages)));
        if !settings.tools.is_empty() && settings.tool_choice != ToolChoice::None {
            let declarations: Vec<Value> = settings
                .tools
                .iter()
                .map(|t| json!({"name": t.name, "description": t.description, "parametersJsonSchema": t.parameters}))
                .collect();
            body.insert("tools".into(), json!([{"functionDeclarations": declarations}]));
            let config = match &settings.tool_choice {
                ToolChoice::Auto | ToolChoice::None => json!({"mode": "AUTO"}),
                ToolChoice::Required => json!({"mode": "ANY"}),
                ToolChoice::Tool(name) => json!({"mode": "ANY", "allowedFunctionNames": [name]}),
            };
            body.insert("toolConfig".into(), json!({"functionCallingConfig": config}));
        }
        let mut generation = Map::new();
        if let Some(temperature) = settings.temperature {
            generation.insert("temperature".into(), json!(temperature));
        }
        if let Some(max) = settings.max_tokens {
            generation.insert("maxOutputTokens".into(), json!(max));
        }
        if !settings.stop.is_empty() {
            generation.insert("stopSequences".into(), json!(settings.stop));
        }
        if let Some(format) = &settings.response_format {
            generation.insert("responseMimeType".into(), json!("application/json"));
            generation.insert("responseJsonSchema".into(), format.schema.clone());
        }
        if !generation.is_empty() {
            body.insert("generationConfig".into(), Value::Object(generation));
        }
        Value::Object(body)
    }

    async fn send(&self, request: ModelRequest<'_>, sink: &mut dyn ReplySink) -> Result<ModelReply, ModelError> {
        let body = serde_json::to_vec(&Self::body(&request))
            .map_err(|e| ModelError::Config(format!("the request could not be encoded: {e}")))?;
        let mut builder = self.conn.http.post(self.endpoint(request.stream));
        if let Some(key) = &self.conn.api_key {
            builder = builder.header("x-goog-api-key", key);
        }
        if request.stream {
            builder = builder.header(reqwest::header::ACCEPT, "text/event-stream");
        }
        let response = http::post(PROVIDER, builder, body).await?;
        let mut reply = Assembly::default();
        if request.stream {
            let mut events = sse::Events::new(response);
            while events.next().await.map_err(|message| sse::broken(PROVIDER, reply.delivered, message))? {
                let data = events.bytes();
                if data.iter().all(u8::is_ascii_whitespace) {
                    continue;
                }
                let chunk: Reply = serde_json::from_slice(data).map_err(|e| {
                    let text = String::from_utf8_lossy(data);
                    sse::broken(PROVIDER, reply.delivered, format!("an event is not a Gemini response ({e}): {text}"))
                })?;
                reply.take(chunk, sink)?;
            }
            if reply.finish.is_none() {
                return Err(sse::broken(PROVIDER, reply.delivered, "the stream ended before the reply finished"));
            }
            Ok(reply.finish())
        } else {
            let raw = response.bytes().await.map_err(|e| http::transport(PROVIDER, &e))?;
            let whole: Reply = serde_json::from_slice(&raw)
                .map_err(|e| invalid(&raw, format!("the response is not a Gemini response: {e}")))?;
            if whole.candidates.is_empty() && whole.error.is_none() {
                return Err(invalid(&raw, "the response has no candidates"));
            }
            reply.take(whole, &mut super::reply::Discard)?;
            Ok(reply.finish())
        }
    }
}

chat_model_over_connection!(Gemini, |_client| PROVIDER);

/// The conversation as Gemini's contents: user and model turns; a tool's answer is a
/// `functionResponse` of the user, named after the call it answers (Gemini matches by name).
fn contents(messages: &[Message]) -> Vec<Value> {
    let name_of = |id: &str| {
        messages.iter().flat_map(|m| &m.tool_calls).find(|c| c.id == id).map_or_else(String::new, |c| c.name.clone())
    };
    let mut contents = Vec::new();
    for message in messages {
        let (role, parts) = match message.role {
            Role::System | Role::Remove => continue,
            Role::User => ("user", vec![json!({"text": message.content})]),
            Role::Assistant => {
                let mut parts = Vec::new();
                if !message.content.is_empty() {
                    parts.push(json!({"text": message.content}));
                }
                for call in &message.tool_calls {
                    parts.push(json!({"functionCall": {"name": call.name, "args": call.arguments_object()}}));
                }
                ("model", parts)
            }
            Role::Tool => {
                let name = name_of(message.tool_call_id.as_deref().unwrap_or_default());
                // Gemini takes an object: a reply that is one is sent as it is.
                let response = match serde_json::from_str::<Value>(&message.content) {
                    Ok(object @ Value::Object(_)) => object,
                    _ => json!({"result": message.content}),
                };
                ("user", vec![json!({"functionResponse": {"name": name, "response": response}})])
            }
        };
        // Consecutive turns of one role (parallel tool answers) go in one content.
        match contents.last_mut() {
            Some(Value::Object(last)) if last.get("role").and_then(Value::as_str) == Some(role) => {
                if let Some(Value::Array(existing)) = last.get_mut("parts") {
                    existing.extend(parts);
                }
            }
            _ => contents.push(json!({"role": role, "parts": parts})),
        }
    }
    contents
}

/// A `GenerateContentResponse`, whole or one event of a stream.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Reply {
    #[serde(default)]
    candidates: Vec<Candidate>,
    usage_metadata: Option<WireUsage>,
    model_version: Option<String>,
    response_id: Option<String>,
    error: Option<Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Candidate {
    content: Option<Content>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct Content {
    #[serde(default)]
    parts: Vec<Part>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Part {
    text: Option<String>,
    function_call: Option<FunctionCall>,
    /// A thought summary, not part of the reply.
    #[serde(default)]
    thought: bool,
}

#[derive(Deserialize)]
struct FunctionCall {
    name: String,
    #[serde(default)]
    args: Value,
    id: Option<String>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default, rename = "promptTokenCount")]
    prompt: u64,
    #[serde(default, rename = "candidatesTokenCount")]
    candidates: u64,
    #[serde(default, rename = "thoughtsTokenCount")]
    thoughts: u64,
    #[serde(default, rename = "cachedContentTokenCount")]
    cached_content: u64,
}

/// A reply being put together from its events.
#[derive(Default)]
struct Assembly {
    text: String,
    calls: Vec<ToolCall>,
    finish: Option<String>,
    usage: Option<Usage>,
    model: Option<String>,
    id: Option<String>,
    delivered: bool,
}

impl Assembly {
    fn take(&mut self, response: Reply, sink: &mut dyn ReplySink) -> Result<(), ModelError> {
        if let Some(error) = response.error {
            let error = http::classify_event(PROVIDER, &ErrorBody::of(&error));
            return Err(if self.delivered { sse::broken(PROVIDER, true, error.to_string()) } else { error });
        }
        if self.model.is_none() {
            self.model = response.model_version;
        }
        if self.id.is_none() {
            self.id = response.response_id;
        }
        if let Some(usage) = response.usage_metadata {
            // Thinking tokens are billed as output.
            let output = usage.candidates + usage.thoughts;
            self.usage = Some(Usage::tokens(usage.prompt, output).with_cached(usage.cached_content));
        }
        let Some(candidate) = response.candidates.into_iter().next() else { return Ok(()) };
        for part in candidate.content.map(|c| c.parts).unwrap_or_default() {
            if let Some(text) = part.text.filter(|t| !t.is_empty() && !part.thought) {
                sink.text(&text);
                self.text.push_str(&text);
                self.delivered = true;
            }
            if let Some(call) = part.function_call {
                let index = u32::try_from(self.calls.len()).unwrap_or(u32::MAX);
                let id = call.id.unwrap_or_else(|| format!("call_{}", crate::message::fresh_id()));
                let args = if call.args.is_null() { json!({}) } else { call.args };
                let text = args.to_string();
                sink.tool_call(ToolCallDelta { index, id: Some(&id), name: Some(&call.name), arguments: &text });
                self.calls.push(ToolCall::new(id, call.name, args));
                self.delivered = true;
            }
        }
        if let Some(reason) = candidate.finish_reason {
            self.finish = Some(reason);
        }
        Ok(())
    }

    fn finish(self) -> ModelReply {
        let finish_reason = match self.finish.as_deref() {
            _ if !self.calls.is_empty() => FinishReason::ToolCalls,
            None => FinishReason::Unknown,
            Some("STOP") => FinishReason::Stop,
            Some("MAX_TOKENS") => FinishReason::Length,
            Some("SAFETY" | "RECITATION" | "BLOCKLIST" | "PROHIBITED_CONTENT" | "SPII") => FinishReason::ContentFilter,
            Some(other) => FinishReason::Other(other.to_owned()),
        };
        ModelReply {
            message: Message::assistant(self.text).with_tool_calls(self.calls),
            usage: self.usage.unwrap_or_default(),
            finish_reason,
            model: self.model.unwrap_or_default(),
            response_id: self.id,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::request::{ModelSettings, ResponseFormat, ToolSpec};
    use std::sync::Arc;

    #[test]
    fn a_request_has_the_system_apart_tool_answers_by_name_and_the_schema_in_its_config() {
        let mut settings = ModelSettings {
            max_tokens: Some(64),
            response_format: Some(ResponseFormat { name: "A".into(), schema: json!({"type": "object"}) }),
            ..ModelSettings::default()
        };
        settings.tools = Arc::new([ToolSpec {
            name: "get_weather".into(),
            description: "the weather".into(),
            parameters: json!({"type": "object"}),
        }]);
        settings.tool_choice = ToolChoice::Tool("get_weather".into());
        let messages = [
            Message::system("be brief"),
            Message::user("weather?"),
            Message::assistant("").with_tool_calls(vec![
                ToolCall::new("c1", "get_weather", json!({"city": "Paris"})),
                ToolCall::new("c2", "get_weather", json!({"city": "Rome"})),
            ]),
            Message::tool("c1", "sunny"),
            Message::tool("c2", "{\"sky\": \"clear\"}"),
        ];
        let body = Gemini::body(&ModelRequest { model: "m", messages: &messages, settings: &settings, stream: false });
        assert_eq!(body["systemInstruction"], json!({"parts": [{"text": "be brief"}]}));
        let contents = body["contents"].as_array().unwrap();
        assert_eq!(contents.len(), 3, "the two tool answers are one user turn: {contents:?}");
        assert_eq!(contents[1]["parts"][1]["functionCall"], json!({"name": "get_weather", "args": {"city": "Rome"}}));
        assert_eq!(
            contents[2]["parts"],
            json!([
                {"functionResponse": {"name": "get_weather", "response": {"result": "sunny"}}},
                {"functionResponse": {"name": "get_weather", "response": {"sky": "clear"}}}
            ])
        );
        assert_eq!(
            body["toolConfig"]["functionCallingConfig"],
            json!({"mode": "ANY", "allowedFunctionNames": ["get_weather"]})
        );
        assert_eq!(body["generationConfig"]["maxOutputTokens"], 64);
        assert_eq!(body["generationConfig"]["responseJsonSchema"], json!({"type": "object"}));
    }

    #[test]
    fn a_reply_gives_its_counts_and_why_it_stopped_and_an_error_after_text_breaks_it() {
        let response: Reply = serde_json::from_value(json!({
            "candidates": [{"content": {"parts": [{"text": "thinking", "thought": true}, {"text": "Hi"}]},
                            "finishReason": "MAX_TOKENS"}],
            "usageMetadata": {"promptTokenCount": 10, "candidatesTokenCount": 2, "thoughtsTokenCount": 5,
                              "cachedContentTokenCount": 4},
            "modelVersion": "gemini-2.5-flash", "responseId": "r1"
        }))
        .unwrap();
        let mut reply = Assembly::default();
        reply.take(response, &mut crate::model::Discard).unwrap();
        let error: Reply =
            serde_json::from_value(json!({"error": {"code": 500, "message": "internal", "status": "INTERNAL"}}))
                .unwrap();
        let mut broken = Assembly { delivered: true, ..Assembly::default() };
        assert!(matches!(
            broken.take(error, &mut crate::model::Discard),
            Err(ModelError::Stream { after_content: true, .. })
        ));
        let reply = reply.finish();
        assert_eq!(reply.message.content, "Hi", "thought summaries are not the reply");
        assert_eq!((reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.cached_tokens), (10, 7, 4));
        assert_eq!((reply.finish_reason, reply.response_id.as_deref()), (FinishReason::Length, Some("r1")));
    }
}
