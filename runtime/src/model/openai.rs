//! OpenAI-compatible Chat Completions: OpenAI, the llama.cpp server, vLLM, Ollama's `/v1`,
//! `LiteLLM`; and the client that speaks OpenAI's Responses API too (see `responses.rs`).

use super::chunk_shape::ChunkShape;
use super::http::{self, Connection, ErrorBody, invalid};
use super::reply::{FinishReason, ModelReply, ReplySink, ToolCallDelta};
use super::request::{ModelRequest, ToolChoice};
use super::sse;
use super::{ModelError, Usage};
use crate::message::{Message, Role, ToolCall};
use crate::tool::schema;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::borrow::Cow;

const PROVIDER: &str = "openai";

/// A variable of the environment, unless unset or empty.
fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";

/// A client of an OpenAI-compatible Chat Completions endpoint (`POST {base}/chat/completions`),
/// or of OpenAI's Responses API (`POST {base}/responses`) after [`responses`](OpenAi::responses).
///
/// `OpenAi::new(model)` reads the key from `OPENAI_API_KEY` and the base URL from
/// `OPENAI_BASE_URL` (default `https://api.openai.com/v1`); [`base_url`](OpenAi::base_url) and
/// [`api_key`](OpenAi::api_key) set them in code. Servers that differ from OpenAI in small ways
/// are read leniently: numeric error codes, tool calls without an `index` or all at index 0,
/// finish reasons this crate does not know, `usage` absent or `null`.
///
/// ```
/// use graphwright::model::{ChatModel, OpenAi};
///
/// let local = OpenAi::new("qwen3").base_url("http://127.0.0.1:8080/v1").api_key("none").temperature(0.2);
/// assert_eq!(local.model(), "qwen3");
/// assert_eq!(local.endpoint(), "http://127.0.0.1:8080/v1/chat/completions");
/// ```
#[derive(Clone)]
pub struct OpenAi {
    conn: Connection,
    headers: Vec<(String, String)>,
    /// The service, as errors, spans and [`ChatModel::provider`] name it (`openai`, `azure`, or
    /// a preset's name).
    provider: &'static str,
    /// Azure's `api-version` query parameter, on every request.
    api_version: Option<String>,
    /// The header the key goes in: `Authorization: Bearer` when `None`, Azure's `api-key`.
    key_header: Option<&'static str>,
    /// Which of OpenAI's two APIs requests go to.
    api: Api,
    /// Whether the provider keeps requests and replies (`store`); `None` leaves Chat
    /// Completions requests without the field and Responses requests at `false`.
    store: Option<bool>,
}

/// The API an [`OpenAi`] client speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Api {
    /// `POST {base}/chat/completions`.
    ChatCompletions,
    /// `POST {base}/responses` (see [`OpenAi::responses`]).
    Responses,
}

/// The Azure OpenAI API version requests name unless `OPENAI_API_VERSION` (or
/// `AZURE_OPENAI_API_VERSION`) says otherwise: the latest generally available one.
pub const AZURE_API_VERSION: &str = "2024-10-21";

impl OpenAi {
    /// A client of `model`, keyed and addressed by `OPENAI_API_KEY` and `OPENAI_BASE_URL`.
    pub fn new(model: impl Into<String>) -> Self {
        let conn = Connection::from_env(model.into(), "OPENAI_BASE_URL", DEFAULT_BASE_URL, "OPENAI_API_KEY");
        Self::over(conn, PROVIDER, None, None)
    }

    /// A client of `model` on a known OpenAI-compatible service, by name: `groq`, `deepseek`,
    /// `xai`, `mistral`, `together`, `fireworks`, `openrouter`, and the local servers `vllm`
    /// (port 8000), `lmstudio` (1234) and `llamacpp` (8080). The key comes from the service's
    /// variable (`GROQ_API_KEY`, `DEEPSEEK_API_KEY`, ... `LLAMACPP_API_KEY`), the address from
    /// its `*_BASE_URL` variable (`GROQ_BASE_URL`, ...) when set; errors and spans name the
    /// service. An unknown name is an error listing the known ones.
    ///
    /// ```
    /// use graphwright::model::{ChatModel, OpenAi};
    ///
    /// let model = OpenAi::compatible("groq", "llama-3.3-70b-versatile")?;
    /// assert_eq!(model.provider(), "groq");
    /// # if std::env::var("GROQ_BASE_URL").is_err() {
    /// assert_eq!(model.endpoint(), "https://api.groq.com/openai/v1/chat/completions");
    /// # }
    /// assert!(OpenAi::compatible("nowhere", "m").is_err());
    /// # Ok::<(), graphwright::model::ModelError>(())
    /// ```
    pub fn compatible(provider: &str, model: impl Into<String>) -> Result<Self, super::ModelError> {
        let preset = super::presets::find(provider).ok_or_else(|| {
            super::ModelError::Config(format!(
                "`{provider}` is not an OpenAI-compatible service graphwright knows: use one of {}, or \
                 `OpenAi::new(model).base_url(..)` for any other",
                super::presets::names().join(", ")
            ))
        })?;
        let conn = Connection::from_env(model.into(), preset.url_var, preset.base_url, preset.key_var);
        Ok(Self::over(conn, preset.name, None, None))
    }

