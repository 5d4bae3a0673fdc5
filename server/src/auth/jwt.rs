//! [`Jwt`]: callers known by a signed bearer token (a JSON Web Token).

use super::authenticator::{AuthRequest, Authenticator, Refusal};
use super::jwks::{Jwks, Unavailable};
use futures::future::BoxFuture;
use graphwright::AuthUser;
use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::JwkSet;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Lets in requests with `Authorization: Bearer <token>`, a JWT signed with a shared secret
/// (HS256) or by an identity provider whose public keys (RS256, ES256 and the rest of their
/// families) are given as a JWKS document, or fetched from its URL.
///
/// The signature is checked, then `exp` (required) and `nbf` (when present), with a leeway of
/// 60 seconds for clocks that differ, then `aud` and `iss` when [`audience`](Self::audience)
/// and [`issuer`](Self::issuer) are given (required then). The claims make the user: `sub` its
/// identity (required), `name` its display name, the `permissions` claim (a list, or a
/// space-separated string; the name is set with [`permissions_claim`](Self::permissions_claim))
/// and the space-separated `scope` its permissions, and the whole claims object its `extra`.
///
/// A refusal says what failed (no token, a malformed token, expired, not yet valid, another
/// audience or issuer, a bad signature, an unknown key) and never repeats the token.
///
/// ```no_run
/// use graphwright_server::{Jwt, Server};
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// // Tokens your own service signs:
/// let shared = Jwt::hs256(std::env::var("JWT_SECRET")?).audience("agents");
/// // Tokens of an identity provider, verified with its published keys:
/// let provider = Jwt::jwks_url("https://id.example.com/.well-known/jwks.json")
///     .issuer("https://id.example.com/")
///     .audience("agents");
/// // The same keys from a file:
/// let offline = Jwt::jwks_file("jwks.json")?;
/// let server = Server::new().auth(provider);
/// # Ok(())
/// # }
/// ```
#[must_use]
pub struct Jwt {
    keys: Keys,
    audience: Vec<String>,
    issuer: Vec<String>,
    permissions_claim: String,
    leeway: u64,
}

enum Keys {
    /// `None`: the secret given was empty, and no token is accepted.
    Secret(Option<DecodingKey>),
    Jwks(Jwks),
}

impl std::fmt::Debug for Jwt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let keys = match &self.keys {
            Keys::Secret(_) => "HS256 secret",
            Keys::Jwks(Jwks::Given(_)) => "JWKS document",
            Keys::Jwks(Jwks::Fetched(_)) => "JWKS URL",
        };
        f.debug_struct("Jwt")
            .field("keys", &keys)
            .field("audience", &self.audience)
            .field("issuer", &self.issuer)
            .field("permissions_claim", &self.permissions_claim)
            .finish_non_exhaustive()
    }
}

/// A JWKS document that could not be read.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum JwtError {
    /// The file could not be read.
    #[error("could not read the JWKS file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The text is not a JWKS document (`{"keys": [..]}`).
    #[error(
        "the JWKS document is not valid: {reason}; expected {{\"keys\": [..]}} as an identity provider publishes it"
    )]
    Document {
        /// What is wrong.
        reason: String,
    },
}

impl Jwt {
    fn with(keys: Keys) -> Self {
        Self { keys, audience: Vec::new(), issuer: Vec::new(), permissions_claim: "permissions".into(), leeway: 60 }
    }

    /// Tokens signed with HS256 and `secret`, shared with whoever issues them (32 random bytes
    /// or more, as RFC 7518 asks). An empty secret (an environment variable that was not set,
    /// say) accepts no token at all: anyone could sign with it.
    pub fn hs256(secret: impl AsRef<[u8]>) -> Self {
        let secret = secret.as_ref();
        Self::with(Keys::Secret((!secret.is_empty()).then(|| DecodingKey::from_secret(secret))))
    }

