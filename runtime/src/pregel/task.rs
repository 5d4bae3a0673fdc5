//! Running the tasks of one super-step.

use crate::error::{GraphError, NodeError};
use crate::graph::{Action, CompiledNode, Inner, NodeResult};
use crate::interrupt::Interrupt;
use crate::node::NodeOutput;
use crate::pregel::events;
use crate::pregel::persist::Persist;
use crate::runtime::{RunShared, Runtime, TaskInfo};
use crate::state::State;
use crate::stream::Sink;
use futures::FutureExt;
use futures::stream::{FuturesUnordered, StreamExt};
use std::any::Any;
use std::collections::BTreeMap;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use std::sync::atomic::AtomicU32;
use tracing::Instrument;

/// One task of a step: a node to run, with its Send payload if a Send started it.
pub(crate) struct Task {
    pub(crate) node: u32,
    pub(crate) payload: Option<Box<dyn Any + Send + Sync>>,
    /// Answers to the task's interrupts, when it resumes after a pause.
    pub(crate) answers: Option<Arc<[serde_json::Value]>>,
    /// Results of calls an earlier run of the task finished (durable tool calls), by slot.
    pub(crate) results: Option<Arc<BTreeMap<u32, (String, serde_json::Value)>>>,
}

impl Task {
    pub(crate) fn pull(node: u32) -> Self {
        Self { node, payload: None, answers: None, results: None }
    }

    pub(crate) fn send(node: u32, payload: Box<dyn Any + Send + Sync>) -> Self {
        Self { node, payload: Some(payload), answers: None, results: None }
    }
}

/// Why a task produced no output.
pub(crate) enum Stop {
    Failed(GraphError),
    Paused(Interrupt),
}

/// A step that failed: the task that failed first, and why.
pub(crate) struct StepFailure {
    pub(crate) task: usize,
    pub(crate) error: GraphError,
}

/// How a step's tasks ended: the interrupts raised, by task index (empty when all finished).
pub(crate) type StepResult = Result<Vec<(u32, Interrupt)>, StepFailure>;

/// Runs every task of the step whose slot is empty; each slot receives its task's output, which
/// is stored (or held for the checkpoint) as soon as the task finishes, and streamed when the
/// run is. A failure cancels the tasks still running and fails the step, leaving the slots of
/// the tasks that finished filled (so their writes can be kept). An interrupt is not a failure:
/// the other tasks run on, and the step returns every interrupt raised, by task index.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn run_step<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    state: &S,
    run: &Arc<RunShared<C>>,
    at: At<'_>,
    tasks: &[Task],
    slots: &mut [Option<NodeOutput<S>>],
    mut persist: Option<&mut Persist>,
    sink: Option<&Sink<S>>,
) -> StepResult {
    let mut paused = Vec::new();
    let alone = tasks.len() == 1;
    let mut finish = async |index: usize, result: Result<NodeOutput<S>, Stop>, slots: &mut [Option<NodeOutput<S>>]| {
        let task = &tasks[index];
        let result = result.map(|mut output| {
            crate::state::Update::fill_ids(&mut *output.update);
            output
        });
        let result = match (result, persist.as_deref_mut()) {
            (Ok(output), Some(persist)) => {
                let saved = match persist.save_finished(graph, index, task, &output, alone) {
                    // Boxed, like the event below: only steps that store a task's write before
                    // their checkpoint (tasks with siblings) pay for room in this future.
                    Ok(Some(write)) => Box::pin(persist.store_writes(vec![write])).await,
                    Ok(None) => Ok(()),
                    Err(error) => Err(error),
                };
                match saved {
                    Ok(()) => Ok(output),
                    Err(error) => {
                        if matches!(error, GraphError::Unstorable { .. }) {
                            super::codec::drop_deep(output);
                        }
                        Err(Stop::Failed(error))
                    }
                }
            }
            (result, _) => result,
        };
        if let Some(sink) = sink {
            Box::pin(events::task_finished(graph, sink, at.step, index, task, &result))
                .await
                .map_err(|error| StepFailure { task: index, error })?;
        }
        match result {
            Ok(output) => slots[index] = Some(output),
            Err(Stop::Failed(error)) => return Err(StepFailure { task: index, error }),
            Err(Stop::Paused(interrupt)) => paused.push((index as u32, interrupt)),
        }
        Ok(())
    };
    if let ([task], [None]) = (tasks, &*slots) {
        let result = run_task(graph, state, run, at, 0, task).await;
        finish(0, result, slots).await?;
        return Ok(paused);
    }
    let mut pending = FuturesUnordered::new();
    for (index, task) in tasks.iter().enumerate() {
        if slots[index].is_some() {
            continue;
        }
        let node = &graph.nodes[task.node as usize];
        let plain_sync = matches!(node.action, Action::Sync(_)) && node.policy.retry.is_empty();
        if plain_sync {
            let result = run_task(graph, state, run, at, index as u32, task).await;
            finish(index, result, slots).await?;
        } else {
            pending.push(async move { (index, run_task(graph, state, run, at, index as u32, task).await) });
        }
    }
    while let Some((index, result)) = pending.next().await {
        finish(index, result, slots).await?;
    }
    paused.sort_by_key(|(index, _)| *index);
    Ok(paused)
}

