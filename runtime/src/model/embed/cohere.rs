//! Cohere's embed API (`POST {base}/v2/embed`), which embeds documents and search queries
//! differently (`input_type`).

use super::super::ModelError;
use super::super::http::{Connection, invalid};
use super::{Embeddings, in_batches, post_json};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;

const PROVIDER: &str = "cohere";
const DEFAULT_BASE_URL: &str = "https://api.cohere.com";
/// Texts per request: Cohere takes up to 96 in one.
const DEFAULT_BATCH: usize = 96;

/// A client of Cohere's embed API (`POST {base}/v2/embed`).
///
/// `CohereEmbeddings::new(model)` talks to `CO_API_URL` (default `https://api.cohere.com`) with
/// the key `COHERE_API_KEY` (or `CO_API_KEY`, the name Cohere's own SDKs read). Stored texts are
/// embedded as `search_document` and queries as `search_query`, as Cohere's models expect. Texts
/// go in batches of at most 96; a failed batch is retried like a model call.
///
/// ```
/// use graphwright::model::CohereEmbeddings;
///
/// let cohere = CohereEmbeddings::new("embed-english-v3.0").api_key("co-key");
/// assert_eq!(cohere.endpoint(), "https://api.cohere.com/v2/embed");
/// ```
#[derive(Clone)]
pub struct CohereEmbeddings {
    conn: Connection,
    batch: usize,
}

impl CohereEmbeddings {
    /// A client of `model` at `CO_API_URL` (or Cohere's own), keyed by `COHERE_API_KEY` or
    /// `CO_API_KEY`.
    pub fn new(model: impl Into<String>) -> Self {
        let mut conn = Connection::from_env(model.into(), "CO_API_URL", DEFAULT_BASE_URL, "COHERE_API_KEY");
        if conn.api_key.is_none() {
            conn.api_key = std::env::var("CO_API_KEY").ok().filter(|k| !k.trim().is_empty());
        }
        Self { conn, batch: DEFAULT_BATCH }
    }

    /// The API's base URL, without `/v2`.
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.conn.base_url = url.into();
        self
    }

    /// The key sent as `Authorization: Bearer`.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.conn.api_key = Some(key.into());
        self
    }

    /// At most `texts` texts per request (1 to 96).
    #[must_use]
    pub fn batch_size(mut self, texts: usize) -> Self {
        self.batch = texts.clamp(1, DEFAULT_BATCH);
        self
    }

    /// Where requests go.
    pub fn endpoint(&self) -> String {
        format!("{}/v2/embed", self.conn.base_url.trim_end_matches('/'))
    }

    /// All of `texts`, in batches, embedded as `input_type`.
    async fn embed_as(&self, texts: &[String], input_type: &str) -> Result<Vec<Vec<f32>>, ModelError> {
        in_batches(PROVIDER, &self.conn, texts, self.batch, |chunk| self.batch(chunk, input_type)).await
    }

    /// One request for `texts`: their vectors, in order.
    async fn batch(&self, texts: &[String], input_type: &str) -> Result<Vec<Vec<f32>>, ModelError> {
        let body = json!({
            "model": self.conn.model,
            "texts": texts,
            "input_type": input_type,
            "embedding_types": ["float"],
        });
        let raw = post_json(PROVIDER, &self.conn, self.endpoint(), &body).await?;
        let reply: Reply =
            serde_json::from_slice(&raw).map_err(|e| invalid(&raw, format!("not an embed reply: {e}")))?;
        if reply.embeddings.float.len() != texts.len() {
            return Err(invalid(&raw, format!("{} vectors for {} texts", reply.embeddings.float.len(), texts.len())));
        }
        Ok(reply.embeddings.float)
    }
}

impl std::fmt::Debug for CohereEmbeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CohereEmbeddings").field("conn", &self.conn).field("batch", &self.batch).finish()
    }
}

embeddings_over_connection!(CohereEmbeddings);

impl Embeddings for CohereEmbeddings {
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ModelError>> {
        Box::pin(self.embed_as(texts, "search_document"))
    }

    fn embed_query<'a>(&'a self, query: &'a str) -> BoxFuture<'a, Result<Vec<f32>, ModelError>> {
        Box::pin(async move {
            let mut vectors = self.embed_as(&[query.to_owned()], "search_query").await?;
            vectors.pop().ok_or_else(|| invalid(b"", "no vector for the query"))
        })
    }
}

#[derive(Deserialize)]
struct Reply {
    embeddings: Floats,
}

#[derive(Deserialize)]
struct Floats {
    float: Vec<Vec<f32>>,
}
