//! The tracing span of a model call, named and filled as OpenTelemetry's GenAI semantic
//! conventions name a client's `chat` span, so an exporter (see `crate::otel`) needs no mapping.
//!
//! Prompt and completion text go on the span only when the run's capture policy says
//! `messages`, as the conventions' opt-in `gen_ai.input.messages` / `gen_ai.output.messages`,
//! redacted as the event log is.

use super::context::Scope;
use super::{ModelError, ModelReply, ModelSettings};
use crate::message::{Message, Role};
use crate::telemetry::{Body, ChatBody, Current, Open, RECORDED, RunTrace, Status, Ticks, left_to_record};
use crate::trace_value::{SpanName, int, record};
use serde_json::{Value, json};
use tracing::field::Empty;

/// The `tracing` span of a model call, with its target: `RECORDED` for a call made in a run that
/// export records, or that its sampler left out (export then leaves the call to the record),
/// this module's otherwise.
macro_rules! chat_span {
    ($target:expr, $provider:expr, $model:expr, $settings:expr, $scope:expr) => {
        tracing::info_span!(
            target: $target,
            "chat",
            "otel.name" = %SpanName("chat", $model),
            "otel.kind" = "client",
            "otel.status_code" = Empty,
            "otel.status_description" = Empty,
            "gen_ai.operation.name" = "chat",
            "gen_ai.provider.name" = $provider,
            "gen_ai.request.model" = $model,
            "gen_ai.request.temperature" = $settings.temperature,
            "gen_ai.request.max_tokens" = $settings.max_tokens.map(int),
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
            "graphwright.node" = $scope.node,
            "graphwright.step" = int($scope.step),
            "graphwright.prompt_hash" = Empty,
            "graphwright.attempts" = Empty,
            "graphwright.cost" = Empty,
        )
    };
}

/// The span of one call to `model` of `provider` (`recorded` when it is left to the record,
/// `telemetry::left_to_record`): empty fields are recorded as the call goes.
fn model_call(
    provider: &str,
    model: &str,
    settings: &ModelSettings,
    scope: &Scope<'_>,
    recorded: bool,
) -> tracing::Span {
    if recorded {
        chat_span!(RECORDED, provider, model, settings, scope)
    } else {
        chat_span!(module_path!(), provider, model, settings, scope)
    }
}

/// Whether the span may carry text, and under which policy.
fn capturing<'a>(span: &tracing::Span, scope: &Scope<'a>) -> Option<&'a crate::capture::CapturePolicy> {
    scope.capture.filter(|policy| policy.messages && !span.is_disabled())
}

/// The prompt as the conventions write it, redacted: its system instructions (if any) and the
/// other messages.
fn prompt_texts(policy: &crate::capture::CapturePolicy, messages: &[Message]) -> (Option<String>, Option<String>) {
    let (system, rest): (Vec<&Message>, Vec<&Message>) = messages.iter().partition(|m| m.role == Role::System);
    let system = (!system.is_empty())
        .then(|| {
            let parts: Vec<Value> = system.iter().map(|m| json!({"type": "text", "content": m.content})).collect();
            policy.text(true, &parts)
        })
        .flatten();
    let input: Vec<Value> = rest.into_iter().map(convention_message).collect();
    (system, policy.text(true, &input))
}

/// The completion as the conventions write it, redacted.
fn completion_text(policy: &crate::capture::CapturePolicy, reply: &ModelReply) -> Option<String> {
    let mut message = convention_message(&reply.message);
    message["finish_reason"] = json!(reply.finish_reason.as_str());
    policy.text(true, &[message])
}

/// What the reply says of itself: its id, model, reason and tokens.
fn record_reply(span: &tracing::Span, reply: &ModelReply) {
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
}

