//! Chat models: clients of the providers' APIs, and [`ScriptedModel`] for tests; and
//! embeddings ([`Embeddings`]) for search by meaning.
//!
//! | provider | chat model | embeddings | spec prefix |
//! | --- | --- | --- | --- |
//! | OpenAI, any OpenAI-compatible server | [`OpenAi`] (Chat Completions) | [`OpenAiEmbeddings`] | `openai:` |
//! | OpenAI's Responses API | [`OpenAi::responses`] | | `openai-responses:` |
//! | Azure OpenAI | [`OpenAi::azure`] | [`OpenAiEmbeddings::azure`] | `azure:` |
//! | Groq, Mistral, Together, vLLM, ... | [`OpenAi::compatible`] | [`OpenAiEmbeddings::compatible`] (those that serve it) | `groq:`, `mistral:`, ... |
//! | Anthropic | [`Anthropic`] | | `anthropic:` |
//! | Google Gemini | [`Gemini`] | [`GeminiEmbeddings`] | `gemini:`, `google:` |
//! | Ollama (native API) | [`Ollama`] | [`OllamaEmbeddings`] | `ollama:` |
//! | Cohere | | [`CohereEmbeddings`] | `cohere:` |
//! | AWS Bedrock (feature `bedrock`) | `Bedrock` (Converse) | `BedrockEmbeddings` | `bedrock:` |
//!
//! [`from_spec`] and [`embeddings_from_spec`] build a client from a `provider:model` string,
//! keyed and addressed from the environment.
//!
//! A node calls a model with `model.invoke(&state.messages, rt).await?`. Inside a run the call
//! streams its text and tool-call pieces into the run's `messages` stream under the reply's
//! message id, adds its [`Usage`] to the run's total ([`RunOutput::usage`]), counts against the
//! run's [`Budget`] and deadline, is retried when that is safe, and is a `tracing` span
//! (`model_call`) and an entry of the run's event log carrying its [`prompt_hash`]. The hash is
//! computed only when something reads it: a subscriber that takes the span, or the run's log.
//!
//! ```
//! use graphwright::model::{ChatModel, ScriptedModel};
//! use graphwright::prelude::*;
//! use std::sync::Arc;
//!
//! #[graph(context = Arc<dyn ChatModel>)]
//! mod chat {
//!     use graphwright::model::ChatModel;
//!     use graphwright::prelude::*;
//!     use std::sync::Arc;
//!
//!     #[state]
//!     pub struct State {
//!         #[reducer(messages)]
//!         pub messages: Vec<Message>,
//!     }
//!
//!     #[node(entry, next = END)]
//!     async fn answer(state: &State, rt: &Runtime<Arc<dyn ChatModel>>) -> Result<StateUpdate, NodeError> {
//!         let reply = rt.context().invoke(&state.messages, rt).await?;
//!         Ok(StateUpdate::new().messages(vec![reply]))
//!     }
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Report> {
//!     let model = ScriptedModel::new([Message::assistant("Hello!")]);
//!     let app = chat::graph().compile()?;
//!     let cfg = RunConfig::default().context(Arc::new(model.clone()) as Arc<dyn ChatModel>);
//!     let out = app.invoke(chat::State { messages: vec![Message::user("hi")] }, &cfg).await?;
//!     assert_eq!(out.state.messages[1].content, "Hello!");
//!     assert_eq!(model.requests()[0].messages[0].content, "hi");
//!     assert_eq!(out.usage().calls, 1);
//!     Ok(())
//! }
//! ```
//!
//! [`RunOutput::usage`]: crate::RunOutput::usage

#[macro_use]
mod client_macros;

mod anthropic;
#[cfg(feature = "bedrock")]
mod bedrock;
mod call;
mod chat_model;
mod chunk_shape;
pub(crate) mod context;
mod embed;
mod error;
mod gemini;
pub(crate) mod hash;
mod http;
mod ollama;
mod openai;
mod presets;
mod reply;
pub(crate) mod reporting;
mod request;
mod responses;
mod retry;
mod scripted;
mod span;
mod spec;
mod sse;
mod usage;

pub use anthropic::Anthropic;
#[cfg(feature = "bedrock")]
pub use bedrock::{AwsCredentials, Bedrock, BedrockEmbeddings, SigV4};
pub use chat_model::ChatModel;
pub use chat_model::Structured;
pub(crate) use chat_model::respond_with;
pub use context::CallContext;
pub use embed::{CohereEmbeddings, Embeddings, GeminiEmbeddings, OllamaEmbeddings, OpenAiEmbeddings};
pub use error::{BudgetLimit, ModelError};
pub use gemini::Gemini;
pub use hash::prompt_hash;
pub use ollama::Ollama;
pub use openai::{AZURE_API_VERSION, OpenAi};
pub use reply::{Discard, FinishReason, ModelReply, ReplySink, ToolCallDelta};
pub use request::{ModelRequest, ModelSettings, ResponseFormat, ToolChoice, ToolSpec};
pub use retry::ModelRetry;
pub use scripted::{RecordedRequest, ScriptedModel, ScriptedReply};
pub use spec::{embeddings_from_spec, from_spec};
pub use usage::{Budget, Price, Usage};

pub(crate) use context::{Meter, Scope};
