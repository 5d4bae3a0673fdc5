//! Choosing the next step's tasks.

use crate::graph::{Inner, Target};
use crate::node::{Goto, NodeOutput};
use crate::pregel::Task;
use crate::pregel::step::Tasks;
use crate::state::State;

/// Per-run bookkeeping that outlives one step: join progress and deferred nodes. Nothing in it
/// is sized by the graph: a run (a subgraph's, say) that triggers three nodes pays for three.
pub(crate) struct Planner {
    /// The deferred nodes waiting for the run to run out of other work, in the order they were
    /// deferred (each once).
    deferred: Vec<u32>,
    join_slots: Vec<Vec<bool>>,
    /// The nodes triggered for the next step so far, possibly more than once.
    pull: Vec<u32>,
    routed: Vec<u32>,
}

impl Planner {
    pub(crate) fn new<S: State, C>(graph: &Inner<S, C>) -> Self {
        Self {
            deferred: Vec::new(),
            join_slots: graph.joins.iter().map(|j| vec![false; j.sources as usize]).collect(),
            pull: Vec::new(),
            routed: Vec::new(),
        }
    }

    /// The tasks of a run's first step, from the state after its input: the nodes with an edge
    /// from START, where each router from START leads, then the Sends from START.
    pub(crate) fn start<S: State, C>(&mut self, graph: &Inner<S, C>, state: &S) -> Tasks {
        let start = &graph.start;
        if let ([entry], [], []) = (&start.entries[..], &start.routers[..], &start.sends[..])
            && !graph.nodes[*entry as usize].policy.defer
        {
            return smallvec::smallvec![Task::pull(*entry)];
        }
        for &entry in &graph.start.entries {
            self.trigger(graph, Target(entry));
        }
        for router in &graph.start.routers {
            self.trigger(graph, router.targets[(router.pick)(state)]);
        }
        let mut tasks = Tasks::new();
        self.take_pulled(&mut tasks);
        for (make, target) in &graph.start.sends {
            tasks.extend(make(state).into_iter().map(|payload| Task::send(*target, payload)));
        }
        tasks
    }

    /// Replaces the tasks that ran (`tasks`, with their `outputs`) by the next step's: pulled
    /// nodes in declaration order (each once), then Send tasks in the order they were sent. A
    /// task's node's static edges, the routes it returned and its routers are all followed.
    /// Deferred nodes run when nothing else is left. The list is reused, so a run allocates its
    /// task list once, not once a step.
    pub(crate) fn plan<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        tasks: &mut Tasks,
        outputs: &mut [Option<NodeOutput<S>>],
        state: &S,
    ) {
        // A link of a chain: one task whose node has one edge and nothing else to follow.
        if let ([task], [Some(output)]) = (&mut tasks[..], &*outputs) {
            let node = &graph.nodes[task.node as usize];
            if let [target] = *node.edges
                && node.joins.is_empty()
                && node.routers.is_empty()
                && matches!(output.goto, Goto::Edges)
                && output.sends.is_empty()
            {
                if target != Target::END && !graph.nodes[target.0 as usize].policy.defer {
                    *task = Task::pull(target.0);
                    return;
                }
                if target == Target::END && self.deferred.is_empty() {
                    tasks.clear();
                    return;
                }
            }
        }
        let mut sends = Vec::new();
        for (task, output) in tasks.iter().zip(outputs.iter_mut()) {
            let Some(output) = output else { continue };
            let node = &graph.nodes[task.node as usize];
            for &(join, slot) in &*node.joins {
                self.fill_join(graph, join, slot);
            }
            for &target in &*node.edges {
                self.trigger(graph, target);
            }
            if let Goto::Routes(routes) = &output.goto {
                for &route in routes {
                    self.trigger(graph, node.routes[route as usize]);
                }
            }
            if !node.routers.is_empty() && !self.routed.contains(&task.node) {
                self.routed.push(task.node);
            }
            if !output.sends.is_empty() {
                for payload in output.sends.drain(..) {
                    sends.push(Task::send(node.sends[payload.target as usize], payload.value));
                }
            }
        }
        for i in 0..self.routed.len() {
            for router in &*graph.nodes[self.routed[i] as usize].routers {
                self.trigger(graph, router.targets[(router.pick)(state)]);
            }
        }
        self.routed.clear();
        if self.pull.is_empty() && sends.is_empty() {
            self.release_deferred();
        }
        tasks.clear();
        self.take_pulled(tasks);
        if !sends.is_empty() {
            tasks.extend(sends);
        }
    }

    /// The nodes triggered so far, in declaration order and each once, as tasks.
    fn take_pulled(&mut self, tasks: &mut Tasks) {
        if let [node] = self.pull[..] {
            tasks.push(Task::pull(node));
        } else {
            self.pull.sort_unstable();
            self.pull.dedup();
            tasks.extend(self.pull.iter().copied().map(Task::pull));
        }
        self.pull.clear();
    }

    /// Adds `nodes` to `tasks` as pulled tasks where they are not already pulled (a command's
    /// `goto`), keeping pulled tasks in declaration order before Send tasks.
    pub(crate) fn add_pulled(tasks: &mut Tasks, nodes: &[u32]) {
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
        let mut deferred = self.deferred.clone();
        deferred.sort_unstable();
        (deferred, &self.join_slots)
    }

    /// Restores what [`Planner::saved`] returned.
    pub(crate) fn restore(&mut self, deferred: &[u32], joins: Vec<Vec<bool>>) {
        for &node in deferred {
            self.defer(node);
        }
        self.join_slots = joins;
    }

    fn trigger<S: State, C>(&mut self, graph: &Inner<S, C>, target: Target) {
        if target == Target::END {
            return;
        }
        if graph.nodes[target.0 as usize].policy.defer {
            self.defer(target.0);
        } else {
            self.pull.push(target.0);
        }
    }

    fn defer(&mut self, node: u32) {
        if !self.deferred.contains(&node) {
            self.deferred.push(node);
        }
    }

    fn fill_join<S: State, C>(&mut self, graph: &Inner<S, C>, join: u32, slot: u32) {
        let slots = &mut self.join_slots[join as usize];
        slots[slot as usize] = true;
        if slots.iter().all(|&filled| filled) {
            slots.fill(false);
            self.trigger(graph, graph.joins[join as usize].target);
        }
    }

    fn release_deferred(&mut self) {
        self.pull.append(&mut self.deferred);
    }
}
