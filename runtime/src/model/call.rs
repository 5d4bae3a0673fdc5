//! One model call as a run makes it: budget, retries, deadline, streaming into the run, usage,
//! the tracing span and the log entry. Every client goes through here.

use super::context::Scope;
use super::reporting::{CallDelta, CallRecord};
use super::{ModelError, ModelReply, ModelRequest, ModelSettings, ReplySink, ToolCallDelta, prompt_hash};
use crate::message::Message;
use crate::metrics::ModelCallEnded;
use crate::telemetry::{Ticks, in_trace};
use crate::trace_value::in_span;
use futures::future::BoxFuture;
use tokio::time::Instant;

/// What a call needs of the model it makes: its names and one request answered. Every
/// [`ChatModel`](super::ChatModel) is one (`chat_model.rs`), so the trait's provided calls come
/// here without this file naming the trait that provides them.
pub(crate) trait Generate {
    /// The provider's name.
    fn provider(&self) -> &str;
    /// The model's name.
    fn model(&self) -> &str;
    /// Sends `request`, pieces of the reply going to `sink` as they arrive.
    fn generate<'a>(
        &'a self,
        request: ModelRequest<'a>,
        sink: &'a mut dyn ReplySink,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>>;
}

/// Makes the call `model` with `settings` (the model's own unless overridden), in `scope`.
pub(crate) async fn respond<M: Generate + ?Sized>(
    model: &M,
    messages: &[Message],
    settings: &ModelSettings,
    scope: Scope<'_>,
) -> Result<ModelReply, ModelError> {
    scope.meter.admit()?;
    // Pieces go to the run's stream only when it streams `messages`; the sink drops them otherwise.
    let watched = scope.streams_messages();
    let stream = settings.streaming.unwrap_or(watched);
    let message_id = crate::message::fresh_id();
    let mut span = super::span::CallSpan::open(model.provider(), model.model(), settings, &scope);
    // The hash (a canonical JSON of the prompt through SHA-256, the conversation's earlier
    // messages picked up where this thread hashed them last) is made for its readers only: the
    // log, an export, or a subscriber that reads the span's fields, which makes it as it formats
    // the field (one that keeps no fields never does).
    let hash = (scope.log.is_some() || span.is_recorded()).then(|| prompt_hash(model.model(), messages, settings));
    if let Some(hash) = &hash {
        span.record_hash(hash);
    } else if !span.tracing.is_disabled() {
        let lazy = LazyHash { model: model.model(), messages, settings };
        span.tracing.record("graphwright.prompt_hash", tracing::field::display(&lazy));
    }
    span.record_prompt(&scope, messages);
    let started = Instant::now();
    let mut attempts = 0;
    // The failures retried, for the recorded span.
    let mut retries = Vec::new();
    let recording = span.is_recorded();
    // A reply's usage, kept for the metrics even when the reply then fails the budget: its
    // tokens were spent.
    let mut used = None;
    let tracing_span = &span.tracing;
    let result = in_span(
        tracing_span,
        in_trace(span.inside(), async {
            loop {
                attempts += 1;
                tracing_span.record("graphwright.attempts", crate::trace_value::int(attempts));
                let mut sink = Forward { scope: &scope, watched, message_id: &message_id, delivered: false };
                let request = ModelRequest { model: model.model(), messages, settings, stream };
                let error = match attempt(model, request, &mut sink, settings, &scope).await {
                    Ok(reply) => break Ok(reply),
                    Err(error) => error,
                };
                if sink.delivered || !settings.retry.retries(&error, attempts) {
                    break Err(error);
                }
                let wait = settings.retry.wait(attempts, error.retry_after());
                if scope.meter.deadline().is_some_and(|d| Instant::now() + wait >= d) {
                    break Err(ModelError::DeadlineExceeded {
                        provider: model.provider().to_owned(),
                        last: Some(Box::new(error)),
                    });
                }
                tracing::warn!(attempt = attempts, ?wait, %error, "model call failed; retrying");
                if recording {
                    retries.push((Ticks::now(), attempts, wait, error.to_string()));
                }
                tokio::time::sleep(wait).await;
            }
        }),
    )
    .await;
    span.record_attempts(attempts, retries);
    let result = result.and_then(|mut reply| {
        if let Some(price) = &settings.price {
            reply.usage = reply.usage.priced(price);
        }
        reply.usage.calls = 1;
        reply.message.id = Some(message_id);
        used = Some(reply.usage);
        span.record_reply(&scope, &reply);
        scope.meter.charge(reply.usage)?;
        if let Some(writer) = scope.writer.filter(|_| watched) {
            let id = reply.message.id.clone().unwrap_or_default();
            writer.delta(scope.node, scope.step, CallDelta::Usage { message_id: id, usage: reply.usage });
        }
        Ok(reply)
    });
    if let Err(error) = &result {
        span.record_error(error);
    }
    span.end();
    if let Some(log) = scope.log {
        let (usage, error) = match &result {
            Ok(reply) => (Some(reply.usage), None),
            Err(error) => (None, Some(error.to_string())),
        };
        log.model_call(CallRecord {
            run_id: scope.run_id,
            thread: scope.thread,
            step: scope.step,
            node: scope.node,
            provider: model.provider(),
            model: model.model(),
            prompt_hash: hash.unwrap_or_else(|| prompt_hash(model.model(), messages, settings)),
            attempts,
            usage,
            error,
            duration_ms: started.elapsed().as_millis() as u64,
        });
    }
    report(&scope, model, used, attempts, started.elapsed(), &result);
    result
}

