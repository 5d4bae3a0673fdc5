//! Counts and timings of a run's work: the run itself, each model call, each tool call, reported
//! to a [`RunMetrics`] the run is given with [`RunConfig::metrics`](crate::RunConfig::metrics).
//!
//! The run reports each thing as it ends, from the task that did it: an implementation should
//! only update counters (no I/O, no waiting). A subgraph's model and tool calls report to the
//! metrics of the run its parent is in; a subgraph's own run is part of that run, not a run of
//! its own. A run whose future is dropped before it ends (a cancelled stream, an abandoned
//! `invoke`) ends as [`RunOutcome::Cancelled`], so every run started is also ended.
//!
//! Without metrics configured, a run reports nothing and pays one `Option` check per call. With
//! the `otel` feature it reports to `otel::OtelMetrics` over
//! OpenTelemetry's global meter instead (instruments that do nothing until the application
//! installs a meter provider). The server keeps its own, on `/metrics`.
//!
//! ```
//! use graphwright::metrics::{ModelCallEnded, RunEnded, RunMetrics};
//! use graphwright::prelude::*;
//! use std::sync::Arc;
//! use std::sync::atomic::{AtomicU64, Ordering};
//!
//! /// Output tokens spent, and runs that ended.
//! #[derive(Default)]
//! struct Spent {
//!     output_tokens: AtomicU64,
//!     runs: AtomicU64,
//! }
//!
//! impl RunMetrics for Spent {
//!     fn model_call_ended(&self, call: &ModelCallEnded<'_>) {
//!         let tokens = call.usage.map_or(0, |u| u.output_tokens);
//!         self.output_tokens.fetch_add(tokens, Ordering::Relaxed);
//!     }
//!
//!     fn run_ended(&self, _run: &RunEnded<'_>) {
//!         self.runs.fetch_add(1, Ordering::Relaxed);
//!     }
//! }
//!
//! #[graph]
//! mod ask {
//!     use graphwright::model::{ChatModel, ModelReply, ScriptedModel, Usage};
//!     use graphwright::prelude::*;
//!
//!     #[state]
//!     pub struct State {
//!         pub answer: String,
//!     }
//!
//!     #[node(entry, next = END)]
//!     async fn call(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
//!         let model = ScriptedModel::new([ModelReply {
//!             usage: Usage::tokens(30, 12),
//!             ..ModelReply::new(Message::assistant("42"))
//!         }]);
//!         let reply = model.invoke(&[Message::user("?")], rt).await?;
//!         Ok(StateUpdate::new().answer(reply.content))
//!     }
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Report> {
//! let spent = Arc::new(Spent::default());
//! let cfg = RunConfig::default().metrics(spent.clone());
//! ask::graph().compile()?.invoke(ask::State::default(), &cfg).await?;
//! assert_eq!(spent.output_tokens.load(Ordering::Relaxed), 12);
//! assert_eq!(spent.runs.load(Ordering::Relaxed), 1);
//! # Ok(())
//! # }
//! ```

use crate::model::Usage;
use std::sync::Arc;
use std::time::Duration;
use tokio::time::Instant;

/// Where a run reports what it did. Every method has an empty default body: implement the ones
/// wanted. The records are `#[non_exhaustive]`, so fields can be added to them without
/// breaking an implementation.
pub trait RunMetrics: Send + Sync {
    /// A run started (not a subgraph's run: that is part of its parent's).
    fn run_started(&self, run: &RunStarted<'_>) {
        let _ = run;
    }

    /// A run ended, however it ended.
    fn run_ended(&self, run: &RunEnded<'_>) {
        let _ = run;
    }

    /// A model call ended, with a reply or an error, its retries included.
    fn model_call_ended(&self, call: &ModelCallEnded<'_>) {
        let _ = call;
    }

    /// A tool call ended, with a result or an error. A call answered from the result an earlier
    /// run of its task stored is not run again, and not reported again.
    fn tool_call_ended(&self, call: &ToolCallEnded<'_>) {
        let _ = call;
    }
}

/// A run that started.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct RunStarted<'a> {
    /// The graph's name.
    pub graph: &'a str,
    /// The run's id, unique in this process.
    pub run_id: u64,
    /// The run's thread, if it has one.
    pub thread_id: Option<&'a str>,
}

/// A run that ended.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct RunEnded<'a> {
    /// The graph's name.
    pub graph: &'a str,
    /// The run's id, unique in this process.
    pub run_id: u64,
    /// The run's thread, if it has one.
    pub thread_id: Option<&'a str>,
    /// How it ended.
    pub status: RunOutcome,
    /// From its start to its end.
    pub duration: Duration,
}

/// How a run ended, as metrics label it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum RunOutcome {
    /// No task was left: the graph reached its end.
    Success,
    /// It failed: a step failed, or the run could not start or store its state.
    Error,
    /// It paused for interrupts or at a breakpoint.
    Interrupted,
    /// Its future was dropped before it ended.
    Cancelled,
}

impl RunOutcome {
    /// The status as a label value: `success`, `error`, `interrupted`, `cancelled`.
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Success => "success",
            Self::Error => "error",
            Self::Interrupted => "interrupted",
            Self::Cancelled => "cancelled",
        }
    }
}

