//! Folding a step's updates into the state, all or nothing.

use crate::error::GraphError;
use crate::graph::Inner;
use crate::node::NodeOutput;
use crate::pregel::Task;
use crate::state::State;

/// Applies the updates of a step in task order, each field with its reducer (an `Overwrite`
/// wins its step). When two of them conflict (a last-value field written twice, or two
/// overwrites of one field), nothing is applied and the error names the field and both nodes.
pub(crate) fn apply<S: State, C>(
    graph: &Inner<S, C>,
    state: &mut S,
    tasks: &[Task],
    outputs: &mut [Option<NodeOutput<S>>],
    step: u64,
) -> Result<(), GraphError> {
    if let [Some(only)] = outputs {
        state.apply_mut(&mut only.update);
        return Ok(());
    }
    let updates: Vec<&S::Update> = outputs.iter().flatten().map(|o| &o.update).collect();
    if let Some(conflict) = S::conflict(&updates) {
        let name = |i: usize| graph.node_names[tasks[i].node as usize].to_string();
        return Err(GraphError::InvalidUpdate {
            field: conflict.field,
            first: name(conflict.first),
            second: name(conflict.second),
            step,
        });
    }
    let mut updates: Vec<&mut S::Update> = outputs.iter_mut().flatten().map(|o| &mut o.update).collect();
    state.apply_step(&mut updates);
    Ok(())
}
