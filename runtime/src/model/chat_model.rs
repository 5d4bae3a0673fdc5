//! The [`ChatModel`] trait every chat client implements, with the calls every model gets
//! from it, and [`Structured`], a model whose replies are parsed into a type (the provider's
//! JSON-schema mode, or a forced tool), which the trait hands out.

use super::call;
use super::context::CallContext;
use super::error::ModelError;
use super::reply::{ModelReply, ReplySink};
use super::request::{ModelRequest, ModelSettings, ResponseFormat, ToolChoice};
use super::retry::ModelRetry;
use super::usage::Price;
use crate::message::Message;
use crate::tool::ToolSet;
use futures::future::BoxFuture;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::marker::PhantomData;
use std::sync::Arc;
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

impl<M: ChatModel + ?Sized> call::Generate for M {
    fn provider(&self) -> &str {
        ChatModel::provider(self)
    }

    fn model(&self) -> &str {
        ChatModel::model(self)
    }

    fn generate<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn ReplySink,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        ChatModel::generate(self, request, sink)
    }
}

/// A model whose replies are values of `T`.
///
/// The request carries `T`'s JSON Schema: OpenAI-compatible servers get it as a strict
/// `response_format` (llama.cpp enforces it with a grammar), Anthropic as a forced tool whose
/// input is the answer. A reply that does not parse is shown to the model with the parse error
/// and asked again, [`repair_attempts`](Structured::repair_attempts) times (default 1); after
/// that the call fails with [`ModelError::InvalidOutput`] holding the raw reply and the reason,
/// never a default value. Tools bound to the model are not offered for these calls.
///
/// ```
/// use graphwright::model::{ChatModel, ModelError, ScriptedModel};
/// use graphwright::{Message, Runtime};
/// use schemars::JsonSchema;
/// use serde::Deserialize;
///
/// #[derive(Debug, Deserialize, JsonSchema, PartialEq)]
/// struct Verdict {
///     approve: bool,
///     reason: String,
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), ModelError> {
/// let model = ScriptedModel::new(["not json", r#"{"approve": true, "reason": "fine"}"#]);
/// let verdict: Verdict = model.structured::<Verdict>().invoke(&[Message::user("ok?")], &Runtime::detached()).await?;
/// assert_eq!(verdict, Verdict { approve: true, reason: "fine".into() });
/// let second = &model.requests()[1];
/// assert!(second.messages[2].content.contains("did not match"), "the repair turn says what was wrong");
/// assert_eq!(second.settings.response_format.as_ref().unwrap().name, "Verdict");
/// # Ok(()) }
/// ```
pub struct Structured<T> {
    model: Arc<dyn ChatModel>,
    settings: ModelSettings,
    repair_attempts: u32,
    answer: PhantomData<fn() -> T>,
}

impl<T> Clone for Structured<T> {
    fn clone(&self) -> Self {
        Self {
            model: Arc::clone(&self.model),
            settings: self.settings.clone(),
            repair_attempts: self.repair_attempts,
            answer: PhantomData,
        }
    }
}

impl<T: JsonSchema + DeserializeOwned> Structured<T> {
    /// `model`'s replies as `T`.
    pub fn new(model: Arc<dyn ChatModel>) -> Self {
        let mut settings = model.settings().clone();
        settings.tools = Arc::new([]);
        settings.tool_choice = ToolChoice::Auto;
        settings.response_format =
            Some(ResponseFormat { name: schema_name::<T>(), schema: crate::tool::schema::schema_for::<T>() });
        Self { model, settings, repair_attempts: 1, answer: PhantomData }
    }

    /// How many times a reply that does not parse is sent back to be corrected.
    #[must_use]
    pub fn repair_attempts(mut self, attempts: u32) -> Self {
        self.repair_attempts = attempts;
        self
    }

    /// The settings the calls are made with (the model's, with `T`'s response format).
    pub fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    /// The model's answer to `messages`, as a `T`.
    pub async fn invoke(&self, messages: &[Message], rt: &dyn CallContext) -> Result<T, ModelError> {
        let mut conversation: Option<Vec<Message>> = None;
        let mut repairs = 0;
        loop {
            let sent = conversation.as_deref().unwrap_or(messages);
            let reply = call::respond(&*self.model, sent, &self.settings, rt.model_scope()).await?;
            let raw = reply.message.content;
            let reason = match serde_json::from_str::<T>(unfenced(&raw)) {
                Ok(answer) => return Ok(answer),
                Err(error) => format!("the reply did not match the schema of `{}`: {error}", schema_name::<T>()),
            };
            if repairs >= self.repair_attempts {
                return Err(ModelError::InvalidOutput { raw, reason });
            }
            repairs += 1;
            let turn = conversation.get_or_insert_with(|| messages.to_vec());
            turn.push(Message::assistant(raw));
            turn.push(Message::user(format!("{reason}. Reply again with only the JSON value.")));
        }
    }
}

/// The schema's name as providers take it (`^[a-zA-Z0-9_-]{1,64}$`).
fn schema_name<T: JsonSchema>() -> String {
    let name: String = T::schema_name()
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' })
        .take(64)
        .collect();
    if name.is_empty() { "answer".to_owned() } else { name }
}

/// The JSON inside a reply that wrapped it in a Markdown code fence, as small models do.
fn unfenced(raw: &str) -> &str {
    let trimmed = raw.trim();
    let Some(body) = trimmed.strip_prefix("```") else { return trimmed };
    let body = body.strip_prefix("json").unwrap_or(body);
    body.strip_suffix("```").unwrap_or(body).trim()
}
