//! Events a tool node emits while it runs calls: what a stream, a sink and the run's log carry,
//! kept apart from the writer that emits them so the stream can name them without the tools.

use serde::Serialize;
use serde_json::Value;
use std::sync::Arc;

/// Where a [`ToolNode`](super::ToolNode) sends its events: any function, called in place.
/// Keep it quick (push onto a channel); it runs inside the tool calls.
pub type EventSink = Arc<dyn Fn(ToolEvent) + Send + Sync>;

/// What happened to one tool call. Every call of a message gets exactly one
/// [`Started`](ToolEvent::Started) and, after it, exactly one
/// [`Finished`](ToolEvent::Finished), both under the call's `tool_call_id` and `index`; any
/// [`Progress`](ToolEvent::Progress) falls between them. Every text in an event has been
/// through the tool's redaction hook.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum ToolEvent {
    /// The call is about to be checked and run.
    Started {
        /// The call's id, as the model gave it.
        tool_call_id: String,
        /// The call's position in its message, from 0 (tells apart calls that share an id).
        index: usize,
        /// The tool asked for.
        name: String,
        /// The arguments, redacted.
        arguments: Value,
    },
    /// The tool reported progress through [`ToolWriter::write`](super::ToolWriter::write).
    Progress {
        /// The call's id.
        tool_call_id: String,
        /// The call's position in its message.
        index: usize,
        /// The tool.
        name: String,
        /// What the tool wrote, redacted.
        data: Value,
    },
    /// The call has its result; the same text goes into the tool message.
    Finished {
        /// The call's id.
        tool_call_id: String,
        /// The call's position in its message.
        index: usize,
        /// The tool asked for.
        name: String,
        /// The result or the error, redacted.
        content: String,
        /// Whether the call failed.
        is_error: bool,
        /// How many times the tool ran (0 when the call was rejected before running).
        attempts: u32,
    },
}

impl ToolEvent {
    /// The id of the call the event is about.
    #[must_use]
    pub fn tool_call_id(&self) -> &str {
        match self {
            Self::Started { tool_call_id, .. }
            | Self::Progress { tool_call_id, .. }
            | Self::Finished { tool_call_id, .. } => tool_call_id,
        }
    }
}
