//! What an authenticator is given, what it answers, and the trait the server calls it through:
//! the public contract every authenticator, built in or the application's, is written against.

use axum::http::header::{AUTHORIZATION, WWW_AUTHENTICATE};
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::{IntoResponse, Response};
use futures::future::BoxFuture;
use graphwright::AuthUser;
use std::future::Future;

/// The challenge of a refusal unless the authenticator gives its own.
const DEFAULT_CHALLENGE: &str = "Bearer realm=\"graphwright\"";

/// What an [`Authenticator`] sees of a request: its method, path and headers (the body is not
/// read before the caller is known).
#[derive(Clone, Debug)]
pub struct AuthRequest {
    pub(super) method: Method,
    pub(super) path: String,
    pub(super) headers: HeaderMap,
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
    pub(super) reason: String,
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

    pub(super) fn into_response(self) -> Response {
        let challenge =
            HeaderValue::from_str(&self.challenge).unwrap_or_else(|_| HeaderValue::from_static(DEFAULT_CHALLENGE));
        let body = axum::Json(serde_json::json!({ "detail": self.reason }));
        (StatusCode::UNAUTHORIZED, [(WWW_AUTHENTICATE, challenge)], body).into_response()
    }
}

/// Decides who is calling, for [`Server::auth`](crate::Server::auth).
///
/// [`ApiKeys`](super::ApiKeys) and [`Jwt`](super::Jwt) implement it, and so does any async function (or closure) taking an
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