/// A failed call: the span's status says why.
fn record_error(span: &tracing::Span, error: &ModelError) {
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

/// A model call's spans: its `tracing` span, and its recorded span when the run is recorded.
pub(super) struct CallSpan {
    pub(super) tracing: tracing::Span,
    recorded: Option<RecordedCall>,
}

struct RecordedCall {
    trace: RunTrace,
    open: Open,
    body: Box<ChatBody>,
    status: Status,
}

impl CallSpan {
    /// The spans of one call to `model` of `provider`, filled in as the call goes.
    pub(super) fn open(provider: &str, model: &str, settings: &ModelSettings, scope: &Scope<'_>) -> Self {
        // A call inside a node that lent the model nothing of its run still records into the
        // run's trace, found from the node's span.
        let trace = scope.trace.cloned().or_else(RunTrace::current);
        let recorded = trace.map(|trace| RecordedCall {
            open: trace.open_here(),
            trace,
            body: Box::new(ChatBody {
                provider: provider.to_owned(),
                model: model.to_owned(),
                temperature: settings.temperature,
                max_tokens: settings.max_tokens.map(u64::from),
                node: scope.node.to_owned(),
                step: scope.step,
                ..ChatBody::default()
            }),
            status: Status::Unset,
        });
        let traced = model_call(provider, model, settings, scope, left_to_record(recorded.is_some()));
        Self { tracing: traced, recorded }
    }

    /// Whether the call is recorded (and so wants its prompt's hash).
    pub(super) fn is_recorded(&self) -> bool {
        self.recorded.is_some()
    }

    /// The recorded span, as code inside the call sees it (the request's `traceparent`).
    pub(super) fn inside(&self) -> Option<Current> {
        self.recorded.as_ref().map(|r| r.trace.inside(&r.open))
    }

    /// The prompt's hash.
    pub(super) fn record_hash(&mut self, hash: &str) {
        self.tracing.record("graphwright.prompt_hash", hash);
        if let Some(r) = &mut self.recorded {
            r.body.prompt_hash = Some(hash.to_owned());
        }
    }

    /// The policy the call's text goes out under, when a span takes it: `(policy, whether the
    /// tracing span takes it)`. The text is made once for both spans.
    fn capturing<'a>(&self, scope: &Scope<'a>) -> Option<(&'a crate::capture::CapturePolicy, bool)> {
        let traced = capturing(&self.tracing, scope);
        let policy = traced.or_else(|| scope.capture.filter(|policy| policy.messages && self.recorded.is_some()))?;
        Some((policy, traced.is_some()))
    }

    /// The prompt, when the policy lets it out: system messages apart, as the conventions keep them.
    pub(super) fn record_prompt(&mut self, scope: &Scope<'_>, messages: &[Message]) {
        let Some((policy, traced)) = self.capturing(scope) else { return };
        let (system, input) = prompt_texts(policy, messages);
        if traced {
            if let Some(text) = &system {
                self.tracing.record("gen_ai.system_instructions", text.as_str());
            }
            if let Some(text) = &input {
                self.tracing.record("gen_ai.input.messages", text.as_str());
            }
        }
        if let Some(r) = &mut self.recorded {
            r.body.system_instructions = system;
            r.body.input_messages = input;
        }
    }

    /// The attempts made, and the failures retried (when, which attempt, the wait, the error).
    pub(super) fn record_attempts(&mut self, attempts: u32, retries: Vec<(Ticks, u32, std::time::Duration, String)>) {
        if let Some(r) = &mut self.recorded {
            r.body.attempts = attempts;
            r.body.retries = retries;
        }
    }

    /// What the reply says of itself (see [`record_reply`]), and its text when the policy lets
    /// it out.
    pub(super) fn record_reply(&mut self, scope: &Scope<'_>, reply: &ModelReply) {
        record_reply(&self.tracing, reply);
        let text = self.capturing(scope).and_then(|(policy, traced)| Some((completion_text(policy, reply)?, traced)));
        if let Some((text, true)) = &text {
            self.tracing.record("gen_ai.output.messages", text.as_str());
        }
        let Some(r) = &mut self.recorded else { return };
        let body = &mut r.body;
        body.response_id.clone_from(&reply.response_id);
        body.response_model = (!reply.model.is_empty()).then(|| reply.model.clone());
        body.finish_reasons = Some(json!([reply.finish_reason.as_str()]).to_string());
        body.usage = Some([reply.usage.input_tokens, reply.usage.output_tokens, reply.usage.cached_tokens]);
        body.cost = Some(reply.usage.cost);
        body.output_messages = text.map(|(text, _)| text);
        r.status = Status::Ok;
    }

    /// A failed call (see [`record_error`]).
    pub(super) fn record_error(&mut self, error: &ModelError) {
        record_error(&self.tracing, error);
        if let Some(r) = &mut self.recorded {
            r.body.error_type = Some(error.kind());
            r.status = Status::Error(error.to_string());
        }
    }

    /// Ends the recorded span.
    pub(super) fn end(self) {
        if let Some(r) = self.recorded {
            r.trace.close(r.open, r.status, |_| Body::Chat(r.body));
        }
    }
}
