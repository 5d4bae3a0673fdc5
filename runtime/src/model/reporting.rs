//! What a model call reports to the run that makes it, in the model layer's own terms: pieces of
//! a reply for the run's stream, and the finished call for the run's log. The stream's writer
//! and the run's log implement these (stream/writer.rs, log.rs), so the model layer names
//! neither.

use super::usage::Usage;

/// A piece of a reply, or its usage, as the run's stream shows it under the reply's message id.
pub(crate) enum CallDelta {
    /// Text of the reply.
    Message { message_id: String, delta: String },
    /// A piece of one of the reply's tool calls.
    ToolCall { message_id: String, index: u32, id: Option<String>, name: Option<String>, arguments: String },
    /// What the whole reply used.
    Usage { message_id: String, usage: Usage },
}

/// Where a call's pieces go: the run's stream, when it has one.
pub(crate) trait DeltaSink: Send + Sync {
    /// Whether `messages` events are wanted, so a reply is worth streaming.
    fn streams_messages(&self) -> bool;

    /// A piece of the reply of a call made by `node` in `step`.
    fn delta(&self, node: &str, step: u64, delta: CallDelta);
}

/// A finished call, as the run's log records it.
pub(crate) struct CallRecord<'a> {
    pub(crate) run_id: u64,
    pub(crate) thread: Option<&'a str>,
    pub(crate) step: u64,
    pub(crate) node: &'a str,
    pub(crate) provider: &'a str,
    pub(crate) model: &'a str,
    pub(crate) prompt_hash: String,
    pub(crate) attempts: u32,
    /// What it used, when it succeeded.
    pub(crate) usage: Option<Usage>,
    /// Why it failed, when it did.
    pub(crate) error: Option<String>,
    pub(crate) duration_ms: u64,
}

/// Where finished calls are recorded: the run's log, when it has one.
pub(crate) trait CallLog: Send + Sync {
    /// Records `call`.
    fn model_call(&self, call: CallRecord<'_>);
}