/// Where the tasks of a step run: its number, and the checkpoint they belong to (if any).
#[derive(Clone, Copy)]
pub(crate) struct At<'a> {
    pub(crate) step: u64,
    pub(crate) checkpoint: Option<&'a Arc<str>>,
    /// Where finished calls inside the tasks are stored, on a thread whose steps are stored.
    pub(crate) calls: Option<&'a super::calls::CallStore>,
}

/// Runs one task under its node's retry and timeout policies.
async fn run_task<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    state: &S,
    run: &Arc<RunShared<C>>,
    at: At<'_>,
    index: u32,
    task: &Task,
) -> Result<NodeOutput<S>, Stop> {
    let node = &graph.nodes[task.node as usize];
    let step = at.step;
    let mut attempt = 1;
    // Only a task that can run again needs its calls' results: one on a stored thread, one
    // resumed with results, or one its policy retries.
    let results = (at.calls.is_some() || task.results.is_some() || !node.policy.retry.is_empty())
        .then(|| Arc::new(super::calls::CallResults::new(task.results.as_ref(), at.calls, at.checkpoint, index)));
    loop {
        let rt = Runtime {
            run: Arc::clone(run),
            task: TaskInfo { step, node: task.node, index, attempt },
            answers: task.answers.clone(),
            checkpoint: at.checkpoint.cloned(),
            interrupt_calls: AtomicU32::new(0),
            results: results.clone(),
        };
        let span = tracing::info_span!(
            "node",
            graph = %graph.name,
            node = %node.name,
            step,
            task = index,
            attempt,
            run = run.run_id,
            thread = run.thread_id.as_deref().unwrap_or(""),
        );
        let error = match attempt_once(node, state, &rt, task).instrument(span).await {
            Ok(output) => return Ok(output),
            Err(error) => match error.take_interrupt() {
                Ok(interrupt) => return Err(Stop::Paused(interrupt)),
                Err(error) => error,
            },
        };
        // A spent budget stays spent: retrying the node could only fail again.
        if let Some(limit) = run.meter.exceeded() {
            return Err(Stop::Failed(GraphError::BudgetExceeded { node: node.name.to_string(), step, limit }));
        }
        match node.policy.retry_after(&error, attempt) {
            Some(policy) => {
                tracing::debug!(node = %node.name, step, attempt, %error, "node failed; retrying");
                tokio::time::sleep(policy.backoff(attempt)).await;
                attempt += 1;
            }
            None => {
                return Err(Stop::Failed(GraphError::Node {
                    node: node.name.to_string(),
                    step,
                    attempts: attempt,
                    source: error.into_box(),
                }));
            }
        }
    }
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
        Action::Async(f) => {
            let attempt = AssertUnwindSafe(f(state, rt, input)).catch_unwind();
            let outcome = match node.policy.timeout {
                None => attempt.await,
                Some(limit) => match tokio::time::timeout(limit, attempt).await {
                    Ok(outcome) => outcome,
                    Err(_) => return Err(NodeError::timeout(limit)),
                },
            };
            outcome.unwrap_or_else(|payload| Err(NodeError::panicked(&*payload)))
        }
    }
}
