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

/// The builders and accessors every embeddings client keeps in `conn` (an `http::Connection`)
/// shares: its retry policy, its HTTP client, its model's name.
macro_rules! embeddings_over_connection {
    ($client:ty) => {
        impl $client {
            /// How a failed request is tried again (default:
            /// [`ModelRetry::default`](crate::model::ModelRetry::default)).
            #[must_use]
            pub fn retry(mut self, retry: $crate::model::ModelRetry) -> Self {
                self.conn.settings.retry = retry;
                self
            }

            /// The HTTP client to send with (its proxy, TLS roots and pool), instead of the
            /// shared one.
            #[must_use]
            pub fn http_client(mut self, client: reqwest::Client) -> Self {
                self.conn.http = client;
                self
            }

            /// The model's name (or id).
            pub fn model(&self) -> &str {
                &self.conn.model
            }
        }
    };
}

/// The [`ChatModel`] of a client that keeps its model and settings in `conn` (an
/// `http::Connection`) and sends with `async fn send(&self, ModelRequest, &mut dyn ReplySink)`;
/// `|client| name` says how it names its provider. Also its `Debug` (the connection, never
/// the key) and its `http_client` builder.
macro_rules! chat_model_over_connection {
    ($client:ty, |$this:ident| $provider:expr) => {
        impl std::fmt::Debug for $client {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.debug_struct(stringify!($client)).field("connection", &self.conn).finish_non_exhaustive()
            }
        }

        impl $client {
            /// The HTTP client to send with (its proxy, TLS roots and pool), instead of the
            /// shared one.
            #[must_use]
            pub fn http_client(mut self, client: reqwest::Client) -> Self {
                self.conn.http = client;
                self
            }
        }

        impl $crate::model::ChatModel for $client {
            fn provider(&self) -> &str {
                let $this = self;
                $provider
            }

            fn model(&self) -> &str {
                &self.conn.model
            }

            fn settings(&self) -> &$crate::model::ModelSettings {
                &self.conn.settings
            }

            fn settings_mut(&mut self) -> &mut $crate::model::ModelSettings {
                &mut self.conn.settings
            }

            fn generate<'a>(
                &'a self,
                request: $crate::model::ModelRequest<'a>,
                sink: &'a mut dyn $crate::model::ReplySink,
            ) -> futures::future::BoxFuture<'a, Result<$crate::model::ModelReply, $crate::model::ModelError>> {
                Box::pin(self.send(request, sink))
            }
        }
    };
}

mod anthropic;
#[cfg(feature = "bedrock")]
mod bedrock;
mod call;
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
mod request;
mod responses;
mod retry;
mod scripted;
mod span;
mod spec;
mod sse;
mod structured;
mod usage;

pub use anthropic::Anthropic;
#[cfg(feature = "bedrock")]
pub use bedrock::{AwsCredentials, Bedrock, BedrockEmbeddings, SigV4};
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
pub use structured::Structured;
pub use usage::{Budget, Price, Usage};

pub(crate) use context::{Meter, Scope};

use crate::message::Message;
use crate::tool::ToolSet;
use futures::future::BoxFuture;
use std::time::Duration;

