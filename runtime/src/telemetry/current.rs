//! The recorded span the running code is inside, per thread: what a model or tool call hangs
//! its span from, what an outgoing request's `traceparent` names, and what a span of the
//! program's own code, opened inside a node, is made a child of.

use std::cell::Cell;
use std::pin::Pin;
use std::task::{Context, Poll};

/// A recorded span, as the code inside it sees it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Current {
    pub(crate) trace_id: u128,
    pub(crate) span_id: u64,
    /// The `tracing` span that was current when the trace's run began (its id's number; 0:
    /// none): a span of the program's whose own parent is that one is made a child of this
    /// span instead, as it was opened inside it.
    pub(crate) outer: u64,
    /// The recording the span is kept in (a root run's, shared with its subgraphs' runs), by
    /// its number; 0 inside a run the sampler left out, whose span is still current so that
    /// what it calls joins its trace, unsampled, rather than starting traces of its own. Two
    /// runs of one trace, a graph invoked from a node of another, keep theirs apart.
    pub(crate) recording: u64,
}

impl Current {
    /// Whether the span's trace is recorded (sampled).
    pub(crate) fn sampled(&self) -> bool {
        self.recording != 0
    }
}

thread_local! {
    static CURRENT: Cell<Option<Current>> = const { Cell::new(None) };
}

/// The recorded span this thread is inside, if any.
pub(crate) fn current() -> Option<Current> {
    CURRENT.with(Cell::get)
}

/// Whether a model or tool call's `tracing` span is left to the record (takes the `RECORDED`
/// target): when its run records it (`recorded`), and also inside a run the sampler left out,
/// which records nothing: export would otherwise build the span only for the sampler to drop it
/// (or keep it, a span of a trace whose run is not there).
pub(crate) fn left_to_record(recorded: bool) -> bool {
    recorded || current().is_some()
}

/// Calls `f` inside `span` (nothing changes for `None`).
pub(crate) fn within<R>(span: Option<Current>, f: impl FnOnce() -> R) -> R {
    let Some(span) = span else { return f() };
    let _restore = Restore(CURRENT.with(|c| c.replace(Some(span))));
    f()
}

/// Puts back the span that was current, also when the code inside panics.
struct Restore(Option<Current>);

impl Drop for Restore {
    fn drop(&mut self) {
        CURRENT.with(|c| c.set(self.0));
    }
}

pin_project_lite::pin_project! {
    /// A future polled inside a recorded span (see [`in_trace`]).
    pub(crate) struct InTrace<F> {
        #[pin]
        future: F,
        span: Option<Current>,
    }
}

/// `future`, each poll of it inside `span`.
pub(crate) fn in_trace<F: Future>(span: Option<Current>, future: F) -> InTrace<F> {
    InTrace { future, span }
}

impl<F: Future> Future for InTrace<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        let this = self.project();
        within(*this.span, || this.future.poll(cx))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_span_is_current_inside_and_the_outer_one_again_after() {
        let outer = Current { trace_id: 1, span_id: 2, outer: 0, recording: 1 };
        let inner = Current { span_id: 3, ..outer };
        assert_eq!(current(), None);
        within(Some(outer), || {
            assert_eq!(current(), Some(outer));
            let caught = std::panic::catch_unwind(|| within(Some(inner), || panic!("inside")));
            assert!(caught.is_err());
            assert_eq!(current(), Some(outer), "restored after a panic");
            within(None, || assert_eq!(current(), Some(outer)));
        });
        assert_eq!(current(), None);
    }

    #[test]
    fn a_future_is_inside_its_span_while_polled() {
        let span = Current { trace_id: 1, span_id: 9, outer: 0, recording: 1 };
        let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
        let seen = runtime.block_on(in_trace(Some(span), async { current() }));
        assert_eq!(seen, Some(span));
        assert_eq!(current(), None);
    }
}
