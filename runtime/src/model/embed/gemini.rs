//! Google Gemini's native embeddings (`embedContent` for one text, `batchEmbedContents` for
//! several), which embed stored texts and search queries as different tasks (`taskType`).

use super::super::ModelError;
use super::super::http::{Connection, invalid};
use super::{Embeddings, check_dimensions, in_batches, post_json_keyed};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::{Value, json};

const PROVIDER: &str = "gemini";
const DEFAULT_BASE_URL: &str = "https://generativelanguage.googleapis.com/v1beta";
/// Texts per request: `batchEmbedContents` takes up to 100 requests in one.
const MAX_BATCH: usize = 100;

/// A client of the Gemini API's native embeddings (`POST {base}/models/{model}:embedContent`
/// for one text, `:batchEmbedContents` for several).
///
/// `GeminiEmbeddings::new(model)` reads the key from `GEMINI_API_KEY` (or `GOOGLE_API_KEY`),
/// sent as `x-goog-api-key`, and the base URL from `GEMINI_BASE_URL` (default
/// `https://generativelanguage.googleapis.com/v1beta`), as [`Gemini`](crate::model::Gemini)
/// does. Stored texts are embedded with the task type `RETRIEVAL_DOCUMENT` and queries with
/// `RETRIEVAL_QUERY` (see [`task_types`](Self::task_types)); [`dimensions`](Self::dimensions)
/// asks for shorter vectors (`outputDimensionality`) and vectors of another length are
/// refused. Texts go in batches of at most 100; a failed batch is retried like a model call.
///
/// ```
/// use graphwright::model::GeminiEmbeddings;
///
/// let gemini = GeminiEmbeddings::new("gemini-embedding-001").base_url("http://127.0.0.1:4010/v1beta").dimensions(768);
/// assert_eq!(gemini.model(), "gemini-embedding-001");
/// assert_eq!(gemini.endpoint(1), "http://127.0.0.1:4010/v1beta/models/gemini-embedding-001:embedContent");
/// assert_eq!(gemini.endpoint(2), "http://127.0.0.1:4010/v1beta/models/gemini-embedding-001:batchEmbedContents");
/// ```
#[derive(Clone)]
pub struct GeminiEmbeddings {
    conn: Connection,
    dimensions: Option<u32>,
    batch: usize,
    document_task: String,
    query_task: String,
}

impl GeminiEmbeddings {
    /// A client of `model` (`gemini-embedding-001`, or `models/…`), keyed by `GEMINI_API_KEY`
    /// (or `GOOGLE_API_KEY`) and addressed by `GEMINI_BASE_URL`.
    pub fn new(model: impl Into<String>) -> Self {
        let model: String = model.into();
        let model = model.strip_prefix("models/").map_or_else(|| model.clone(), str::to_owned);
        let mut conn = Connection::from_env(model, "GEMINI_BASE_URL", DEFAULT_BASE_URL, "GEMINI_API_KEY");
        if conn.api_key.is_none() {
            conn.api_key = std::env::var("GOOGLE_API_KEY").ok().filter(|key| !key.trim().is_empty());
        }
        Self {
            conn,
            dimensions: None,
            batch: MAX_BATCH,
            document_task: "RETRIEVAL_DOCUMENT".to_owned(),
            query_task: "RETRIEVAL_QUERY".to_owned(),
        }
    }

