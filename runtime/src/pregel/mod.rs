//! The executor: super-steps in the Pregel (bulk synchronous parallel) model.
//!
//! Each step runs its tasks concurrently against one shared, read-only snapshot of the state,
//! then folds their updates in task order (never completion order), then plans the next step
//! from edges, routes, routers, joins and Sends. Nothing on this path serializes, clones the
//! state, or spawns: sync nodes are called in place, async nodes of one step are polled
//! together on the calling task, and a step with one task awaits it directly.

mod merge;
mod planner;
mod task;

use crate::error::GraphError;
use crate::graph::{Inner, RunOutput};
use crate::runtime::RunShared;
use crate::state::State;
use planner::Planner;
use std::sync::Arc;
pub(crate) use task::Task;

/// Runs a graph from `state` until no task is left.
pub(crate) async fn execute<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    mut state: S,
    run: Arc<RunShared<C>>,
    limit: u64,
) -> Result<RunOutput<S>, GraphError> {
    let mut planner = Planner::new(graph);
    let mut tasks: Vec<Task> = graph.entries.iter().map(|&node| Task::pull(node)).collect();
    let mut outputs = Vec::new();
    let mut step = 0;
    while !tasks.is_empty() {
        if step == limit {
            return Err(GraphError::RecursionLimit { limit });
        }
        step += 1;
        task::run_step(graph, &state, &run, step, &tasks, &mut outputs).await?;
        merge::apply(graph, &mut state, &tasks, &mut outputs, step)?;
        tasks = planner.plan(graph, &tasks, &mut outputs, &state, step);
    }
    Ok(RunOutput { state, steps: step })
}
