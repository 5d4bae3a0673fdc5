//! Choosing the next step's tasks.

use crate::graph::{Inner, Target};
use crate::node::{Goto, NodeOutput};
use crate::pregel::Task;
use crate::state::State;

/// Per-run bookkeeping that outlives one step: which nodes are already planned for the next
/// step (by step stamp, so nothing is cleared between steps), join progress, deferred nodes.
pub(crate) struct Planner {
    planned: Vec<u64>,
    deferred: Vec<bool>,
    join_slots: Vec<Vec<bool>>,
    pull: Vec<u32>,
    routed: Vec<u32>,
}

impl Planner {
    pub(crate) fn new<S: State, C>(graph: &Inner<S, C>) -> Self {
        Self {
            planned: vec![0; graph.nodes.len()],
            deferred: vec![false; graph.nodes.len()],
            join_slots: graph.joins.iter().map(|j| vec![false; j.sources as usize]).collect(),
            pull: Vec::new(),
            routed: Vec::new(),
        }
    }

    /// The tasks of the step after `step`: pulled nodes in declaration order (each once), then
    /// Send tasks in the order they were sent. Deferred nodes run when nothing else is left.
    pub(crate) fn plan<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        ran: &[Task],
        outputs: &mut [Option<NodeOutput<S>>],
        state: &S,
        step: u64,
    ) -> Vec<Task> {
        let mut sends = Vec::new();
        for (task, output) in ran.iter().zip(outputs.iter_mut().flatten()) {
            let node = &graph.nodes[task.node as usize];
            for &(join, slot) in &*node.joins {
                self.fill_join(graph, join, slot, step);
            }
            match &output.goto {
                Goto::Edges if node.router.is_some() => {
                    if !self.routed.contains(&task.node) {
                        self.routed.push(task.node);
                    }
                }
                Goto::Edges => {
                    for &target in &*node.edges {
                        self.trigger(graph, target, step);
                    }
                }
                Goto::Routes(routes) => {
                    for &route in routes {
                        self.trigger(graph, node.routes[route as usize], step);
                    }
                }
            }
            for payload in output.sends.drain(..) {
                sends.push(Task::send(node.sends[payload.target as usize], payload.value));
            }
        }
        for i in 0..self.routed.len() {
            let node = &graph.nodes[self.routed[i] as usize];
            if let Some(router) = &node.router {
                let route = router(state);
                self.trigger(graph, node.routes[route], step);
            }
        }
        self.routed.clear();
        if self.pull.is_empty() && sends.is_empty() {
            self.release_deferred();
        }
        self.pull.sort_unstable();
        let mut tasks = Vec::with_capacity(self.pull.len() + sends.len());
        tasks.extend(self.pull.drain(..).map(Task::pull));
        tasks.append(&mut sends);
        tasks
    }

    /// Deferred nodes and join progress, to store in a checkpoint.
    pub(crate) fn saved(&self) -> (Vec<u32>, Vec<Vec<bool>>) {
        let deferred = (0..self.deferred.len() as u32).filter(|&n| self.deferred[n as usize]).collect();
        (deferred, self.join_slots.clone())
    }

    /// Restores what [`Planner::saved`] returned.
    pub(crate) fn restore(&mut self, deferred: &[u32], joins: Vec<Vec<bool>>) {
        for &node in deferred {
            self.deferred[node as usize] = true;
        }
        self.join_slots = joins;
    }

    fn trigger<S: State, C>(&mut self, graph: &Inner<S, C>, target: Target, step: u64) {
        if target == Target::END {
            return;
        }
        let node = target.0 as usize;
        if graph.nodes[node].policy.defer {
            self.deferred[node] = true;
        } else if self.planned[node] != step {
            self.planned[node] = step;
            self.pull.push(target.0);
        }
    }

    fn fill_join<S: State, C>(&mut self, graph: &Inner<S, C>, join: u32, slot: u32, step: u64) {
        let slots = &mut self.join_slots[join as usize];
        slots[slot as usize] = true;
        if slots.iter().all(|&filled| filled) {
            slots.fill(false);
            self.trigger(graph, graph.joins[join as usize].target, step);
        }
    }

    fn release_deferred(&mut self) {
        for (node, waiting) in self.deferred.iter_mut().enumerate() {
            if std::mem::take(waiting) {
                self.pull.push(node as u32);
            }
        }
    }
}