    /// Tokens signed by one of the keys of `document`, a JWKS (`{"keys": [..]}`) as identity
    /// providers publish it; a token names its key by `kid`.
    pub fn jwks(document: &str) -> Result<Self, JwtError> {
        let set: JwkSet = serde_json::from_str(document).map_err(|e| JwtError::Document { reason: e.to_string() })?;
        for key in &set.keys {
            DecodingKey::from_jwk(key)
                .map_err(|e| JwtError::Document { reason: format!("a key is not usable: {e}") })?;
        }
        Ok(Self::with(Keys::Jwks(Jwks::Given(Arc::new(set)))))
    }

    /// [`jwks`](Self::jwks) read from the file at `path`.
    pub fn jwks_file(path: impl AsRef<Path>) -> Result<Self, JwtError> {
        let path = path.as_ref();
        let text = std::fs::read_to_string(path).map_err(|source| JwtError::Read { path: path.to_owned(), source })?;
        Self::jwks(&text)
    }

    /// Tokens signed by one of the keys published at `url` (an identity provider's
    /// `jwks_uri`). The document is fetched when the first token comes, kept for an hour, and
    /// fetched again sooner for a token naming a key it lacks (at most every 30 seconds). When a
    /// fetch fails, the document fetched last is used.
    pub fn jwks_url(url: impl Into<String>) -> Self {
        Self::with(Keys::Jwks(Jwks::fetched(url.into())))
    }

    /// With [`jwks_url`](Self::jwks_url): the least time between two fetches caused by tokens
    /// naming a key the cached document lacks (default: 30 seconds). Has no effect on other keys.
    pub fn refetch_after(mut self, interval: std::time::Duration) -> Self {
        if let Keys::Jwks(Jwks::Fetched(fetched)) = &mut self.keys {
            fetched.min_refetch = interval;
        }
        self
    }

    /// Accepts only tokens whose `aud` names `audience` (call again to accept several).
    pub fn audience(mut self, audience: impl Into<String>) -> Self {
        self.audience.push(audience.into());
        self
    }

    /// Accepts only tokens whose `iss` is `issuer` (call again to accept several).
    pub fn issuer(mut self, issuer: impl Into<String>) -> Self {
        self.issuer.push(issuer.into());
        self
    }

    /// The claim the user's permissions are read from (default: `permissions`).
    pub fn permissions_claim(mut self, name: impl Into<String>) -> Self {
        self.permissions_claim = name.into();
        self
    }

    /// How many seconds `exp` and `nbf` may be off, for clocks that differ (default: 60).
    pub fn leeway(mut self, seconds: u64) -> Self {
        self.leeway = seconds;
        self
    }

    fn validation(&self, algorithms: Vec<Algorithm>) -> Validation {
        let mut validation = Validation::new(Algorithm::HS256);
        validation.algorithms = algorithms;
        validation.leeway = self.leeway;
        validation.validate_nbf = true;
        let mut required = vec!["exp"];
        if self.audience.is_empty() {
            validation.validate_aud = false;
        } else {
            validation.set_audience(&self.audience);
            required.push("aud");
        }
        if !self.issuer.is_empty() {
            validation.set_issuer(&self.issuer);
            required.push("iss");
        }
        validation.set_required_spec_claims(&required);
        validation
    }

