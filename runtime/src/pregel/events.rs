//! Step events for streamed runs: built only when their mode was asked for.

use super::Task;
use crate::error::GraphError;
use crate::graph::Inner;
use crate::interrupt::Interrupt;
use crate::log::{self, RunLog};
use crate::node::NodeOutput;
use crate::runtime::RunShared;
use crate::state::State;
use crate::stream::{EventKind, Sink};

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
    outcome: &'a Result<Vec<(u32, Interrupt)>, GraphError>,
) -> impl Iterator<Item = (usize, String, Option<String>, bool)> + 'a {
    tasks.iter().enumerate().filter_map(move |(index, task)| {
        let name = node(graph, task);
        let interrupted = matches!(outcome, Ok(paused) if paused.iter().any(|(i, _)| *i as usize == index));
        let error = match outcome {
            Err(GraphError::Node { node, source, .. }) if *node == name && slots[index].is_none() => {
                Some(source.to_string())
            }
            _ => None,
        };
        (slots[index].is_some() || interrupted || error.is_some()).then_some((index, name, error, interrupted))
    })
}

/// `tasks`: one finish event per task that finished, paused or failed.
pub(crate) async fn tasks_finished<S: State, C>(
    graph: &Inner<S, C>,
    sink: &Sink<S>,
    step: u64,
    tasks: &[Task],
    slots: &[Option<NodeOutput<S>>],
    outcome: &Result<Vec<(u32, Interrupt)>, GraphError>,
) -> Result<(), GraphError> {
    for (index, node, error, interrupted) in endings(graph, tasks, slots, outcome) {
        sink.send(step, EventKind::TaskFinished { node, task: index as u32, error, interrupted }).await?;
    }
    Ok(())
}

/// `updates`: what each task wrote, in task order.
pub(crate) async fn updates<S: State, C>(
    graph: &Inner<S, C>,
    sink: &Sink<S>,
    step: u64,
    tasks: &[Task],
    slots: &[Option<NodeOutput<S>>],
) -> Result<(), GraphError> {
    for (task, slot) in tasks.iter().zip(slots) {
        if let Some(output) = slot {
            sink.send(step, EventKind::Update { node: node(graph, task), update: (*output.update).clone() }).await?;
        }
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
        let payload = task.payload.as_deref().zip(spec.takes).and_then(|(p, kind)| (kind.encode)(p).ok());
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
    outcome: &Result<Vec<(u32, Interrupt)>, GraphError>,
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
