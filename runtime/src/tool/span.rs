//! The tracing span of a tool call, named and filled as OpenTelemetry's GenAI semantic
//! conventions name an `execute_tool` span. Arguments and results go on it only when the run's
//! capture policy says `messages`, redacted as the event log is.

use super::ToolError;
use super::output::ToolOutput;
use super::runtime::ToolEnv;
use crate::message::{Message, ToolCall};
use crate::trace_value::{SpanName, int, record};
use tracing::field::Empty;

/// The span of the call at `index` of a model's reply.
pub(super) fn tool_call(call: &ToolCall, index: usize, env: &ToolEnv) -> tracing::Span {
    let span = tracing::info_span!(
        "execute_tool",
        "otel.name" = %SpanName("execute_tool", &call.name),
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "gen_ai.operation.name" = "execute_tool",
        "gen_ai.tool.name" = call.name.as_str(),
        "gen_ai.tool.call.id" = call.id.as_str(),
        "gen_ai.tool.type" = "function",
        "gen_ai.tool.call.arguments" = Empty,
        "gen_ai.tool.call.result" = Empty,
        "error.type" = Empty,
        "graphwright.tool.index" = int(index),
        "graphwright.tool.outcome" = Empty,
        "graphwright.tool.attempts" = Empty,
    );
    if let Some(policy) = capturing(&span, env)
        && let Some(text) = policy.text(true, &call.arguments)
    {
        span.record("gen_ai.tool.call.arguments", text);
    }
    span
}

fn capturing<'a>(span: &tracing::Span, env: &'a ToolEnv) -> Option<&'a crate::log::CapturePolicy> {
    env.capture.as_deref().filter(|policy| policy.messages && !span.is_disabled())
}

/// How the call ended: `ok` or the error's kind, which also sets the span's error status.
pub(super) fn record_outcome(
    span: &tracing::Span,
    env: &ToolEnv,
    outcome: &Result<ToolOutput, ToolError>,
    attempts: u32,
) {
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
pub(super) fn record_stored(span: &tracing::Span, message: &Message) {
    if span.is_disabled() {
        return;
    }
    span.record("graphwright.tool.outcome", if message.is_error { "stored_error" } else { "stored" });
}
