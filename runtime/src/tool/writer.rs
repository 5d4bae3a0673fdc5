//! The writer tools report progress with, and where the events of one call go: the node's
//! sink and the run's stream.

use super::event::{EventSink, ToolEvent};
use super::policy::Redactor;
use serde::Serialize;
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// What the tool node knows about the call a writer belongs to.
#[derive(Clone)]
pub(crate) struct CallScope {
    pub(crate) tool_call_id: Arc<str>,
    pub(crate) index: usize,
    pub(crate) name: Arc<str>,
    pub(crate) sink: Option<EventSink>,
    pub(crate) redact: Option<Redactor>,
    /// The run's stream, when the node runs in a run streamed with `custom`.
    pub(crate) stream: Option<StreamTap>,
}

/// Where a tool node inside a streamed run puts its events: the run's stream, as the node's.
#[derive(Clone)]
pub(crate) struct StreamTap {
    pub(crate) writer: crate::stream::SharedWriter,
    pub(crate) node: Arc<str>,
    pub(crate) step: u64,
}

impl CallScope {
    /// Emits `event` to the node's sink and the run's stream, where they are.
    pub(crate) fn emit(&self, event: ToolEvent) {
        match (&self.sink, &self.stream) {
            (Some(sink), Some(tap)) => {
                tap.writer.write(&tap.node, tap.step, crate::stream::Written::Tool(event.clone()));
                sink(event);
            }
            (Some(sink), None) => sink(event),
            (None, Some(tap)) => tap.writer.write(&tap.node, tap.step, crate::stream::Written::Tool(event)),
            (None, None) => {}
        }
    }

    /// Whether anything receives the events.
    pub(crate) fn is_watched(&self) -> bool {
        self.sink.is_some() || self.stream.is_some()
    }

    /// `text` through the redaction hook.
    pub(crate) fn redact(&self, text: String) -> String {
        match &self.redact {
            Some(redact) => redact(&text),
            None => text,
        }
    }

    /// Every string inside `value` through the redaction hook.
    pub(crate) fn redact_value(&self, value: Value) -> Value {
        match &self.redact {
            Some(redact) => redact_strings(value, redact.as_ref()),
            None => value,
        }
    }
}

fn redact_strings(value: Value, redact: &(dyn Fn(&str) -> String + Send + Sync)) -> Value {
    match value {
        Value::String(text) => Value::String(redact(&text)),
        Value::Array(items) => Value::Array(items.into_iter().map(|v| redact_strings(v, redact)).collect()),
        Value::Object(map) => Value::Object(map.into_iter().map(|(k, v)| (k, redact_strings(v, redact))).collect()),
        other => other,
    }
}

/// A tool's way to report progress while it runs (a search that found its first hits, a
/// download at 40 %). The tool node forwards each write as a [`ToolEvent::Progress`] to its
/// sink and, in a run streamed with `custom`, to the run's stream, after redaction; with
/// neither, writes go nowhere. Reach it with
/// [`ToolRuntime::writer`](super::ToolRuntime::writer).
#[derive(Clone)]
pub struct ToolWriter {
    pub(crate) scope: Option<CallScope>,
}

impl ToolWriter {
    /// A writer connected to nothing (for a tool called by hand).
    #[must_use]
    pub fn disconnected() -> Self {
        Self { scope: None }
    }

    /// Reports `data`. A value that cannot be written as JSON is reported as its error text.
    pub fn write(&self, data: impl Serialize) {
        let Some(scope) = self.scope.as_ref().filter(|s| s.is_watched()) else {
            return;
        };
        let data =
            serde_json::to_value(data).unwrap_or_else(|error| Value::String(format!("unwritable progress: {error}")));
        scope.emit(ToolEvent::Progress {
            tool_call_id: scope.tool_call_id.to_string(),
            index: scope.index,
            name: scope.name.to_string(),
            data: scope.redact_value(data),
        });
    }

    /// Whether writes reach a sink.
    #[must_use]
    pub fn is_connected(&self) -> bool {
        self.scope.as_ref().is_some_and(CallScope::is_watched)
    }
}

impl fmt::Debug for ToolWriter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolWriter").field("connected", &self.is_connected()).finish()
    }
}
