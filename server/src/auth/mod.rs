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
mod authenticator;
mod jwks;
mod jwt;

pub(crate) use api_keys::API_KEY_HEADER;
pub use api_keys::ApiKeys;
pub use authenticator::{AuthRequest, Authenticator, Refusal};
pub use jwt::{Jwt, JwtError};

use axum::extract::{FromRequestParts, Request};
use axum::http::header::{AUTHORIZATION, CONNECTION, CONTENT_LENGTH, TRANSFER_ENCODING};
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use graphwright::AuthUser;
use std::sync::Arc;

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
    preflight || (read && (path == "/ok" || crate::api::page_files::is_page_file(path)))
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
