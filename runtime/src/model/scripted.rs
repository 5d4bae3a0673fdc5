//! A model that replies from a script: the test double for graphs that call models.

use super::reply::{ModelReply, ReplySink, ToolCallDelta};
use super::request::{ModelRequest, ModelSettings};
use super::{ChatModel, ModelError, Usage};
use crate::message::Message;
use futures::future::BoxFuture;
use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};

/// What a [`ScriptedModel`] was asked.
#[derive(Clone, Debug, PartialEq)]
pub struct RecordedRequest {
    /// The conversation it was sent.
    pub messages: Vec<Message>,
    /// The settings it was sent with (tools, tool choice, response format, ...).
    pub settings: ModelSettings,
    /// Whether the reply was streamed.
    pub stream: bool,
}

/// A chat model that gives its replies in order and records every request: the test double
/// for users' graphs and for this crate's own tests.
///
/// Each reply is a [`Message`] (usage is estimated at one token per four characters, so
/// budgets can be tried out), a [`ModelReply`] (its usage as given), or a [`ModelError`] (that
/// attempt fails with it, so retries can be tried out). Streamed calls deliver the text word
/// by word and each tool call's arguments in one piece. Clones share the script and the
/// record. A call after the last reply fails with [`ModelError::Config`].
///
/// ```
/// use graphwright::model::{ChatModel, ScriptedModel};
/// use graphwright::{Message, Runtime, ToolCall, json};
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), graphwright::model::ModelError> {
/// let model = ScriptedModel::new([
///     Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "weather", json!({"city": "Oslo"}))]),
///     Message::assistant("4 °C in Oslo."),
/// ]);
/// let rt = Runtime::detached();
/// let first = model.invoke(&[Message::user("weather in Oslo?")], &rt).await?;
/// assert_eq!(first.tool_calls[0].name, "weather");
/// let second = model.invoke(&[Message::user("and now?")], &rt).await?;
/// assert_eq!(second.content, "4 °C in Oslo.");
/// assert_eq!(model.requests().len(), 2);
/// assert!(model.invoke(&[], &rt).await.is_err(), "the script is over");
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct ScriptedModel {
    name: String,
    settings: ModelSettings,
    script: Arc<Mutex<VecDeque<Result<ModelReply, ModelError>>>>,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
}

impl ScriptedModel {
    /// A model that gives `replies` in order.
    pub fn new<R: Into<ScriptedReply>>(replies: impl IntoIterator<Item = R>) -> Self {
        let script = replies.into_iter().map(|r| r.into().0).collect();
        Self {
            name: "scripted".to_owned(),
            settings: ModelSettings::default(),
            script: Arc::new(Mutex::new(script)),
            requests: Arc::new(Mutex::new(Vec::new())),
        }
    }

    /// The same model under another name (for spans, logs and prompt hashes).
    #[must_use]
    pub fn named(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Adds a reply at the end of the script.
    pub fn push(&self, reply: impl Into<ScriptedReply>) {
        self.script.lock().unwrap_or_else(PoisonError::into_inner).push_back(reply.into().0);
    }

    /// Every request so far, oldest first.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// How many replies are left.
    pub fn remaining(&self) -> usize {
        self.script.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// One entry of a [`ScriptedModel`]'s script: a reply or an error.
#[derive(Debug)]
pub struct ScriptedReply(Result<ModelReply, ModelError>);

impl From<Message> for ScriptedReply {
    fn from(message: Message) -> Self {
        let usage = Usage::tokens(0, estimate(&message));
        Self(Ok(ModelReply { usage, ..ModelReply::new(message) }))
    }
}

impl From<ModelReply> for ScriptedReply {
    fn from(reply: ModelReply) -> Self {
        Self(Ok(reply))
    }
}

impl From<ModelError> for ScriptedReply {
    fn from(error: ModelError) -> Self {
        Self(Err(error))
    }
}

impl From<&str> for ScriptedReply {
    fn from(text: &str) -> Self {
        Message::assistant(text).into()
    }
}

/// About one token per four characters of text and arguments.
fn estimate(message: &Message) -> u64 {
    let arguments: usize = message.tool_calls.iter().map(|c| c.name.len() + c.arguments.to_string().len()).sum();
    (message.content.len() + arguments).div_ceil(4) as u64
}

impl ChatModel for ScriptedModel {
    fn provider(&self) -> &'static str {
        "scripted"
    }

    fn model(&self) -> &str {
        &self.name
    }

    fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ModelSettings {
        &mut self.settings
    }

    fn generate<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn ReplySink,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        let number = {
            let mut requests = self.requests.lock().unwrap_or_else(PoisonError::into_inner);
            requests.push(RecordedRequest {
                messages: request.messages.to_vec(),
                settings: request.settings.clone(),
                stream: request.stream,
            });
            requests.len()
        };
        let next = self.script.lock().unwrap_or_else(PoisonError::into_inner).pop_front();
        let result = match next {
            None => Err(ModelError::Config(format!(
                "the scripted model `{}` has no reply left for request {number}: add one with `push`",
                self.name
            ))),
            Some(Ok(mut reply)) => {
                reply.usage.input_tokens += request.messages.iter().map(estimate).sum::<u64>();
                if request.stream {
                    stream(&reply.message, sink);
                }
                Ok(reply)
            }
            Some(Err(error)) => Err(error),
        };
        Box::pin(std::future::ready(result))
    }
}

fn stream(message: &Message, sink: &mut dyn ReplySink) {
    for word in message.content.split_inclusive(' ') {
        sink.text(word);
    }
    for (index, call) in message.tool_calls.iter().enumerate() {
        let arguments = call.arguments.to_string();
        sink.tool_call(ToolCallDelta {
            index: index as u32,
            id: Some(&call.id),
            name: Some(&call.name),
            arguments: &arguments,
        });
    }
}
