//! The tracing span of a tool call, named and filled as OpenTelemetry's GenAI semantic
//! conventions name an `execute_tool` span. Arguments and results go on it only when the run's
//! capture policy says `messages`, redacted as the event log is.

use super::ToolError;
use super::output::ToolOutput;
use super::runtime::ToolEnv;
use crate::message::{Message, ToolCall};
use crate::telemetry::{Body, Current, Open, RECORDED, RunTrace, Status, Ticks, ToolBody, left_to_record};
use crate::trace_value::{SpanName, int, record};
use std::sync::{Mutex, PoisonError};
use tracing::field::Empty;

/// The `tracing` span of a tool call, with its target: `RECORDED` for a call made in a run that
/// export records, or that its sampler left out (export then leaves the call to the record),
/// this module's otherwise.
macro_rules! tool_span {
    ($target:expr, $call:expr, $index:expr) => {
        tracing::info_span!(
            target: $target,
            "execute_tool",
            "otel.name" = %SpanName("execute_tool", &$call.name),
            "otel.status_code" = Empty,
            "otel.status_description" = Empty,
            "gen_ai.operation.name" = "execute_tool",
            "gen_ai.tool.name" = $call.name.as_str(),
            "gen_ai.tool.call.id" = $call.id.as_str(),
            "gen_ai.tool.type" = "function",
            "gen_ai.tool.call.arguments" = Empty,
            "gen_ai.tool.call.result" = Empty,
            "error.type" = Empty,
            "graphwright.tool.index" = int($index),
            "graphwright.tool.outcome" = Empty,
            "graphwright.tool.attempts" = Empty,
        )
    };
}

/// The span of the call at `index` of a model's reply; `recorded` when it is left to the record
/// (`telemetry::left_to_record`).
/// The arguments go on it by [`ToolSpan::open`], which makes their text once for both spans.
fn tool_call(call: &ToolCall, index: usize, recorded: bool) -> tracing::Span {
    if recorded { tool_span!(RECORDED, call, index) } else { tool_span!(module_path!(), call, index) }
}

fn capturing<'a>(span: &tracing::Span, env: &'a ToolEnv) -> Option<&'a crate::log::CapturePolicy> {
    env.capture.as_deref().filter(|policy| policy.messages && !span.is_disabled())
}

/// How the call ended: `ok` or the error's kind, which also sets the span's error status.
fn record_outcome(span: &tracing::Span, env: &ToolEnv, outcome: &Result<ToolOutput, ToolError>, attempts: u32) {
    if span.is_disabled() {
        return;
    }
    let attempts = int(attempts);
    match outcome {
        Ok(output) => {
            record(
                span,
                [
                    ("graphwright.tool.attempts", &attempts),
                    ("graphwright.tool.outcome", &"ok"),
                    ("otel.status_code", &"ok"),
                ],
            );
            if let Some(policy) = capturing(span, env) {
                match output {
                    ToolOutput::Text(text) => span.record("gen_ai.tool.call.result", text.as_str()),
                    ToolOutput::Json(value) => span.record("gen_ai.tool.call.result", policy.text(true, value)),
                };
            }
        }
        Err(error) => {
            let description = error.to_string();
            record(
                span,
                [
                    ("graphwright.tool.attempts", &attempts),
                    ("graphwright.tool.outcome", &error.kind()),
                    ("error.type", &error.kind()),
                    ("otel.status_code", &"error"),
                    ("otel.status_description", &description.as_str()),
                ],
            );
        }
    }
}

/// A call answered from the result an earlier run of its task stored: it did not run again.
fn record_stored(span: &tracing::Span, message: &Message) {
    if span.is_disabled() {
        return;
    }
    span.record("graphwright.tool.outcome", if message.is_error { "stored_error" } else { "stored" });
}

/// A tool call's spans: its `tracing` span, and its recorded span when the call runs in a task
/// of a recorded run.
pub(super) struct ToolSpan {
    pub(super) tracing: tracing::Span,
    recorded: Option<RecordedCall>,
}

