//! The program's own spans inside a run: a `tracing` span opened inside a node (or a model or
//! tool call) is made a child of that node's recorded span, as it would be of a `tracing` span.
//!
//! `tracing-opentelemetry` takes a new span's parent from OpenTelemetry's current context; the
//! first layer here makes the recorded span the code runs in current for the time the next layer
//! makes the span, and the last puts the context back.

use crate::telemetry::current;
use opentelemetry::ContextGuard;
use opentelemetry::trace::TraceContextExt;
use std::cell::RefCell;
use tracing::span::{Attributes, Id};
use tracing_subscriber::Layer;
use tracing_subscriber::layer::Context;
use tracing_subscriber::registry::LookupSpan;

thread_local! {
    /// One entry per span being made: the context made current for it, if any.
    static MADE_CURRENT: RefCell<Vec<Option<ContextGuard>>> = const { RefCell::new(Vec::new()) };
}

/// Makes the recorded span the code runs in OpenTelemetry's current context while a span
/// opened directly inside it is made.
pub(super) struct EnterRecorded;

/// Puts back the context [`EnterRecorded`] replaced.
pub(super) struct LeaveRecorded;

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for EnterRecorded {
    fn on_new_span(&self, attrs: &Attributes<'_>, _id: &Id, ctx: Context<'_, S>) {
        let guard = current().filter(|_| attrs.is_contextual()).and_then(|recorded| {
            // The span it was opened in, the runtime's own (which are recorded) skipped.
            let enclosing = ctx.lookup_current().and_then(|span| {
                span.scope()
                    .find(|s| !s.metadata().target().starts_with(super::filter::RUNTIME))
                    .map(|s| s.id().into_u64())
            });
            // Opened inside a span of the program's own that is itself inside the node: that
            // span is its parent, as OpenTelemetry's context already says.
            if enclosing.unwrap_or(0) != recorded.outer {
                return None;
            }
            let span = super::propagate::span_context(recorded);
            Some(opentelemetry::Context::current().with_remote_span_context(span).attach())
        });
        MADE_CURRENT.with(|made| made.borrow_mut().push(guard));
    }
}

impl<S: tracing::Subscriber + for<'a> LookupSpan<'a>> Layer<S> for LeaveRecorded {
    fn on_new_span(&self, _attrs: &Attributes<'_>, _id: &Id, _ctx: Context<'_, S>) {
        drop(MADE_CURRENT.with(|made| made.borrow_mut().pop()));
    }
}
