//! Replies parsed into a type: the provider's JSON-schema mode, or a forced tool.

use super::request::{ModelSettings, ResponseFormat, ToolChoice};
use super::{CallContext, ChatModel, ModelError, call};
use crate::message::Message;
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use std::marker::PhantomData;
use std::sync::Arc;

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
