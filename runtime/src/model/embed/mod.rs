//! Embeddings: texts turned into vectors by a model, for search by meaning.
//!
//! [`Embeddings`] is what a store's semantic index calls; [`OpenAiEmbeddings`] speaks the
//! OpenAI `/v1/embeddings` format, which OpenAI, Azure OpenAI deployments, Ollama's `/v1`,
//! vLLM, llama.cpp's server, Mistral, Together and most local servers serve;
//! [`CohereEmbeddings`] speaks Cohere's `/v2/embed` and [`GeminiEmbeddings`] Gemini's
//! `embedContent` / `batchEmbedContents`, which both embed queries apart from documents;
//! [`OllamaEmbeddings`] speaks Ollama's native `/api/embed`. [`embeddings_from_spec`](super::embeddings_from_spec)
//! names any of them as `provider:model`. Requests are sent in batches, and a failed batch is
//! retried under a [`ModelRetry`] policy like a model call, with the same [`ModelError`]
//! classes.

mod batch;
mod cohere;
mod embeddings;
mod gemini;
mod ollama;
mod openai;

pub(crate) use batch::{check_dimensions, in_batches, post_json, post_json_keyed};
#[cfg(feature = "bedrock")]
pub(crate) use batch::{check_lengths, with_retries};
pub use cohere::CohereEmbeddings;
pub use embeddings::Embeddings;
pub use gemini::GeminiEmbeddings;
pub use ollama::OllamaEmbeddings;
pub use openai::OpenAiEmbeddings;
