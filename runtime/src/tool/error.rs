//! Why a tool call produced no result. Each message is written for the model that made the call:
//! it names what failed and says what to do.

use std::error::Error as StdError;
use std::fmt::{self, Write as _};
use std::sync::Arc;
use std::time::Duration;

/// A tool call that failed. [`ToolNode`](super::ToolNode) turns each into a tool message with
/// `is_error = true` whose text is this error's `Display`.
#[derive(Clone, Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ToolError {
    /// The arguments were text that is not JSON.
    #[error(
        "the arguments for tool `{}` are not valid JSON ({}); \
         send one JSON object that matches the tool's parameters",
        clip(.tool),
        clip(.reason)
    )]
    InvalidJson {
        /// The tool that was called.
        tool: String,
        /// The parser's complaint.
        reason: String,
    },
    /// The arguments do not match the tool's schema.
    #[error("invalid arguments for tool `{}`: {}; fix them and call the tool again", clip(.tool), list(.problems))]
    InvalidArguments {
        /// The tool that was called.
        tool: String,
        /// Every problem found, each naming its field.
        problems: Vec<ArgumentProblem>,
    },
    /// No tool has the name the model used.
    #[error(
        "there is no tool named `{}`{}; the tools you can call are: {}",
        clip(.name),
        hint(.suggestion.as_deref()),
        names(.known)
    )]
    UnknownTool {
        /// The name the model used.
        name: String,
        /// The nearest known name, if one is close.
        suggestion: Option<String>,
        /// Every tool the node knows.
        known: Vec<String>,
    },
    /// An earlier call in the same message used the same id; this one was not run.
    #[error(
        "tool call id `{}` is already used by call {first} of this message, so this call \
         (call {index}, to `{}`) was not run: give every call its own id and call again",
        clip(.id),
        clip(.tool)
    )]
    DuplicateCallId {
        /// The shared id.
        id: String,
        /// The tool this call asked for.
        tool: String,
        /// The position (from 1) of the call that ran under this id.
        first: usize,
        /// The position (from 1) of this call.
        index: usize,
    },
    /// The tool ran and reported an error.
    #[error("tool `{tool}` failed: {source}")]
    Failed {
        /// The tool.
        tool: String,
        /// Its error.
        #[source]
        source: Arc<dyn StdError + Send + Sync>,
    },
    /// The tool panicked; the panic was caught and the run goes on.
    #[error("tool `{tool}` crashed ({message}); this is a bug in the tool, not in your arguments")]
    Panicked {
        /// The tool.
        tool: String,
        /// The panic's message.
        message: String,
    },
    /// An attempt ran longer than the tool's timeout and was stopped.
    #[error("tool `{tool}` did not finish within {limit:?} and was stopped; try a smaller request or another tool")]
    Timeout {
        /// The tool.
        tool: String,
        /// The timeout.
        limit: Duration,
    },
    /// The result was rejected by the tool's result check.
    #[error("tool `{tool}` returned a result that failed its check: {reason}")]
    InvalidResult {
        /// The tool.
        tool: String,
        /// Why the result was rejected.
        reason: String,
    },
    /// The tool takes a typed [`ToolRuntime<S, C>`](super::ToolRuntime) whose state or context
    /// type is not the one the tool node was run with. A wiring mistake, not the model's.
    #[error(
        "tool `{tool}` reads a {what} of type `{expected}`, but the tool node was run without one: \
         this tool is set up wrongly and cannot be used now"
    )]
    Injection {
        /// The tool.
        tool: String,
        /// `"state"` or `"context"`.
        what: &'static str,
        /// The type the tool takes.
        expected: &'static str,
    },
}

impl ToolError {
    /// The tool's own error, for tools written by hand.
    pub fn failed(tool: impl Into<String>, error: impl Into<Box<dyn StdError + Send + Sync>>) -> Self {
        Self::Failed { tool: tool.into(), source: Arc::from(error.into()) }
    }

    /// The tool's own error as a plain message.
    pub fn msg(tool: impl Into<String>, message: impl fmt::Display) -> Self {
        Self::failed(tool, message.to_string())
    }

