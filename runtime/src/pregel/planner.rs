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
    /// How many nodes are deferred now.
    waiting: usize,
    join_slots: Vec<Vec<bool>>,
    pull: Vec<u32>,
    routed: Vec<u32>,
}

impl Planner {
    pub(crate) fn new<S: State, C>(graph: &Inner<S, C>) -> Self {
        Self {
            planned: vec![0; graph.nodes.len()],
            deferred: vec![false; graph.nodes.len()],
            waiting: 0,
            join_slots: graph.joins.iter().map(|j| vec![false; j.sources as usize]).collect(),
            pull: Vec::new(),
            routed: Vec::new(),
        }
    }

    /// The tasks of a run's first step, from the state after its input: the nodes with an edge
    /// from START, where each router from START leads, then the Sends from START.
    pub(crate) fn start<S: State, C>(&mut self, graph: &Inner<S, C>, state: &S) -> Vec<Task> {
        // A stamp no step uses (steps count from 1, and `planned` starts at 0).
        const FIRST: u64 = u64::MAX;
        for &entry in &graph.start.entries {
            self.trigger(graph, Target(entry), FIRST);
        }
        for router in &graph.start.routers {
            self.trigger(graph, router.targets[(router.pick)(state)], FIRST);
        }
        let mut tasks = self.take_pulled();
        for (make, target) in &graph.start.sends {
            tasks.extend(make(state).into_iter().map(|payload| Task::send(*target, payload)));
        }
        tasks
    }

    /// The tasks of the step after `step`: pulled nodes in declaration order (each once), then
    /// Send tasks in the order they were sent. A task's node's static edges, the routes it
    /// returned and its routers are all followed. Deferred nodes run when nothing else is left.
    pub(crate) fn plan<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        ran: &[Task],
        outputs: &mut [Option<NodeOutput<S>>],
        state: &S,
        step: u64,
    ) -> Vec<Task> {
        let mut sends = Vec::new();
        for (task, output) in ran.iter().zip(outputs.iter_mut()) {
            let Some(output) = output else { continue };
            let node = &graph.nodes[task.node as usize];
            for &(join, slot) in &*node.joins {
                self.fill_join(graph, join, slot, step);
            }
            for &target in &*node.edges {
                self.trigger(graph, target, step);
            }
            if let Goto::Routes(routes) = &output.goto {
                for &route in routes {
                    self.trigger(graph, node.routes[route as usize], step);
                }
            }
            if !node.routers.is_empty() && !self.routed.contains(&task.node) {
                self.routed.push(task.node);
            }
            for payload in output.sends.drain(..) {
                sends.push(Task::send(node.sends[payload.target as usize], payload.value));
            }
        }
        for i in 0..self.routed.len() {
            for router in &*graph.nodes[self.routed[i] as usize].routers {
                self.trigger(graph, router.targets[(router.pick)(state)], step);
            }
        }
        self.routed.clear();
        if self.pull.is_empty() && sends.is_empty() {
            self.release_deferred();
        }
        let mut tasks = self.take_pulled();
        tasks.append(&mut sends);
        tasks
    }

    /// The nodes triggered so far, in declaration order, as tasks.
    fn take_pulled(&mut self) -> Vec<Task> {
        self.pull.sort_unstable();
        self.pull.drain(..).map(Task::pull).collect()
    }

    /// Adds `nodes` to `tasks` as pulled tasks where they are not already pulled (a command's
    /// `goto`), keeping pulled tasks in declaration order before Send tasks.
    pub(crate) fn add_pulled(tasks: &mut Vec<Task>, nodes: &[u32]) {
        for &node in nodes {
            if tasks.iter().any(|t| t.node == node && t.payload.is_none()) {
                continue;
            }
            let at = tasks.iter().position(|t| t.payload.is_some() || t.node > node).unwrap_or(tasks.len());
            tasks.insert(at, Task::pull(node));
        }
    }

    /// Deferred nodes and join progress, to store in a checkpoint.
    pub(crate) fn saved(&self) -> (Vec<u32>, &[Vec<bool>]) {
        // Most graphs defer nothing: no walk over every node at every step then.
        let deferred = if self.waiting == 0 {
            Vec::new()
        } else {
            (0..self.deferred.len() as u32).filter(|&n| self.deferred[n as usize]).collect()
        };
        (deferred, &self.join_slots)
    }

    /// Restores what [`Planner::saved`] returned.
    pub(crate) fn restore(&mut self, deferred: &[u32], joins: Vec<Vec<bool>>) {
        for &node in deferred {
            if !std::mem::replace(&mut self.deferred[node as usize], true) {
                self.waiting += 1;
            }
        }
        self.join_slots = joins;
    }

    fn trigger<S: State, C>(&mut self, graph: &Inner<S, C>, target: Target, step: u64) {
        if target == Target::END {
            return;
        }
        let node = target.0 as usize;
        if graph.nodes[node].policy.defer {
            if !std::mem::replace(&mut self.deferred[node], true) {
                self.waiting += 1;
            }
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
        if self.waiting == 0 {
            return;
        }
        self.waiting = 0;
        for (node, waiting) in self.deferred.iter_mut().enumerate() {
            if std::mem::take(waiting) {
                self.pull.push(node as u32);
            }
        }
    }
}