    async fn verify(&self, token: &str) -> Result<AuthUser, Refusal> {
        let header = jsonwebtoken::decode_header(token).map_err(|_| malformed())?;
        let (key, algorithms) = match &self.keys {
            Keys::Secret(Some(key)) => (key.clone(), vec![Algorithm::HS256]),
            Keys::Secret(None) => {
                tracing::error!("Jwt::hs256 was given an empty secret: every token is refused");
                return Err(Refusal::new("the server has no secret to verify tokens with: it accepts none"));
            }
            Keys::Jwks(jwks) => {
                let found = jwks.find(header.kid.as_deref()).await.map_err(|Unavailable::Fetch(reason)| {
                    tracing::warn!(%reason, "the identity provider's keys could not be fetched");
                    Refusal::new("the identity provider's keys could not be fetched: try again later")
                })?;
                let Some(jwk) = found else {
                    return Err(Refusal::invalid(
                        "unknown key: the token's `kid` names none of the keys this server trusts",
                    ));
                };
                let key = DecodingKey::from_jwk(&jwk)
                    .map_err(|_| Refusal::invalid("the key the token names cannot verify signatures"))?;
                let algorithms = match jwk.common.key_algorithm.and_then(|a| Algorithm::try_from(a).ok()) {
                    Some(algorithm) => vec![algorithm],
                    // Never a shared-secret algorithm with a public key.
                    None => key.family().algorithms().to_vec(),
                };
                (key, algorithms)
            }
        };
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, &key, &self.validation(algorithms))
            .map_err(|e| refusal(e.kind(), header.alg))?;
        self.user(data.claims)
    }

    fn user(&self, claims: Map<String, Value>) -> Result<AuthUser, Refusal> {
        let Some(Value::String(subject)) = claims.get("sub") else {
            return Err(Refusal::invalid("the token has no `sub` claim naming the user"));
        };
        let mut user = AuthUser::new(subject.clone());
        if let Some(Value::String(name)) = claims.get("name") {
            user = user.with_display_name(name.clone());
        }
        let mut permissions = Vec::new();
        match claims.get(&self.permissions_claim) {
            Some(Value::Array(list)) => permissions.extend(list.iter().filter_map(Value::as_str).map(str::to_owned)),
            Some(Value::String(spaced)) => permissions.extend(spaced.split_whitespace().map(str::to_owned)),
            _ => {}
        }
        if let Some(Value::String(scope)) = claims.get("scope") {
            for scope in scope.split_whitespace() {
                if !permissions.iter().any(|p| p == scope) {
                    permissions.push(scope.to_owned());
                }
            }
        }
        Ok(user.with_permissions(permissions).with_extra(claims))
    }
}

fn malformed() -> Refusal {
    Refusal::invalid(
        "malformed token: the bearer token is not a JWT (header.payload.signature, base64url-encoded JSON)",
    )
}

/// What the client reads when a token fails verification: what failed, never the token.
fn refusal(kind: &ErrorKind, alg: Algorithm) -> Refusal {
    match kind {
        ErrorKind::ExpiredSignature => Refusal::invalid("the token has expired (`exp`): get a new one"),
        ErrorKind::ImmatureSignature => Refusal::invalid("the token is not valid yet (`nbf` is in the future)"),
        ErrorKind::InvalidAudience => {
            Refusal::invalid("wrong audience: the token's `aud` does not name this server's audience")
        }
        ErrorKind::InvalidIssuer => {
            Refusal::invalid("wrong issuer: the token's `iss` is not an issuer this server trusts")
        }
        ErrorKind::InvalidSignature => {
            Refusal::invalid("bad signature: the token was not signed by a key this server trusts")
        }
        ErrorKind::InvalidAlgorithm => {
            Refusal::invalid(format!("the token is signed with {alg:?}, which this server does not accept for its key"))
        }
        ErrorKind::MissingRequiredClaim(claim) => Refusal::invalid(format!("the token has no `{claim}` claim")),
        ErrorKind::InvalidClaimFormat(claim) => {
            Refusal::invalid(format!("the token's `{claim}` claim does not have the expected type"))
        }
        ErrorKind::InvalidToken | ErrorKind::Base64(_) | ErrorKind::Json(_) | ErrorKind::Utf8(_) => malformed(),
        _ => Refusal::invalid("the token could not be verified"),
    }
}

impl Authenticator for Jwt {
    fn authenticate<'a>(&'a self, request: &'a AuthRequest) -> BoxFuture<'a, Result<AuthUser, Refusal>> {
        Box::pin(async move {
            let Some(token) = request.bearer() else {
                return Err(Refusal::new("no credentials: send a JWT as `Authorization: Bearer <token>`"));
            };
            self.verify(token).await
        })
    }
}
