//! What one model call returns, and how clients hand over a reply as it streams in.

use super::Usage;
use crate::message::Message;

/// Why the model stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FinishReason {
    /// It finished its reply (OpenAI `stop`, Anthropic `end_turn` / `stop_sequence`).
    Stop,
    /// It hit the token limit (`length`, `max_tokens`).
    Length,
    /// It asked for tool calls (`tool_calls`, `tool_use`).
    ToolCalls,
    /// The provider filtered the reply (`content_filter`, `refusal`).
    ContentFilter,
    /// A reason this crate does not know, as the provider wrote it (providers add new ones).
    Other(String),
    /// The provider did not say.
    Unknown,
}

impl FinishReason {
    /// The reason as OpenTelemetry's GenAI conventions write it (`gen_ai.response.finish_reasons`):
    /// `stop`, `length`, `tool_calls`, `content_filter`, the provider's own word, or `unknown`.
    #[must_use]
    pub fn as_str(&self) -> &str {
        match self {
            Self::Stop => "stop",
            Self::Length => "length",
            Self::ToolCalls => "tool_calls",
            Self::ContentFilter => "content_filter",
            Self::Other(reason) => reason,
            Self::Unknown => "unknown",
        }
    }
}

/// One call's result: the assistant message and what the call cost.
#[derive(Clone, Debug, PartialEq)]
pub struct ModelReply {
    /// The reply: an assistant message with text and/or tool calls. Inside
    /// [`ChatModel::respond`](super::ChatModel::respond) it carries a fresh id, the id its
    /// deltas were streamed under.
    pub message: Message,
    /// The tokens the call used (and their cost, once priced).
    pub usage: Usage,
    /// Why the model stopped.
    pub finish_reason: FinishReason,
    /// The model that answered, as the provider reports it.
    pub model: String,
    /// The provider's id of the response, if it gave one.
    pub response_id: Option<String>,
}

impl ModelReply {
    /// A reply holding `message`, with no usage and `Stop` as its reason.
    #[must_use]
    pub fn new(message: Message) -> Self {
        Self {
            message,
            usage: Usage::default(),
            finish_reason: FinishReason::Stop,
            model: String::new(),
            response_id: None,
        }
    }
}

/// A piece of a tool call as it streams in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ToolCallDelta<'a> {
    /// Which call of the reply it belongs to (0 for the first).
    pub index: u32,
    /// The call's id, on the call's first piece.
    pub id: Option<&'a str>,
    /// The tool's name, on the call's first piece.
    pub name: Option<&'a str>,
    /// More of the arguments' JSON text (not valid JSON on its own).
    pub arguments: &'a str,
}

/// Where a client puts a streamed reply's pieces as they arrive. The run forwards them to its
/// `messages` stream under the reply's id.
pub trait ReplySink: Send {
    /// More of the reply's text.
    fn text(&mut self, delta: &str);
    /// More of a tool call.
    fn tool_call(&mut self, delta: ToolCallDelta<'_>);
}

/// A sink that drops every piece: for a call whose pieces nobody watches.
#[derive(Clone, Copy, Debug, Default)]
pub struct Discard;

impl ReplySink for Discard {
    fn text(&mut self, _delta: &str) {}
    fn tool_call(&mut self, _delta: ToolCallDelta<'_>) {}
}
