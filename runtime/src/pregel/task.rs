//! Running the tasks of one super-step.

use super::boxed::boxed;
use super::events;
use super::persist::Persist;
use super::step::{StepFailure, StepResult, Stop, Task};
use crate::checkpoint::WriteRecord;
use crate::error::{GraphError, NodeError};
use crate::graph::{Action, CompiledNode, Inner, NodeResult, SyncFn};
use crate::interrupt::Interrupt;
use crate::node::NodeOutput;
use crate::runtime::{RunShared, Runtime, TaskInfo};
use crate::state::State;
use crate::stream::Sink;
use crate::telemetry::{in_trace, within};
use crate::trace_value::in_span;
use futures::FutureExt;
use futures::stream::{FuturesUnordered, StreamExt};
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::AtomicU32;

/// Runs every task of the step whose slot is empty; each slot receives its task's output, which
/// is stored (or held for the checkpoint) as soon as the task finishes, and streamed when the
/// run is. A failure cancels the tasks still running and fails the step, leaving the slots of
/// the tasks that finished filled (so their writes can be kept). An interrupt is not a failure:
/// the other tasks run on, and the step returns every interrupt raised, by task index.
///
/// A step of one task (a chain, and most steps of a subgraph) runs it in place, a sync node by a
/// plain call; anything more runs in a boxed future. The future of a run, which a subgraph node
/// boxes whole, then only has room for the lean case.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_step<'a, S: State, C: Send + Sync + 'static>(
    graph: &'a Inner<S, C>,
    state: &'a S,
    run: &'a Arc<RunShared<C>>,
    at: At<'a>,
    tasks: &'a [Task],
    slots: &'a mut [Option<NodeOutput<S>>],
    persist: Option<&'a mut Persist>,
    sink: Option<&'a Sink<S>>,
) -> impl Future<Output = StepResult> + 'a {
    let mut ending = Ending { graph, at, tasks, persist, sink, alone: tasks.len() == 1, paused: Vec::new() };
    async move {
        let ([task], [None]) = (tasks, &*slots) else {
            return boxed(|| run_many(ending, state, run, slots)).await;
        };
        let node = &graph.nodes[task.node as usize];
        let (result, cached) = match in_place(node, run) {
            Some(f) => (call_sync(graph, f, state, run, at, 0, task), false),
            None => run_task(graph, state, run, at, 0, task).await,
        };
        let result = ending.store_and_stream(0, result, cached).await?;
        ending.record(0, result, slots)?;
        Ok(ending.paused)
    }
}

/// [`run_step`] for a step of several tasks (or one resumed with some outputs saved).
async fn run_many<S: State, C: Send + Sync + 'static>(
    mut ending: Ending<'_, S, C>,
    state: &S,
    run: &Arc<RunShared<C>>,
    slots: &mut [Option<NodeOutput<S>>],
) -> StepResult {
    let (graph, at, tasks) = (ending.graph, ending.at, ending.tasks);
    let mut pending = FuturesUnordered::new();
    for (index, task) in tasks.iter().enumerate() {
        if slots[index].is_some() {
            super::span::skipped_task(
                graph,
                &graph.nodes[task.node as usize],
                run,
                (at.step, at.step_span),
                index as u32,
                false,
            );
            continue;
        }
        let node = &graph.nodes[task.node as usize];
        if let Some(f) = in_place(node, run) {
            let result = call_sync(graph, f, state, run, at, index as u32, task);
            let result = ending.store_and_stream(index, result, false).await?;
            ending.record(index, result, slots)?;
        } else {
            pending.push(async move { (index, run_task(graph, state, run, at, index as u32, task).await) });
        }
    }
    while let Some((index, (result, cached))) = pending.next().await {
        let result = ending.store_and_stream(index, result, cached).await?;
        ending.record(index, result, slots)?;
    }
    let mut paused = ending.paused;
    paused.sort_by_key(|(index, _)| *index);
    Ok(paused)
}

/// What happens to each task of a step as it finishes.
struct Ending<'a, S: State, C> {
    graph: &'a Inner<S, C>,
    at: At<'a>,
    tasks: &'a [Task],
    persist: Option<&'a mut Persist>,
    sink: Option<&'a Sink<S>>,
    /// The step has one task, whose write goes into the checkpoint after it.
    alone: bool,
    /// The interrupts raised so far, by task index.
    paused: Vec<(u32, Interrupt)>,
}

