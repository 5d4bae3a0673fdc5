//! Embeddings on AWS Bedrock through `InvokeModel` (`POST /model/{modelId}/invoke`): Amazon
//! Titan Text Embeddings (one text per call) and Cohere Embed (up to 96 texts per call).

use super::aws::{Aws, PROVIDER, post, url};
use crate::model::ModelError;
use crate::model::embed::{Embeddings, check_lengths, in_batches, with_retries};
use crate::model::http::{self, Connection, invalid};
use aws_credential_types::Credentials as AwsCredentials;
use futures::future::BoxFuture;
use futures::{StreamExt, TryStreamExt};
use serde::Deserialize;
use serde_json::{Value, json};

/// Titan texts embedded at once (one call each).
const DEFAULT_CONCURRENCY: usize = 4;
/// Texts per Cohere call: Bedrock takes up to 96 in one.
const COHERE_BATCH: usize = 96;

/// The request shape a model takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Family {
    /// Amazon Titan Text Embeddings: `{"inputText"}`, one text per call.
    Titan,
    /// Cohere Embed: `{"texts", "input_type"}`.
    Cohere,
}

/// Embeddings of the models AWS Bedrock serves through `InvokeModel`
/// (`POST {endpoint}/model/{modelId}/invoke`), signed and addressed as [`Bedrock`](super::Bedrock)
/// is (region, credentials, API key and endpoint from the same variables and builders).
///
/// The request follows the model id:
///
/// - **Amazon Titan Text Embeddings** (ids with `amazon.titan-embed`, such as
///   `amazon.titan-embed-text-v2:0`): `{"inputText", "dimensions", "normalize": true}`, one
///   text per call, so texts are embedded [`concurrency`](Self::concurrency) at a time (4
///   unless set), in order; `dimensions` (256, 512 or 1024) and `normalize` are sent to v2
///   only, as v1 refuses them.
/// - **Cohere Embed** (ids with `cohere.embed`, such as `cohere.embed-english-v3`):
///   `{"texts", "input_type"}`, up to 96 texts per call; stored texts are embedded as
///   `search_document` and queries as `search_query`; `dimensions` is Embed v4's
///   `output_dimension`.
///
/// Any other model is refused by [`new`](Self::new), naming these. Each call (a text for
/// Titan, a batch for Cohere) that fails with a retryable error, such as Bedrock's
/// `ThrottlingException`, is tried again under [`retry`](Self::retry); every vector is checked
/// (one per text, all of one length, of the length asked for).
///
/// ```
/// use graphwright::model::{AwsCredentials, BedrockEmbeddings};
///
/// let key = AwsCredentials::new("AKIDEXAMPLE", "secret", None, None, "example");
/// let titan = BedrockEmbeddings::new("amazon.titan-embed-text-v2:0")?.region("us-east-1").credentials(key).dimensions(512);
/// assert_eq!(
///     titan.endpoint()?,
///     "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.titan-embed-text-v2%3A0/invoke"
/// );
/// let error = BedrockEmbeddings::new("meta.llama3-8b-instruct-v1:0").unwrap_err();
/// assert!(error.to_string().contains("cohere.embed"));
/// # Ok::<(), graphwright::model::ModelError>(())
/// ```
#[derive(Clone)]
pub struct BedrockEmbeddings {
    conn: Connection,
    aws: Aws,
    family: Family,
    dimensions: Option<u32>,
    normalize: bool,
    concurrency: usize,
    batch: usize,
}

impl BedrockEmbeddings {
    /// A client of `model`, with the region, credentials and endpoint the environment gives;
    /// an error for a model that is neither Titan Text Embeddings nor Cohere Embed.
    pub fn new(model: impl Into<String>) -> Result<Self, ModelError> {
        let model = model.into();
        let family = if model.contains("amazon.titan-embed") {
            Family::Titan
        } else if model.contains("cohere.embed") {
            Family::Cohere
        } else {
            return Err(ModelError::Config(format!(
                "`{model}` is not an embeddings model BedrockEmbeddings speaks to: use Amazon Titan Text Embeddings \
                 (`amazon.titan-embed-text-v2:0`, `amazon.titan-embed-text-v1`) or Cohere Embed \
                 (`cohere.embed-english-v3`, `cohere.embed-multilingual-v3`, `cohere.embed-v4:0`)"
            )));
        };
        let (conn, aws) = Aws::from_env(model);
        Ok(Self {
            conn,
            aws,
            family,
            dimensions: None,
            normalize: true,
            concurrency: DEFAULT_CONCURRENCY,
            batch: COHERE_BATCH,
        })
    }

    /// Ask for vectors of `dimensions` numbers: Titan Text Embeddings v2 (256, 512 or 1024)
    /// and Cohere Embed v4; other models refuse it, and so does the call.
    #[must_use]
    pub fn dimensions(mut self, dimensions: u32) -> Self {
        self.dimensions = Some(dimensions);
        self
    }

    /// Whether Titan Text Embeddings v2 returns unit-length vectors (default `true`).
    #[must_use]
    pub fn normalize(mut self, normalize: bool) -> Self {
        self.normalize = normalize;
        self
    }

    /// How many Titan calls (one text each) are in flight at once (at least 1; default 4).
    #[must_use]
    pub fn concurrency(mut self, calls: usize) -> Self {
        self.concurrency = calls.max(1);
        self
    }

    /// At most `texts` texts per Cohere call (1 to 96).
    #[must_use]
    pub fn batch_size(mut self, texts: usize) -> Self {
        self.batch = texts.clamp(1, COHERE_BATCH);
        self
    }