    /// A client of the Azure OpenAI deployment `deployment` on the resource `AZURE_OPENAI_ENDPOINT`
    /// names (`https://{resource}.openai.azure.com`), keyed by `AZURE_OPENAI_API_KEY` (sent as
    /// `api-key`), under the API version `OPENAI_API_VERSION` (or `AZURE_OPENAI_API_VERSION`;
    /// [`AZURE_API_VERSION`] unless set). An error names the variable when the endpoint is not
    /// set. For a token from Microsoft Entra ID instead of a key, see
    /// [`azure_ad_token`](Self::azure_ad_token).
    pub fn azure(deployment: &str) -> Result<Self, super::ModelError> {
        let endpoint = env("AZURE_OPENAI_ENDPOINT").ok_or_else(|| {
            super::ModelError::Config(
                "an Azure OpenAI client needs its resource's endpoint: set AZURE_OPENAI_ENDPOINT \
                 (https://{resource}.openai.azure.com), or use OpenAi::azure_at(endpoint, deployment)"
                    .to_owned(),
            )
        })?;
        Ok(Self::azure_at(&endpoint, deployment))
    }

    /// [`azure`](Self::azure) on the resource at `endpoint`, given in code.
    ///
    /// ```
    /// use graphwright::model::{ChatModel, OpenAi};
    ///
    /// let model = OpenAi::azure_at("https://contoso.openai.azure.com/", "gpt-4o-prod").api_key("key");
    /// assert_eq!(model.provider(), "azure");
    /// # if std::env::var("OPENAI_API_VERSION").is_err() && std::env::var("AZURE_OPENAI_API_VERSION").is_err() {
    /// assert_eq!(
    ///     model.endpoint(),
    ///     "https://contoso.openai.azure.com/openai/deployments/gpt-4o-prod/chat/completions?api-version=2024-10-21"
    /// );
    /// # }
    /// ```
    pub fn azure_at(endpoint: &str, deployment: &str) -> Self {
        let base = format!("{}/openai/deployments/{deployment}", endpoint.trim_end_matches('/'));
        let conn = Connection::from_env(deployment.to_owned(), "", &base, "AZURE_OPENAI_API_KEY");
        let api_version = env("OPENAI_API_VERSION")
            .or_else(|| env("AZURE_OPENAI_API_VERSION"))
            .unwrap_or_else(|| AZURE_API_VERSION.to_owned());
        Self::over(conn, "azure", Some(api_version), Some("api-key"))
    }

    /// A client over `conn` speaking Chat Completions to `provider`.
    fn over(
        conn: Connection,
        provider: &'static str,
        api_version: Option<String>,
        key_header: Option<&'static str>,
    ) -> Self {
        Self { conn, headers: Vec::new(), provider, api_version, key_header, api: Api::ChatCompletions, store: None }
    }

    /// Speaks OpenAI's Responses API (`POST {base}/responses`) instead of Chat Completions, with
    /// everything else as configured: the key, the base URL, the tools, structured output,
    /// streaming, retries. The system messages become the request's `instructions`, the rest
    /// `input` items (tool calls as `function_call` items, tool answers as
    /// `function_call_output` items); tools are flat `function` tools, structured output is
    /// `text.format`, the reply length `max_output_tokens`. Streamed replies are read from the
    /// API's named events, and a `response.failed` or `error` event is a classified
    /// [`ModelError`](super::ModelError).
    ///
    /// Calls are stateless as every other client's: the whole conversation goes out each
    /// time, no `previous_response_id` is used, and `store` is `false` unless
    /// [`store`](Self::store) says otherwise. Reasoning items are not sent back, so a reasoning
    /// model does not see its earlier reasoning. The API has no stop sequences: a model with
    /// [`stop`](super::ChatModel::stop) set fails its calls with [`ModelError::Config`](super::ModelError::Config).
    /// On Azure the requests go to the resource's v1 API (`{resource}/openai/v1/responses`,
    /// the deployment named as the model), which takes no `api-version`.
    ///
    /// `from_spec("openai-responses:gpt-4.1")` is `OpenAi::new("gpt-4.1").responses()`.
    ///
    /// ```
    /// use graphwright::model::{ChatModel, OpenAi};
    ///
    /// let model = OpenAi::new("gpt-4.1").base_url("http://127.0.0.1:4010/v1").api_key("sk").responses().max_tokens(512);
    /// assert_eq!(model.endpoint(), "http://127.0.0.1:4010/v1/responses");
    /// assert_eq!(model.provider(), "openai");
    /// let azure = OpenAi::azure_at("https://contoso.openai.azure.com", "gpt-4o-prod").responses();
    /// assert_eq!(azure.endpoint(), "https://contoso.openai.azure.com/openai/v1/responses");
    /// ```
    #[must_use]
    pub fn responses(mut self) -> Self {
        self.api = Api::Responses;
        self
    }