    /// The API's base URL, up to and including its version (`…/v1beta`).
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.conn.base_url = url.into();
        self
    }

    /// The API key, sent as `x-goog-api-key`.
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.conn.api_key = Some(key.into());
        self
    }

    /// Ask for vectors of `dimensions` numbers (`outputDimensionality`); a reply with vectors of
    /// another length is an error.
    #[must_use]
    pub fn dimensions(mut self, dimensions: u32) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// The task types stored texts and queries are embedded as (by default
    /// `RETRIEVAL_DOCUMENT` and `RETRIEVAL_QUERY`; Gemini also knows `SEMANTIC_SIMILARITY`,
    /// `CLASSIFICATION`, `CLUSTERING`, `CODE_RETRIEVAL_QUERY`, `QUESTION_ANSWERING` and
    /// `FACT_VERIFICATION`).
    ///
    /// ```
    /// use graphwright::model::GeminiEmbeddings;
    ///
    /// let similar = GeminiEmbeddings::new("gemini-embedding-001").task_types("SEMANTIC_SIMILARITY", "SEMANTIC_SIMILARITY");
    /// # let _ = similar;
    /// ```
    #[must_use]
    pub fn task_types(mut self, documents: impl Into<String>, queries: impl Into<String>) -> Self {
        self.document_task = documents.into();
        self.query_task = queries.into();
        self
    }

    /// At most `texts` texts per request (1 to 100).
    #[must_use]
    pub fn batch_size(mut self, texts: usize) -> Self {
        self.batch = texts.clamp(1, MAX_BATCH);
        self
    }

    /// Where a request of `texts` texts goes: `embedContent` for one, `batchEmbedContents` for
    /// more.
    pub fn endpoint(&self, texts: usize) -> String {
        let method = if texts == 1 { "embedContent" } else { "batchEmbedContents" };
        format!("{}/models/{}:{method}", self.conn.base_url.trim_end_matches('/'), self.conn.model)
    }

    /// One text's request (alone, or one of a batch).
    fn request(&self, text: &str, task: &str) -> Value {
        let mut request = json!({
            "model": format!("models/{}", self.conn.model),
            "content": {"parts": [{"text": text}]},
            "taskType": task,
        });
        if let Some(dimensions) = self.dimensions {
            request["outputDimensionality"] = json!(dimensions);
        }
        request
    }

    /// All of `texts`, in batches, embedded as `task`.
    async fn embed_as(&self, texts: &[String], task: &str) -> Result<Vec<Vec<f32>>, ModelError> {
        in_batches(PROVIDER, &self.conn, texts, self.batch, |chunk| self.batch(chunk, task)).await
    }

    /// One request for `texts`: their vectors, in order.
    async fn batch(&self, texts: &[String], task: &str) -> Result<Vec<Vec<f32>>, ModelError> {
        let body = match texts {
            [one] => self.request(one, task),
            _ => json!({"requests": texts.iter().map(|t| self.request(t, task)).collect::<Vec<_>>()}),
        };
        let raw =
            post_json_keyed(PROVIDER, &self.conn, self.endpoint(texts.len()), &body, Some("x-goog-api-key")).await?;
        let vectors = vectors(&raw, texts.len())?;
        check_dimensions(&raw, &vectors, self.dimensions)?;
        Ok(vectors)
    }
}

impl std::fmt::Debug for GeminiEmbeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GeminiEmbeddings")
            .field("conn", &self.conn)
            .field("dimensions", &self.dimensions)
            .field("batch", &self.batch)
            .field("document_task", &self.document_task)
            .field("query_task", &self.query_task)
            .finish()
    }
}

embeddings_over_connection!(GeminiEmbeddings);

impl Embeddings for GeminiEmbeddings {
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ModelError>> {
        Box::pin(self.embed_as(texts, &self.document_task))
    }

    fn embed_query<'a>(&'a self, query: &'a str) -> BoxFuture<'a, Result<Vec<f32>, ModelError>> {
        Box::pin(async move {
            let mut vectors = self.embed_as(&[query.to_owned()], &self.query_task).await?;
            vectors.pop().ok_or_else(|| invalid(b"", "no vector for the query"))
        })
    }
}

/// `embedContent`'s reply (`embedding`) or `batchEmbedContents`' (`embeddings`).
#[derive(Deserialize)]
struct Reply {
    embedding: Option<Values>,
    embeddings: Option<Vec<Values>>,
}

#[derive(Deserialize)]
struct Values {
    values: Vec<f32>,
}

/// The vectors of a reply to a request of `asked` texts.
fn vectors(raw: &[u8], asked: usize) -> Result<Vec<Vec<f32>>, ModelError> {
    let reply: Reply =
        serde_json::from_slice(raw).map_err(|e| invalid(raw, format!("not a Gemini embeddings reply: {e}")))?;
    let vectors: Vec<Vec<f32>> = match (reply.embeddings, reply.embedding) {
        (Some(many), _) => many.into_iter().map(|v| v.values).collect(),
        (None, Some(one)) => vec![one.values],
        (None, None) => return Err(invalid(raw, "the reply has neither `embedding` nor `embeddings`")),
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
    fn requests_name_the_model_task_and_dimensions_and_replies_are_counted() {
        let gemini = GeminiEmbeddings::new("models/gemini-embedding-001").dimensions(3);
        assert_eq!(gemini.model(), "gemini-embedding-001");
        assert_eq!(
            gemini.request("tides", "RETRIEVAL_QUERY"),
            json!({"model": "models/gemini-embedding-001", "content": {"parts": [{"text": "tides"}]},
                   "taskType": "RETRIEVAL_QUERY", "outputDimensionality": 3})
        );
        assert_eq!(vectors(br#"{"embedding": {"values": [1, 2]}}"#, 1).unwrap(), [vec![1.0, 2.0]]);
        let two = br#"{"embeddings": [{"values": [1]}, {"values": [2]}]}"#;
        assert_eq!(vectors(two, 2).unwrap(), [vec![1.0], vec![2.0]]);
        assert!(vectors(two, 3).unwrap_err().to_string().contains("2 vectors for 3 texts"));
        assert!(vectors(b"{}", 1).unwrap_err().to_string().contains("neither"));
        assert!(vectors(b"<html>", 1).unwrap_err().to_string().contains("not a Gemini embeddings reply"));
    }
}
