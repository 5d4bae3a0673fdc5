//! The tracing spans of a run: the run (as OpenTelemetry's GenAI conventions name an
//! `invoke_agent` span), each super-step, each task's attempt, and each checkpoint write. Model
//! and tool calls open theirs inside a task's (see `model::span`, `tool::span`).
//!
//! With no subscriber each span is a disabled handle, and nothing here formats or allocates.

use crate::error::NodeError;
use crate::graph::{CompiledNode, Halt, Inner, RunOutput};
use crate::runtime::RunShared;
use crate::state::State;
use crate::telemetry::{Batch, Body, Current, NodeMark, Open, RunBody, RunTrace, Status, Ticks};
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

/// Records the run's span (see [`record_run`]), which `open` began.
pub(crate) fn close_run<S>(
    trace: &RunTrace,
    open: Open,
    graph: &str,
    thread: Option<&str>,
    run_id: u64,
    result: &Result<RunOutput<S>, Halt<S>>,
) {
    let (out, error) = match result {
        Ok(out) => (Some(out), None),
        Err(Halt::Failed(failed)) => (Some(&failed.0), Some(&failed.1)),
        Err(Halt::Error(error)) => (None, Some(error)),
    };
    let (status, run_status) = match (out, error) {
        (_, Some(error)) => (Status::Error(error.to_string()), "error"),
        (Some(out), None) if out.is_interrupted() => (Status::Ok, "interrupted"),
        _ => (Status::Ok, "success"),
    };
    let body = RunBody {
        graph: graph.to_owned(),
        thread: thread.map(str::to_owned),
        run_id,
        status: run_status,
        steps: out.map(|out| out.steps),
        input_tokens: out.map(|out| out.usage.input_tokens),
        output_tokens: out.map(|out| out.usage.output_tokens),
        model_calls: out.map(|out| out.usage.calls),
    };
    trace.close(open, status, |_| Body::Run(Box::new(body)));
}

/// A super-step's recorded span, closed when the step is over (dropped), however it ended.
pub(super) struct StepSpan<'r> {
    recorded: Option<(&'r RunTrace, Open)>,
    step: u64,
    tasks: u32,
    /// Where the run's loop keeps the moment its last step ended: the next step begins then.
    ended: &'r mut Option<Ticks>,
}

impl<'r> StepSpan<'r> {
    /// Opens the span of super-step `step`, running `tasks` tasks, when the run is recorded.
    /// It begins when the step before it ended (`ended`, set when a step's span closes; `None`
    /// for the run's first), which is as the loop goes from one step to the next with nothing
    /// in between: one reading of the clock for both.
    pub(super) fn open<C>(run: &'r RunShared<C>, step: u64, tasks: usize, ended: &'r mut Option<Ticks>) -> Self {
        let recorded = run.trace.as_ref().map(|trace| (trace, trace.open_at(ended.take().unwrap_or_else(Ticks::now))));
        Self { recorded, step, tasks: u32::try_from(tasks).unwrap_or(u32::MAX), ended }
    }

    /// The span's id, for its tasks' spans (0 when the run is not recorded).
    pub(super) fn id(&self) -> u64 {
        self.recorded.as_ref().map_or(0, |(_, open)| open.span_id)
    }
}

impl Drop for StepSpan<'_> {
    fn drop(&mut self) {
        if let Some((trace, open)) = self.recorded.take() {
            let (step, tasks, end) = (self.step, self.tasks, Ticks::now());
            trace.close_at(open, end, Status::Unset, |_| Body::Step { step, tasks });
            *self.ended = Some(end);
        }
    }
}

/// One attempt of a task: its `tracing` span, and its recorded span when the run is recorded.
pub(super) struct NodeSpan<'r> {
    pub(super) tracing: tracing::Span,
    recorded: Option<RecordedNode<'r>>,
}

struct RecordedNode<'r> {
    trace: &'r RunTrace,
    open: Open,
    graph: &'r str,
    node: &'r str,
    step: u64,
    index: u32,
    attempt: u32,
}

impl<'r> NodeSpan<'r> {
    /// The spans of attempt `attempt` of the task at `index` of `step` (whose recorded span is
    /// `step_span`), running `node`.
    pub(super) fn open<S: State, C>(
        graph: &'r Inner<S, C>,
        node: &'r CompiledNode<S, C>,
        run: &'r RunShared<C>,
        (step, step_span): (u64, u64),
        index: u32,
        attempt: u32,
    ) -> Self {
        let recorded = run.trace.as_ref().map(|trace| RecordedNode {
            trace,
            open: Open::under(step_span),
            graph: &graph.name,
            node: &node.name,
            step,
            index,
            attempt,
        });
        Self { tracing: self::node(graph, node, step, index, attempt), recorded }
    }

    /// The recorded span, as code inside the attempt sees it.
    pub(super) fn inside(&self) -> Option<Current> {
        self.recorded.as_ref().map(|r| r.trace.inside(&r.open))
    }

    /// Says on both spans how the attempt ended (see [`record_attempt`]).
    pub(super) fn end<T, C>(self, result: &Result<T, NodeError>, run: &RunShared<C>) {
        record_attempt(&self.tracing, result, run);
        let Some(r) = self.recorded else { return };
        let (status, interrupt) = match result {
            Ok(_) => (Status::Ok, None),
            Err(error) => match error.interrupt() {
                Some(interrupt) => {
                    let value =
                        run.capture.as_deref().and_then(|policy| policy.text(policy.messages, &interrupt.value));
                    (Status::Ok, Some((Ticks::now(), interrupt.id.clone(), value)))
                }
                None => (Status::Error(error.to_string()), None),
            },
        };
        r.trace.close(r.open, status, |batch| {
            let mark = match interrupt {
                Some((at, id, value)) => {
                    NodeMark::Interrupted { at, id: batch.text(&id), value: value.map(|v| batch.text(&v)) }
                }
                None => NodeMark::Ran,
            };
            node_body(batch, r.graph, r.node, r.step, r.index, r.attempt, mark)
        });
    }
}

fn node_body(batch: &mut Batch, graph: &str, node: &str, step: u64, task: u32, attempt: u32, mark: NodeMark) -> Body {
    Body::Node { graph: batch.text(graph), node: batch.text(node), step, task, attempt, mark }
}

/// A task that did not run (see [`skipped`]), on both spans.
pub(super) fn skipped_task<S: State, C>(
    graph: &Inner<S, C>,
    node: &CompiledNode<S, C>,
    run: &RunShared<C>,
    (step, step_span): (u64, u64),
    index: u32,
    cached: bool,
) {
    skipped(graph, node, step, index, if cached { "cached" } else { "resumed" });
    if let Some(trace) = &run.trace {
        let open = Open::under(step_span);
        let mark = if cached { NodeMark::Cached } else { NodeMark::Resumed };
        trace.close(open, Status::Ok, |batch| node_body(batch, &graph.name, &node.name, step, index, 0, mark));
    }
}
