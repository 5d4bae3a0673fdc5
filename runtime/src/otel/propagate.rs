//! W3C trace context across processes: `traceparent` on outgoing model requests, and the
//! helpers a server uses to continue a caller's trace and to carry a run's trace past a queue.

use opentelemetry::propagation::{Extractor, Injector};
use opentelemetry::trace::{SpanContext, SpanId, TraceContextExt, TraceFlags, TraceId, TraceState};
use std::collections::HashMap;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// Adds the current span's `traceparent` (and `tracestate`) to `request`, when the span is
/// exported: the run's recorded span the call is made in (a model call's), or else the current
/// `tracing` span; leaves it as it is otherwise.
pub(crate) fn inject(request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
    let context = current_context();
    if !context.span().span_context().is_valid() {
        return request;
    }
    let mut headers = reqwest::header::HeaderMap::new();
    opentelemetry::global::get_text_map_propagator(|propagator| {
        propagator.inject_context(&context, &mut opentelemetry_http::HeaderInjector(&mut headers));
    });
    request.headers(headers)
}

/// The context of the span the code runs in: the run's recorded span (a model or tool call's),
/// or else the current `tracing` span.
fn current_context() -> opentelemetry::Context {
    match crate::telemetry::current() {
        Some(recorded) => opentelemetry::Context::new().with_remote_span_context(SpanContext::new(
            TraceId::from(recorded.trace_id),
            SpanId::from(recorded.span_id),
            TraceFlags::SAMPLED,
            false,
            TraceState::default(),
        )),
        None => tracing::Span::current().context(),
    }
}

/// The `traceparent` of the span the code runs in (see [`current_context`]), when it is
/// exported: what an outgoing MCP call carries.
#[cfg(feature = "mcp")]
pub(crate) fn current_traceparent() -> Option<String> {
    traceparent_of(&current_context())
}

/// The W3C `traceparent` of `span` (`00-<trace id>-<span id>-<flags>`), when it is exported:
/// what a run keeps so that whoever executes it later, in this process or another, continues
/// the same trace with [`set_parent`].
#[must_use]
pub fn traceparent(span: &tracing::Span) -> Option<String> {
    traceparent_of(&span.context())
}

fn traceparent_of(context: &opentelemetry::Context) -> Option<String> {
    if !context.span().span_context().is_valid() {
        return None;
    }
    let mut carrier = Carrier::default();
    opentelemetry::global::get_text_map_propagator(|propagator| propagator.inject_context(context, &mut carrier));
    carrier.0.remove("traceparent")
}

/// Makes `span` a child of the remote span `traceparent` names (a caller's header, or what
/// [`traceparent`] kept), with its `tracestate`. A malformed value is ignored: the span starts
/// a trace of its own. Call it before the span is first entered.
pub fn set_parent(span: &tracing::Span, traceparent: &str, tracestate: Option<&str>) {
    let mut carrier = Carrier::default();
    carrier.0.insert("traceparent".to_owned(), traceparent.to_owned());
    if let Some(state) = tracestate {
        carrier.0.insert("tracestate".to_owned(), state.to_owned());
    }
    let context = opentelemetry::global::get_text_map_propagator(|propagator| propagator.extract(&carrier));
    if context.span().span_context().is_valid() {
        // Refused only when no OpenTelemetry layer takes the span: nothing to join then.
        let _ = span.set_parent(context);
    }
}

/// Header names and values, as the propagator reads and writes them.
#[derive(Default)]
struct Carrier(HashMap<String, String>);

impl Injector for Carrier {
    fn set(&mut self, key: &str, value: String) {
        self.0.insert(key.to_owned(), value);
    }
}

impl Extractor for Carrier {
    fn get(&self, key: &str) -> Option<&str> {
        self.0.get(key).map(String::as_str)
    }

    fn keys(&self) -> Vec<&str> {
        self.0.keys().map(String::as_str).collect()
    }
}
