//! `tools_condition`: the router of an agent loop.

use crate::message::Message;

/// Where an agent loop goes after the model spoke.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum ToolRoute {
    /// The last message asks for tools: run them.
    Tools,
    /// The model answered without tools: the loop is done.
    End,
}

impl ToolRoute {
    /// `tools` for [`ToolRoute::Tools`], `end` for [`ToolRoute::End`]: maps the route onto a
    /// graph's own `{Node}Next` enum.
    pub fn pick<T>(self, tools: T, end: T) -> T {
        match self {
            Self::Tools => tools,
            Self::End => end,
        }
    }
}

/// [`ToolRoute::Tools`] when the last message is an assistant message with tool calls,
/// [`ToolRoute::End`] otherwise (LangGraph's `tools_condition`).
///
/// ```
/// use graphwright::prelude::*;
///
/// #[graph]
/// mod agent {
///     use super::*;
///
///     #[state]
///     pub struct State {
///         #[reducer(messages)]
///         pub messages: Vec<Message>,
///     }
///
///     #[node(entry, next = tools | END, route = should_continue)]
///     fn model(_state: &State) -> StateUpdate {
///         StateUpdate::new().messages(vec![Message::assistant("done")])
///     }
///
///     fn should_continue(state: &State) -> ModelNext {
///         tools_condition(&state.messages).pick(ModelNext::Tools, ModelNext::End)
///     }
///
///     #[node(next = model)]
///     fn tools(_state: &State) -> StateUpdate {
///         StateUpdate::new()
///     }
/// }
/// # fn main() { let _ = agent::graph(); }
/// ```
#[must_use]
pub fn tools_condition(messages: &[Message]) -> ToolRoute {
    match messages.last() {
        Some(last) if last.has_tool_calls() => ToolRoute::Tools,
        _ => ToolRoute::End,
    }
}
