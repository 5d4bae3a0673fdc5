//! The states the prebuilt agents run over.

use crate::message::{Message, Role};
use crate::state::Overwrite;
use serde::de::DeserializeOwned;

/// A conversation: the state of [`react_agent`](super::react_agent) and
/// [`supervisor`](super::supervisor) graphs (LangGraph's `MessagesState`).
///
/// `messages` merges by message id (a message with a known id replaces it, [`Message::remove`]
/// deletes one); `structured_response` holds the final answer of an agent built with
/// [`ReactAgent::response_format`](super::ReactAgent::response_format), as JSON (read it typed
/// with [`MessagesState::structured`]).
#[crate::state]
pub struct MessagesState {
    /// The conversation, oldest first.
    #[reducer(messages)]
    pub messages: Vec<Message>,
    /// The agent's final answer as structured data, when it was asked for one.
    pub structured_response: Option<serde_json::Value>,
}

impl MessagesState {
    /// A conversation that starts with `messages`.
    pub fn new(messages: impl IntoIterator<Item = Message>) -> Self {
        Self { messages: messages.into_iter().collect(), structured_response: None }
    }

    /// The structured final answer as a `T`: `None` when there is none yet, an error when it is
    /// not a `T` (an agent built with another type).
    pub fn structured<T: DeserializeOwned>(&self) -> Result<Option<T>, serde_json::Error> {
        self.structured_response.as_ref().map(|v| serde_json::from_value(v.clone())).transpose()
    }

    /// The text of the last assistant message, if any.
    #[must_use]
    pub fn last_reply(&self) -> Option<&str> {
        last_reply(&self.messages)
    }
}

impl MessagesStateUpdate {
    /// An update that adds one user message (the next turn of a conversation).
    pub fn user(text: impl Into<String>) -> Self {
        Self::new().messages(vec![Message::user(text)])
    }
}

/// The state of a [`swarm`](super::swarm): the conversation, and the agent that answers the
/// next turn (the last one handed to; the swarm's default agent while it is `None`).
#[crate::state]
pub struct SwarmState {
    /// The conversation, oldest first.
    #[reducer(messages)]
    pub messages: Vec<Message>,
    /// The agent that has the conversation.
    pub active_agent: Option<String>,
}

impl SwarmState {
    /// The text of the last assistant message, if any.
    #[must_use]
    pub fn last_reply(&self) -> Option<&str> {
        last_reply(&self.messages)
    }
}

impl SwarmStateUpdate {
    /// An update that adds one user message (the next turn of a conversation).
    pub fn user(text: impl Into<String>) -> Self {
        Self::new().messages(vec![Message::user(text)])
    }
}

/// A swarm member starts from the swarm's conversation.
impl From<&SwarmState> for MessagesState {
    fn from(swarm: &SwarmState) -> Self {
        Self::new(swarm.messages.iter().cloned())
    }
}

/// A swarm member's conversation replaces the swarm's (it started from it), and a hand-off it
/// made names the agent that takes over.
impl From<MessagesState> for SwarmStateUpdate {
    fn from(member: MessagesState) -> Self {
        let update = match super::handoff::handed_to(&member.messages) {
            Some(agent) => Self::new().active_agent(Some(agent.to_owned())),
            None => Self::new(),
        };
        update.messages(Overwrite(member.messages))
    }
}

fn last_reply(messages: &[Message]) -> Option<&str> {
    messages.iter().rev().find(|m| m.role == Role::Assistant).map(|m| m.content.as_str())
}
