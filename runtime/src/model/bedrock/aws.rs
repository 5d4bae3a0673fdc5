//! What the Bedrock clients share: where a request goes (the region's `bedrock-runtime`
//! endpoint, or one given), how it is authenticated and sent, and how Bedrock's failures
//! become [`ModelError`]s.

use super::sigv4::SigV4;
use crate::model::ModelError;
use crate::model::http::{self, Connection};
use crate::model::sse;
use aws_credential_types::Credentials as AwsCredentials;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use serde_json::Value;
use std::time::{Duration, SystemTime};

pub(super) const PROVIDER: &str = "bedrock";
/// The name Bedrock's runtime signs requests under.
const SIGNING_NAME: &str = "bedrock";
const JSON: &str = "application/json";

/// Where and as whom a Bedrock client's requests go; the model, an endpoint given in code or by
/// the environment, an API key and the HTTP client are in the client's [`Connection`].
#[derive(Clone)]
pub(crate) struct Aws {
    pub(super) region: Option<String>,
    pub(super) credentials: Option<AwsCredentials>,
}

impl Aws {
    /// A connection to `model` and the AWS settings the environment gives, as AWS's SDKs read
    /// them: `AWS_REGION` (else `AWS_DEFAULT_REGION`); `AWS_ACCESS_KEY_ID`,
    /// `AWS_SECRET_ACCESS_KEY` and `AWS_SESSION_TOKEN`; a Bedrock API key in
    /// `AWS_BEARER_TOKEN_BEDROCK`; an endpoint in `AWS_ENDPOINT_URL_BEDROCK_RUNTIME` (else
    /// `AWS_ENDPOINT_URL`). Empty variables count as unset.
    pub(super) fn from_env(model: String) -> (Connection, Self) {
        let env = |name| std::env::var(name).ok().filter(|v: &String| !v.trim().is_empty());
        let conn = Connection {
            model,
            base_url: env("AWS_ENDPOINT_URL_BEDROCK_RUNTIME").or_else(|| env("AWS_ENDPOINT_URL")).unwrap_or_default(),
            api_key: env("AWS_BEARER_TOKEN_BEDROCK"),
            settings: crate::model::ModelSettings::default(),
            http: http::shared_client(),
        };
        let credentials = match (env("AWS_ACCESS_KEY_ID"), env("AWS_SECRET_ACCESS_KEY")) {
            (Some(id), Some(secret)) => {
                Some(AwsCredentials::new(id, secret, env("AWS_SESSION_TOKEN"), None, "environment"))
            }
            _ => None,
        };
        (conn, Self { region: env("AWS_REGION").or_else(|| env("AWS_DEFAULT_REGION")), credentials })
    }

    /// The region, checked to be a region's name.
    fn region(&self) -> Result<&str, ModelError> {
        let Some(region) = self.region.as_deref() else {
            return Err(ModelError::Config(
                "no AWS region for Bedrock: set AWS_REGION (or AWS_DEFAULT_REGION), or call `.region(\"us-east-1\")`"
                    .to_owned(),
            ));
        };
        if region.is_empty() || !region.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-') {
            return Err(ModelError::Config(format!(
                "`{region}` is not an AWS region's name (such as `us-east-1`): check AWS_REGION or `.region(..)`"
            )));
        }
        Ok(region)
    }

    /// The credentials, present and not expired.
    fn credentials(&self) -> Result<&AwsCredentials, ModelError> {
        let Some(credentials) = &self.credentials else {
            return Err(ModelError::Config(
                "no AWS credentials for Bedrock: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and \
                 AWS_SESSION_TOKEN for temporary credentials), set a Bedrock API key in AWS_BEARER_TOKEN_BEDROCK, \
                 or pass them with `.credentials(..)`; profiles in ~/.aws are not read (`aws configure \
                 export-credentials --format env` prints a profile's credentials as variables)"
                    .to_owned(),
            ));
        };
        if let Some(expiry) = credentials.expiry().filter(|at| *at <= SystemTime::now()) {
            return Err(ModelError::Config(format!(
                "the AWS credentials expired at {}: load fresh ones and pass them with `.credentials(..)`",
                httpdate::fmt_http_date(expiry)
            )));
        }
        Ok(credentials)
    }
}

