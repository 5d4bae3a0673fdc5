//! Request bodies and query strings, with errors in the API's `{"detail": ..}` form.

use crate::app::App;
use crate::error::ApiError;
use axum::extract::{FromRequest, Request};
use futures::StreamExt;
use serde::de::DeserializeOwned;
use std::sync::Arc;

/// A JSON body; an empty body reads as `{}` (clients send none for optional bodies).
pub(crate) struct Body<T>(pub(crate) T);

/// How much of an oversized body is read (and dropped) before answering 413: reading it lets
/// the client, still sending, receive the answer instead of a reset connection.
const DRAINED: usize = 64 * 1024 * 1024;

impl<T: DeserializeOwned> FromRequest<Arc<App>> for Body<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, app: &Arc<App>) -> Result<Self, Self::Rejection> {
        let limit = app.body_limit;
        let mut data = req.into_body().into_data_stream();
        let mut bytes = Vec::new();
        let mut seen = 0usize;
        while let Some(chunk) = data.next().await {
            let chunk = chunk.map_err(|e| ApiError::BadRequest(format!("the request body could not be read: {e}")))?;
            seen += chunk.len();
            if seen <= limit {
                bytes.extend_from_slice(&chunk);
            } else if seen > DRAINED {
                break;
            }
        }
        if seen > limit {
            return Err(ApiError::TooLarge(format!(
                "the request body has more than {limit} bytes, the most this server accepts"
            )));
        }
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) { b"{}" } else { &bytes };
        serde_json::from_slice(text).map(Body).map_err(|e| {
            if e.is_syntax() || e.is_eof() {
                ApiError::BadRequest(format!("the request body is not valid JSON: {e}"))
            } else {
                ApiError::Invalid(format!("the request body does not have the expected fields: {e}"))
            }
        })
    }
}

/// A query string's pairs, in order; repeated keys stay repeated (`select=a&select=b`).
pub(crate) struct Query(pub(crate) Vec<(String, String)>);

impl Query {
    pub(crate) fn parse(raw: Option<&str>) -> Self {
        Self(raw.map(|q| serde_urlencoded::from_str(q).unwrap_or_default()).unwrap_or_default())
    }

    /// The last value of `key`, if given and not empty (httpx sends `None` as an empty value).
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.0.iter().rev().find(|(k, v)| k == key && !v.is_empty()).map(|(_, v)| v.as_str())
    }

    /// A boolean flag: `true`/`1`, `false`/`0`.
    pub(crate) fn flag(&self, key: &str) -> Result<Option<bool>, ApiError> {
        match self.get(key) {
            None => Ok(None),
            Some("true" | "True" | "1") => Ok(Some(true)),
            Some("false" | "False" | "0") => Ok(Some(false)),
            Some(other) => Err(ApiError::Invalid(format!("`{key}` must be true or false, not {other:?}"))),
        }
    }

    /// A non-negative integer.
    pub(crate) fn number(&self, key: &str) -> Result<Option<usize>, ApiError> {
        self.get(key)
            .map(|v| {
                v.parse().map_err(|_| ApiError::Invalid(format!("`{key}` must be a non-negative integer, not {v:?}")))
            })
            .transpose()
    }
}
