//! OpenAI's embeddings API (`POST {base}/embeddings`), which most providers and local servers
//! also serve.

use super::super::ModelError;
use super::super::http::{Connection, invalid};
use super::{Embeddings, in_batches, post_json_keyed};
use futures::future::BoxFuture;
use serde::Deserialize;
use serde_json::json;

const PROVIDER: &str = "openai";
const DEFAULT_BASE_URL: &str = "https://api.openai.com/v1";
/// Texts per request: OpenAI takes up to 2048 inputs in one.
const DEFAULT_BATCH: usize = 2048;

/// A client of an OpenAI-compatible embeddings endpoint (`POST {base}/embeddings`).
///
/// `OpenAiEmbeddings::new(model)` talks to `OPENAI_BASE_URL` (default
/// `https://api.openai.com/v1`) with the key `OPENAI_API_KEY`, as [`OpenAi`](crate::model::OpenAi)
/// does; [`base_url`](Self::base_url) points it at another server (Ollama's
/// `http://localhost:11434/v1`, vLLM, llama.cpp). Texts go in batches of at most
/// [`batch_size`](Self::batch_size), one after another; a batch that fails with a retryable
/// error (429, 5xx, a dropped connection) is tried again under [`retry`](Self::retry).
///
/// ```
/// use graphwright::model::OpenAiEmbeddings;
///
/// let local = OpenAiEmbeddings::new("all-minilm").base_url("http://127.0.0.1:11434/v1").batch_size(64);
/// assert_eq!(local.model(), "all-minilm");
/// assert_eq!(local.endpoint(), "http://127.0.0.1:11434/v1/embeddings");
/// ```
#[derive(Clone)]
pub struct OpenAiEmbeddings {
    conn: Connection,
    dimensions: Option<u32>,
    batch: usize,
    /// The service, as errors name it (`openai`, `azure`, or a preset's name).
    provider: &'static str,
    /// Azure's `api-version` query parameter.
    api_version: Option<String>,
    /// The header the key goes in: `Authorization: Bearer` when `None`, Azure's `api-key`.
    key_header: Option<&'static str>,
}

impl OpenAiEmbeddings {
    /// A client of `model` at `OPENAI_BASE_URL` (or OpenAI's own), keyed by `OPENAI_API_KEY`.
    pub fn new(model: impl Into<String>) -> Self {
        let conn = Connection::from_env(model.into(), "OPENAI_BASE_URL", DEFAULT_BASE_URL, "OPENAI_API_KEY");
        Self::over(conn, PROVIDER)
    }

    fn over(conn: Connection, provider: &'static str) -> Self {
        Self { conn, dimensions: None, batch: DEFAULT_BATCH, provider, api_version: None, key_header: None }
    }

    /// A client of `model` on a known OpenAI-compatible service that serves embeddings, by
    /// name: `mistral`, `together`, `fireworks`, `openrouter`, and the local servers `vllm`,
    /// `lmstudio` and `llamacpp`, keyed and addressed as
    /// [`OpenAi::compatible`](crate::model::OpenAi::compatible) is. A service without an
    /// embeddings API (`groq`, `deepseek`, `xai`) or an unknown name is an error listing the
    /// ones that have one.
    ///
    /// ```
    /// use graphwright::model::OpenAiEmbeddings;
    ///
    /// let mistral = OpenAiEmbeddings::compatible("mistral", "mistral-embed")?;
    /// # if std::env::var("MISTRAL_BASE_URL").is_err() {
    /// assert_eq!(mistral.endpoint(), "https://api.mistral.ai/v1/embeddings");
    /// # }
    /// let error = OpenAiEmbeddings::compatible("groq", "m").unwrap_err().to_string();
    /// assert!(error.contains("groq") && error.contains("mistral"), "{error}");
    /// # Ok::<(), graphwright::model::ModelError>(())
    /// ```
    pub fn compatible(provider: &str, model: impl Into<String>) -> Result<Self, ModelError> {
        let Some(preset) = crate::model::presets::find(provider).filter(|p| p.embeddings) else {
            let known = if crate::model::presets::find(provider).is_some() {
                format!("`{provider}` serves no embeddings API")
            } else {
                format!("`{provider}` is not an OpenAI-compatible service graphwright knows")
            };
            return Err(ModelError::Config(format!(
                "{known}: use one of {}, or `OpenAiEmbeddings::new(model).base_url(..)` for any other",
                crate::model::presets::embedding_names().join(", ")
            )));
        };
        let conn = Connection::from_env(model.into(), preset.url_var, preset.base_url, preset.key_var);
        Ok(Self::over(conn, preset.name))
    }