/// The URL of `action` (`converse`, `converse-stream`, `invoke`) on `conn`'s model: under the
/// endpoint given, else the region's `https://bedrock-runtime.{region}.amazonaws.com`.
pub(super) fn url(conn: &Connection, aws: &Aws, action: &str) -> Result<String, ModelError> {
    let base = if conn.base_url.trim().is_empty() {
        format!("https://bedrock-runtime.{}.amazonaws.com", aws.region()?)
    } else {
        conn.base_url.trim().trim_end_matches('/').to_owned()
    };
    Ok(format!("{base}/model/{}/{action}", path_label(&conn.model)))
}

/// A model id (`anthropic.claude-3-5-haiku-20241022-v1:0`, or an ARN with `/` in it) as one
/// segment of a URL path: every byte but the unreserved ones percent-encoded, as AWS's SDKs
/// send it.
fn path_label(id: &str) -> String {
    use std::fmt::Write as _;
    let mut label = String::with_capacity(id.len());
    for byte in id.bytes() {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'-' | b'_' | b'.' | b'~') {
            label.push(char::from(byte));
        } else {
            let _ = write!(label, "%{byte:02X}");
        }
    }
    label
}

/// Posts the JSON `body` to `url`, with `conn`'s API key as a bearer token when it has one,
/// signed with `SigV4` otherwise; a response that is not 2xx becomes its classified error.
pub(super) async fn post(
    conn: &Connection,
    aws: &Aws,
    url: &str,
    body: Vec<u8>,
    accept: &str,
) -> Result<reqwest::Response, ModelError> {
    let mut request = conn.http.post(url).header(CONTENT_TYPE, JSON).header(ACCEPT, accept);
    if let Some(key) = &conn.api_key {
        request = request.bearer_auth(key);
    } else {
        let signer = SigV4::new(aws.credentials()?.clone(), aws.region()?, SIGNING_NAME);
        for (name, value) in signer.sign("POST", url, &[("content-type", JSON)], &body, SystemTime::now())? {
            request = request.header(name, value);
        }
    }
    let response = http::traced(request).body(body).send().await.map_err(|e| http::transport(PROVIDER, &e))?;
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    let headers = response.headers().clone();
    let body = http::read_capped(response, http::MAX_ERROR_BODY).await;
    Err(classify(status.as_u16(), &headers, &body))
}

/// The error a failed Bedrock response stands for: by the error's name (the
/// `x-amzn-ErrorType` header, or `__type` in the body) where it has one Bedrock documents,
/// else by its status as any provider's.
fn classify(status: u16, headers: &HeaderMap, body: &[u8]) -> ModelError {
    let parsed: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
    let named = headers
        .get("x-amzn-errortype")
        .and_then(|v| v.to_str().ok())
        .or_else(|| parsed.get("__type").and_then(Value::as_str))
        .map(error_name);
    let message = ["message", "Message"]
        .iter()
        .find_map(|key| parsed.get(key).and_then(Value::as_str))
        .map_or_else(|| String::from_utf8_lossy(body).trim().chars().take(2000).collect(), str::to_owned);
    named
        .and_then(|name| of_name(name, Some(status), http::retry_after(headers), message))
        .unwrap_or_else(|| http::classify(PROVIDER, status, headers, body))
}

/// `ThrottlingException` of `ThrottlingException:http://internal.amazon.com/coral/...` or of
/// `com.amazon.coral.validate#ValidationException`.
fn error_name(raw: &str) -> &str {
    let name = raw.split(':').next().unwrap_or(raw);
    name.rsplit('#').next().unwrap_or(name).trim()
}

