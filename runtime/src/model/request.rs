//! What a call asks of a model: the messages and the settings every provider understands.

use crate::message::Message;
use crate::tool::{Tool, ToolSet};
use serde_json::Value;
use std::sync::Arc;

/// A tool as a model is told about it: name, description and the JSON Schema of its arguments.
#[derive(Clone, Debug, PartialEq)]
pub struct ToolSpec {
    /// The name the model calls it by.
    pub name: String,
    /// What it does, for the model.
    pub description: String,
    /// The JSON Schema of its arguments (an object schema).
    pub parameters: Value,
}

impl ToolSpec {
    /// The spec of a tool.
    pub fn of(tool: &dyn Tool) -> Self {
        Self { name: tool.name().to_owned(), description: tool.description().to_owned(), parameters: tool.parameters() }
    }
}

/// Which tool the model must call, if any.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ToolChoice {
    /// The model decides (the default).
    #[default]
    Auto,
    /// The model must not call a tool.
    None,
    /// The model must call some tool.
    Required,
    /// The model must call the tool of this name.
    Tool(String),
}

/// A reply shaped by a JSON Schema (structured output).
#[derive(Clone, Debug, PartialEq)]
pub struct ResponseFormat {
    /// A name for the schema (providers show it to the model).
    pub name: String,
    /// The JSON Schema the reply must match.
    pub schema: Value,
}

/// The settings of a model client: the tools it is offered, sampling, the length of the reply,
/// structured output, streaming, prices, retries and timeout.
///
/// Every [`ChatModel`](super::ChatModel) holds one and gets the builder methods of
/// [`ChatModel`](super::ChatModel) (`bind_tools`, `temperature`, `max_tokens`, ...) through it.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ModelSettings {
    /// The tools offered to the model, in order.
    pub tools: Arc<[ToolSpec]>,
    /// Which tool the model must call.
    pub tool_choice: ToolChoice,
    /// Whether the model may call several tools in one reply (`None`: the provider's default).
    pub parallel_tool_calls: Option<bool>,
    /// Whether OpenAI-compatible requests mark tool schemas `strict` (the default, `true`).
    pub strict_tools: Option<bool>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// The longest reply, in tokens.
    pub max_tokens: Option<u32>,
    /// Sequences that end the reply.
    pub stop: Vec<String>,
    /// A JSON Schema the reply's text must match.
    pub response_format: Option<ResponseFormat>,
    /// Whether to stream the reply: `None` streams exactly when the run streams `messages`
    /// (as LangGraph does), so the deltas reach the stream and nothing else pays for them.
    pub streaming: Option<bool>,
    /// What the model's tokens cost; calls' usage is priced with it.
    pub price: Option<super::Price>,
    /// How failed attempts are retried.
    pub retry: super::ModelRetry,
    /// The longest one attempt may take (the run's deadline bounds all attempts together).
    pub timeout: Option<std::time::Duration>,
}

impl ModelSettings {
    /// The tools of `set`, as specs.
    pub(crate) fn set_tools(&mut self, set: &ToolSet) {
        self.tools = set.iter().map(|t| ToolSpec::of(t.as_ref())).collect();
    }

    /// Whether tool schemas go out `strict` to providers that support it.
    pub(crate) fn strict(&self) -> bool {
        self.strict_tools.unwrap_or(true)
    }
}

/// One request as a client sends it: the conversation and the settings.
#[derive(Clone, Copy, Debug)]
pub struct ModelRequest<'a> {
    /// The model's name, as the provider knows it.
    pub model: &'a str,
    /// The conversation so far, oldest first.
    pub messages: &'a [Message],
    /// The settings.
    pub settings: &'a ModelSettings,
    /// Whether to stream the reply.
    pub stream: bool,
}