    /// A client of the Azure OpenAI embeddings deployment `deployment` on the resource
    /// `AZURE_OPENAI_ENDPOINT` names, keyed by `AZURE_OPENAI_API_KEY` (sent as `api-key`) under
    /// the API version `OPENAI_API_VERSION` (or `AZURE_OPENAI_API_VERSION`), as
    /// [`OpenAi::azure`](crate::model::OpenAi::azure) is. An error names the variable when the
    /// endpoint is not set.
    ///
    /// ```
    /// use graphwright::model::OpenAiEmbeddings;
    ///
    /// # if std::env::var("AZURE_OPENAI_ENDPOINT").is_err() {
    /// let error = OpenAiEmbeddings::azure("embed-prod").unwrap_err();
    /// assert!(error.to_string().contains("AZURE_OPENAI_ENDPOINT"));
    /// # }
    /// ```
    pub fn azure(deployment: &str) -> Result<Self, ModelError> {
        let endpoint =
            std::env::var("AZURE_OPENAI_ENDPOINT").ok().filter(|v| !v.trim().is_empty()).ok_or_else(|| {
                ModelError::Config(
                    "an Azure OpenAI client needs its resource's endpoint: set AZURE_OPENAI_ENDPOINT \
                 (https://{resource}.openai.azure.com), or use OpenAiEmbeddings::azure_at(endpoint, deployment)"
                        .to_owned(),
                )
            })?;
        Ok(Self::azure_at(&endpoint, deployment))
    }

    /// [`azure`](Self::azure) on the resource at `endpoint`, given in code.
    ///
    /// ```
    /// use graphwright::model::OpenAiEmbeddings;
    ///
    /// let azure = OpenAiEmbeddings::azure_at("https://contoso.openai.azure.com", "embed-prod")
    ///     .api_version("2024-10-21")
    ///     .azure_ad_token("token from Entra ID");
    /// assert_eq!(
    ///     azure.endpoint(),
    ///     "https://contoso.openai.azure.com/openai/deployments/embed-prod/embeddings?api-version=2024-10-21"
    /// );
    /// ```
    pub fn azure_at(endpoint: &str, deployment: &str) -> Self {
        let base = format!("{}/openai/deployments/{deployment}", endpoint.trim_end_matches('/'));
        let conn = Connection::from_env(deployment.to_owned(), "", &base, "AZURE_OPENAI_API_KEY");
        let env = |name| std::env::var(name).ok().filter(|v: &String| !v.trim().is_empty());
        let version = env("OPENAI_API_VERSION")
            .or_else(|| env("AZURE_OPENAI_API_VERSION"))
            .unwrap_or_else(|| crate::model::AZURE_API_VERSION.to_owned());
        Self { api_version: Some(version), key_header: Some("api-key"), ..Self::over(conn, "azure") }
    }

    /// The `api-version` query parameter sent with every request (Azure).
    #[must_use]
    pub fn api_version(mut self, version: impl Into<String>) -> Self {
        self.api_version = Some(version.into());
        self
    }

    /// Authenticates to Azure with a Microsoft Entra ID access token (`Authorization: Bearer`)
    /// instead of a key.
    #[must_use]
    pub fn azure_ad_token(mut self, token: impl Into<String>) -> Self {
        self.conn.api_key = Some(token.into());
        self.key_header = None;
        self
    }

    /// The API's base URL, up to and including `/v1`.
    #[must_use]
    pub fn base_url(mut self, url: impl Into<String>) -> Self {
        self.conn.base_url = url.into();
        self
    }

