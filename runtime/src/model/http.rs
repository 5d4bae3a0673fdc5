//! The HTTP side both clients share: sending a request, and turning a failed response into a
//! classified [`ModelError`].

use super::{ModelError, ModelSettings};
use reqwest::header::HeaderMap;
use serde::Deserialize;
use serde_json::Value;
use std::time::{Duration, SystemTime};

/// What every client of a provider holds: the model, where requests go and with which key,
/// the request settings, and the HTTP client.
#[derive(Clone)]
pub(crate) struct Connection {
    pub(crate) model: String,
    pub(crate) base_url: String,
    pub(crate) api_key: Option<String>,
    pub(crate) settings: ModelSettings,
    pub(crate) http: reqwest::Client,
}

impl Connection {
    /// A connection for `model`, addressed by the environment variable `url_var` (else
    /// `default_url`) and keyed by `key_var`; an empty variable counts as unset.
    pub(crate) fn from_env(model: String, url_var: &str, default_url: &str, key_var: &str) -> Self {
        let env = |name| std::env::var(name).ok().filter(|v: &String| !v.trim().is_empty());
        Self {
            model,
            base_url: env(url_var).unwrap_or_else(|| default_url.to_owned()),
            api_key: env(key_var),
            settings: ModelSettings::default(),
            http: shared_client(),
        }
    }
}

impl std::fmt::Debug for Connection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connection")
            .field("model", &self.model)
            .field("base_url", &self.base_url)
            .field("api_key", &self.api_key.as_ref().map(|_| "[redacted]"))
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

/// How much of an error response's body is read: enough for any provider's error JSON.
pub(crate) const MAX_ERROR_BODY: usize = 64 * 1024;

/// The HTTP client model clients share unless given their own: one connection pool per process.
pub(crate) fn shared_client() -> reqwest::Client {
    static CLIENT: std::sync::OnceLock<reqwest::Client> = std::sync::OnceLock::new();
    CLIENT
        .get_or_init(|| {
            reqwest::Client::builder()
                .connect_timeout(Duration::from_secs(30))
                .tcp_nodelay(true)
                .build()
                .unwrap_or_default()
        })
        .clone()
}