impl<S: State, C> Ending<'_, S, C> {
    /// Gives task `index`'s output its ids; then, on a thread, stores it (or holds it for the
    /// checkpoint; a failure to store it becomes the task's), and on a streamed run sends the
    /// task's events. Only a write stored at once (a task with siblings) and events await
    /// anything, in a boxed future: a lone task's output is only encoded and held, in line.
    /// An output from the cache (`cached`) is always held: stored at once it would only be
    /// stored twice, since the cache keeps it should the step be cut short.
    async fn store_and_stream(
        &mut self,
        index: usize,
        result: Result<NodeOutput<S>, Stop>,
        cached: bool,
    ) -> Result<Result<NodeOutput<S>, Stop>, StepFailure> {
        let result = result.map(|mut output| {
            crate::state::Update::fill_ids(&mut output.update);
            output
        });
        if self.persist.is_none() && self.sink.is_none() {
            return Ok(result);
        }
        let (result, write) = self.save(index, result, self.alone || cached);
        if write.is_none() && self.sink.is_none() {
            return Ok(result);
        }
        boxed(|| self.store_then_stream(index, result, write, cached)).await
    }

    /// Encodes task `index`'s output for the store, on a thread: the write to store at once,
    /// unless it is `held` for the checkpoint; a value that cannot be stored fails the task.
    fn save(
        &mut self,
        index: usize,
        result: Result<NodeOutput<S>, Stop>,
        held: bool,
    ) -> (Result<NodeOutput<S>, Stop>, Option<WriteRecord>) {
        let (Ok(output), Some(persist)) = (&result, self.persist.as_deref_mut()) else {
            return (result, None);
        };
        match persist.save_finished(self.graph, index, &self.tasks[index], output, held) {
            Ok(write) => (result, write),
            Err(error) => (Err(Stop::Failed(unsaved(result, error))), None),
        }
    }

    /// The awaiting part of [`Ending::store_and_stream`].
    async fn store_then_stream(
        &mut self,
        index: usize,
        result: Result<NodeOutput<S>, Stop>,
        write: Option<WriteRecord>,
        cached: bool,
    ) -> Result<Result<NodeOutput<S>, Stop>, StepFailure> {
        let mut result = result;
        if let (Some(write), Some(persist)) = (write, self.persist.as_deref_mut())
            && let Err(error) = persist.store_writes(vec![write]).await
        {
            result = Err(Stop::Failed(unsaved(result, error)));
        }
        if let Some(sink) = self.sink {
            events::task_finished(self.graph, sink, (self.at.step, index), &self.tasks[index], &result, cached)
                .await
                .map_err(|error| StepFailure { task: index, error })?;
        }
        Ok(result)
    }

    /// Puts task `index`'s output in its slot, or its interrupt with the others; a failure fails
    /// the step.
    fn record(
        &mut self,
        index: usize,
        result: Result<NodeOutput<S>, Stop>,
        slots: &mut [Option<NodeOutput<S>>],
    ) -> Result<(), StepFailure> {
        match result {
            Ok(output) => slots[index] = Some(output),
            Err(Stop::Failed(error)) => return Err(StepFailure { task: index, error }),
            Err(Stop::Paused(interrupt)) => self.paused.push((index as u32, interrupt)),
        }
        Ok(())
    }
}

/// Drops the output of a task whose write could not be stored (where a deeply nested value
/// cannot overflow the stack, if that is why) and gives back the error that fails the task.
fn unsaved<S: State>(result: Result<NodeOutput<S>, Stop>, error: GraphError) -> GraphError {
    if matches!(error, GraphError::Unstorable { .. })
        && let Ok(output) = result
    {
        crate::record::codec::drop_deep(output);
    }
    error
}

/// Where the tasks of a step run: its number, and the checkpoint they belong to (if any).
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub(crate) step: u64,
    /// The step's recorded span (0 when the run is not recorded).
    pub(crate) step_span: u64,
    pub(crate) checkpoint: Option<&'a Arc<str>>,
    /// Where finished calls inside the tasks are stored, on a thread whose steps are stored.
    pub(crate) calls: Option<&'a super::calls::CallStore>,
}