/// A model call that ended.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ModelCallEnded<'a> {
    /// The provider (`openai`, `anthropic`, `scripted`, ...).
    pub provider: &'a str,
    /// The model's name, as requested.
    pub model: &'a str,
    /// The node that made the call.
    pub node: &'a str,
    /// The tokens the reply used, whenever a reply came: also when the call then failed because
    /// the reply passed the run's budget, since those tokens were spent.
    pub usage: Option<Usage>,
    /// The attempts made, retries included.
    pub attempts: u32,
    /// From the first attempt to the reply or the last error.
    pub duration: Duration,
    /// How it failed, as a short stable word ([`ModelError::kind`](crate::model::ModelError::kind)),
    /// or `None` when it succeeded.
    pub error: Option<&'static str>,
}

/// A tool call that ended.
#[derive(Clone, Copy, Debug)]
#[non_exhaustive]
pub struct ToolCallEnded<'a> {
    /// The tool, as the model named it (for an unknown tool, a name no tool has).
    pub tool: &'a str,
    /// The attempts made, retries included (0 when the call was refused before the tool ran).
    pub attempts: u32,
    /// From validating the arguments to the result.
    pub duration: Duration,
    /// How it failed, as a short stable word ([`ToolError::kind`](crate::ToolError::kind)), or
    /// `None` when it succeeded.
    pub error: Option<&'static str>,
}

impl ToolCallEnded<'_> {
    /// `ok`, or how the call failed: the outcome as a label value.
    #[must_use]
    pub fn outcome(&self) -> &'static str {
        self.error.unwrap_or("ok")
    }

    /// The tool as a label value: its name, or `unknown` for a call to a tool that does not
    /// exist, since every name a model makes up would otherwise be a series of its own.
    #[must_use]
    pub fn tool_label(&self) -> &str {
        if self.error == Some(UNKNOWN_TOOL) { "unknown" } else { self.tool }
    }
}

/// [`ToolError::kind`](crate::ToolError::kind) of a call to a tool that does not exist.
const UNKNOWN_TOOL: &str = "unknown_tool";

impl ModelCallEnded<'_> {
    /// `ok`, or how the call failed: the outcome as a label value.
    #[must_use]
    pub fn outcome(&self) -> &'static str {
        self.error.unwrap_or("ok")
    }
}

/// A run being timed: reports its start when made, and its end once, as `end` says or, when
/// dropped before that (the run's future was dropped), as cancelled.
pub(crate) struct RunTimer<'a> {
    metrics: Arc<dyn RunMetrics>,
    graph: &'a str,
    run_id: u64,
    thread_id: Option<&'a str>,
    started: Instant,
    ended: bool,
}

impl<'a> RunTimer<'a> {
    /// Reports the start of run `run_id` of `graph`, when the run has metrics.
    pub(crate) fn start(
        metrics: Option<&Arc<dyn RunMetrics>>,
        graph: &'a str,
        run_id: u64,
        thread_id: Option<&'a str>,
    ) -> Option<Self> {
        let metrics = Arc::clone(metrics?);
        metrics.run_started(&RunStarted { graph, run_id, thread_id });
        Some(Self { metrics, graph, run_id, thread_id, started: Instant::now(), ended: false })
    }

    /// Reports the end of the run with `status`.
    pub(crate) fn end(mut self, status: RunOutcome) {
        self.report(status);
    }

    fn report(&mut self, status: RunOutcome) {
        self.ended = true;
        let duration = self.started.elapsed();
        let (graph, run_id, thread_id) = (self.graph, self.run_id, self.thread_id);
        self.metrics.run_ended(&RunEnded { graph, run_id, thread_id, status, duration });
    }
}

impl Drop for RunTimer<'_> {
    fn drop(&mut self) {
        if !self.ended {
            self.report(RunOutcome::Cancelled);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_to_a_tool_that_does_not_exist_is_labelled_unknown() {
        let error = crate::ToolError::UnknownTool { name: "made_up".into(), suggestion: None, known: Vec::new() };
        let call = ToolCallEnded { tool: "made_up", attempts: 0, duration: Duration::ZERO, error: Some(error.kind()) };
        assert_eq!((call.tool_label(), call.outcome()), ("unknown", "unknown_tool"));
        let failed = ToolCallEnded { tool: "search", error: Some("failed"), ..call };
        assert_eq!((failed.tool_label(), failed.outcome()), ("search", "failed"));
        let ok = ToolCallEnded { error: None, ..failed };
        assert_eq!(ok.outcome(), "ok");
    }

    #[test]
    fn a_dropped_timer_ends_its_run_as_cancelled() {
        #[derive(Default)]
        struct Ends(std::sync::Mutex<Vec<(String, RunOutcome)>>);
        impl RunMetrics for Ends {
            fn run_ended(&self, run: &RunEnded<'_>) {
                self.0.lock().unwrap().push((run.graph.to_owned(), run.status));
            }
        }
        let ends = Arc::new(Ends::default());
        let metrics: Arc<dyn RunMetrics> = ends.clone();
        RunTimer::start(Some(&metrics), "a", 1, None).unwrap().end(RunOutcome::Interrupted);
        drop(RunTimer::start(Some(&metrics), "b", 2, Some("t")));
        assert!(RunTimer::start(None, "c", 3, None).is_none(), "no metrics, nothing to time");
        let seen = ends.0.lock().unwrap().clone();
        assert_eq!(seen, [("a".to_owned(), RunOutcome::Interrupted), ("b".to_owned(), RunOutcome::Cancelled)]);
    }
}
