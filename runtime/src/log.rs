//! A run-level event log: what each node read and wrote, as a capture policy allows, with
//! values under secret-looking keys redacted before anything is recorded.
//!
//! Pass a log with [`RunConfig::log`](crate::RunConfig::log). The run records an entry when a
//! node starts and when it finishes, and the state after each step if the policy asks for it.
//! [`MemoryLog`] keeps entries in memory; implement [`EventLog`] to send them elsewhere.
//!
//! ```
//! use graphwright::log::{CapturePolicy, LogEntryKind, MemoryLog};
//! use graphwright::prelude::*;
//! use std::sync::Arc;
//!
//! #[graph]
//! mod login {
//!     use graphwright::prelude::*;
//!
//!     #[state]
//!     pub struct State {
//!         pub user: String,
//!         pub api_key: String,
//!         pub greeting: String,
//!     }
//!
//!     #[node(entry, next = END)]
//!     fn greet(state: &State) -> StateUpdate {
//!         StateUpdate::new().greeting(format!("hi {}", state.user))
//!     }
//! }
//!
//! #[tokio::main(flavor = "current_thread")]
//! async fn main() -> Result<(), Report> {
//!     let log = Arc::new(MemoryLog::new());
//!     let cfg = RunConfig::default().log(log.clone(), CapturePolicy::everything());
//!     let input = login::State { user: "ada".into(), api_key: "sk-123".into(), ..Default::default() };
//!     login::graph().compile()?.invoke(input, &cfg).await?;
//!     let entries = log.entries();
//!     let LogEntryKind::NodeStarted { input: Some(seen), .. } = &entries[0].kind else { panic!() };
//!     assert_eq!(seen["user"], "ada");
//!     assert_eq!(seen["api_key"], "[redacted]", "secret-looking keys never reach the log");
//!     Ok(())
//! }
//! ```

use serde::Serialize;
use serde_json::Value;
use std::sync::{Arc, Mutex};

pub use crate::capture::CapturePolicy;

/// One log entry.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LogEntry {
    /// The run.
    pub run_id: u64,
    /// The thread, if the run has one.
    pub thread_id: Option<String>,
    /// The super-step.
    pub step: u64,
    /// Milliseconds since the Unix epoch.
    pub at_ms: u64,
    /// What happened.
    pub kind: LogEntryKind,
}

/// What a [`LogEntry`] records.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "event", rename_all = "snake_case")]
#[non_exhaustive]
pub enum LogEntryKind {
    /// A task started.
    NodeStarted {
        /// The node.
        node: String,
        /// The task's index in its step.
        task: u32,
        /// What it read, when the policy captures inputs.
        input: Option<Value>,
    },
    /// A task finished, failed, or paused.
    NodeFinished {
        /// The node.
        node: String,
        /// The task's index in its step.
        task: u32,
        /// Its update, when the policy captures outputs.
        output: Option<Value>,
        /// Its error, if it failed.
        error: Option<String>,
        /// Whether it paused with an interrupt.
        interrupted: bool,
    },
    /// The state after a step, when the policy captures state.
    State {
        /// The state.
        state: Value,
    },
    /// A node called a model (one entry per call, retries included).
    ModelCall {
        /// The node that called.
        node: String,
        /// The provider (`openai`, `anthropic`, `scripted`, ...).
        provider: String,
        /// The model's name.
        model: String,
        /// The prompt's hash ([`prompt_hash`](crate::model::prompt_hash)): equal prompts, equal hashes.
        prompt_hash: String,
        /// How many attempts were made.
        attempts: u32,
        /// What the call used, if it got a reply.
        usage: Option<crate::model::Usage>,
        /// Its error, if it failed.
        error: Option<String>,
        /// How long it took, retries included, in milliseconds.
        duration_ms: u64,
    },
}

/// Where log entries go.
pub trait EventLog: Send + Sync + 'static {
    /// Records one entry. Called from the run; keep it quick.
    fn record(&self, entry: LogEntry);
}

/// Keeps entries in memory.
#[derive(Debug, Default)]
pub struct MemoryLog {
    entries: Mutex<Vec<LogEntry>>,
}

impl MemoryLog {
    /// An empty log.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The entries so far.
    pub fn entries(&self) -> Vec<LogEntry> {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }
}

impl EventLog for MemoryLog {
    fn record(&self, entry: LogEntry) {
        self.entries.lock().unwrap_or_else(std::sync::PoisonError::into_inner).push(entry);
    }
}

/// A log with its policy, as a run carries it.
#[derive(Clone)]
pub(crate) struct RunLog {
    pub(crate) log: Arc<dyn EventLog>,
    pub(crate) policy: Arc<CapturePolicy>,
}

/// Where in a run an entry is recorded.
pub(crate) struct At<'a> {
    pub(crate) run_id: u64,
    pub(crate) thread: Option<&'a str>,
    pub(crate) step: u64,
}

impl RunLog {
    fn entry(at: &At<'_>, kind: LogEntryKind) -> LogEntry {
        let at_ms =
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64);
        LogEntry { run_id: at.run_id, thread_id: at.thread.map(str::to_owned), step: at.step, at_ms, kind }
    }

    pub(crate) fn started(&self, at: &At<'_>, node: &str, task: u32, input: &impl Serialize) {
        let input = self.policy.capture(self.policy.inputs, input);
        self.log.record(Self::entry(at, LogEntryKind::NodeStarted { node: node.to_owned(), task, input }));
    }

    pub(crate) fn finished(
        &self,
        at: &At<'_>,
        node: &str,
        task: u32,
        output: Option<&impl Serialize>,
        error: Option<String>,
        interrupted: bool,
    ) {
        let output = output.and_then(|o| self.policy.capture(self.policy.outputs, o));
        let kind = LogEntryKind::NodeFinished { node: node.to_owned(), task, output, error, interrupted };
        self.log.record(Self::entry(at, kind));
    }

    pub(crate) fn model_call(&self, at: &At<'_>, kind: LogEntryKind) {
        self.log.record(Self::entry(at, kind));
    }

    pub(crate) fn state(&self, at: &At<'_>, state: &impl Serialize) {
        if let Some(state) = self.policy.capture(self.policy.state, state) {
            self.log.record(Self::entry(at, LogEntryKind::State { state }));
        }
    }
}

/// A finished model call, as the model layer reports it, becomes a `ModelCall` entry.
impl crate::model::reporting::CallLog for RunLog {
    fn model_call(&self, call: crate::model::reporting::CallRecord<'_>) {
        let at = At { run_id: call.run_id, thread: call.thread, step: call.step };
        RunLog::model_call(
            self,
            &at,
            LogEntryKind::ModelCall {
                node: call.node.to_owned(),
                provider: call.provider.to_owned(),
                model: call.model.to_owned(),
                prompt_hash: call.prompt_hash,
                attempts: call.attempts,
                usage: call.usage,
                error: call.error,
                duration_ms: call.duration_ms,
            },
        );
    }
}
