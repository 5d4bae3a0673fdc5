//! Chat messages, the currency of agent graphs.

use serde::{Deserialize, Serialize};

/// Who wrote a message.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
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

/// One chat message.
///
/// ```
/// use graphwright::{Message, Role};
///
/// let question = Message::user("What is 2 + 2?").with_id("q1");
/// assert_eq!(question.role, Role::User);
/// let json = serde_json::to_string(&question).unwrap();
/// assert_eq!(serde_json::from_str::<Message>(&json).unwrap(), question);
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// A stable id; the `messages` reducer replaces a message whose id it already holds, and
    /// gives a fresh id to a message that has none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<String>,
    /// Who wrote it.
    pub role: Role,
    /// The text.
    pub content: String,
}

const REMOVE_ALL: &str = "__remove_all__";

impl Message {
    /// A message with a role and text, and no id yet.
    pub fn new(role: Role, content: impl Into<String>) -> Self {
        Self { id: None, role, content: content.into() }
    }

    /// A system message.
    pub fn system(content: impl Into<String>) -> Self {
        Self::new(Role::System, content)
    }

    /// A message from the user.
    pub fn user(content: impl Into<String>) -> Self {
        Self::new(Role::User, content)
    }

    /// A message from the model.
    pub fn assistant(content: impl Into<String>) -> Self {
        Self::new(Role::Assistant, content)
    }

    /// A marker that deletes the message with `id` when the `messages` reducer folds it.
    pub fn remove(id: impl Into<String>) -> Self {
        Self { id: Some(id.into()), role: Role::Remove, content: String::new() }
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

    /// Whether this is a [`Message::remove`] marker.
    #[must_use]
    pub fn is_remove(&self) -> bool {
        self.role == Role::Remove
    }

    pub(crate) fn is_remove_all(&self) -> bool {
        self.is_remove() && self.id.as_deref() == Some(REMOVE_ALL)
    }
}

/// A new message id: a random UUID, as LangGraph gives.
pub(crate) fn fresh_id() -> String {
    uuid::Uuid::new_v4().to_string()
}
