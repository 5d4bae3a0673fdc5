//! The application event stream: a run's events in the vocabulary chat front ends consume.

use super::{EventKind, RunStream, StreamMode, StreamModes};
use crate::command::IntoRunInput;
use crate::config::RunConfig;
use crate::graph::CompiledGraph;
use crate::interrupt::Interrupt;
use crate::model::Usage;
use crate::state::State;
use crate::tool::ToolEvent;
use futures::Stream;
use serde::Serialize;
use serde_json::Value;
use std::pin::Pin;
use std::task::{Context, Poll};

/// One event of a run as a chat front end shows it: text as it is written, each tool call from
/// start to result under the model's call id, what each model call used, and exactly one
/// [`Done`](AppEvent::Done) or [`Error`](AppEvent::Error) at the end.
///
/// Serialized with a `type` tag (`{"type": "text_delta", "message_id": .., "delta": ..}`), so
/// it can go to a browser as it is. Tool arguments and results have been through the tool's
/// redaction hook ([`ToolPolicy::redact`](crate::tool::ToolPolicy)).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", rename_all = "snake_case")]
#[non_exhaustive]
pub enum AppEvent {
    /// More text of the reply `message_id`.
    TextDelta {
        /// The reply being written.
        message_id: String,
        /// The new text.
        delta: String,
    },
    /// A tool call is about to run.
    ToolCallStart {
        /// The call's id, as the model gave it (the same in the call's other events).
        id: String,
        /// The tool.
        name: String,
        /// The arguments, redacted.
        args: Value,
    },
    /// A running tool reported progress.
    ToolProgress {
        /// The call's id.
        id: String,
        /// What the tool wrote, redacted.
        data: Value,
    },
    /// A tool call has its result.
    ToolCallResult {
        /// The call's id.
        id: String,
        /// The result (or the error the model is shown), redacted.
        result: String,
        /// Whether the call failed.
        is_error: bool,
    },
    /// What one model call used.
    UsageReport {
        /// Its tokens and cost.
        usage: Usage,
    },
    /// A value a node wrote with [`Runtime::write`](crate::Runtime::write).
    Custom {
        /// The node.
        node: String,
        /// The value.
        value: Value,
    },
    /// The run ended: finished, or paused with `interrupts` for the user to answer.
    Done {
        /// The pending interrupts; empty when the run finished.
        interrupts: Vec<Interrupt>,
    },
    /// The run failed or was cancelled.
    Error {
        /// What went wrong.
        message: String,
    },
}

/// The stream modes [`AppEvents`] reads: `messages` (text, usage) and `custom` (tool calls,
/// custom values).
pub const APP_MODES: StreamModes = StreamModes::of(StreamMode::Messages).with(StreamMode::Custom);

/// A run's [`AppEvent`]s: [`CompiledGraph::app_events`] starts a run and returns them; [`new`](AppEvents::new)
/// adapts a [`RunStream`] streamed with (at least) [`APP_MODES`].
///
/// ```
/// use futures::StreamExt;
/// use graphwright::model::ScriptedModel;
/// use graphwright::prebuilt::{MessagesState, react_agent};
/// use graphwright::prelude::*;
/// use graphwright::stream::AppEvent;
///
/// /// Add two integers.
/// #[tool]
/// fn add(a: i64, b: i64) -> i64 {
///     a + b
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Report> {
/// let model = ScriptedModel::new([
///     Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "add", json!({"a": 2, "b": 2}))]),
///     Message::assistant("Four."),
/// ]);
/// let app = react_agent(model, tools![Add]).compile()?;
/// let input = MessagesState::new([Message::user("2 + 2?")]);
/// let events: Vec<AppEvent> = app.app_events(input, &RunConfig::default()).collect().await;
/// let kinds: Vec<_> = events.iter().map(|e| serde_json::to_value(e).unwrap()["type"].clone()).collect();
/// assert_eq!(kinds, ["usage_report", "tool_call_start", "tool_call_result", "text_delta", "usage_report", "done"]);
/// assert!(matches!(&events[2], AppEvent::ToolCallResult { id, result, .. } if id == "c1" && result == "4"));
/// # Ok(()) }
/// ```
pub struct AppEvents<S: State> {
    inner: RunStream<S>,
    ended: bool,
}

impl<S: State> AppEvents<S> {
    /// Adapts `stream`; events of modes other than [`APP_MODES`] are skipped.
    pub fn new(stream: RunStream<S>) -> Self {
        Self { inner: stream, ended: false }
    }

    /// Stops the run; the stream then ends with an [`AppEvent::Error`] saying so (unless the
    /// run had already ended).
    pub fn cancel(&self) {
        self.inner.cancel();
    }
}

impl<S: State, C: Send + Sync + 'static> CompiledGraph<S, C> {
    /// Runs the graph like [`stream`](CompiledGraph::stream), as [`AppEvent`]s: what a chat
    /// front end shows of the run.
    pub fn app_events<M>(&self, input: impl IntoRunInput<S, M>, cfg: &RunConfig<C>) -> AppEvents<S> {
        AppEvents::new(self.stream(input, cfg, APP_MODES))
    }
}

impl<S: State> From<RunStream<S>> for AppEvents<S> {
    fn from(stream: RunStream<S>) -> Self {
        Self::new(stream)
    }
}

/// The application event for a run's event, if it has one.
fn adapt<S: State>(kind: EventKind<S>) -> Option<AppEvent> {
    Some(match kind {
        EventKind::Message { message_id, delta, .. } => AppEvent::TextDelta { message_id, delta },
        EventKind::Usage { usage, .. } => AppEvent::UsageReport { usage },
        EventKind::Custom { node, value } => AppEvent::Custom { node, value },
        EventKind::Tool { event, .. } => match event {
            ToolEvent::Started { tool_call_id, name, arguments, .. } => {
                AppEvent::ToolCallStart { id: tool_call_id, name, args: arguments }
            }
            ToolEvent::Progress { tool_call_id, data, .. } => AppEvent::ToolProgress { id: tool_call_id, data },
            ToolEvent::Finished { tool_call_id, content, is_error, .. } => {
                AppEvent::ToolCallResult { id: tool_call_id, result: content, is_error }
            }
        },
        EventKind::Finished { .. } => AppEvent::Done { interrupts: Vec::new() },
        EventKind::Interrupted { interrupts, .. } => AppEvent::Done { interrupts },
        EventKind::Failed(error) => AppEvent::Error { message: error.to_string() },
        EventKind::Cancelled => AppEvent::Error { message: "the run was cancelled".to_owned() },
        _ => return None,
    })
}

impl<S: State> Stream for AppEvents<S> {
    type Item = AppEvent;

    fn poll_next(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<AppEvent>> {
        loop {
            if self.ended {
                return Poll::Ready(None);
            }
            let Some(event) = std::task::ready!(Pin::new(&mut self.inner).poll_next(cx)) else {
                // A run stream always ends with a terminal event; keep the promise of exactly
                // one `Done` or `Error` even if it did not.
                self.ended = true;
                return Poll::Ready(Some(AppEvent::Error { message: "the run ended without a result".to_owned() }));
            };
            self.ended = event.kind.is_terminal();
            if let Some(app) = adapt(event.kind) {
                return Poll::Ready(Some(app));
            }
        }
    }
}