/// A chat model: takes a conversation, returns the assistant's reply.
///
/// Implement [`generate`](ChatModel::generate) (one attempt at one request) and the settings
/// accessors; the provided [`invoke`](ChatModel::invoke) and [`respond`](ChatModel::respond)
/// add what every call gets (budget, retries, deadline, streaming into the run, usage, span,
/// log), and the builder methods configure the [`ModelSettings`]. The trait is object safe:
/// share a model as `Arc<dyn ChatModel>`.
pub trait ChatModel: Send + Sync + 'static {
    /// The provider's name, for errors, spans and logs (`openai`, `anthropic`, ...).
    fn provider(&self) -> &str;

    /// The model's name, as the provider knows it.
    fn model(&self) -> &str;

    /// The settings requests are made with.
    fn settings(&self) -> &ModelSettings;

    /// The settings, to change them.
    fn settings_mut(&mut self) -> &mut ModelSettings;

    /// Sends one request and returns the reply, putting its pieces into `sink` as they arrive
    /// when `request.stream` is set. One attempt: no retries, no budget. A stream that breaks
    /// is [`ModelError::Stream`] with `after_content` telling whether pieces had reached `sink`.
    fn generate<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn ReplySink,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>>;

    /// The model's reply to `messages`, as an assistant message (with a fresh id).
    ///
    /// Pass the node's runtime as `rt` (or [`Runtime::detached`](crate::Runtime::detached)
    /// outside a graph).
    fn invoke<'a>(
        &'a self,
        messages: &'a [Message],
        rt: &'a dyn CallContext,
    ) -> BoxFuture<'a, Result<Message, ModelError>> {
        Box::pin(async move { Ok(self.respond(messages, rt).await?.message) })
    }

    /// The model's reply with its usage, finish reason and the model that answered.
    fn respond<'a>(
        &'a self,
        messages: &'a [Message],
        rt: &'a dyn CallContext,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        Box::pin(call::respond(self, messages, self.settings(), rt.model_scope()))
    }

    /// Offers the model the tools of `tools` (their names, descriptions and argument schemas).
    #[must_use]
    fn bind_tools(mut self, tools: &ToolSet) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().set_tools(tools);
        self
    }

    /// Which tool the model must call.
    #[must_use]
    fn tool_choice(mut self, choice: ToolChoice) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().tool_choice = choice;
        self
    }

    /// Whether the model may ask for several tool calls in one reply.
    #[must_use]
    fn parallel_tool_calls(mut self, parallel: bool) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().parallel_tool_calls = Some(parallel);
        self
    }

    /// Whether tool schemas go out `strict` where the provider supports it (default `true`).
    #[must_use]
    fn strict_tools(mut self, strict: bool) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().strict_tools = Some(strict);
        self
    }

    /// The sampling temperature.
    #[must_use]
    fn temperature(mut self, temperature: f64) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().temperature = Some(temperature);
        self
    }

    /// The longest reply, in tokens.
    #[must_use]
    fn max_tokens(mut self, max_tokens: u32) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().max_tokens = Some(max_tokens);
        self
    }

    /// A sequence that ends the reply.
    #[must_use]
    fn stop(mut self, sequence: impl Into<String>) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().stop.push(sequence.into());
        self
    }

    /// Streams replies always (`true`) or never (`false`); by default a reply is streamed
    /// exactly when the run streams `messages`.
    #[must_use]
    fn streaming(mut self, stream: bool) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().streaming = Some(stream);
        self
    }

    /// What the model's tokens cost, so usage carries a cost and a cost budget applies.
    #[must_use]
    fn price(mut self, price: Price) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().price = Some(price);
        self
    }

    /// How failed attempts are retried.
    #[must_use]
    fn retry(mut self, retry: ModelRetry) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().retry = retry;
        self
    }

    /// The longest one attempt may take.
    #[must_use]
    fn timeout(mut self, timeout: Duration) -> Self
    where
        Self: Sized,
    {
        self.settings_mut().timeout = Some(timeout);
        self
    }

    /// A model whose replies are `T`, parsed from JSON that the provider's structured-output
    /// mode (or a forced tool) constrains to `T`'s schema. See [`Structured`].
    fn structured<T>(&self) -> Structured<T>
    where
        Self: Clone + Sized,
        T: schemars::JsonSchema + serde::de::DeserializeOwned,
    {
        Structured::new(std::sync::Arc::new(self.clone()))
    }
}

/// Makes one call of `model` with `settings` in place of its own (an agent's tools bound).
pub(crate) async fn respond_with(
    model: &dyn ChatModel,
    messages: &[Message],
    settings: &ModelSettings,
    rt: &dyn CallContext,
) -> Result<ModelReply, ModelError> {
    call::respond(model, messages, settings, rt.model_scope()).await
}

impl std::fmt::Debug for dyn ChatModel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}:{}", self.provider(), self.model())
    }
}