    /// Whether the provider keeps the requests and replies (`store`): for OpenAI's dashboards,
    /// evals and distillation. By default Responses requests say `store: false` and Chat
    /// Completions requests do not say.
    ///
    /// ```
    /// use graphwright::model::{ChatModel, OpenAi};
    ///
    /// let kept = OpenAi::new("gpt-4.1").responses().store(true);
    /// assert_eq!(kept.model(), "gpt-4.1");
    /// ```
    #[must_use]
    pub fn store(mut self, store: bool) -> Self {
        self.store = Some(store);
        self
    }

    /// Authenticates to Azure with a Microsoft Entra ID access token (`Authorization: Bearer`)
    /// instead of a key. The token is the caller's to obtain and renew.
    #[must_use]
    pub fn azure_ad_token(mut self, token: impl Into<String>) -> Self {
        self.conn.api_key = Some(token.into());
        self.key_header = None;
        self
    }

    /// The `api-version` query parameter sent with every request (Azure).
    #[must_use]
    pub fn api_version(mut self, version: impl Into<String>) -> Self {
        self.api_version = Some(version.into());
        self
    }

    /// The server's base URL, up to and including `/v1`.
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.conn.base_url = url.into();
        self
    }

    /// The API key, sent as `Authorization: Bearer`.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.conn.api_key = Some(key.into());
        self
    }

    /// An extra header on every request (`OpenAI-Organization`, a proxy's key, ...).
    #[must_use]
    pub fn header(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.headers.push((name.into(), value.into()));
        self
    }

    /// The URL requests go to.
    pub fn endpoint(&self) -> String {
        let base = self.conn.base_url.trim_end_matches('/');
        if self.api == Api::Responses {
            // Azure serves the Responses API on the resource's v1 API, not under a deployment.
            return match base.split_once("/openai/deployments/") {
                Some((resource, _)) if self.provider == "azure" => format!("{resource}/openai/v1/responses"),
                _ => format!("{base}/responses"),
            };
        }
        let url = format!("{base}/chat/completions");
        match &self.api_version {
            Some(version) => format!("{url}?api-version={version}"),
            None => url,
        }
    }

    /// OpenAI's own API and Azure's take `max_completion_tokens` (their reasoning models refuse
    /// `max_tokens`); compatible servers know `max_tokens`.
    fn is_openai_itself(&self) -> bool {
        self.provider == "azure" || self.conn.base_url.contains("api.openai.com")
    }

    /// The request body.
    pub(crate) fn body(&self, request: &ModelRequest<'_>) -> Value {
        let settings = request.settings;
        let mut body = Map::new();
        body.insert("model".into(), json!(request.model));
        body.insert("messages".into(), Value::Array(request.messages.iter().filter_map(wire_message).collect()));
        if !settings.tools.is_empty() {
            let strict = settings.strict();
            let tools = settings
                .tools
                .iter()
                .map(|t| {
                    let mut function = json!({"name": t.name, "description": t.description});
                    if strict {
                        function["parameters"] = schema::strict(t.parameters.clone());
                        function["strict"] = json!(true);
                    } else {
                        function["parameters"] = t.parameters.clone();
                    }
                    json!({"type": "function", "function": function})
                })
                .collect();
            body.insert("tools".into(), Value::Array(tools));
            let choice = match &settings.tool_choice {
                ToolChoice::Auto => json!("auto"),
                ToolChoice::None => json!("none"),
                ToolChoice::Required => json!("required"),
                ToolChoice::Tool(name) => json!({"type": "function", "function": {"name": name}}),
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
            let key = if self.is_openai_itself() { "max_completion_tokens" } else { "max_tokens" };
            body.insert(key.into(), json!(max));
        }
        if !settings.stop.is_empty() {
            body.insert("stop".into(), json!(settings.stop));
        }
        if let Some(format) = &settings.response_format {
            body.insert(
                "response_format".into(),
                json!({
                    "type": "json_schema",
                    "json_schema": {"name": format.name, "strict": true, "schema": schema::strict(format.schema.clone())},
                }),
            );
        }
        if let Some(store) = self.store {
            body.insert("store".into(), json!(store));
        }
        if request.stream {
            body.insert("stream".into(), json!(true));
            body.insert("stream_options".into(), json!({"include_usage": true}));
        }
        Value::Object(body)
    }

    async fn send(&self, request: ModelRequest<'_>, sink: &mut dyn ReplySink) -> Result<ModelReply, ModelError> {
        let body = match self.api {
            Api::ChatCompletions => self.body(&request),
            Api::Responses => super::responses::body(&request, self.store.unwrap_or(false))?,
        };
        let body = serde_json::to_vec(&body)
            .map_err(|e| ModelError::Config(format!("the request could not be encoded: {e}")))?;
        let mut builder = self.conn.http.post(self.endpoint());
        match (&self.conn.api_key, self.key_header) {
            (Some(key), None) => builder = builder.bearer_auth(key),
            (Some(key), Some(header)) => builder = builder.header(header, key),
            (None, _) => {}
        }
        for (name, value) in &self.headers {
            builder = builder.header(name, value);
        }
        if request.stream {
            builder = builder.header(reqwest::header::ACCEPT, "text/event-stream");
        }
        let response = http::post(self.provider, builder, body).await?;
        match (self.api, request.stream) {
            (Api::ChatCompletions, true) => read_stream(response, sink, self.provider).await,
            (Api::Responses, true) => super::responses::read_stream(response, sink, self.provider).await,
            (api, false) => {
                let body = response.bytes().await.map_err(|e| http::transport(self.provider, &e))?;
                match api {
                    Api::ChatCompletions => parse_completion(&body, self.provider),
                    Api::Responses => super::responses::parse_response(&body, self.provider),
                }
            }
        }
    }
}