/// Posts `body` to `url`; a response that is not 2xx becomes its classified error.
pub(crate) async fn post(
    provider: &str,
    request: reqwest::RequestBuilder,
    body: Vec<u8>,
) -> Result<reqwest::Response, ModelError> {
    let response = traced(request)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(body)
        .send()
        .await
        .map_err(|e| transport(provider, &e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let body = read_capped(response, MAX_ERROR_BODY).await;
    Err(classify(provider, status.as_u16(), &headers, &body))
}

/// `request` carrying the current span's trace context (`traceparent`) when spans are exported
/// (feature `otel`), so a gateway or provider that traces joins the run's trace.
pub(crate) fn traced(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    #[cfg(feature = "otel")]
    let request = crate::otel::inject(request);
    request
}

/// A failed send or read, as the error it is.
pub(crate) fn transport(provider: &str, error: &reqwest::Error) -> ModelError {
    let message = chain(error);
    if error.is_timeout() {
        ModelError::Timeout { provider: provider.to_owned(), message }
    } else {
        ModelError::Connect { provider: provider.to_owned(), message }
    }
}

/// An error and its sources in one line (reqwest's own Display leaves out the cause).
fn chain(error: &dyn std::error::Error) -> String {
    let mut text = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

pub(crate) async fn read_capped(mut response: reqwest::Response, cap: usize) -> Vec<u8> {
    let mut body = Vec::new();
    while let Ok(Some(chunk)) = response.chunk().await {
        body.extend_from_slice(&chunk[..chunk.len().min(cap - body.len())]);
        if body.len() >= cap {
            break;
        }
    }
    body
}

/// The parts of an error body providers agree on, read leniently: OpenAI's
/// `{"error": {"message", "type", "code"}}` (llama.cpp's `code` is a number), Anthropic's
/// `{"type": "error", "error": {"type", "message"}}`, Ollama's `{"error": "text"}`.
#[derive(Debug, Default)]
pub(crate) struct ErrorBody {
    pub(crate) message: String,
    pub(crate) kind: String,
    pub(crate) code: String,
}

impl ErrorBody {
    pub(crate) fn parse(body: &[u8]) -> Self {
        #[derive(Deserialize)]
        struct Envelope {
            error: Option<Value>,
            message: Option<String>,
        }
        let text = || String::from_utf8_lossy(body).trim().chars().take(2000).collect::<String>();
        let Ok(envelope) = serde_json::from_slice::<Envelope>(body) else {
            return Self { message: text(), ..Self::default() };
        };
        match envelope.error {
            Some(error) if !error.is_null() => Self::of(&error),
            _ => Self { message: envelope.message.unwrap_or_else(text), ..Self::default() },
        }
    }

    /// The `error` member of a body or of a streamed event: an object, or a bare message.
    pub(crate) fn of(error: &Value) -> Self {
        let as_text = |v: Option<&Value>| match v {
            Some(Value::String(s)) => s.clone(),
            Some(Value::Null) | None => String::new(),
            Some(other) => other.to_string(),
        };
        let Value::Object(error) = error else { return Self { message: as_text(Some(error)), ..Self::default() } };
        let details_code = error.get("details").and_then(|d| d.get("error_code"));
        let code = match (error.get("code"), details_code) {
            (Some(code), _) if !code.is_null() => as_text(Some(code)),
            (_, code) => as_text(code),
        };
        Self { message: as_text(error.get("message")), kind: as_text(error.get("type")), code }
    }

    fn says(&self, words: &[&str]) -> bool {
        let haystacks = [self.kind.to_lowercase(), self.code.to_lowercase(), self.message.to_lowercase()];
        words.iter().any(|w| haystacks.iter().any(|h| h.contains(w)))
    }

    fn text(&self) -> String {
        match (self.message.is_empty(), self.kind.is_empty()) {
            (true, true) => "no message".to_owned(),
            (true, false) => self.kind.clone(),
            (false, true) => self.message.clone(),
            (false, false) => format!("{} ({})", self.message, self.kind),
        }
    }
}

/// A reply that arrived but cannot be used, with the body as received.
pub(crate) fn invalid(raw: &[u8], reason: impl Into<String>) -> ModelError {
    ModelError::InvalidOutput { raw: String::from_utf8_lossy(raw).into_owned(), reason: reason.into() }
}

/// The error a response with `status`, `headers` and `body` stands for.
pub(crate) fn classify(provider: &str, status: u16, headers: &HeaderMap, body: &[u8]) -> ModelError {
    classify_parsed(provider, status, retry_after(headers), &ErrorBody::parse(body))
}

/// The error an in-stream error event stands for: its type says what a status would have.
pub(crate) fn classify_event(provider: &str, error: &ErrorBody) -> ModelError {
    let status = match error.kind.as_str() {
        "rate_limit_error" | "rate_limit_exceeded" => 429,
        "overloaded_error" => 529,
        "timeout_error" => 504,
        "authentication_error" => 401,
        "permission_error" => 403,
        "invalid_request_error" | "not_found_error" | "request_too_large" => 400,
        _ => 500,
    };
    classify_parsed(provider, status, None, error)
}

fn classify_parsed(provider: &str, status: u16, retry_after: Option<Duration>, body: &ErrorBody) -> ModelError {
    let provider = provider.to_owned();
    let message = body.text();
    if body.says(&[
        "context_length",
        "context length",
        "context_size",
        "context size",
        "context window",
        "maximum context",
        "prompt is too long",
    ]) && status < 500
    {
        return ModelError::ContextLength { provider, message };
    }
    match status {
        401 | 403 => ModelError::Auth { provider, status, message },
        402 => ModelError::QuotaExhausted { provider, message },
        429 if body.says(&["insufficient_quota", "spend_limit", "billing"]) => {
            ModelError::QuotaExhausted { provider, message }
        }
        429 => ModelError::RateLimited { provider, retry_after, message },
        408 | 504 => ModelError::Timeout { provider, message },
        529 => ModelError::Overloaded { provider, retry_after, message },
        503 if body.says(&["overload"]) => ModelError::Overloaded { provider, retry_after, message },
        413 => ModelError::ContextLength { provider, message },
        500.. => ModelError::Server { provider, status, message },
        _ => ModelError::BadRequest { provider, status, message },
    }
}

/// The wait a response asks for: `retry-after-ms` (milliseconds), else `retry-after` (seconds,
/// or an HTTP date).
pub(crate) fn retry_after(headers: &HeaderMap) -> Option<Duration> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::trim);
    if let Some(ms) =
        header("retry-after-ms").and_then(|v| v.parse::<f64>().ok()).filter(|v| v.is_finite() && *v >= 0.0)
    {
        return Some(Duration::from_secs_f64(ms / 1000.0));
    }
    let value = header("retry-after")?;
    if let Ok(seconds) = value.parse::<f64>() {
        return (seconds.is_finite() && seconds >= 0.0).then(|| Duration::from_secs_f64(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(SystemTime::now()).unwrap_or_default())
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        map
    }

    #[test]
    fn retry_after_prefers_milliseconds_then_seconds_then_dates() {
        assert_eq!(
            retry_after(&headers(&[("retry-after-ms", "250"), ("retry-after", "9")])),
            Some(Duration::from_millis(250))
        );
        assert_eq!(retry_after(&headers(&[("retry-after", "2")])), Some(Duration::from_secs(2)));
        let later = httpdate::fmt_http_date(SystemTime::now() + Duration::from_secs(30));
        let wait = retry_after(&headers(&[("retry-after", &later)])).unwrap();
        assert!(wait > Duration::from_secs(25) && wait <= Duration::from_secs(30), "{wait:?}");
        assert_eq!(retry_after(&headers(&[("retry-after", "soon")])), None);
        assert_eq!(retry_after(&headers(&[("retry-after", "-1")])), None);
    }

    #[test]
    fn bodies_of_every_provider_shape_are_read() {
        let llama = ErrorBody::parse(
            br#"{"error":{"code":400,"message":"Expected 'messages' to be an array","type":"invalid_request_error"}}"#,
        );
        assert_eq!((llama.code.as_str(), llama.kind.as_str()), ("400", "invalid_request_error"));
        let anthropic =
            ErrorBody::parse(br#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#);
        assert_eq!(anthropic.kind, "overloaded_error");
        let ollama = ErrorBody::parse(br#"{"error":"model 'x' not found"}"#);
        assert_eq!(ollama.message, "model 'x' not found");
        let html = ErrorBody::parse(b"<html>Bad Gateway</html>");
        assert_eq!(html.message, "<html>Bad Gateway</html>");
    }

    #[test]
    fn statuses_and_codes_are_classified() {
        let none = HeaderMap::new();
        let class = |status, body: &str| classify("p", status, &none, body.as_bytes());
        assert!(matches!(
            class(429, r#"{"error":{"code":"insufficient_quota","message":"x"}}"#),
            ModelError::QuotaExhausted { .. }
        ));
        assert!(matches!(
            class(429, r#"{"error":{"code":"rate_limit_exceeded","message":"x"}}"#),
            ModelError::RateLimited { .. }
        ));
        assert!(matches!(class(529, "{}"), ModelError::Overloaded { .. }));
        assert!(matches!(class(401, "{}"), ModelError::Auth { status: 401, .. }));
        assert!(matches!(
            class(400, r#"{"error":{"code":"context_length_exceeded","message":"x"}}"#),
            ModelError::ContextLength { .. }
        ));
        assert!(matches!(class(404, "{}"), ModelError::BadRequest { status: 404, .. }));
        assert!(matches!(class(502, "bad gateway"), ModelError::Server { status: 502, .. }));
        assert!(matches!(class(504, "{}"), ModelError::Timeout { .. }));
        let spend = r#"{"type":"error","error":{"type":"rate_limit_error","message":"x","details":{"error_code":"enforced_spend_limit_reached"}}}"#;
        assert!(matches!(class(429, spend), ModelError::QuotaExhausted { .. }));
    }
}
