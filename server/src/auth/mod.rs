//! Authentication: who is calling, decided for every request before it reaches a route.
//!
//! An [`Authenticator`] looks at a request's method, path and headers and returns the caller
//! ([`AuthUser`]) or a [`Refusal`], answered 401 with a `WWW-Authenticate` challenge and a
//! `{"detail": reason}` body. [`ApiKeys`] and [`Jwt`] are ready to use; any async function of an
//! [`AuthRequest`] is one too. The caller is kept with the request, and the runs it starts see
//! it as [`Runtime::user`](graphwright::Runtime::user).
//!
//! Not authenticated: `GET /ok` (health checks), the studio page's files (`GET /` and the
//! scripts and style under `/ui/`: they hold no data) and CORS preflights (browsers send no
//! credentials with them).

mod api_keys;
mod jwks;
mod jwt;

pub use api_keys::ApiKeys;
pub use jwt::{Jwt, JwtError};

use axum::extract::{FromRequestParts, Request};
use axum::http::header::{AUTHORIZATION, CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING, WWW_AUTHENTICATE};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use graphwright::AuthUser;
use std::future::Future;
use std::sync::Arc;

/// The header LangGraph's clients send an API key in (`get_client(api_key=..)`).
pub(crate) const API_KEY_HEADER: &str = "x-api-key";

/// The challenge of a refusal unless the authenticator gives its own.
const DEFAULT_CHALLENGE: &str = "Bearer realm=\"graphwright\"";

/// What an [`Authenticator`] sees of a request: its method, path and headers (the body is not
/// read before the caller is known).
#[derive(Clone, Debug)]
pub struct AuthRequest {
    method: Method,
    path: String,
    headers: HeaderMap,
}

impl AuthRequest {
    /// A request to authenticate; the server makes these, tests may too.
    pub fn new(method: Method, path: impl Into<String>, headers: HeaderMap) -> Self {
        Self { method, path: path.into(), headers }
    }

    /// The request's method.
    pub fn method(&self) -> &Method {
        &self.method
    }

    /// The request's path, without its query.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// All of the request's headers.
    pub fn headers(&self) -> &HeaderMap {
        &self.headers
    }

    /// The value of header `name`, when there is one and it is text.
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).and_then(|v| v.to_str().ok())
    }

    /// The token of an `Authorization: Bearer <token>` header (the scheme in any case).
    pub fn bearer(&self) -> Option<&str> {
        let value = self.headers.get(AUTHORIZATION)?.to_str().ok()?.trim();
        let (scheme, token) = value.split_once(' ')?;
        scheme.eq_ignore_ascii_case("bearer").then(|| token.trim()).filter(|t| !t.is_empty())
    }
}

/// Why a request was not let in: answered 401 with `{"detail": reason}` and a
/// `WWW-Authenticate` challenge. The reason is shown to the client and logged, so it must say
/// what failed without repeating the credentials.
#[derive(Clone, Debug, thiserror::Error)]
#[error("{reason}")]
pub struct Refusal {
    reason: String,
    challenge: String,
}

impl Refusal {
    /// A refusal saying `reason`, with the challenge `Bearer realm="graphwright"`.
    pub fn new(reason: impl Into<String>) -> Self {
        Self { reason: reason.into(), challenge: DEFAULT_CHALLENGE.to_owned() }
    }

    /// A refusal of credentials that were given but are not valid: RFC 6750's
    /// `error="invalid_token"` is added to the challenge.
    pub fn invalid(reason: impl Into<String>) -> Self {
        Self { reason: reason.into(), challenge: format!("{DEFAULT_CHALLENGE}, error=\"invalid_token\"") }
    }

    /// The same refusal with `challenge` as its `WWW-Authenticate` value.
    #[must_use]
    pub fn challenge(mut self, challenge: impl Into<String>) -> Self {
        self.challenge = challenge.into();
        self
    }

    /// What failed, as the client reads it.
    pub fn reason(&self) -> &str {
        &self.reason
    }

    fn into_response(self) -> Response {
        let challenge =
            HeaderValue::from_str(&self.challenge).unwrap_or_else(|_| HeaderValue::from_static(DEFAULT_CHALLENGE));
        let body = axum::Json(serde_json::json!({ "detail": self.reason }));
        (StatusCode::UNAUTHORIZED, [(WWW_AUTHENTICATE, challenge)], body).into_response()
    }
}

/// Decides who is calling, for [`Server::auth`](crate::Server::auth).
///
/// [`ApiKeys`] and [`Jwt`] implement it, and so does any async function (or closure) taking an
/// [`AuthRequest`] and returning `Result<AuthUser, Refusal>`:
///
/// ```
/// use graphwright::AuthUser;
/// use graphwright_server::{AuthRequest, Refusal, Server};
///
/// async fn by_header(request: AuthRequest) -> Result<AuthUser, Refusal> {
///     match request.header("x-user") {
///         Some(user) if request.bearer() == Some("let-me-in") => Ok(AuthUser::new(user)),
///         _ => Err(Refusal::new("send x-user and the bearer token")),
///     }
/// }
/// let server = Server::new().auth(by_header);
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot authenticate requests",
    note = "give `Server::auth` an `ApiKeys`, a `Jwt`, or an async fn taking `AuthRequest` and returning `Result<AuthUser, Refusal>`"
)]
pub trait Authenticator: Send + Sync + 'static {
    /// The caller of `request`, or why it is refused.
    fn authenticate<'a>(&'a self, request: &'a AuthRequest) -> BoxFuture<'a, Result<AuthUser, Refusal>>;
}