/// The error Bedrock's error `name` stands for (`ThrottlingException`, or `throttlingException`
/// as a stream's exception names it); `None` for a name it does not document.
fn of_name(name: &str, status: Option<u16>, retry_after: Option<Duration>, message: String) -> Option<ModelError> {
    let provider = PROVIDER.to_owned();
    let too_long = || {
        let text = message.to_lowercase();
        ["input is too long", "too many input tokens", "prompt is too long", "context window", "context length"]
            .iter()
            .any(|words| text.contains(words))
    };
    Some(match name.to_ascii_lowercase().as_str() {
        "throttlingexception" | "toomanyrequestsexception" => {
            ModelError::RateLimited { provider, retry_after, message }
        }
        "servicequotaexceededexception" => ModelError::QuotaExhausted { provider, message },
        "modelnotreadyexception" | "serviceunavailableexception" => {
            ModelError::Overloaded { provider, retry_after, message }
        }
        "modeltimeoutexception" => ModelError::Timeout { provider, message },
        "accessdeniedexception"
        | "unrecognizedclientexception"
        | "invalidsignatureexception"
        | "incompletesignatureexception"
        | "missingauthenticationtokenexception"
        | "expiredtokenexception" => ModelError::Auth {
            provider,
            status: status.unwrap_or(403),
            message: format!(
                "{message} (the credentials need bedrock:InvokeModel, or bedrock:InvokeModelWithResponseStream \
                 for streams, on the model, and the model access granted to the account in this region)"
            ),
        },
        "validationexception" if too_long() => ModelError::ContextLength { provider, message },
        "validationexception" | "resourcenotfoundexception" | "conflictexception" | "modelerrorexception" => {
            ModelError::BadRequest { provider, status: status.unwrap_or(400), message: format!("{message} ({name})") }
        }
        "internalserverexception" | "modelstreamerrorexception" => {
            ModelError::Server { provider, status: status.unwrap_or(500), message: format!("{message} ({name})") }
        }
        _ => return None,
    })
}

/// The error of an exception that arrived inside a stream, `delivered` saying whether part of
/// the reply had already been handed over (then the call breaks as a stream, never retried).
pub(super) fn stream_exception(name: &str, message: &str, delivered: bool) -> ModelError {
    let error = of_name(name, None, None, message.to_owned())
        .unwrap_or_else(|| sse::broken(PROVIDER, delivered, format!("{name}: {message}")));
    if delivered && !matches!(error, ModelError::Stream { .. }) {
        sse::broken(PROVIDER, true, error.to_string())
    } else {
        error
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::header::HeaderValue;

    #[test]
    fn model_ids_are_one_path_segment() {
        assert_eq!(
            path_label("anthropic.claude-3-5-haiku-20241022-v1:0"),
            "anthropic.claude-3-5-haiku-20241022-v1%3A0"
        );
        assert_eq!(
            path_label("arn:aws:bedrock:us-east-1:1:inference-profile/us.x"),
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A1%3Ainference-profile%2Fus.x"
        );
    }

    #[test]
    fn errors_are_classified_by_their_bedrock_names() {
        let named = |name: &str| {
            let mut headers = HeaderMap::new();
            headers.insert("x-amzn-errortype", HeaderValue::from_str(name).unwrap());
            headers
        };
        let body = br#"{"message":"Too many requests, please wait before trying again."}"#;
        let throttled = classify(429, &named("ThrottlingException:http://internal.amazon.com/coral/"), body);
        assert!(matches!(&throttled, ModelError::RateLimited { message, .. } if message.starts_with("Too many")));
        assert!(matches!(classify(403, &named("AccessDeniedException"), b"{}"), ModelError::Auth { status: 403, .. }));
        let too_long = br#"{"message":"Input is too long for requested model."}"#;
        assert!(matches!(classify(400, &named("ValidationException"), too_long), ModelError::ContextLength { .. }));
        assert!(matches!(
            classify(
                400,
                &HeaderMap::new(),
                br#"{"__type":"com.amazon.coral.validate#ValidationException","message":"bad"}"#
            ),
            ModelError::BadRequest { status: 400, .. }
        ));
        assert!(matches!(classify(503, &named("ServiceUnavailableException"), b"{}"), ModelError::Overloaded { .. }));
        assert!(matches!(
            classify(424, &named("ModelErrorException"), b"{}"),
            ModelError::BadRequest { status: 424, .. }
        ));
        assert!(matches!(classify(502, &HeaderMap::new(), b"<html>"), ModelError::Server { status: 502, .. }));
        assert!(matches!(stream_exception("throttlingException", "slow down", false), ModelError::RateLimited { .. }));
        assert!(matches!(
            stream_exception("throttlingException", "slow down", true),
            ModelError::Stream { after_content: true, .. }
        ));
        assert!(matches!(
            stream_exception("oddException", "?", false),
            ModelError::Stream { after_content: false, .. }
        ));
    }
}