impl<'a> At<'a> {
    /// Step `step` (whose recorded span is `span`, 0 when the run is not recorded).
    pub(crate) fn new(
        (step, step_span): (u64, u64),
        checkpoint: Option<&'a Arc<str>>,
        calls: Option<&'a super::calls::CallStore>,
    ) -> Self {
        Self { step, step_span, checkpoint, calls }
    }
}

/// Runs one task under its node's policies: through the cache, if the node caches its outputs
/// (`true`: the output came from the cache), and under its retry and timeout policies.
async fn run_task<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    state: &S,
    run: &Arc<RunShared<C>>,
    at: At<'_>,
    index: u32,
    task: &Task,
) -> (Result<NodeOutput<S>, Stop>, bool) {
    if graph.nodes[task.node as usize].policy.cache.is_none() {
        return (run_attempts(graph, state, run, at, index, task).await, false);
    }
    // Boxed: only cached nodes pay for room for the cache's futures.
    let (result, cached) = boxed(|| {
        super::cached::run(
            graph,
            state,
            at.step,
            run.user.as_deref(),
            task,
            run_attempts(graph, state, run, at, index, task),
        )
    })
    .await;
    if cached {
        super::span::skipped_task(graph, &graph.nodes[task.node as usize], run, (at.step, at.step_span), index, true);
    }
    (result, cached)
}

/// Runs one task under its node's retry and timeout policies.
async fn run_attempts<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    state: &S,
    run: &Arc<RunShared<C>>,
    at: At<'_>,
    index: u32,
    task: &Task,
) -> Result<NodeOutput<S>, Stop> {
    let node = &graph.nodes[task.node as usize];
    let results = call_results(node, at, index, task);
    let mut attempt = 1;
    loop {
        let rt = runtime(run, at, index, task, attempt, results.clone());
        let span = super::span::NodeSpan::open(graph, node, run, (at.step, at.step_span), index, attempt);
        let attempted = in_span(&span.tracing, in_trace(span.inside(), attempt_once(node, state, &rt, task))).await;
        span.end(&attempted, run);
        let error = match attempted {
            Ok(output) => return Ok(output),
            Err(error) => error,
        };
        let policy = retry(node, run, at.step, attempt, error)?;
        // Boxed, like a timeout below: only nodes with a policy pay for room for a timer.
        Box::pin(tokio::time::sleep(policy.backoff(attempt))).await;
        attempt += 1;
    }
}

/// The function to call in place for a task of `node`, when its task needs no future: a sync
/// node without retries or a cache, or a subgraph of sync nodes (without retries or a timeout) in a run
/// that neither stores nor streams, so that its own run stores and streams nothing either.
fn in_place<'a, S: State, C>(node: &'a CompiledNode<S, C>, run: &RunShared<C>) -> Option<&'a SyncFn<S, C>> {
    if node.policy.cache.is_some() {
        return None;
    }
    match &node.action {
        Action::Sync(f) if node.policy.retry.is_empty() => Some(&**f),
        Action::Subgraph { in_place, .. }
            if node.policy.retry.is_empty()
                && node.policy.timeout.is_none()
                && run.writer.is_none()
                && run.storage.is_none() =>
        {
            Some(&**in_place)
        }
        _ => None,
    }
}

/// A task called in place (see [`in_place`]): what [`run_task`] does for it, with no future.
fn call_sync<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    f: &SyncFn<S, C>,
    state: &S,
    run: &Arc<RunShared<C>>,
    at: At<'_>,
    index: u32,
    task: &Task,
) -> Result<NodeOutput<S>, Stop> {
    let node = &graph.nodes[task.node as usize];
    let rt = runtime(run, at, index, task, 1, call_results(node, at, index, task));
    let input = task.payload.as_deref();
    let span = super::span::NodeSpan::open(graph, node, run, (at.step, at.step_span), index, 1);
    let inside = span.inside();
    let called = span
        .tracing
        .in_scope(|| within(inside, || std::panic::catch_unwind(AssertUnwindSafe(|| f(state, &rt, input)))))
        .unwrap_or_else(|payload| Err(NodeError::panicked(&*payload)));
    span.end(&called, run);
    called.map_err(|error| stop(node, run, at.step, error))
}

