//! Step events for streamed runs: built only when their mode was asked for.

use super::Task;
use crate::error::GraphError;
use crate::graph::Inner;
use crate::interrupt::Interrupt;
use crate::node::NodeOutput;
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

/// `tasks`: one finish event per task that finished, paused or failed.
pub(crate) async fn tasks_finished<S: State, C>(
    graph: &Inner<S, C>,
    sink: &Sink<S>,
    step: u64,
    tasks: &[Task],
    slots: &[Option<NodeOutput<S>>],
    outcome: &Result<Vec<(u32, Interrupt)>, GraphError>,
) -> Result<(), GraphError> {
    for (index, task) in tasks.iter().enumerate() {
        let name = node(graph, task);
        let interrupted = matches!(outcome, Ok(paused) if paused.iter().any(|(i, _)| *i as usize == index));
        let error = match outcome {
            Err(GraphError::Node { node, source, .. }) if *node == name && slots[index].is_none() => {
                Some(source.to_string())
            }
            _ => None,
        };
        if slots[index].is_some() || interrupted || error.is_some() {
            sink.send(step, EventKind::TaskFinished { node: name, task: index as u32, error, interrupted }).await?;
        }
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
            sink.send(step, EventKind::Update { node: node(graph, task), update: output.update.clone() }).await?;
        }
    }
    Ok(())
}
