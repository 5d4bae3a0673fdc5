//! Hand-off tools: how one agent of a team passes the conversation to another.
//!
//! A hand-off is an ordinary tool call (`transfer_to_<agent>`), so it is checkpointed, streamed
//! and answered like any other; the agent that makes it ends its turn after the tools step,
//! and the team's router reads the call to pick the next agent.

use crate::message::{Message, Role};
use crate::tool::{Tool, ToolFuture, ToolOutput, ToolRuntime};
use serde_json::{Value, json};

/// The prefix of every hand-off tool's name; a team refuses other tools named with it.
pub(crate) const PREFIX: &str = "transfer_to_";

/// The tool that hands the conversation to `agent`.
#[derive(Clone, Debug)]
pub(crate) struct Handoff {
    name: String,
    description: String,
    target: String,
}

impl Handoff {
    /// A hand-off to `agent`, described for the model by what the agent does.
    pub(crate) fn to(agent: &str, about: Option<&str>) -> Self {
        let description = match about {
            Some(about) => format!("Hand the conversation to `{agent}`: {about}"),
            None => format!("Hand the conversation to `{agent}`."),
        };
        Self { name: format!("{PREFIX}{agent}"), description, target: agent.to_owned() }
    }
}

impl Tool for Handoff {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    }

    fn reads_runtime(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, _args: Value, _rt: &'a ToolRuntime) -> ToolFuture<'a> {
        Box::pin(async move { Ok(ToolOutput::text(format!("Transferred to {}.", self.target))) })
    }
}

/// The agent the last tools step handed the conversation to: the first hand-off call of the
/// last assistant message that was answered without an error.
pub(crate) fn handed_to(messages: &[Message]) -> Option<&str> {
    let answers_from = messages.iter().rposition(|m| m.role != Role::Tool)?;
    let asked = &messages[answers_from];
    if asked.role != Role::Assistant {
        return None;
    }
    let answers = &messages[answers_from + 1..];
    asked.tool_calls.iter().find_map(|call| {
        let target = call.name.strip_prefix(PREFIX)?;
        let answered = answers.iter().any(|m| m.tool_call_id.as_deref() == Some(call.id.as_str()) && !m.is_error);
        answered.then_some(target)
    })
}

/// Whether a finished tools step handed the conversation on (the agent's turn ends).
pub(crate) fn hands_off(messages: &[Message], handoffs: &[String]) -> bool {
    !handoffs.is_empty() && handed_to(messages).is_some_and(|to| handoffs.iter().any(|h| h == to))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;

    fn ask(calls: &[(&str, &str)]) -> Message {
        Message::assistant("")
            .with_tool_calls(calls.iter().map(|(id, name)| ToolCall::new(*id, *name, json!({}))).collect())
    }

    #[test]
    fn the_first_answered_handoff_of_the_last_tools_step_wins() {
        let messages = vec![
            Message::user("hi"),
            ask(&[("a", "lookup"), ("b", "transfer_to_bob"), ("c", "transfer_to_carol")]),
            Message::tool("a", "42"),
            Message::tool("b", "Transferred to bob."),
            Message::tool("c", "Transferred to carol."),
        ];
        assert_eq!(handed_to(&messages), Some("bob"));
    }

    #[test]
    fn a_failed_handoff_or_a_final_reply_hands_nothing_on() {
        let failed = vec![ask(&[("b", "transfer_to_bob")]), Message::tool_error("b", "no")];
        assert_eq!(handed_to(&failed), None);
        let replied =
            vec![ask(&[("b", "transfer_to_bob")]), Message::tool("b", "Transferred to bob."), Message::assistant("hi")];
        assert_eq!(handed_to(&replied), None);
        assert_eq!(handed_to(&[]), None);
    }
}