struct RecordedCall {
    trace: RunTrace,
    open: Open,
    index: u32,
    arguments: Option<String>,
    /// How the call ended, said by the pipeline while the span is shared.
    ended: Mutex<Ended>,
}

/// How a recorded call ended.
#[derive(Default)]
struct Ended {
    attempts: Option<u32>,
    outcome: Option<&'static str>,
    /// The error's message, when the call failed.
    error: Option<String>,
    result: Option<String>,
}

impl ToolSpan {
    /// The spans of the call at `index` of a model's reply.
    pub(super) fn open(call: &ToolCall, index: usize, env: &ToolEnv) -> Self {
        // A call inside a node that lent the tools nothing of its run still records into the
        // run's trace, found from the node's span.
        let trace = env.trace.clone().or_else(RunTrace::current);
        let traced = tool_call(call, index, left_to_record(trace.is_some()));
        let taken = capturing(&traced, env).is_some();
        let arguments = env
            .capture
            .as_deref()
            .filter(|policy| policy.messages && (taken || trace.is_some()))
            .and_then(|policy| policy.text(true, &call.arguments));
        if let Some(text) = arguments.as_deref().filter(|_| taken) {
            traced.record("gen_ai.tool.call.arguments", text);
        }
        let recorded = trace.map(|trace| RecordedCall {
            open: trace.open_here(),
            trace,
            index: u32::try_from(index).unwrap_or(u32::MAX),
            arguments,
            ended: Mutex::default(),
        });
        Self { tracing: traced, recorded }
    }

    /// When the recorded span began: the start the call's metrics time it from too, the clock
    /// already read.
    pub(super) fn start(&self) -> Option<Ticks> {
        self.recorded.as_ref().map(|r| r.open.start())
    }

    /// The recorded span, as the tool's code sees it.
    pub(super) fn inside(&self) -> Option<Current> {
        self.recorded.as_ref().map(|r| r.trace.inside(&r.open))
    }

    /// How the call ended (see [`record_outcome`]).
    pub(super) fn record_outcome(&self, env: &ToolEnv, outcome: &Result<ToolOutput, ToolError>, attempts: u32) {
        record_outcome(&self.tracing, env, outcome, attempts);
        let Some(r) = &self.recorded else { return };
        let mut ended = r.ended.lock().unwrap_or_else(PoisonError::into_inner);
        ended.attempts = Some(attempts);
        match outcome {
            Ok(output) => {
                ended.outcome = Some("ok");
                ended.result =
                    env.capture.as_deref().filter(|policy| policy.messages).and_then(|policy| match output {
                        ToolOutput::Text(text) => Some(text.clone()),
                        ToolOutput::Json(value) => policy.text(true, value),
                    });
            }
            Err(error) => {
                ended.outcome = Some(error.kind());
                ended.error = Some(error.to_string());
            }
        }
    }

    /// A call answered from its stored result (see [`record_stored`]).
    pub(super) fn record_stored(&self, message: &Message) {
        record_stored(&self.tracing, message);
        if let Some(r) = &self.recorded {
            r.ended.lock().unwrap_or_else(PoisonError::into_inner).outcome =
                Some(if message.is_error { "stored_error" } else { "stored" });
        }
    }

    /// Ends the recorded span of `call`.
    pub(super) fn end(self, call: &ToolCall) {
        let Some(r) = self.recorded else { return };
        let ended = r.ended.into_inner().unwrap_or_else(PoisonError::into_inner);
        let failed = ended.error.is_some();
        let status = match ended.error {
            Some(description) => Status::Error(description),
            None if ended.outcome == Some("ok") => Status::Ok,
            None => Status::Unset,
        };
        r.trace.close(r.open, status, |batch| {
            Body::Tool(ToolBody {
                name: batch.text(&call.name),
                call_id: batch.text(&call.id),
                index: r.index,
                attempts: ended.attempts,
                outcome: ended.outcome,
                failed,
                arguments: r.arguments.as_deref().map(|text| batch.text(text)),
                result: ended.result.as_deref().map(|text| batch.text(text)),
            })
        });
    }
}