chat_model_over_connection!(OpenAi, |client| client.provider);

/// A message in the Chat Completions form; `None` for what is not sent (remove markers).
fn wire_message(message: &Message) -> Option<Value> {
    Some(match message.role {
        Role::System => json!({"role": "system", "content": message.content}),
        Role::User => json!({"role": "user", "content": message.content}),
        Role::Assistant if message.tool_calls.is_empty() => json!({"role": "assistant", "content": message.content}),
        Role::Assistant => {
            let calls: Vec<Value> = message
                .tool_calls
                .iter()
                .map(|c| {
                    let arguments = match &c.arguments {
                        Value::String(text) => text.clone(),
                        other => other.to_string(),
                    };
                    json!({"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments}})
                })
                .collect();
            let content = if message.content.is_empty() { Value::Null } else { json!(message.content) };
            json!({"role": "assistant", "content": content, "tool_calls": calls})
        }
        Role::Tool => json!({
            "role": "tool",
            "tool_call_id": message.tool_call_id.as_deref().unwrap_or_default(),
            "content": message.content,
        }),
        Role::Remove => return None,
    })
}

#[derive(Deserialize)]
struct Completion {
    id: Option<String>,
    model: Option<String>,
    #[serde(default)]
    choices: Vec<Choice>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

#[derive(Deserialize)]
struct Choice {
    message: Option<WireMessage>,
    finish_reason: Option<String>,
}

#[derive(Deserialize)]
struct WireMessage {
    content: Option<Value>,
    refusal: Option<String>,
    #[serde(default)]
    tool_calls: Option<Vec<WireCall>>,
}

#[derive(Deserialize)]
struct WireCall {
    id: Option<String>,
    function: Option<WireFunction>,
}

#[derive(Deserialize)]
struct WireFunction {
    name: Option<String>,
    arguments: Option<Value>,
}

#[derive(Deserialize)]
struct WireUsage {
    #[serde(default)]
    prompt_tokens: u64,
    #[serde(default)]
    completion_tokens: u64,
    prompt_tokens_details: Option<Details>,
}

#[derive(Deserialize)]
struct Details {
    cached_tokens: Option<u64>,
}

impl WireUsage {
    fn usage(&self) -> Usage {
        let cached = self.prompt_tokens_details.as_ref().and_then(|d| d.cached_tokens).unwrap_or(0);
        Usage::tokens(self.prompt_tokens, self.completion_tokens).with_cached(cached)
    }
}

fn finish_reason(reason: Option<&str>) -> FinishReason {
    match reason {
        None => FinishReason::Unknown,
        Some("stop") => FinishReason::Stop,
        Some("length") => FinishReason::Length,
        Some("tool_calls" | "function_call") => FinishReason::ToolCalls,
        Some("content_filter") => FinishReason::ContentFilter,
        Some(other) => FinishReason::Other(other.to_owned()),
    }
}

/// The text of `content`: a string, or an array of parts whose text parts are joined.
fn content_text(content: Option<&Value>) -> Result<String, String> {
    match content {
        None | Some(Value::Null) => Ok(String::new()),
        Some(Value::String(text)) => Ok(text.clone()),
        Some(Value::Array(parts)) => {
            Ok(parts.iter().filter_map(|p| p.get("text").and_then(Value::as_str)).collect::<Vec<_>>().concat())
        }
        Some(other) => Err(format!("`content` is neither text nor a list of parts: {other}")),
    }
}

/// Tool-call arguments as sent: a JSON string normally, an object from some servers.
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

/// A non-streamed completion from `provider`.
fn parse_completion(raw: &[u8], provider: &'static str) -> Result<ModelReply, ModelError> {
    let completion: Completion =
        serde_json::from_slice(raw).map_err(|e| invalid(raw, format!("the response is not a chat completion: {e}")))?;
    if let Some(error) = completion.error {
        return Err(http::classify_event(provider, &ErrorBody::of(&error)));
    }
    let Some(choice) = completion.choices.into_iter().next() else {
        return Err(invalid(raw, "the response has no choices"));
    };
    let Some(wire) = choice.message else {
        return Err(invalid(raw, "the response's choice has no message"));
    };
    let mut content = content_text(wire.content.as_ref()).map_err(|reason| invalid(raw, reason))?;
    if content.is_empty()
        && let Some(refusal) = wire.refusal
    {
        content = refusal;
    }
    let mut calls = Vec::new();
    for (index, call) in wire.tool_calls.unwrap_or_default().into_iter().enumerate() {
        let Some(function) = call.function else {
            return Err(invalid(raw, format!("tool call {index} has no `function`")));
        };
        let Some(name) = function.name.filter(|n| !n.is_empty()) else {
            return Err(invalid(raw, format!("tool call {index} has no name")));
        };
        let id = call.id.filter(|i| !i.is_empty()).unwrap_or_else(|| format!("call_{index}"));
        calls.push(tool_call(id, name, &arguments_text(function.arguments.as_ref())));
    }
    Ok(ModelReply {
        message: Message::assistant(content).with_tool_calls(calls),
        usage: completion.usage.map(|u| u.usage()).unwrap_or_default(),
        finish_reason: finish_reason(choice.finish_reason.as_deref()),
        model: completion.model.unwrap_or_default(),
        response_id: completion.id,
    })
}

// Chunks borrow their strings from the event's text: a streamed reply is one chunk per
// token, and a chunk read this way allocates only its list of choices.
#[derive(Deserialize)]
struct Chunk<'a> {
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    model: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    choices: Vec<ChunkChoice<'a>>,
    usage: Option<WireUsage>,
    error: Option<Value>,
}

impl<'a> Chunk<'a> {
    /// The chunk's text when that is all it says, borrowed from the chunk's JSON (so it had
    /// no escapes): no error, usage, finish reason, refusal or tool call, and one choice.
    fn only_text(&self) -> Option<&'a str> {
        let ([choice], None, None) = (self.choices.as_slice(), &self.usage, &self.error) else { return None };
        let delta = choice.delta.as_ref().filter(|d| d.refusal.is_none() && d.tool_calls.is_none())?;
        match (&delta.content.0, choice.index, &choice.finish_reason) {
            (Cow::Borrowed(text), 0, None) => Some(*text),
            _ => None,
        }
    }
}

#[derive(Deserialize)]
struct ChunkChoice<'a> {
    #[serde(default)]
    index: u32,
    #[serde(borrow)]
    delta: Option<Delta<'a>>,
    #[serde(borrow)]
    finish_reason: Option<Cow<'a, str>>,
}

