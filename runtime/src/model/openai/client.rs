//! [`OpenAi`]: the client, its builders (OpenAI, compatible services, Azure, the Responses
//! API) and how it sends a request.

use super::completion::{parse_completion, wire_message};
use super::stream::read_stream;
use crate::model::ModelError;
use crate::model::http::{self, Connection};
use crate::model::reply::{ModelReply, ReplySink};
use crate::model::request::{ModelRequest, ToolChoice};
use crate::tool::schema;
use serde_json::{Map, Value, json};

pub(super) const PROVIDER: &str = "openai";

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
    pub fn compatible(provider: &str, model: impl Into<String>) -> Result<Self, crate::model::ModelError> {
        let preset = crate::model::presets::find(provider).ok_or_else(|| {
            crate::model::ModelError::Config(format!(
                "`{provider}` is not an OpenAI-compatible service graphwright knows: use one of {}, or \
                 `OpenAi::new(model).base_url(..)` for any other",
                crate::model::presets::names().join(", ")
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
    pub fn azure(deployment: &str) -> Result<Self, crate::model::ModelError> {
        let endpoint = env("AZURE_OPENAI_ENDPOINT").ok_or_else(|| {
            crate::model::ModelError::Config(
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
    /// [`ModelError`](crate::model::ModelError).
    ///
    /// Calls are stateless as every other client's: the whole conversation goes out each
    /// time, no `previous_response_id` is used, and `store` is `false` unless
    /// [`store`](Self::store) says otherwise. Reasoning items are not sent back, so a reasoning
    /// model does not see its earlier reasoning. The API has no stop sequences: a model with
    /// [`stop`](crate::model::ChatModel::stop) set fails its calls with [`ModelError::Config`](crate::model::ModelError::Config).
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
            Api::Responses => crate::model::responses::body(&request, self.store.unwrap_or(false))?,
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
            (Api::Responses, true) => crate::model::responses::read_stream(response, sink, self.provider).await,
            (api, false) => {
                let body = response.bytes().await.map_err(|e| http::transport(self.provider, &e))?;
                match api {
                    Api::ChatCompletions => parse_completion(&body, self.provider),
                    Api::Responses => crate::model::responses::parse_response(&body, self.provider),
                }
            }
        }
    }
}

chat_model_over_connection!(OpenAi, |client| client.provider);
