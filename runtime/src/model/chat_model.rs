//! The [`ChatModel`] trait every chat client implements, with the calls every model gets
//! from it.

use super::call;
use super::context::CallContext;
use super::error::ModelError;
use super::reply::{ModelReply, ReplySink};
use super::request::{ModelRequest, ModelSettings, ToolChoice};
use super::retry::ModelRetry;
use super::structured::Structured;
use super::usage::Price;
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