/// The results of calls an earlier run of the task finished, kept across its attempts. Only a
/// task that can run again needs them: one on a stored thread, one resumed with results, or one
/// its policy retries.
fn call_results<S: State, C>(
    node: &CompiledNode<S, C>,
    at: At<'_>,
    index: u32,
    task: &Task,
) -> Option<Arc<super::calls::CallResults>> {
    (at.calls.is_some() || task.results.is_some() || !node.policy.retry.is_empty())
        .then(|| Arc::new(super::calls::CallResults::new(task.results.as_ref(), at.calls, at.checkpoint, index)))
}

/// The [`Runtime`] of attempt `attempt` of task `index`.
fn runtime<C>(
    run: &Arc<RunShared<C>>,
    at: At<'_>,
    index: u32,
    task: &Task,
    attempt: u32,
    results: Option<Arc<super::calls::CallResults>>,
) -> Runtime<C> {
    Runtime {
        run: Arc::clone(run),
        task: TaskInfo { step: at.step, node: task.node, index, attempt },
        answers: task.answers.clone(),
        checkpoint: at.checkpoint.cloned(),
        interrupt_calls: AtomicU32::new(0),
        results,
    }
}

/// What a failed attempt leads to: the policy to retry under, or how the task stops.
fn retry<'a, S: State, C>(
    node: &'a CompiledNode<S, C>,
    run: &RunShared<C>,
    step: u64,
    attempt: u32,
    error: NodeError,
) -> Result<&'a crate::policy::RetryPolicy, Stop> {
    let error = interrupt_or(error)?;
    if let Some(stop) = spent(node, run, step) {
        return Err(stop);
    }
    match node.policy.retry_after(&error, attempt) {
        Some(policy) => {
            tracing::debug!(node = %node.name, step, attempt, %error, "node failed; retrying");
            Ok(policy)
        }
        None => Err(failed(node, step, attempt, error)),
    }
}

/// How a task without retries stops after its attempt failed with `error`.
fn stop<S: State, C>(node: &CompiledNode<S, C>, run: &RunShared<C>, step: u64, error: NodeError) -> Stop {
    match interrupt_or(error) {
        Ok(error) => spent(node, run, step).unwrap_or_else(|| failed(node, step, 1, error)),
        Err(paused) => paused,
    }
}

/// An interrupt pauses the task; any other error is the attempt's.
fn interrupt_or(error: NodeError) -> Result<NodeError, Stop> {
    error.take_interrupt().map_or_else(Ok, |interrupt| Err(Stop::Paused(interrupt)))
}

/// A spent budget stays spent: retrying the node could only fail again.
fn spent<S: State, C>(node: &CompiledNode<S, C>, run: &RunShared<C>, step: u64) -> Option<Stop> {
    let limit = run.meter.exceeded()?;
    Some(Stop::Failed(GraphError::BudgetExceeded { node: node.name.to_string(), step, limit }))
}

/// The task failed with `error` on attempt `attempt`, its last.
fn failed<S: State, C>(node: &CompiledNode<S, C>, step: u64, attempts: u32, error: NodeError) -> Stop {
    Stop::Failed(GraphError::Node { node: node.name.to_string(), step, attempts, source: error.into_box() })
}

/// One attempt. A panic inside the node becomes a [`NodeError`] instead of unwinding
/// through the run, so a failing node never takes the caller (or a checkpointed thread) down.
async fn attempt_once<S: State, C: Send + Sync + 'static>(
    node: &CompiledNode<S, C>,
    state: &S,
    rt: &Runtime<C>,
    task: &Task,
) -> NodeResult<S> {
    let input = task.payload.as_deref();
    match &node.action {
        Action::Sync(f) => std::panic::catch_unwind(AssertUnwindSafe(|| f(state, rt, input)))
            .unwrap_or_else(|payload| Err(NodeError::panicked(&*payload))),
        Action::Async(f) | Action::Subgraph { run: f, .. } => {
            let attempt = AssertUnwindSafe(f(state, rt, input)).catch_unwind();
            let outcome = match node.policy.timeout {
                None => attempt.await,
                Some(limit) => match Box::pin(tokio::time::timeout(limit, attempt)).await {
                    Ok(outcome) => outcome,
                    Err(_) => return Err(NodeError::timeout(limit)),
                },
            };
            outcome.unwrap_or_else(|payload| Err(NodeError::panicked(&*payload)))
        }
    }
}
