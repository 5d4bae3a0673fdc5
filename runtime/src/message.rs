//! Chat messages, the currency of agent graphs.
//!
//! One struct covers the four kinds a chat model reads and writes: system instructions, user
//! turns, assistant turns (text and [`ToolCall`]s), and tool results. The fields that only some
//! kinds use are empty on the others and left out of the JSON form.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum Role {
    /// Instructions to the model.
    System,
    /// The person the agent works for.
    User,
    /// The model.
    Assistant,
    /// The result of a tool call.
    Tool,
    /// Not a message: a marker that tells the `messages` reducer to delete the message with this
    /// id (or every message, for [`Message::remove_all`]). Build it with [`Message::remove`].
    Remove,
}

/// A tool call the model asked for, inside an assistant message.
///
/// `arguments` holds the model's arguments as JSON: normally an object. A model client that
/// receives them as text (OpenAI sends a JSON string) parses the text; when the text is not
/// valid JSON it keeps it as a JSON string, and the tool node reports the parse error to the
/// model instead of calling the tool. [`ToolCall::from_text`] does exactly that.
///
/// ```
/// use graphwright::ToolCall;
/// use serde_json::json;
///
/// let call = ToolCall::from_text("call_1", "weather", r#"{"city": "Oslo"}"#);
/// assert_eq!(call.arguments, json!({"city": "Oslo"}));
/// let broken = ToolCall::from_text("call_2", "weather", r#"{"city": "Oslo""#);
/// assert_eq!(broken.arguments, json!(r#"{"city": "Oslo""#));
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "A tool call the model asked for, inside an assistant message.")]
pub struct ToolCall {
    /// The id the model gave the call; the tool's result message carries it back.
    pub id: String,
    /// The name of the tool to call.
    pub name: String,
    /// The arguments, as the model wrote them.
    #[serde(default)]
    pub arguments: serde_json::Value,
}

impl ToolCall {
    /// A call with JSON arguments.
    pub fn new(id: impl Into<String>, name: impl Into<String>, arguments: serde_json::Value) -> Self {
        Self { id: id.into(), name: name.into(), arguments }
    }

    /// A call whose arguments arrived as text: parsed when they are JSON, kept as a JSON string
    /// otherwise (so the tool node can tell the model what was wrong with them).
    pub fn from_text(id: impl Into<String>, name: impl Into<String>, arguments: &str) -> Self {
        let arguments =
            serde_json::from_str(arguments).unwrap_or_else(|_| serde_json::Value::String(arguments.to_owned()));
        Self::new(id, name, arguments)
    }

    /// The arguments as a JSON object, for providers that take nothing else (Anthropic, Gemini,
    /// Ollama): text holding an object's JSON is parsed, anything else is sent as `{}`.
    pub(crate) fn arguments_object(&self) -> serde_json::Value {
        match &self.arguments {
            serde_json::Value::Object(_) => self.arguments.clone(),
            serde_json::Value::String(text) => serde_json::from_str::<serde_json::Value>(text)
                .ok()
                .filter(serde_json::Value::is_object)
                .unwrap_or_else(|| serde_json::json!({})),
            _ => serde_json::json!({}),
        }
    }
}

/// One chat message.
///
/// ```
/// use graphwright::{Message, Role, ToolCall};
/// use serde_json::json;
///
/// let question = Message::user("What is the weather in Oslo?").with_id("q1");
/// assert_eq!(question.role, Role::User);
/// let ask = Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "weather", json!({"city": "Oslo"}))]);
/// assert_eq!(ask.tool_calls[0].name, "weather");
/// let answer = Message::tool("c1", "4 °C, light rain");
/// assert_eq!(answer.tool_call_id.as_deref(), Some("c1"));
/// assert!(!answer.is_error);
///
/// for message in [question, ask, answer] {
///     let json = serde_json::to_string(&message).unwrap();
///     assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), message);
/// }
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "One chat message.")]
pub struct Message {
    /// A stable id; the `messages` reducer replaces a message whose id it already holds, and
    /// gives a fresh id to a message that has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Who wrote it.
    pub role: Role,
    /// The text: the instructions, the turn, or the tool's result.
    #[serde(default)]
    pub content: String,
    /// The tools an assistant message asks to run, in the model's order. Empty on other kinds.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub tool_calls: Vec<ToolCall>,
    /// On a tool result: the id of the call it answers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    /// On a tool result: the name of the tool that ran (or was asked for).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// On a tool result: whether the call failed, and `content` says why.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub is_error: bool,
}

const REMOVE_ALL: &str = "__remove_all__";

impl Message {
    /// A message with a role and text, and no id yet.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self {
            id: None,
            role,
            content: content.into(),
            tool_calls: Vec::new(),
            tool_call_id: None,
            name: None,
            is_error: false,
        }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A message from the user.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// A message from the model. Add tool calls with [`Message::with_tool_calls`].
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// The result of the tool call `tool_call_id`.
    pub fn tool(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { tool_call_id: Some(tool_call_id.into()), ..Self::new(Role::Tool, content) }
    }

    /// A failed tool call: `content` tells the model what went wrong.
    pub fn tool_error(tool_call_id: impl Into<String>, content: impl Into<String>) -> Self {
        Self { is_error: true, ..Self::tool(tool_call_id, content) }
    }

    /// A marker that deletes the message with `id` when the `messages` reducer folds it.
    pub fn remove(id: impl Into<String>) -> Self {
        Self::new(Role::Remove, String::new()).with_id(id)
    }

    /// A marker that deletes every message before it when the `messages` reducer folds it.
    #[must_use]
    pub fn remove_all() -> Self {
        Self::remove(REMOVE_ALL)
    }

    /// The same message with the given id.
    #[must_use]
    pub fn with_id(mut self, id: impl Into<String>) -> Self {
        self.id = Some(id.into());
        self
    }

    /// The same message asking for these tool calls (meant for assistant messages).
    #[must_use]
    pub fn with_tool_calls(mut self, calls: Vec<ToolCall>) -> Self {
        self.tool_calls = calls;
        self
    }

    /// The same message naming the tool it is the result of (meant for tool messages).
    #[must_use]
    pub fn with_name(mut self, name: impl Into<String>) -> Self {
        self.name = Some(name.into());
        self
    }

    /// Whether this is a [`Message::remove`] marker.
    #[must_use]
    pub fn is_remove(&self) -> bool {
        self.role == Role::Remove
    }

    /// Whether this is an assistant message that asks for at least one tool call.
    #[must_use]
    pub fn has_tool_calls(&self) -> bool {
        self.role == Role::Assistant && !self.tool_calls.is_empty()
    }

    pub(crate) fn is_remove_all(&self) -> bool {
        self.is_remove() && self.id.as_deref() == Some(REMOVE_ALL)
    }
}

/// A new message id: a random (version 4) UUID, as LangGraph gives. The bits come from a
/// thread-local generator seeded from the OS, not a system call per id: ids only need to be
/// unique, and a model reply or tool answer gets one each.
pub(crate) fn fresh_id() -> String {
    let bytes = fastrand::u128(..).to_le_bytes();
    uuid::Builder::from_random_bytes(bytes).into_uuid().to_string()
}
