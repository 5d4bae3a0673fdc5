//! Approval of tool calls before they run (human in the loop).

use serde::{Deserialize, Serialize};

/// What a reviewer answers when an agent pauses before a tool named in
/// [`ReactAgent::review_before`](super::ReactAgent::review_before): pass it to `resume`.
///
/// On the wire it is `{"action": "approve"}`, `{"action": "edit", "arguments": {..}}` or
/// `{"action": "reject", "reason": ".."}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "action", rename_all = "snake_case", deny_unknown_fields)]
pub enum ToolReview {
    /// Run the call as the model asked.
    Approve,
    /// Run the call with these arguments instead.
    Edit {
        /// The arguments to run it with (checked against the tool's schema like the model's).
        arguments: serde_json::Value,
    },
    /// Do not run the call; the model is told why.
    Reject {
        /// What the model is told.
        reason: String,
    },
}

/// A review is the answer `resume` takes: `app.resume(&cfg, ToolReview::Approve)`.
impl From<ToolReview> for crate::Resume {
    fn from(review: ToolReview) -> Self {
        // The wire form serde gives it (the test below holds the two together), built without a
        // fallible call.
        let value = match review {
            ToolReview::Approve => serde_json::json!({"action": "approve"}),
            ToolReview::Edit { arguments } => serde_json::json!({"action": "edit", "arguments": arguments}),
            ToolReview::Reject { reason } => serde_json::json!({"action": "reject", "reason": reason}),
        };
        Self::Value(value)
    }
}

/// The value an agent pauses with, one per call to review (the interrupt's `value`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ReviewRequest {
    /// The agent that wants to run the call.
    pub agent: String,
    /// The call's id.
    pub tool_call_id: String,
    /// The tool.
    pub tool: String,
    /// The arguments the model gave.
    pub arguments: serde_json::Value,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_review_resumes_with_its_wire_form() {
        let reviews = [
            ToolReview::Approve,
            ToolReview::Edit { arguments: json!({"to": "ann"}) },
            ToolReview::Reject { reason: "on leave".into() },
        ];
        for review in reviews {
            let wire = serde_json::to_value(&review).unwrap();
            let crate::Resume::Value(value) = crate::Resume::from(review) else { panic!("a value") };
            assert_eq!(value, wire);
        }
    }
}