    /// The tool the error is about (for an unknown tool, the name the model used).
    #[must_use]
    pub fn tool(&self) -> &str {
        match self {
            Self::InvalidJson { tool, .. }
            | Self::InvalidArguments { tool, .. }
            | Self::DuplicateCallId { tool, .. }
            | Self::Failed { tool, .. }
            | Self::Panicked { tool, .. }
            | Self::Timeout { tool, .. }
            | Self::InvalidResult { tool, .. }
            | Self::Injection { tool, .. } => tool,
            Self::UnknownTool { name, .. } => name,
        }
    }

    /// The kind of failure as a short, stable word (`failed`, `timeout`, `unknown_tool`, ...):
    /// what a metric's outcome label carries.
    #[must_use]
    pub fn kind(&self) -> &'static str {
        match self {
            Self::InvalidJson { .. } => "invalid_json",
            Self::InvalidArguments { .. } => "invalid_arguments",
            Self::UnknownTool { .. } => "unknown_tool",
            Self::DuplicateCallId { .. } => "duplicate_call_id",
            Self::Failed { .. } => "failed",
            Self::Panicked { .. } => "panicked",
            Self::Timeout { .. } => "timeout",
            Self::InvalidResult { .. } => "invalid_result",
            Self::Injection { .. } => "injection",
        }
    }

    /// Whether the call was rejected before the tool ran (bad JSON, bad arguments, unknown
    /// tool, reused id): the model has to change the call, so it is never retried.
    #[must_use]
    pub fn is_rejected_call(&self) -> bool {
        matches!(
            self,
            Self::InvalidJson { .. }
                | Self::InvalidArguments { .. }
                | Self::UnknownTool { .. }
                | Self::DuplicateCallId { .. }
        )
    }

    /// Whether an attempt ran past the tool's timeout.
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }

    /// The `ToolError` a [`RetryPolicy::retry_on`](crate::RetryPolicy::retry_on) predicate is
    /// shown: a tool node hands the predicate the tool's error wrapped in a `NodeError`.
    #[must_use]
    pub fn of(error: &crate::NodeError) -> Option<&ToolError> {
        error.source_error().and_then(|e| e.downcast_ref::<ToolError>())
    }
}

/// One way the arguments miss the schema: where, and what was expected.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgumentProblem {
    /// The field, as a path (`city`, `filter.tags[2]`); empty for the arguments as a whole.
    pub path: String,
    /// What is wrong, e.g. ``expected an integer, got the string "three"``.
    pub message: String,
}

impl fmt::Display for ArgumentProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            f.write_str(&clip(&self.message))
        } else {
            write!(f, "field `{}`: {}", clip(&self.path), clip(&self.message))
        }
    }
}

/// At most this many argument problems are listed in one message.
const LISTED_PROBLEMS: usize = 10;

fn list(problems: &[ArgumentProblem]) -> String {
    let mut text = problems.iter().take(LISTED_PROBLEMS).map(ToString::to_string).collect::<Vec<_>>().join("; ");
    if problems.len() > LISTED_PROBLEMS {
        let _ = write!(text, "; and {} more", problems.len() - LISTED_PROBLEMS);
    }
    text
}

/// How much of a string the model wrote an error message repeats.
const CLIP_CHARS: usize = 100;

/// `text`, or its first characters when it is long: what a model sent is echoed in errors, and
/// errors become tool messages stored with the state, so a megabyte-long name must not be.
pub(crate) fn clip(text: &str) -> std::borrow::Cow<'_, str> {
    match text.char_indices().nth(CLIP_CHARS) {
        None => std::borrow::Cow::Borrowed(text),
        Some((end, _)) => std::borrow::Cow::Owned(format!("{}… ({} bytes in all)", &text[..end], text.len())),
    }
}

fn hint(suggestion: Option<&str>) -> String {
    suggestion.map(|s| format!(" (did you mean `{s}`?)")).unwrap_or_default()
}

fn names(known: &[String]) -> String {
    if known.is_empty() {
        return "none".to_owned();
    }
    known.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ")
}
