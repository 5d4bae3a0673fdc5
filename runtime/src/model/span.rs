//! The tracing span of a model call, named and filled as OpenTelemetry's GenAI semantic
//! conventions name a client's `chat` span, so an exporter (see `crate::otel`) needs no mapping.
//!
//! Prompt and completion text go on the span only when the run's capture policy says
//! `messages`, as the conventions' opt-in `gen_ai.input.messages` / `gen_ai.output.messages`,
//! redacted as the event log is.

use super::context::Scope;
use super::{ModelError, ModelReply, ModelSettings};
use crate::message::{Message, Role};
use crate::trace_value::{SpanName, int, record};
use serde_json::{Value, json};
use tracing::field::Empty;

/// The span of one call to `model` of `provider`: empty fields are recorded as the call goes.
pub(super) fn model_call(provider: &str, model: &str, settings: &ModelSettings, scope: &Scope<'_>) -> tracing::Span {
    tracing::info_span!(
        "chat",
        "otel.name" = %SpanName("chat", model),
        "otel.kind" = "client",
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "gen_ai.operation.name" = "chat",
        "gen_ai.provider.name" = provider,
        "gen_ai.request.model" = model,
        "gen_ai.request.temperature" = settings.temperature,
        "gen_ai.request.max_tokens" = settings.max_tokens.map(int),
        "gen_ai.response.id" = Empty,
        "gen_ai.response.model" = Empty,
        "gen_ai.response.finish_reasons" = Empty,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "gen_ai.usage.cache_read.input_tokens" = Empty,
        "gen_ai.system_instructions" = Empty,
        "gen_ai.input.messages" = Empty,
        "gen_ai.output.messages" = Empty,
        "error.type" = Empty,
        "graphwright.node" = scope.node,
        "graphwright.step" = int(scope.step),
        "graphwright.prompt_hash" = Empty,
        "graphwright.attempts" = Empty,
        "graphwright.cost" = Empty,
    )
}

/// Whether the span may carry text, and under which policy.
fn capturing<'a>(span: &tracing::Span, scope: &Scope<'a>) -> Option<&'a crate::capture::CapturePolicy> {
    scope.capture.filter(|policy| policy.messages && !span.is_disabled())
}

/// The prompt, when the policy lets it out: system messages apart, as the conventions keep them.
pub(super) fn record_prompt(span: &tracing::Span, scope: &Scope<'_>, messages: &[Message]) {
    let Some(policy) = capturing(span, scope) else { return };
    let (system, rest): (Vec<&Message>, Vec<&Message>) = messages.iter().partition(|m| m.role == Role::System);
    if !system.is_empty() {
        let parts: Vec<Value> = system.iter().map(|m| json!({"type": "text", "content": m.content})).collect();
        if let Some(text) = policy.text(true, &parts) {
            span.record("gen_ai.system_instructions", text);
        }
    }
    let input: Vec<Value> = rest.into_iter().map(convention_message).collect();
    if let Some(text) = policy.text(true, &input) {
        span.record("gen_ai.input.messages", text);
    }
}

/// What the reply says of itself: its id, model, reason, tokens and (when allowed) text.
pub(super) fn record_reply(span: &tracing::Span, scope: &Scope<'_>, reply: &ModelReply) {
    if span.is_disabled() {
        return;
    }
    // A list in the conventions; a span field holds one value, so it is the list as JSON.
    let finish_reasons = json!([reply.finish_reason.as_str()]).to_string();
    record(
        span,
        [
            ("gen_ai.response.id", &reply.response_id.as_deref()),
            ("gen_ai.response.model", &(!reply.model.is_empty()).then_some(reply.model.as_str())),
            ("gen_ai.response.finish_reasons", &finish_reasons.as_str()),
            ("gen_ai.usage.input_tokens", &int(reply.usage.input_tokens)),
            ("gen_ai.usage.output_tokens", &int(reply.usage.output_tokens)),
            ("gen_ai.usage.cache_read.input_tokens", &int(reply.usage.cached_tokens)),
            ("graphwright.cost", &reply.usage.cost),
            ("otel.status_code", &"ok"),
        ],
    );
    if let Some(policy) = capturing(span, scope) {
        let mut message = convention_message(&reply.message);
        message["finish_reason"] = json!(reply.finish_reason.as_str());
        if let Some(text) = policy.text(true, &[message]) {
            span.record("gen_ai.output.messages", text);
        }
    }
}

/// A failed call: the span's status says why.
pub(super) fn record_error(span: &tracing::Span, error: &ModelError) {
    if span.is_disabled() {
        return;
    }
    span.record("otel.status_code", "error");
    span.record("otel.status_description", error.to_string());
    span.record("error.type", error.kind());
}

/// One message as the conventions write it: a role and its parts (text, tool calls, a tool's
/// answer).
fn convention_message(message: &Message) -> Value {
    let role = match message.role {
        Role::System => "system",
        Role::User => "user",
        Role::Assistant => "assistant",
        Role::Tool => "tool",
        Role::Remove => "remove",
    };
    let mut parts = Vec::new();
    match &message.tool_call_id {
        Some(id) => parts.push(json!({"type": "tool_call_response", "id": id, "response": message.content})),
        None if !message.content.is_empty() => parts.push(json!({"type": "text", "content": message.content})),
        None => {}
    }
    for call in &message.tool_calls {
        parts.push(json!({"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}));
    }
    json!({"role": role, "parts": parts})
}