#[derive(Deserialize)]
struct Delta<'a> {
    #[serde(default, borrow)]
    content: Text<'a>,
    #[serde(borrow)]
    refusal: Option<Cow<'a, str>>,
    #[serde(borrow)]
    tool_calls: Option<Vec<CallDelta<'a>>>,
}

#[derive(Deserialize)]
struct CallDelta<'a> {
    index: Option<u32>,
    #[serde(borrow)]
    id: Option<Cow<'a, str>>,
    #[serde(borrow)]
    function: Option<FunctionDelta<'a>>,
}

#[derive(Deserialize)]
struct FunctionDelta<'a> {
    #[serde(borrow)]
    name: Option<Cow<'a, str>>,
    #[serde(default, borrow)]
    arguments: Text<'a>,
}

/// A piece of text as servers send it: a string (borrowed when it has no escapes), `null`, a
/// list of content parts whose `text`s are joined, or (tool arguments from some servers) an
/// object, kept as its JSON text.
#[derive(Default)]
struct Text<'a>(Cow<'a, str>);

impl<'de: 'a, 'a> Deserialize<'de> for Text<'a> {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visit;
        impl<'de> serde::de::Visitor<'de> for Visit {
            type Value = Text<'de>;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("text, null, a list of content parts, or an object")
            }

            fn visit_borrowed_str<E>(self, text: &'de str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Borrowed(text)))
            }

            fn visit_str<E>(self, text: &str) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text.to_owned())))
            }

            fn visit_string<E>(self, text: String) -> Result<Text<'de>, E> {
                Ok(Text(Cow::Owned(text)))
            }

            fn visit_unit<E>(self) -> Result<Text<'de>, E> {
                Ok(Text::default())
            }

            fn visit_none<E>(self) -> Result<Text<'de>, E> {
                Ok(Text::default())
            }

            fn visit_some<D: serde::Deserializer<'de>>(self, inner: D) -> Result<Text<'de>, D::Error> {
                Text::deserialize(inner)
            }

            fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut parts: A) -> Result<Text<'de>, A::Error> {
                let mut text = String::new();
                while let Some(part) = parts.next_element::<Value>()? {
                    text.push_str(part.get("text").and_then(Value::as_str).unwrap_or_default());
                }
                Ok(Text(Cow::Owned(text)))
            }

            fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<Text<'de>, A::Error> {
                let value = Value::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
                Ok(Text(Cow::Owned(value.to_string())))
            }
        }
        deserializer.deserialize_any(Visit)
    }
}

