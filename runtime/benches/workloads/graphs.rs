//! The graphs of WORKLOADS.md §1, §2 and §7.
//!
//! The N-node chains are built with the dynamic builder (a chain of 100 or 1000 distinct
//! nodes has no sensible hand-written form); the 3-node chain of the throughput workloads and
//! the fan-out are written with the macros, the way a user would.
// The async workloads' nodes do no I/O, like the baseline's `async def` nodes: being async is the point.
#![allow(clippy::unused_async)]

use graphwright::checkpoint::Checkpointer;
use graphwright::prelude::*;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use std::sync::Arc;

/// The chain's state: one last-value counter.
#[state]
pub struct Count {
    pub counter: i64,
}

fn bump(state: &Count) -> CountUpdate {
    CountUpdate::new().counter(state.counter + 1)
}

async fn bump_async(state: &Count) -> CountUpdate {
    CountUpdate::new().counter(state.counter + 1)
}

/// `START → node_0 → … → node_{n-1} → END`, not compiled.
pub fn chain_builder(n: usize, asynchronous: bool) -> StateGraph<Count> {
    let mut graph = StateGraph::<Count>::new().name(format!("sequential_{n}"));
    for i in 0..n {
        graph = if asynchronous {
            graph.add_node(format!("node_{i}"), bump_async)
        } else {
            graph.add_node(format!("node_{i}"), bump)
        };
    }
    graph = graph.add_edge(START, "node_0");
    for i in 1..n {
        graph = graph.add_edge(format!("node_{}", i - 1), format!("node_{i}"));
    }
    graph.add_edge(format!("node_{}", n - 1), END)
}

/// The chain, compiled, with `saver` when given.
pub fn chain(n: usize, asynchronous: bool, saver: Option<Arc<dyn Checkpointer>>) -> CompiledGraph<Count> {
    let graph = chain_builder(n, asynchronous);
    let graph = match saver {
        Some(saver) => graph.shared_checkpointer(saver),
        None => graph,
    };
    graph.compile().expect("the chain compiles")
}

/// Checks `{counter: n}`.
pub fn check_count(state: &Count, n: i64) -> Result<Value, String> {
    if state.counter == n {
        Ok(json!({"counter": state.counter}))
    } else {
        Err(format!("counter = {}, expected {n}", state.counter))
    }
}

/// The 3-node chain of the throughput workloads, sync nodes.
#[graph]
pub mod three {
    /// One last-value counter. (An inline `#[state]`: with `#[graph(state = super::Count)]` the
    /// macro takes `&Count` parameters for Send payloads.)
    #[state]
    pub struct State {
        pub counter: i64,
    }

    #[node(entry, next = node_1)]
    fn node_0(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }

    #[node(next = node_2)]
    fn node_1(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }

    #[node(next = END)]
    fn node_2(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }
}

/// The same with `async` nodes.
#[graph]
pub mod three_async {
    /// One last-value counter. (An inline `#[state]`: with `#[graph(state = super::Count)]` the
    /// macro takes `&Count` parameters for Send payloads.)
    #[state]
    pub struct State {
        pub counter: i64,
    }

    #[node(entry, next = node_1)]
    async fn node_0(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }

    #[node(next = node_2)]
    async fn node_1(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }

    #[node(next = END)]
    async fn node_2(state: &State) -> StateUpdate {
        StateUpdate::new().counter(state.counter + 1)
    }
}

/// The Send payload of the fan-out: only the worker's index.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    pub idx: i64,
}

/// Send fan-out and join (§2), sync worker.
#[graph]
pub mod fanout {
    use super::Job;

    #[state]
    pub struct State {
        pub n: i64,
        #[reducer(append)]
        pub items: Vec<i64>,
        pub total: i64,
        #[reducer(add)]
        pub join_calls: i64,
    }

    /// One `worker` task per index, all in the next step.
    #[node(entry, send = worker)]
    fn dispatch(state: &State) -> Vec<Job> {
        (0..state.n).map(|idx| Job { idx }).collect()
    }

    /// Sees only its payload.
    #[node(next = join)]
    fn worker(job: &Job) -> StateUpdate {
        StateUpdate::new().items(vec![job.idx])
    }

    /// Runs once, after every worker.
    #[node(next = END)]
    fn join(state: &State) -> StateUpdate {
        StateUpdate::new().total(state.items.iter().sum::<i64>()).join_calls(1)
    }
}

/// The same with an `async` worker.
#[graph]
pub mod fanout_async {
    use super::Job;

    #[state]
    pub struct State {
        pub n: i64,
        #[reducer(append)]
        pub items: Vec<i64>,
        pub total: i64,
        #[reducer(add)]
        pub join_calls: i64,
    }

    #[node(entry, send = worker)]
    fn dispatch(state: &State) -> Vec<Job> {
        (0..state.n).map(|idx| Job { idx }).collect()
    }

    #[node(next = join)]
    async fn worker(job: &Job) -> StateUpdate {
        StateUpdate::new().items(vec![job.idx])
    }

    #[node(next = END)]
    fn join(state: &State) -> StateUpdate {
        StateUpdate::new().total(state.items.iter().sum::<i64>()).join_calls(1)
    }
}

/// Checks the fan-out's final state for `n` workers.
pub fn check_fanout(n: i64, items: &[i64], total: i64, join_calls: i64) -> Result<Value, String> {
    let expected: Vec<i64> = (0..n).collect();
    if items != expected.as_slice() {
        return Err(format!("items has {} entries, not 0..{n} in order", items.len()));
    }
    if total != n * (n - 1) / 2 || join_calls != 1 {
        return Err(format!("total = {total}, join_calls = {join_calls}"));
    }
    Ok(json!({"n": n, "items_len": items.len(), "items_in_send_order": true, "total": total, "join_calls": join_calls}))
}
