//! Ollama's native embeddings (`POST {host}/api/embed`): many texts in one request, one vector
//! each.

use super::super::ModelError;
use super::super::http::{Connection, invalid};
use super::{Embeddings, check_dimensions, in_batches, post_json_keyed};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;

const PROVIDER: &str = "ollama";
/// Texts per request by default: Ollama sets no limit; this keeps one request's body and its
/// reply of a few megabytes.
const DEFAULT_BATCH: usize = 256;

/// A client of Ollama's native embeddings API (`POST {host}/api/embed`).
///
/// `OllamaEmbeddings::new(model)` talks to `OLLAMA_HOST` (`host:port` or a URL; default
/// `http://localhost:11434`), sending `OLLAMA_API_KEY` as a bearer token when it is set, as
/// [`Ollama`](crate::model::Ollama) does. Texts go as `input: [..]` in batches of at most
/// [`batch_size`](Self::batch_size) and come back as `embeddings: [[..], ..]`; a reply of one
/// `embedding` (the shape of the older `/api/embeddings`) is read for a request of one text.
/// [`dimensions`](Self::dimensions) asks models that can shorten their vectors to. A failed batch
/// is retried like a model call.
///
/// ```
/// use graphwright::model::OllamaEmbeddings;
///
/// let local = OllamaEmbeddings::new("nomic-embed-text").base_url("http://127.0.0.1:11434").batch_size(64);
/// assert_eq!(local.model(), "nomic-embed-text");
/// assert_eq!(local.endpoint(), "http://127.0.0.1:11434/api/embed");
/// ```
#[derive(Clone)]
pub struct OllamaEmbeddings {
    conn: Connection,
    dimensions: Option<u32>,
    batch: usize,
}

impl OllamaEmbeddings {
    /// A client of `model` on the server `OLLAMA_HOST` names (keyed by `OLLAMA_API_KEY`, if set).
    pub fn new(model: impl Into<String>) -> Self {
        Self { conn: super::super::ollama::connection(model.into()), dimensions: None, batch: DEFAULT_BATCH }
    }

    /// The server's address (`http://host:11434`), without `/api`.
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.conn.base_url = url.into();
        self
    }

    /// A key sent as `Authorization: Bearer` (Ollama itself needs none).
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.conn.api_key = Some(key.into());
        self
    }

    /// Ask for vectors of `dimensions` numbers (models that can shorten theirs); a reply with
    /// vectors of another length is an error.
    #[must_use]
    pub fn dimensions(mut self, dimensions: u32) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// At most `texts` texts per request (at least 1).
    #[must_use]
    pub fn batch_size(mut self, texts: usize) -> Self {
        self.batch = texts.max(1);
        self
    }

    /// Where requests go.
    pub fn endpoint(&self) -> String {
        format!("{}/api/embed", self.conn.base_url.trim_end_matches('/'))
    }

    /// One request for `texts`: their vectors, in order.
    async fn batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut body = json!({"model": self.conn.model, "input": texts});
        if let Some(dimensions) = self.dimensions {
            body["dimensions"] = json!(dimensions);
        }
        let raw = post_json_keyed(PROVIDER, &self.conn, self.endpoint(), &body, None).await?;
        let vectors = vectors(&raw, texts.len())?;
        check_dimensions(&raw, &vectors, self.dimensions)?;
        Ok(vectors)
    }
}

impl std::fmt::Debug for OllamaEmbeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OllamaEmbeddings")
            .field("conn", &self.conn)
            .field("dimensions", &self.dimensions)
            .field("batch", &self.batch)
            .finish()
    }
}

embeddings_over_connection!(OllamaEmbeddings);

impl Embeddings for OllamaEmbeddings {
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ModelError>> {
        Box::pin(in_batches(PROVIDER, &self.conn, texts, self.batch, |chunk| self.batch(chunk)))
    }
}

/// `/api/embed`'s reply (`embeddings`), or the one-vector shape (`embedding`).
#[derive(Deserialize)]
struct Reply {
    embeddings: Option<Vec<Vec<f32>>>,
    embedding: Option<Vec<f32>>,
}

/// The vectors of a reply to a request of `asked` texts.
fn vectors(raw: &[u8], asked: usize) -> Result<Vec<Vec<f32>>, ModelError> {
    let reply: Reply =
        serde_json::from_slice(raw).map_err(|e| invalid(raw, format!("not an Ollama embed reply: {e}")))?;
    let vectors = match (reply.embeddings, reply.embedding) {
        (Some(many), _) => many,
        (None, Some(one)) => vec![one],
        (None, None) => return Err(invalid(raw, "the reply has neither `embeddings` nor `embedding`")),
    };
    if vectors.len() != asked {
        return Err(invalid(raw, format!("{} vectors for {asked} texts", vectors.len())));
    }
    Ok(vectors)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn both_reply_shapes_are_read_and_counted() {
        let many = br#"{"model": "m", "embeddings": [[0.5, 1], [2, 3]], "prompt_eval_count": 4}"#;
        assert_eq!(vectors(many, 2).unwrap(), [vec![0.5, 1.0], vec![2.0, 3.0]]);
        assert!(vectors(many, 3).unwrap_err().to_string().contains("2 vectors for 3 texts"));
        assert_eq!(vectors(br#"{"embedding": [1, 2]}"#, 1).unwrap(), [vec![1.0, 2.0]]);
        let error = vectors(br#"{"embedding": [1, 2]}"#, 2).unwrap_err().to_string();
        assert!(error.contains("1 vectors for 2 texts"), "{error}");
        assert!(vectors(br#"{"model": "m"}"#, 1).unwrap_err().to_string().contains("neither"));
    }
}