/// A tool call being assembled from its pieces.
struct Partial {
    wire_index: Option<u32>,
    id: String,
    name: String,
    arguments: String,
}

/// A streamed reply being assembled.
#[derive(Default)]
struct Assembly {
    text: String,
    calls: Vec<Partial>,
    finish: Option<String>,
    usage: Option<Usage>,
    id: Option<String>,
    model: Option<String>,
    delivered: bool,
    /// The shape of the last text-only chunk, to read the next ones by.
    shape: ChunkShape,
    /// The service, as its errors name it.
    provider: &'static str,
}

impl Assembly {
    /// The slot a tool-call piece belongs to. Pieces are keyed by `index`; a piece without one
    /// (old Ollama) continues the last call unless it brings a new id; a new id at a used index
    /// (Ollama sends each call whole, all at index 0) starts a new call.
    fn slot(&mut self, piece: &CallDelta<'_>) -> usize {
        let new_id = piece.id.as_deref().filter(|i| !i.is_empty());
        let found = match piece.index {
            Some(index) => self.calls.iter().rposition(|c| c.wire_index == Some(index)),
            None => self.calls.len().checked_sub(1),
        };
        match found {
            Some(at) if new_id.is_none_or(|id| self.calls[at].id.is_empty() || self.calls[at].id == id) => at,
            _ => {
                self.calls.push(Partial {
                    wire_index: piece.index,
                    id: String::new(),
                    name: String::new(),
                    arguments: String::new(),
                });
                self.calls.len() - 1
            }
        }
    }

    fn take(&mut self, chunk: Chunk<'_>, sink: &mut dyn ReplySink) -> Result<(), ModelError> {
        if let Some(error) = chunk.error {
            let body = ErrorBody::of(&error);
            let error = http::classify_event(self.provider, &body);
            return Err(if self.delivered { sse::broken(self.provider, true, error.to_string()) } else { error });
        }
        if self.id.is_none() {
            self.id = chunk.id.map(Cow::into_owned);
        }
        if self.model.is_none() {
            self.model = chunk.model.map(Cow::into_owned);
        }
        if let Some(usage) = chunk.usage {
            self.usage = Some(usage.usage());
        }
        // Only the first choice is read: requests never ask for more than one.
        for choice in chunk.choices.into_iter().filter(|c| c.index == 0) {
            if let Some(reason) = choice.finish_reason {
                self.finish = Some(reason.into_owned());
            }
            let Some(delta) = choice.delta else { continue };
            let text = match (delta.content.0, delta.refusal) {
                (text, Some(refusal)) if text.is_empty() => refusal,
                (text, _) => text,
            };
            self.text(&text, sink);
            for piece in delta.tool_calls.unwrap_or_default() {
                let at = self.slot(&piece);
                let call = &mut self.calls[at];
                let (name, arguments) = match piece.function {
                    Some(f) => (f.name, f.arguments.0),
                    None => (None, Cow::Borrowed("")),
                };
                let id = piece.id.filter(|i| !i.is_empty() && call.id.is_empty());
                if let Some(id) = &id {
                    call.id.push_str(id);
                }
                let name = name.filter(|n| !n.is_empty() && call.name.is_empty());
                if let Some(name) = &name {
                    call.name.push_str(name);
                }
                call.arguments.push_str(&arguments);
                self.delivered = true;
                sink.tool_call(ToolCallDelta {
                    index: at as u32,
                    id: id.as_deref(),
                    name: name.as_deref(),
                    arguments: &arguments,
                });
            }
        }
        Ok(())
    }

