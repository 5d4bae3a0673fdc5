//! What a recorded span is made of: plain data, its texts kept in the batch it belongs to.

use super::clock::Ticks;

/// The remote or local span a trace continues.
#[derive(Clone, Debug)]
pub(crate) struct Parent {
    pub(crate) span_id: u64,
    pub(crate) remote: bool,
    /// Its W3C `tracestate` header value, passed on as it came.
    pub(crate) trace_state: String,
}

/// One finished span. Kept within 128 bytes (a test says so): a record is moved into the batch
/// whole, and a larger one is moved by a call to `memcpy` where a smaller one takes a few
/// instructions.
#[derive(Debug)]
pub(crate) struct Record {
    pub(crate) span_id: u64,
    /// The span it hangs from; 0 for the run's own span (whose parent is the batch's).
    pub(crate) parent: u64,
    pub(crate) start: Ticks,
    pub(crate) end: Ticks,
    pub(crate) status: Kept,
    pub(crate) body: Body,
}

/// How a span ended, as OpenTelemetry's span status says it: as the code that closes a span
/// gives it.
#[derive(Debug)]
pub(crate) enum Status {
    Unset,
    Ok,
    Error(String),
}

/// A [`Status`] as the record keeps it, an error's message among the batch's texts.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Kept {
    Unset,
    Ok,
    Error(Text),
}

/// A text of the batch: where it sits in the batch's string.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Text {
    pub(super) at: u32,
    pub(super) len: u32,
}

/// What a span of a run says of itself, beyond ids, times and status.
#[derive(Debug)]
pub(crate) enum Body {
    /// The run (`invoke_agent`).
    Run(Box<RunBody>),
    /// A super-step.
    Step { step: u64, tasks: u32 },
    /// One attempt of a task.
    Node { graph: Text, node: Text, step: u64, task: u32, attempt: u32, mark: NodeMark },
    /// A model call.
    Chat(Box<ChatBody>),
    /// A tool call.
    Tool(ToolBody),
    /// Storing checkpoints and writes.
    CheckpointWrite { id: Option<Text>, step: Option<i64>, bytes: u64, writes: u64, batch: u32 },
}

/// How a task's attempt went beyond its status.
#[derive(Debug)]
pub(crate) enum NodeMark {
    Ran,
    /// Its output came from the node's cache.
    Cached,
    /// Its output had been saved by an earlier run of the step.
    Resumed,
    /// It paused: the interrupt's id, and its value when the capture policy lets it out.
    Interrupted {
        at: Ticks,
        id: Text,
        value: Option<Text>,
    },
}

/// The run's span.
#[derive(Debug)]
pub(crate) struct RunBody {
    pub(crate) graph: String,
    pub(crate) thread: Option<String>,
    pub(crate) run_id: u64,
    /// `success`, `interrupted` or `error`.
    pub(crate) status: &'static str,
    pub(crate) steps: Option<u64>,
    pub(crate) input_tokens: Option<u64>,
    pub(crate) output_tokens: Option<u64>,
    pub(crate) model_calls: Option<u64>,
}

/// A model call's span, filled in as the call goes.
#[derive(Debug, Default)]
pub(crate) struct ChatBody {
    pub(crate) provider: String,
    pub(crate) model: String,
    pub(crate) temperature: Option<f64>,
    pub(crate) max_tokens: Option<u64>,
    pub(crate) node: String,
    pub(crate) step: u64,
    pub(crate) prompt_hash: Option<String>,
    pub(crate) system_instructions: Option<String>,
    pub(crate) input_messages: Option<String>,
    pub(crate) attempts: u32,
    /// The failures retried: when, which attempt, the wait before the next, and the error.
    pub(crate) retries: Vec<(Ticks, u32, std::time::Duration, String)>,
    pub(crate) response_id: Option<String>,
    pub(crate) response_model: Option<String>,
    pub(crate) finish_reasons: Option<String>,
    pub(crate) usage: Option<[u64; 3]>,
    pub(crate) cost: Option<f64>,
    pub(crate) output_messages: Option<String>,
    pub(crate) error_type: Option<&'static str>,
}

/// A tool call's span.
#[derive(Debug, Default)]
pub(crate) struct ToolBody {
    pub(crate) name: Text,
    pub(crate) call_id: Text,
    pub(crate) index: u32,
    pub(crate) attempts: Option<u32>,
    /// `ok`, the error's kind, `stored` or `stored_error`.
    pub(crate) outcome: Option<&'static str>,
    /// Whether the call failed: its outcome is then the error's kind (`error.type`).
    pub(crate) failed: bool,
    pub(crate) arguments: Option<Text>,
    pub(crate) result: Option<Text>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_record_is_moved_without_a_call() {
        assert!(size_of::<Record>() <= 128, "{} bytes", size_of::<Record>());
    }
}
