//! W3C trace context across processes: `traceparent` on outgoing model requests, and the
//! helpers a server uses to continue a caller's trace and to carry a run's trace past a queue.

use crate::telemetry::Current;
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
/// or the span of a run the sampler left out, or else the current `tracing` span.
fn current_context() -> opentelemetry::Context {
    match crate::telemetry::current() {
        Some(recorded) => opentelemetry::Context::new().with_remote_span_context(span_context(recorded)),
        None => tracing::Span::current().context(),
    }
}

/// A run's span as OpenTelemetry's span context: sampled as its run is.
pub(super) fn span_context(span: Current) -> SpanContext {
    let flags = if span.sampled() { TraceFlags::SAMPLED } else { TraceFlags::default() };
    SpanContext::new(TraceId::from(span.trace_id), SpanId::from(span.span_id), flags, false, TraceState::default())
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::telemetry::within;

    fn sent_traceparent() -> Option<String> {
        let request = inject(reqwest::Client::new().get("http://127.0.0.1:9/")).build().unwrap();
        request.headers().get("traceparent").map(|v| v.to_str().unwrap().to_owned())
    }

    #[test]
    fn a_call_says_whether_its_run_is_sampled() {
        opentelemetry::global::set_text_map_propagator(opentelemetry_sdk::propagation::TraceContextPropagator::new());
        let run =
            Current { trace_id: 0x4bf9_2f35_77b3_4da6_a3ce_929d_0e0e_4736, span_id: 0xb7, outer: 0, recording: 1 };
        let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
        assert_eq!(within(Some(run), sent_traceparent).unwrap(), format!("00-{trace}-00000000000000b7-01"));
        let left_out = Current { recording: 0, ..run };
        assert_eq!(
            within(Some(left_out), sent_traceparent).unwrap(),
            format!("00-{trace}-00000000000000b7-00"),
            "the same trace, not sampled: what it calls is left out too"
        );
        assert_eq!(sent_traceparent(), None, "outside any run or span");
    }
}
