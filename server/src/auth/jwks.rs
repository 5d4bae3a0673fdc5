//! The keys a [`Jwt`](super::Jwt) verifies signatures with: a JWKS document given once, or
//! fetched from the identity provider's URL, cached, and fetched again for a key it does not
//! have.

use jsonwebtoken::jwk::{Jwk, JwkSet};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a fetched document is used before it is fetched again.
const MAX_AGE: Duration = Duration::from_hours(1);

/// How soon after a fetch a token naming an unknown key may cause another, unless
/// [`Jwt::refetch_after`](super::Jwt::refetch_after) says otherwise: tokens with made-up key ids
/// must not turn the server into a client hammering the identity provider.
pub(super) const MIN_REFETCH: Duration = Duration::from_secs(30);

/// Why the keys could not be had when a token came.
#[derive(Debug)]
pub(super) enum Unavailable {
    /// The fetch failed; the reason is for the log, not the client.
    Fetch(String),
}

/// A JWKS document, given or fetched.
pub(super) enum Jwks {
    Given(Arc<JwkSet>),
    Fetched(Fetched),
}

pub(super) struct Fetched {
    url: String,
    pub(super) min_refetch: Duration,
    client: reqwest::Client,
    cached: tokio::sync::Mutex<Option<(Arc<JwkSet>, Instant)>>,
}

impl Jwks {
    pub(super) fn fetched(url: String) -> Self {
        let client = reqwest::Client::builder().timeout(Duration::from_secs(10)).build().unwrap_or_default();
        Self::Fetched(Fetched { url, min_refetch: MIN_REFETCH, client, cached: tokio::sync::Mutex::new(None) })
    }

    /// The key `kid` names (the only key, when the token names none and there is one), fetching
    /// the document first when it is not cached, too old, or lacks the key.
    pub(super) async fn find(&self, kid: Option<&str>) -> Result<Option<Jwk>, Unavailable> {
        match self {
            Self::Given(set) => Ok(pick(set, kid)),
            Self::Fetched(fetched) => fetched.find(kid).await,
        }
    }
}

impl Fetched {
    async fn find(&self, kid: Option<&str>) -> Result<Option<Jwk>, Unavailable> {
        // One fetch at a time: tokens that come together wait for the same document.
        let mut cached = self.cached.lock().await;
        if let Some((set, at)) = cached.as_ref() {
            let found = pick(set, kid);
            let fresh = at.elapsed() < MAX_AGE;
            if found.is_some() && fresh || found.is_none() && at.elapsed() < self.min_refetch {
                return Ok(found);
            }
        }
        match self.fetch().await {
            Ok(set) => {
                let set = Arc::new(set);
                let found = pick(&set, kid);
                *cached = Some((set, Instant::now()));
                Ok(found)
            }
            // The provider is down: the keys it published last still verify what they signed.
            Err(Unavailable::Fetch(reason)) => match cached.as_ref() {
                Some((set, _)) => {
                    tracing::warn!(%reason, "the JWKS could not be fetched again: its last copy is used");
                    Ok(pick(set, kid))
                }
                None => Err(Unavailable::Fetch(reason)),
            },
        }
    }

    async fn fetch(&self) -> Result<JwkSet, Unavailable> {
        let failed = |e: reqwest::Error| Unavailable::Fetch(format!("fetching the JWKS at {} failed: {e}", self.url));
        let response = self.client.get(&self.url).send().await.map_err(failed)?;
        let response = response.error_for_status().map_err(failed)?;
        response.json::<JwkSet>().await.map_err(failed)
    }
}

fn pick(set: &JwkSet, kid: Option<&str>) -> Option<Jwk> {
    match kid {
        Some(kid) => set.find(kid).cloned(),
        None if set.keys.len() == 1 => set.keys.first().cloned(),
        None => None,
    }
}