    fn text(&mut self, text: &str, sink: &mut dyn ReplySink) {
        if !text.is_empty() {
            self.delivered = true;
            sink.text(text);
            self.text.push_str(text);
        }
    }

    fn finish(self) -> Result<ModelReply, ModelError> {
        let mut calls = Vec::with_capacity(self.calls.len());
        for (index, call) in self.calls.into_iter().enumerate() {
            if call.name.is_empty() {
                return Err(ModelError::InvalidOutput {
                    raw: call.arguments,
                    reason: format!("streamed tool call {index} never got a name"),
                });
            }
            let id = if call.id.is_empty() { format!("call_{index}") } else { call.id };
            calls.push(tool_call(id, call.name, &call.arguments));
        }
        Ok(ModelReply {
            message: Message::assistant(self.text).with_tool_calls(calls),
            usage: self.usage.unwrap_or_default(),
            finish_reason: finish_reason(self.finish.as_deref()),
            model: self.model.unwrap_or_default(),
            response_id: self.id,
        })
    }
}

impl Assembly {
    /// Reads one event's data; `Ok(true)` when it ends the stream (`[DONE]`). A chunk of the
    /// shape of the last text-only chunk is read without parsing it (see [`ChunkShape`]).
    fn event(&mut self, data: &[u8], sink: &mut dyn ReplySink) -> Result<bool, ModelError> {
        if let Some(text) = self.shape.text_of(data) {
            self.text(text, sink);
            return Ok(false);
        }
        let data =
            std::str::from_utf8(data).map_err(|e| sse::broken(self.provider, self.delivered, sse::not_utf8(e)))?;
        if data == "[DONE]" {
            return Ok(true);
        }
        if data.trim().is_empty() {
            return Ok(false);
        }
        let chunk: Chunk = serde_json::from_str(data).map_err(|e| {
            sse::broken(self.provider, self.delivered, format!("a chunk is not a chat completion chunk ({e}): {data}"))
        })?;
        if let Some(text) = chunk.only_text() {
            self.shape.learn(data, text);
        }
        self.take(chunk, sink)?;
        Ok(false)
    }
}