/// Reports the call to the run's metrics, if it has any.
fn report<M: Generate + ?Sized>(
    scope: &Scope<'_>,
    model: &M,
    usage: Option<super::Usage>,
    attempts: u32,
    duration: std::time::Duration,
    result: &Result<ModelReply, ModelError>,
) {
    if let Some(metrics) = scope.metrics {
        metrics.model_call_ended(&ModelCallEnded {
            provider: model.provider(),
            model: model.model(),
            node: scope.node,
            usage,
            attempts,
            duration,
            error: result.as_ref().err().map(ModelError::kind),
        });
    }
}

/// One attempt, cut short by the attempt timeout and by the run's deadline.
async fn attempt<M: Generate + ?Sized>(
    model: &M,
    request: ModelRequest<'_>,
    sink: &mut Forward<'_>,
    settings: &ModelSettings,
    scope: &Scope<'_>,
) -> Result<ModelReply, ModelError> {
    let provider = || model.provider().to_owned();
    let by_timeout = settings.timeout.map(|t| (Instant::now() + t, true));
    let by_deadline = scope.meter.deadline().map(|d| (d, false));
    let limit = match (by_timeout, by_deadline) {
        (Some(t), Some(d)) => Some(if t.0 <= d.0 { t } else { d }),
        (t, d) => t.or(d),
    };
    let call = model.generate(request, sink);
    let Some((at, is_timeout)) = limit else { return call.await };
    match tokio::time::timeout_at(at, call).await {
        Ok(result) => result,
        Err(_) if is_timeout => Err(ModelError::Timeout {
            provider: provider(),
            message: format!("no complete reply within {:?}", settings.timeout.unwrap_or_default()),
        }),
        Err(_) => Err(ModelError::DeadlineExceeded { provider: provider(), last: None }),
    }
}

/// Forwards a reply's pieces to the run's `messages` stream under the reply's id, and notes
/// whether any arrived (a call that delivered part of its reply is never sent again).
struct Forward<'a> {
    scope: &'a Scope<'a>,
    watched: bool,
    message_id: &'a str,
    delivered: bool,
}

impl ReplySink for Forward<'_> {
    fn text(&mut self, delta: &str) {
        if delta.is_empty() {
            return;
        }
        self.delivered = true;
        if let Some(writer) = self.scope.writer.filter(|_| self.watched) {
            let written = CallDelta::Message { message_id: self.message_id.to_owned(), delta: delta.to_owned() };
            writer.delta(self.scope.node, self.scope.step, written);
        }
    }

    fn tool_call(&mut self, delta: ToolCallDelta<'_>) {
        self.delivered = true;
        if let Some(writer) = self.scope.writer.filter(|_| self.watched) {
            let written = CallDelta::ToolCall {
                message_id: self.message_id.to_owned(),
                index: delta.index,
                id: delta.id.map(str::to_owned),
                name: delta.name.map(str::to_owned),
                arguments: delta.arguments.to_owned(),
            };
            writer.delta(self.scope.node, self.scope.step, written);
        }
    }
}

/// The prompt's hash, made when written out.
struct LazyHash<'a> {
    model: &'a str,
    messages: &'a [Message],
    settings: &'a ModelSettings,
}

impl std::fmt::Display for LazyHash<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&prompt_hash(self.model, self.messages, self.settings))
    }
}
