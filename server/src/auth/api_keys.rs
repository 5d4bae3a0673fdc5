//! [`ApiKeys`]: callers known by a secret key each.

use super::authenticator::{AuthRequest, Authenticator, Refusal};
use futures::future::BoxFuture;
use graphwright::AuthUser;
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

/// The header LangGraph's clients send an API key in (`get_client(api_key=..)`).
pub(crate) const API_KEY_HEADER: &str = "x-api-key";

/// Lets in requests that carry one of the keys given, as the user the key was given for.
///
/// The key is read from the `x-api-key` header (what `langgraph-sdk`'s
/// `get_client(api_key=..)` and `@langchain/langgraph-sdk`'s `apiKey` send) or from
/// `Authorization: Bearer <key>`. Keys are compared in constant time, through their SHA-256
/// digests, so neither a key nor its length can be learnt from how long a refusal takes; a
/// refusal never repeats the key it was sent.
///
/// ```
/// use graphwright::AuthUser;
/// use graphwright_server::{ApiKeys, AuthRequest, Authenticator, Server};
/// use axum::http::{HeaderMap, Method};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() {
/// let keys = ApiKeys::new()
///     .key("k-ada-3f9c", AuthUser::new("ada").with_permissions(["admin"]))
///     .key("k-bot-77e1", AuthUser::new("ci-bot"));
///
/// // What the server does with every request:
/// let mut headers = HeaderMap::new();
/// headers.insert("x-api-key", "k-ada-3f9c".parse().unwrap());
/// let user = keys.authenticate(&AuthRequest::new(Method::GET, "/threads", headers)).await.unwrap();
/// assert_eq!(user.identity, "ada");
/// let refused = keys.authenticate(&AuthRequest::new(Method::GET, "/threads", HeaderMap::new())).await;
/// assert!(refused.unwrap_err().reason().starts_with("no credentials"));
///
/// // Then serve with it: `server.serve("0.0.0.0:2024").await`.
/// let server = Server::new().auth(keys);
/// # }
/// ```
#[derive(Clone, Default)]
#[must_use]
pub struct ApiKeys {
    keys: Vec<([u8; 32], AuthUser)>,
}

impl std::fmt::Debug for ApiKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // The users only: a key never reaches a log.
        f.debug_struct("ApiKeys")
            .field("users", &self.keys.iter().map(|(_, u)| &u.identity).collect::<Vec<_>>())
            .finish()
    }
}

impl ApiKeys {
    /// No keys yet: every request is refused until [`key`](Self::key) adds one.
    pub fn new() -> Self {
        Self::default()
    }

    /// Lets in requests carrying `key`, as `user`. An empty key is never accepted.
    pub fn key(mut self, key: impl AsRef<[u8]>, user: AuthUser) -> Self {
        if !key.as_ref().is_empty() {
            self.keys.push((digest(key.as_ref()), user));
        }
        self
    }

    /// The user `key` belongs to. Every key is compared, whichever matches.
    fn find(&self, key: &[u8]) -> Option<&AuthUser> {
        let sent = digest(key);
        let mut found = None;
        for (known, user) in &self.keys {
            if bool::from(known.ct_eq(&sent)) {
                found = Some(user);
            }
        }
        found
    }
}

fn digest(key: &[u8]) -> [u8; 32] {
    Sha256::digest(key).into()
}

impl Authenticator for ApiKeys {
    fn authenticate<'a>(&'a self, request: &'a AuthRequest) -> BoxFuture<'a, Result<AuthUser, Refusal>> {
        let challenge = "ApiKey header=\"x-api-key\", Bearer realm=\"graphwright\"";
        let outcome = match request.header(API_KEY_HEADER).or_else(|| request.bearer()) {
            None if request.headers().contains_key(API_KEY_HEADER) => {
                Err(Refusal::invalid("the x-api-key header is not text: send the API key as it was given"))
            }
            None => Err(Refusal::new(
                "no credentials: send an API key in the x-api-key header or as `Authorization: Bearer <key>`",
            )
            .challenge(challenge)),
            Some(key) => self
                .find(key.trim().as_bytes())
                .cloned()
                .ok_or_else(|| Refusal::invalid("the API key is not valid: check the key the client sends")),
        };
        Box::pin(std::future::ready(outcome))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::{HeaderMap, HeaderValue, Method};

    fn request(header: &str, value: &'static str) -> AuthRequest {
        let mut headers = HeaderMap::new();
        headers.insert(axum::http::HeaderName::from_bytes(header.as_bytes()).unwrap(), HeaderValue::from_static(value));
        AuthRequest::new(Method::GET, "/threads", headers)
    }

    #[tokio::test]
    async fn keys_are_read_from_either_header_and_refusals_do_not_repeat_them() {
        let keys = ApiKeys::new().key("s3cret-key", AuthUser::new("ada")).key("", AuthUser::new("nobody"));
        let by_header = keys.authenticate(&request("x-api-key", "s3cret-key")).await.unwrap();
        assert_eq!(by_header.identity, "ada");
        let by_bearer = keys.authenticate(&request("authorization", "Bearer s3cret-key")).await.unwrap();
        assert_eq!(by_bearer.identity, "ada");
        let wrong = keys.authenticate(&request("x-api-key", "s3cret-kez")).await.unwrap_err();
        assert!(!wrong.reason().contains("s3cret"), "{wrong}");
        assert!(keys.authenticate(&request("x-api-key", "")).await.is_err(), "an empty key is no key");
        let missing = keys.authenticate(&AuthRequest::new(Method::GET, "/", HeaderMap::new())).await.unwrap_err();
        assert!(missing.reason().contains("no credentials"), "{missing}");
        assert!(!format!("{keys:?}").contains("s3cret"));
    }
}
