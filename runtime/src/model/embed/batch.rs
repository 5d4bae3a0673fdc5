//! What every embeddings client shares in sending: texts in batches, each request retried
//! under the client's policy, and the checks on the vectors that come back.

use crate::model::ModelError;
use crate::model::ModelRetry;
use crate::model::http::{Connection, invalid};
use std::time::Instant;

/// Every one of `texts`, in requests of at most `size` texts each sent by `send` (retried under
/// `conn`'s policy): their vectors in order, checked to be of one length.
pub(crate) async fn in_batches<'a, F, Fut>(
    provider: &str,
    conn: &Connection,
    texts: &'a [String],
    size: usize,
    send: F,
) -> Result<Vec<Vec<f32>>, ModelError>
where
    F: Fn(&'a [String]) -> Fut,
    Fut: Future<Output = Result<Vec<Vec<f32>>, ModelError>>,
{
    let mut out = Vec::with_capacity(texts.len());
    for chunk in texts.chunks(size) {
        out.extend(with_retries(provider, &conn.settings.retry, || send(chunk)).await?);
    }
    check_lengths(&out)?;
    Ok(out)
}

/// Posts `body` to `url` with `conn`'s key as a bearer token: the reply's bytes, or the
/// classified error of a failed response.
pub(crate) async fn post_json(
    provider: &str,
    conn: &Connection,
    url: String,
    body: &serde_json::Value,
) -> Result<Vec<u8>, ModelError> {
    post_json_keyed(provider, conn, url, body, None).await
}

/// [`post_json`] with the key in the header `key_header` (Gemini's `x-goog-api-key`, Azure's
/// `api-key`), or as a bearer token when `None`.
pub(crate) async fn post_json_keyed(
    provider: &str,
    conn: &Connection,
    url: String,
    body: &serde_json::Value,
    key_header: Option<&str>,
) -> Result<Vec<u8>, ModelError> {
    let body =
        serde_json::to_vec(body).map_err(|e| ModelError::Config(format!("the request cannot be encoded: {e}")))?;
    let mut request = conn.http.post(url);
    match (&conn.api_key, key_header) {
        (Some(key), None) => request = request.bearer_auth(key),
        (Some(key), Some(header)) => request = request.header(header, key),
        (None, _) => {}
    }
    let response = crate::model::http::post(provider, request, body).await?;
    let raw = response.bytes().await.map_err(|e| crate::model::http::transport(provider, &e))?;
    Ok(raw.to_vec())
}

/// Runs `attempt` under `retry`: again after a retryable failure, after the policy's wait (or
/// the one the provider asked for), up to its number of attempts.
pub(crate) async fn with_retries<T, F, Fut>(provider: &str, retry: &ModelRetry, mut attempt: F) -> Result<T, ModelError>
where
    F: FnMut() -> Fut,
    Fut: Future<Output = Result<T, ModelError>>,
{
    let mut attempts = 0;
    loop {
        attempts += 1;
        let started = Instant::now();
        let error = match attempt().await {
            Ok(value) => return Ok(value),
            Err(error) => error,
        };
        if !retry.retries(&error, attempts) {
            return Err(error);
        }
        let wait = retry.wait(attempts, error.retry_after());
        tracing::warn!(
            provider,
            attempt = attempts,
            took = ?started.elapsed(),
            ?wait,
            %error,
            "embeddings call failed; retrying"
        );
        tokio::time::sleep(wait).await;
    }
}

/// Every vector has the first one's length, and none is empty.
pub(crate) fn check_lengths(vectors: &[Vec<f32>]) -> Result<(), ModelError> {
    let Some(first) = vectors.first() else { return Ok(()) };
    if first.is_empty() {
        return Err(invalid(b"", "the model gave an empty vector"));
    }
    match vectors.iter().position(|v| v.len() != first.len()) {
        Some(at) => Err(invalid(
            b"",
            format!("vector {at} has {} numbers where the first has {}", vectors[at].len(), first.len()),
        )),
        None => Ok(()),
    }
}

/// Every vector of a reply `raw` has the `dimensions` asked for, if some were.
pub(crate) fn check_dimensions(raw: &[u8], vectors: &[Vec<f32>], dimensions: Option<u32>) -> Result<(), ModelError> {
    let Some(asked) = dimensions.and_then(|d| usize::try_from(d).ok()) else { return Ok(()) };
    match vectors.iter().position(|v| v.len() != asked) {
        Some(at) => {
            Err(invalid(raw, format!("vector {at} has {} numbers where {asked} were asked for", vectors[at].len())))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_of_other_lengths_are_refused() {
        assert!(check_lengths(&[vec![1.0, 2.0], vec![3.0, 4.0]]).is_ok());
        let error = check_lengths(&[vec![1.0, 2.0], vec![3.0]]).unwrap_err().to_string();
        assert!(error.contains("vector 1 has 1 numbers where the first has 2"), "{error}");
        assert!(check_lengths(&[vec![]]).is_err());
        assert!(check_dimensions(b"", &[vec![1.0, 2.0]], Some(2)).is_ok());
        let error = check_dimensions(b"", &[vec![1.0, 2.0], vec![3.0]], Some(2)).unwrap_err().to_string();
        assert!(error.contains("vector 1 has 1 numbers where 2 were asked for"), "{error}");
    }
}