impl<F, Fut> Authenticator for F
where
    F: Fn(AuthRequest) -> Fut + Send + Sync + 'static,
    Fut: Future<Output = Result<AuthUser, Refusal>> + Send + 'static,
{
    fn authenticate<'a>(&'a self, request: &'a AuthRequest) -> BoxFuture<'a, Result<AuthUser, Refusal>> {
        Box::pin(self(request.clone()))
    }
}

/// The authenticated caller of a request, for the handlers that start runs; `None` when the
/// server has no authenticator.
#[derive(Clone, Debug, Default)]
pub(crate) struct Caller(pub(crate) Option<Arc<AuthUser>>);

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = std::convert::Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(parts.extensions.get::<Self>().cloned().unwrap_or_default())
    }
}

/// Whether a request is let in without credentials: health checks, the studio page's static
/// files, and CORS preflights.
fn is_open(method: &Method, path: &str, headers: &HeaderMap) -> bool {
    let preflight = method == Method::OPTIONS && headers.contains_key("access-control-request-method");
    let read = method == Method::GET || method == Method::HEAD;
    preflight || (read && (path == "/ok" || crate::api::page::is_page_file(path)))
}

/// Whether a request says it has a body.
fn has_body(headers: &HeaderMap) -> bool {
    let length = headers.get(CONTENT_LENGTH).and_then(|v| v.to_str().ok()).and_then(|v| v.trim().parse::<u64>().ok());
    length.is_some_and(|n| n > 0) || headers.contains_key(TRANSFER_ENCODING)
}

/// The middleware: authenticates every request that is not open, keeps the caller with the
/// request, and takes the credentials off it so that no handler can copy them anywhere.
pub(crate) async fn guard(authenticator: Arc<dyn Authenticator>, request: Request, next: Next) -> Response {
    if is_open(request.method(), request.uri().path(), request.headers()) {
        return next.run(request).await;
    }
    let (mut parts, body) = request.into_parts();
    let asked = AuthRequest {
        method: parts.method.clone(),
        path: parts.uri.path().to_owned(),
        headers: std::mem::take(&mut parts.headers),
    };
    let outcome = authenticator.authenticate(&asked).await;
    parts.headers = asked.headers;
    match outcome {
        Ok(user) => {
            parts.headers.remove(AUTHORIZATION);
            parts.headers.remove(API_KEY_HEADER);
            tracing::debug!(user = %user.identity, "request authenticated");
            parts.extensions.insert(Caller(Some(Arc::new(user))));
            next.run(Request::from_parts(parts, body)).await
        }
        Err(refusal) => {
            tracing::info!(method = %parts.method, path = %parts.uri.path(), reason = %refusal.reason, "request refused");
            let mut response = refusal.into_response();
            if has_body(&parts.headers) {
                // The body of a caller who is not let in is not read: the connection cannot carry
                // another request after it, and the client is told so.
                response.headers_mut().insert(CONNECTION, HeaderValue::from_static("close"));
            }
            response
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_health_checks_the_page_and_preflights_are_open() {
        let none = HeaderMap::new();
        let mut preflight = HeaderMap::new();
        preflight.insert("access-control-request-method", HeaderValue::from_static("POST"));
        assert!(is_open(&Method::GET, "/ok", &none));
        assert!(is_open(&Method::GET, "/", &none));
        assert!(is_open(&Method::GET, "/ui/app.js", &none));
        assert!(is_open(&Method::GET, "/ui/graph.js", &none));
        assert!(is_open(&Method::OPTIONS, "/threads", &preflight));
        assert!(!is_open(&Method::OPTIONS, "/threads", &none));
        assert!(!is_open(&Method::POST, "/ok", &none));
        assert!(!is_open(&Method::GET, "/info", &none));
        assert!(!is_open(&Method::GET, "/threads/x", &none));
        assert!(!is_open(&Method::GET, "/ui/other.js", &none));
    }

    #[test]
    fn bearer_tokens_are_read_in_any_case_and_empty_ones_are_none() {
        let with = |value: &'static str| {
            let mut headers = HeaderMap::new();
            headers.insert(AUTHORIZATION, HeaderValue::from_static(value));
            AuthRequest::new(Method::GET, "/", headers)
        };
        assert_eq!(with("Bearer abc").bearer(), Some("abc"));
        assert_eq!(with("bearer  abc ").bearer(), Some("abc"));
        assert_eq!(with("Basic abc").bearer(), None);
        assert_eq!(with("Bearer ").bearer(), None);
    }
}