    /// The key, sent as `Authorization: Bearer` (Azure's in `api-key`).
    #[must_use]
    pub fn api_key(mut self, key: impl Into<String>) -> Self {
        self.conn.api_key = Some(key.into());
        self
    }

    /// Ask for vectors of `dimensions` numbers (models that can shorten theirs:
    /// `text-embedding-3-*`).
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
        let url = format!("{}/embeddings", self.conn.base_url.trim_end_matches('/'));
        match &self.api_version {
            Some(version) => format!("{url}?api-version={version}"),
            None => url,
        }
    }

    /// One request for `texts`: their vectors, in order.
    async fn batch(&self, texts: &[String]) -> Result<Vec<Vec<f32>>, ModelError> {
        let mut body = json!({"model": self.conn.model, "input": texts, "encoding_format": "float"});
        if let Some(dimensions) = self.dimensions {
            body["dimensions"] = json!(dimensions);
        }
        let raw = post_json_keyed(self.provider, &self.conn, self.endpoint(), &body, self.key_header).await?;
        vectors(&raw, texts.len())
    }
}

impl std::fmt::Debug for OpenAiEmbeddings {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OpenAiEmbeddings")
            .field("conn", &self.conn)
            .field("dimensions", &self.dimensions)
            .field("batch", &self.batch)
            .field("provider", &self.provider)
            .field("api_version", &self.api_version)
            .field("key_header", &self.key_header)
            .finish()
    }
}

embeddings_over_connection!(OpenAiEmbeddings);

impl Embeddings for OpenAiEmbeddings {
    fn embed<'a>(&'a self, texts: &'a [String]) -> BoxFuture<'a, Result<Vec<Vec<f32>>, ModelError>> {
        Box::pin(in_batches(self.provider, &self.conn, texts, self.batch, |chunk| self.batch(chunk)))
    }
}

#[derive(Deserialize)]
struct Reply {
    data: Vec<Datum>,
}

#[derive(Deserialize)]
struct Datum {
    index: usize,
    embedding: Vec<f32>,
}

/// The vectors of a reply to a request of `asked` texts, put in the texts' order by `index`.
fn vectors(raw: &[u8], asked: usize) -> Result<Vec<Vec<f32>>, ModelError> {
    let reply: Reply =
        serde_json::from_slice(raw).map_err(|e| invalid(raw, format!("not an embeddings reply: {e}")))?;
    let mut slots: Vec<Option<Vec<f32>>> = vec![None; asked];
    for datum in reply.data {
        match slots.get_mut(datum.index) {
            Some(slot @ None) => *slot = Some(datum.embedding),
            Some(Some(_)) => return Err(invalid(raw, format!("two vectors for text {}", datum.index))),
            None => return Err(invalid(raw, format!("a vector for text {} of {asked}", datum.index))),
        }
    }
    slots
        .into_iter()
        .enumerate()
        .map(|(i, slot)| slot.ok_or_else(|| invalid(raw, format!("no vector for text {i} of {asked}"))))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vectors_come_back_in_the_texts_order_and_gaps_are_errors() {
        let raw = br#"{"data": [{"index": 1, "embedding": [0.5, 1]}, {"index": 0, "embedding": [2, 3]}]}"#;
        assert_eq!(vectors(raw, 2).unwrap(), [vec![2.0, 3.0], vec![0.5, 1.0]]);
        let error = vectors(raw, 3).unwrap_err().to_string();
        assert!(error.contains("no vector for text 2 of 3"), "{error}");
        let error = vectors(raw, 1).unwrap_err().to_string();
        assert!(error.contains("a vector for text 1 of 1"), "{error}");
        let twice = br#"{"data": [{"index": 0, "embedding": [1]}, {"index": 0, "embedding": [2]}]}"#;
        assert!(vectors(twice, 1).unwrap_err().to_string().contains("two vectors for text 0"));
        assert!(vectors(b"<html>", 1).unwrap_err().to_string().contains("not an embeddings reply"));
    }
}
