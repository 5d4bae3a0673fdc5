//! Step events for streamed runs: built only when their mode was asked for.

use super::Task;
use super::step::{StepResult, Stop};
use crate::error::GraphError;
use crate::graph::Inner;
use crate::log::{self, RunLog};
use crate::node::NodeOutput;
use crate::runtime::RunShared;
use crate::state::State;
use crate::stream::{EventKind, Sink, StreamMode};

fn node<S: State, C>(graph: &Inner<S, C>, task: &Task) -> String {
    graph.node_names[task.node as usize].to_string()
}

/// `tasks`: one start event per task of the step.
pub(crate) async fn tasks_started<S: State, C>(
    graph: &Inner<S, C>,
    sink: &Sink<S>,
    step: u64,
    tasks: &[Task],
) -> Result<(), GraphError> {
    for (index, task) in tasks.iter().enumerate() {
        sink.send(step, EventKind::TaskStarted { node: node(graph, task), task: index as u32 }).await?;
    }
    Ok(())
}

/// How each task of a step that has an outcome ended: `(index, node, error, interrupted)`,
/// for tasks that finished, paused or failed (not those cancelled by a sibling's failure).
fn endings<'a, S: State, C>(
    graph: &'a Inner<S, C>,
    tasks: &'a [Task],
    slots: &'a [Option<NodeOutput<S>>],
    outcome: &'a StepResult,
) -> impl Iterator<Item = (usize, String, Option<String>, bool)> + 'a {
    tasks.iter().enumerate().filter_map(move |(index, task)| {
        let name = node(graph, task);
        let interrupted = matches!(outcome, Ok(paused) if paused.iter().any(|(i, _)| *i as usize == index));
        let error = match outcome {
            Err(failure) if failure.task == index => Some(failure_text(&failure.error)),
            _ => None,
        };
        (slots[index].is_some() || interrupted || error.is_some()).then_some((index, name, error, interrupted))
    })
}

/// What a failed task's error says, without the "node `x` failed in step n" prefix the
/// task's own event already carries.
pub(crate) fn failure_text(error: &GraphError) -> String {
    match error {
        GraphError::Node { source, .. } => source.to_string(),
        other => other.to_string(),
    }
}

/// `updates` and `tasks`: what one task wrote (`cached` when the cache gave its output) and how
/// it ended, sent as soon as it finished.
pub(crate) async fn task_finished<S: State, C>(
    graph: &Inner<S, C>,
    sink: &Sink<S>,
    at: (u64, usize),
    task: &Task,
    result: &Result<NodeOutput<S>, Stop>,
    cached: bool,
) -> Result<(), GraphError> {
    let (step, index) = at;
    if let (Ok(output), true) = (result, sink.modes.contains(StreamMode::Updates)) {
        let kind = EventKind::Update { node: node(graph, task), update: output.update.clone(), cached };
        sink.send(step, kind).await?;
    }
    if sink.modes.contains(StreamMode::Tasks) {
        let (error, interrupted, result) = match result {
            Ok(output) => (None, false, Some(output.update.clone())),
            Err(Stop::Failed(error)) => (Some(failure_text(error)), false, None),
            Err(Stop::Paused(_)) => (None, true, None),
        };
        let kind = EventKind::TaskFinished { node: node(graph, task), task: index as u32, error, interrupted, result };
        sink.send(step, kind).await?;
    }
    Ok(())
}

/// The log's place for a step of `run`.
fn log_at<C>(run: &RunShared<C>, step: u64) -> log::At<'_> {
    log::At { run_id: run.run_id, thread: run.thread_id.as_deref(), step }
}

/// Logs the start of every task of the step: its input is the state, or its Send payload.
pub(crate) fn log_started<S: State, C>(
    graph: &Inner<S, C>,
    run: &RunShared<C>,
    log: &RunLog,
    step: u64,
    state: &S,
    tasks: &[Task],
) {
    let at = log_at(run, step);
    for (index, task) in tasks.iter().enumerate() {
        let spec = &graph.nodes[task.node as usize];
        let payload = task.payload.as_deref().zip(spec.takes).and_then(|(p, kind)| (kind.to_json)(p).ok());
        match payload {
            Some(payload) => log.started(&at, &spec.name, index as u32, &payload),
            None => log.started(&at, &spec.name, index as u32, state),
        }
    }
}

/// Logs how every task of the step ended.
pub(crate) fn log_finished<S: State, C>(
    graph: &Inner<S, C>,
    run: &RunShared<C>,
    log: &RunLog,
    step: u64,
    tasks: &[Task],
    slots: &[Option<NodeOutput<S>>],
    outcome: &StepResult,
) {
    let at = log_at(run, step);
    for (index, node, error, interrupted) in endings(graph, tasks, slots, outcome) {
        let output = slots[index].as_ref().map(|o| &o.update);
        log.finished(&at, &node, index as u32, output, error, interrupted);
    }
}

/// Logs the state after a step.
pub(crate) fn log_state<S: State, C>(run: &RunShared<C>, log: &RunLog, step: u64, state: &S) {
    log.state(&log_at(run, step), state);
}