    /// Where requests go; an error when no endpoint is given and no region is known.
    pub fn endpoint(&self) -> Result<String, ModelError> {
        url(&self.conn, &self.aws, "invoke")
    }

    /// Whether the model takes `dimensions` and `normalize` (Titan Text Embeddings v2).
    fn titan_v2(&self) -> bool {
        self.conn.model.contains("titan-embed-text-v2")
    }

    /// The dimensions asked for, refused for a model that cannot shorten its vectors.
    fn dimensions_for(&self, supported: bool) -> Result<Option<u32>, ModelError> {
        match self.dimensions {
            Some(dimensions) if !supported => Err(ModelError::Config(format!(
                "`{}` cannot be asked for {dimensions} dimensions: only Titan Text Embeddings v2 and Cohere Embed v4 \
                 take `dimensions`",
                self.conn.model
            ))),
            other => Ok(other),
        }
    }

    /// Posts `body` to the model: the reply's bytes.
    async fn invoke(&self, body: &Value) -> Result<Vec<u8>, ModelError> {
        let body =
            serde_json::to_vec(body).map_err(|e| ModelError::Config(format!("the request cannot be encoded: {e}")))?;
        let response = post(&self.conn, &self.aws, &self.endpoint()?, body, "application/json").await?;
        let raw = response.bytes().await.map_err(|e| http::transport(PROVIDER, &e))?;
        Ok(raw.to_vec())
    }

    /// One Titan call: the vector of `text`.
    async fn titan(&self, text: &str) -> Result<Vec<f32>, ModelError> {
        let mut body = json!({"inputText": text});
        let dimensions = self.dimensions_for(self.titan_v2())?;
        if self.titan_v2() {
            body["normalize"] = json!(self.normalize);
            if let Some(dimensions) = dimensions {
                body["dimensions"] = json!(dimensions);
            }
        }
        let raw = self.invoke(&body).await?;
        let reply: TitanReply =
            serde_json::from_slice(&raw).map_err(|e| invalid(&raw, format!("not a Titan embeddings reply: {e}")))?;
        let Some(vector) = reply.embedding.filter(|v| !v.is_empty()) else {
            return Err(invalid(&raw, "the reply has no `embedding`"));
        };
        match dimensions {
            Some(asked) if vector.len() != asked as usize => {
                Err(invalid(&raw, format!("a vector of {} numbers where {asked} were asked for", vector.len())))
            }
            _ => Ok(vector),
        }
    }

    /// One Cohere call: the vectors of `texts`, embedded as `input_type`, in order.
    async fn cohere(&self, texts: &[String], input_type: &str) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut body = json!({"texts": texts, "input_type": input_type});
        if let Some(dimensions) = self.dimensions_for(self.conn.model.contains("embed-v4"))? {
            body["output_dimension"] = json!(dimensions);
        }
        let raw = self.invoke(&body).await?;
        let reply: CohereReply =
            serde_json::from_slice(&raw).map_err(|e| invalid(&raw, format!("not a Cohere embed reply: {e}")))?;
        let vectors = match reply.embeddings {
            CohereVectors::Floats(vectors) | CohereVectors::ByType { float: vectors } => vectors,
        };
        if vectors.len() != texts.len() {
            return Err(invalid(&raw, format!("{} vectors for {} texts", vectors.len(), texts.len())));
        }
        Ok(vectors)
    }

    /// Every one of `texts`, embedded as `input_type` (Cohere's; Titan has none).
    async fn embed_as(&self, texts: &[String], input_type: &str) -> Result<Vec<Vec<f32>>, ModelError> {
        match self.family {
            Family::Cohere => {
                in_batches(PROVIDER, &self.conn, texts, self.batch, |chunk| self.cohere(chunk, input_type)).await
            }
            Family::Titan => {
                let retry = self.conn.settings.retry;
                // The calls are made first (none starts until polled), so that the stream's
                // type names no closure: one over borrowed texts would not be `Send` for every
                // lifetime, as a boxed future must be.
                let calls: Vec<_> =
                    texts.iter().map(|text| with_retries(PROVIDER, &retry, move || self.titan(text))).collect();
                let vectors: Vec<Vec<f32>> =
                    futures::stream::iter(calls).buffered(self.concurrency).try_collect().await?;
                check_lengths(&vectors)?;
                Ok(vectors)
            }
        }
    }
}

impl std::fmt::Debug for BedrockEmbeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BedrockEmbeddings")
            .field("conn", &self.conn)
            .field("region", &self.aws.region)
            .field("credentials", &self.aws.credentials.as_ref().map(|_| "[redacted]"))
            .field("family", &self.family)
            .field("dimensions", &self.dimensions)
            .field("concurrency", &self.concurrency)
            .field("batch", &self.batch)
            .finish_non_exhaustive()
    }
}

embeddings_over_connection!(BedrockEmbeddings);
aws_builders!(BedrockEmbeddings);

impl Embeddings for BedrockEmbeddings {
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
struct TitanReply {
    embedding: Option<Vec<f32>>,
}

#[derive(Deserialize)]
struct CohereReply {
    embeddings: CohereVectors,
}

/// Cohere's vectors: a list (`embeddings_floats`), or by type when types were asked for or
/// the model always answers so (`embeddings_by_type`).
#[derive(Deserialize)]
#[serde(untagged)]
enum CohereVectors {
    Floats(Vec<Vec<f32>>),
    ByType { float: Vec<Vec<f32>> },
}
