//! The tracing spans of a run: the run (as OpenTelemetry's GenAI conventions name an
//! `invoke_agent` span), each super-step, each task's attempt, and each checkpoint write. Model
//! and tool calls open theirs inside a task's (see `model::span`, `tool::span`).
//!
//! With no subscriber each span is a disabled handle, and nothing here formats or allocates.

use crate::error::NodeError;
use crate::graph::{CompiledNode, Halt, Inner, RunOutput};
use crate::runtime::RunShared;
use crate::state::State;
use crate::trace_value::{SpanName, int, record};
use tracing::field::Empty;

/// The span of a run of the graph named `graph`.
pub(crate) fn run(graph: &str, thread: Option<&str>, run_id: u64) -> tracing::Span {
    tracing::info_span!(
        "invoke_agent",
        "otel.name" = %SpanName("invoke_agent", graph),
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "gen_ai.operation.name" = "invoke_agent",
        "gen_ai.agent.name" = graph,
        "gen_ai.conversation.id" = thread,
        "gen_ai.usage.input_tokens" = Empty,
        "gen_ai.usage.output_tokens" = Empty,
        "graphwright.graph" = graph,
        "graphwright.run.id" = int(run_id),
        "graphwright.run.status" = Empty,
        "graphwright.steps" = Empty,
        "graphwright.model_calls" = Empty,
    )
}

/// How the run ended: `success`, `interrupted` (with its interrupts as events) or `error`,
/// with its steps and the tokens its model calls used.
pub(crate) fn record_run<S>(span: &tracing::Span, result: &Result<RunOutput<S>, Halt<S>>) {
    if span.is_disabled() {
        return;
    }
    let out = match result {
        Ok(out) => out,
        Err(Halt::Failed(failed)) => &failed.0,
        Err(Halt::Error(_)) => {
            record_failed_run(span, result);
            return;
        }
    };
    record(
        span,
        [
            ("graphwright.steps", &int(out.steps)),
            ("gen_ai.usage.input_tokens", &int(out.usage.input_tokens)),
            ("gen_ai.usage.output_tokens", &int(out.usage.output_tokens)),
            ("graphwright.model_calls", &int(out.usage.calls)),
        ],
    );
    match result {
        Ok(out) => {
            let status = if out.is_interrupted() { "interrupted" } else { "success" };
            record(span, [("graphwright.run.status", &status), ("otel.status_code", &"ok")]);
        }
        Err(_) => record_failed_run(span, result),
    }
}

fn record_failed_run<S>(span: &tracing::Span, result: &Result<RunOutput<S>, Halt<S>>) {
    let error = match result {
        Err(Halt::Failed(failed)) => &failed.1,
        Err(Halt::Error(error)) => error,
        Ok(_) => return,
    };
    span.record("graphwright.run.status", "error");
    span.record("otel.status_code", "error");
    span.record("otel.status_description", error.to_string());
}

/// The span of super-step `step`, running `tasks` tasks.
pub(super) fn step(step: u64, tasks: usize) -> tracing::Span {
    tracing::info_span!(
        "step",
        "otel.name" = %SpanName("step", step),
        "graphwright.step" = int(step),
        "graphwright.tasks" = int(tasks)
    )
}

/// The span of attempt `attempt` of the task at `index` of `step`, running `node`.
pub(super) fn node<S: State, C>(
    graph: &Inner<S, C>,
    node: &CompiledNode<S, C>,
    step: u64,
    index: u32,
    attempt: u32,
) -> tracing::Span {
    tracing::info_span!(
        "node",
        "otel.name" = &*node.name,
        "otel.status_code" = Empty,
        "otel.status_description" = Empty,
        "graphwright.graph" = &*graph.name,
        "graphwright.node" = &*node.name,
        "graphwright.step" = int(step),
        "graphwright.task" = int(index),
        "graphwright.attempt" = int(attempt),
        "graphwright.cached" = Empty,
        "graphwright.resumed" = Empty,
    )
}

/// A task that did not run: its output came from the node's cache (`cached`) or had been saved
/// by an earlier run of the step (`resumed`). A span of no length says so.
pub(super) fn skipped<S: State, C>(graph: &Inner<S, C>, node: &CompiledNode<S, C>, step: u64, index: u32, why: &str) {
    let span = self::node(graph, node, step, index, 0);
    if !span.is_disabled() {
        span.record(if why == "cached" { "graphwright.cached" } else { "graphwright.resumed" }, true);
        span.record("otel.status_code", "ok");
    }
}

/// Awaits one attempt and says on `span` how it ended.
pub(super) async fn observed<T, C>(
    attempt: impl Future<Output = Result<T, NodeError>>,
    span: &tracing::Span,
    run: &RunShared<C>,
) -> Result<T, NodeError> {
    let result = attempt.await;
    record_attempt(span, &result, run);
    result
}

/// An attempt that paused (an `interrupt` event on the span, its value when the run's capture
/// policy lets messages out) or failed (the span's error status).
pub(super) fn record_attempt<T, C>(span: &tracing::Span, result: &Result<T, NodeError>, run: &RunShared<C>) {
    if span.is_disabled() {
        return;
    }
    let Err(error) = result else {
        span.record("otel.status_code", "ok");
        return;
    };
    if let Some(interrupt) = error.interrupt() {
        let value = run.capture.as_deref().and_then(|policy| policy.text(policy.messages, &interrupt.value));
        span.in_scope(|| {
            tracing::info!(
                "graphwright.interrupt.id" = %interrupt.id,
                "graphwright.interrupt.value" = value,
                "interrupt"
            );
        });
        span.record("otel.status_code", "ok");
    } else {
        span.record("otel.status_code", "error");
        span.record("otel.status_description", error.to_string());
    }
}
