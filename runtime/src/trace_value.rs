//! Span field values, and futures polled inside a span. OpenTelemetry's attributes have signed
//! 64-bit integers only, and `tracing-opentelemetry` writes an unsigned field as text; the spans
//! record counts through [`int`] so that token counts, steps and sizes arrive as numbers. Span
//! names made of an operation and its subject go through [`SpanName`].

use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};

/// `n` as a signed integer field (saturating: no count comes near `i64::MAX`).
pub(crate) fn int(n: impl TryInto<i64>) -> i64 {
    n.try_into().unwrap_or(i64::MAX)
}

/// A span's `otel.name`, `{operation} {subject}` (`step 3`, `chat gpt-4o`), written out only
/// when a subscriber reads the field: a subscriber that keeps no fields pays nothing for it,
/// and OpenTelemetry's layer formats it straight into the name it keeps, where a `format!`
/// here would make a string for the layer to copy.
pub(crate) struct SpanName<T>(pub(crate) &'static str, pub(crate) T);

impl<T: fmt::Display> fmt::Display for SpanName<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)?;
        f.write_str(" ")?;
        self.1.fmt(f)
    }
}

/// Records `values` on `span` in one call to the subscriber, where a `record` per field makes
/// one call each (each a lookup of the span and, in OpenTelemetry's layer, a lock of its data).
/// A name the span does not declare is left out, as `record` leaves it.
pub(crate) fn record<const N: usize>(span: &tracing::Span, values: [(&str, &dyn tracing::Value); N]) {
    let Some(fields) = span.metadata().map(tracing::Metadata::fields) else { return };
    let Some(any) = fields.iter().next() else { return };
    let found: [Option<tracing::field::Field>; N] = std::array::from_fn(|i| fields.field(values[i].0));
    // A field given no value is not recorded: an undeclared name stands as one.
    let pairs: [(&tracing::field::Field, Option<&dyn tracing::Value>); N] =
        std::array::from_fn(|i| found[i].as_ref().map_or((&any, None), |field| (field, Some(values[i].1))));
    span.record_all(&fields.value_set(&pairs));
}

pin_project_lite::pin_project! {
    /// A future polled inside a span (see [`in_span`]).
    pub(crate) struct InSpan<'a, F> {
        #[pin]
        future: F,
        span: &'a tracing::Span,
    }
}

/// `future`, each poll of it inside `span`. Unlike tracing's `Instrumented`, it does not enter
/// the span again to drop the future: that is an enter and an exit more per span (each a lookup
/// of the span, and in OpenTelemetry's layer a context switched) for a future that has finished
/// by then; one dropped unfinished (a cancelled run) is dropped outside the span.
pub(crate) fn in_span<F: Future>(span: &tracing::Span, future: F) -> InSpan<'_, F> {
    InSpan { future, span }
}

impl<F: Future> Future for InSpan<'_, F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        let _entered = this.span.enter();
        this.future.poll(cx)
    }
}