/// A streamed completion from `provider`: chunks until `data: [DONE]`.
async fn read_stream(
    response: reqwest::Response,
    sink: &mut dyn ReplySink,
    provider: &'static str,
) -> Result<ModelReply, ModelError> {
    let mut events = sse::Events::new(response);
    let mut reply = Assembly { provider, ..Assembly::default() };
    loop {
        // A text chunk of the last one's shape, read whole from the bytes as they came.
        let unread = events.unread().await.map_err(|message| sse::broken(provider, reply.delivered, message))?;
        if let Some((text, len)) = reply.shape.text_of_event(unread) {
            reply.text(text, sink);
            events.skip(len);
            continue;
        }
        if !events.next().await.map_err(|message| sse::broken(provider, reply.delivered, message))? {
            break;
        }
        if reply.event(events.bytes(), sink)? {
            return reply.finish();
        }
    }
    // Some servers close without `[DONE]`; a reply that said why it finished is whole.
    if reply.finish.is_some() {
        return reply.finish();
    }
    Err(sse::broken(provider, reply.delivered, "the stream ended before the reply finished"))
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Pieces(Vec<String>);

    impl ReplySink for Pieces {
        fn text(&mut self, delta: &str) {
            self.0.push(format!("text:{delta}"));
        }
        fn tool_call(&mut self, delta: ToolCallDelta<'_>) {
            self.0.push(format!("call{}:{:?}:{:?}:{}", delta.index, delta.id, delta.name, delta.arguments));
        }
    }

    fn assemble(chunks: &[Value]) -> (Result<ModelReply, ModelError>, Vec<String>) {
        let mut sink = Pieces(Vec::new());
        let mut reply = Assembly { provider: PROVIDER, ..Assembly::default() };
        for chunk in chunks {
            if let Err(e) = reply.event(chunk.to_string().as_bytes(), &mut sink) {
                return (Err(e), sink.0);
            }
        }
        (reply.finish(), sink.0)
    }

    fn text_chunk(text: &str, finish: Option<&str>) -> Value {
        json!({"id": "c", "model": "m", "choices": [{"index": 0, "delta": {"content": text}, "finish_reason": finish}]})
    }

    #[test]
    fn text_chunks_read_by_their_shape_assemble_as_parsed_ones() {
        let mut chunks: Vec<Value> =
            ["Hel", "lo", " \"q\"", "\n", "", "wörld"].iter().map(|t| text_chunk(t, None)).collect();
        chunks.push(text_chunk("!", Some("stop")));
        chunks.push(json!({"id": "c", "choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 7}}));
        let (reply, pieces) = assemble(&chunks);
        let reply = reply.unwrap();
        assert_eq!(reply.message.content, "Hello \"q\"\nwörld!");
        assert_eq!(pieces, ["text:Hel", "text:lo", "text: \"q\"", "text:\n", "text:wörld", "text:!"]);
        assert_eq!((reply.finish_reason, reply.usage.output_tokens), (FinishReason::Stop, 7));
    }

    #[test]
    fn ollama_calls_whole_at_index_zero_stay_apart() {
        let call = |id: &str, name: &str, args: &str| json!({"choices": [{"index": 0, "delta": {"tool_calls": [{"index": 0, "id": id, "function": {"name": name, "arguments": args}}]}}]});
        let (reply, _) = assemble(&[
            call("a", "one", "{\"x\":1}"),
            call("b", "two", "{}"),
            json!({"choices": [{"index": 0, "delta": {}, "finish_reason": "tool_calls"}]}),
        ]);
        let reply = reply.unwrap();
        let names: Vec<_> = reply.message.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str())).collect();
        assert_eq!(names, [("a", "one"), ("b", "two")]);
        assert_eq!(reply.message.tool_calls[0].arguments, json!({"x": 1}));
    }

    #[test]
    fn pieces_without_index_continue_the_last_call() {
        let (reply, pieces) = assemble(&[
            json!({"choices": [{"delta": {"tool_calls": [{"id": "c1", "function": {"name": "f", "arguments": "{\"a\":"}}]}}]}),
            json!({"choices": [{"delta": {"tool_calls": [{"function": {"arguments": "2}"}}]}, "finish_reason": "weird_new_reason"}]}),
        ]);
        let reply = reply.unwrap();
        assert_eq!(reply.message.tool_calls[0].arguments, json!({"a": 2}));
        assert_eq!(reply.finish_reason, FinishReason::Other("weird_new_reason".into()));
        assert_eq!(pieces, ["call0:Some(\"c1\"):Some(\"f\"):{\"a\":", "call0:None:None:2}"]);
    }

    #[test]
    fn an_error_chunk_after_text_is_a_stream_error_after_content() {
        let (reply, _) = assemble(&[
            json!({"choices": [{"index": 0, "delta": {"content": "Hel"}}]}),
            json!({"error": {"message": "overloaded", "type": "overloaded_error", "code": 529}}),
        ]);
        assert!(matches!(reply, Err(ModelError::Stream { after_content: true, .. })), "{reply:?}");
        let (reply, _) = assemble(&[json!({"error": {"message": "slow down", "type": "rate_limit_error"}})]);
        assert!(matches!(reply, Err(ModelError::RateLimited { .. })), "{reply:?}");
    }

    #[test]
    fn a_nameless_call_is_invalid_output() {
        let (reply, _) = assemble(&[
            json!({"choices": [{"delta": {"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]}, "finish_reason": "tool_calls"}]}),
        ]);
        assert!(matches!(reply, Err(ModelError::InvalidOutput { .. })), "{reply:?}");
    }

    #[test]
    fn completions_of_odd_shapes_are_typed_errors() {
        let parse = |body: &str| parse_completion(body.as_bytes(), PROVIDER);
        assert!(
            matches!(parse(r#"{"choices": []}"#), Err(ModelError::InvalidOutput { reason, .. }) if reason.contains("no choices"))
        );
        assert!(matches!(parse("not json"), Err(ModelError::InvalidOutput { .. })));
        assert!(
            matches!(parse(r#"{"choices": [{}]}"#), Err(ModelError::InvalidOutput { reason, .. }) if reason.contains("no message"))
        );
        assert!(matches!(
            parse(r#"{"choices": [{"message": {"content": 7}}]}"#),
            Err(ModelError::InvalidOutput { .. })
        ));
        let broken = parse(r#"{"choices": [{"message": {"tool_calls": [{"id": "c", "function": {"name": "f", "arguments": "{\"a\":"}}]}, "finish_reason": "tool_calls"}]}"#).unwrap();
        assert_eq!(
            broken.message.tool_calls[0].arguments,
            json!("{\"a\":"),
            "malformed arguments reach the tool node as text"
        );
        let parts = parse(r#"{"choices": [{"message": {"content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}, "finish_reason": "stop"}], "usage": {"prompt_tokens": 3, "completion_tokens": 2, "prompt_tokens_details": {"cached_tokens": 1}}}"#).unwrap();
        assert_eq!(parts.message.content, "ab");
        assert_eq!(parts.usage, Usage::tokens(3, 2).with_cached(1));
    }
}
