//! Send (map-reduce): one task per payload, all in one step, and a join that runs once after
//! them; with no payloads the workers' step does not happen.

// The graph modules are private to this test; their items are `pub` the way users write them.
#![allow(unreachable_pub)]

use graphwright::prelude::*;
use serde::{Deserialize, Serialize};

/// A typed Send payload.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Item {
    /// The number the worker adds to the total.
    pub n: u64,
}

/// `fan` sends `state.count` items to `worker`; `worker` leads to `join`.
#[graph]
mod map_reduce {
    use super::*;

    #[state]
    pub struct State {
        pub count: u64,
        pub factor: u64,
        #[reducer(add)]
        pub total: u64,
        #[reducer(add)]
        pub worker_calls: u64,
        #[reducer(add)]
        pub join_calls: u32,
        pub join_saw: u64,
    }

    #[node(entry, send = worker)]
    fn fan(state: &State) -> Vec<Item> {
        (1..=state.count).map(|n| Item { n }).collect()
    }

    /// Reads its payload and the state of the step before.
    #[node(next = join)]
    fn worker(item: &Item, state: &State) -> StateUpdate {
        StateUpdate::new().total(item.n * state.factor).worker_calls(1)
    }

    #[node(next = END)]
    fn join(state: &State) -> StateUpdate {
        StateUpdate::new().join_calls(1).join_saw(state.total)
    }
}

async fn run_map_reduce(count: u64) -> graphwright::RunOutput<map_reduce::State> {
    let app = map_reduce::graph().compile().unwrap();
    let input = map_reduce::StateUpdate::new().count(count).factor(2);
    app.invoke(input, &RunConfig::default()).await.unwrap()
}

#[tokio::test]
async fn one_payload_runs_the_worker_once_then_the_join() {
    let out = run_map_reduce(1).await;
    assert_eq!(out.state.worker_calls, 1);
    assert_eq!(out.state.total, 2);
    assert_eq!(out.state.join_calls, 1);
    assert_eq!(out.state.join_saw, 2, "the join runs after the worker's update was applied");
    assert_eq!(out.steps, 3);
}

#[tokio::test]
async fn ten_thousand_payloads_run_in_one_step_and_the_join_runs_once() {
    let out = run_map_reduce(10_000).await;
    assert_eq!(out.state.worker_calls, 10_000);
    assert_eq!(out.state.total, 2 * (10_000 * 10_001 / 2));
    assert_eq!(out.state.join_calls, 1, "10 000 workers trigger the join in one step; it runs once");
    assert_eq!(out.state.join_saw, out.state.total);
    assert_eq!(out.steps, 3, "fan, all the workers, join");
}

/// With no payloads there is no workers' step; the join, reached only through the workers,
/// never runs, and the run ends after the sender.
#[tokio::test]
async fn zero_payloads_end_the_branch_at_the_sender() {
    let out = run_map_reduce(0).await;
    assert_eq!(out.state.worker_calls, 0);
    assert_eq!(out.state.join_calls, 0, "nothing leads to the join without a worker");
    assert_eq!(out.state.total, 0);
    assert_eq!(out.steps, 1);
}

/// Two entries: `fan` sends nothing while `side` goes on; the run continues without the
/// Send branch and ends normally.
#[graph]
mod empty_send_beside_a_branch {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    #[node(entry, send = worker)]
    fn fan(_state: &State) -> (StateUpdate, Vec<Item>) {
        (StateUpdate::new().trail(vec!["fan".to_owned()]), Vec::new())
    }

    #[node(next = join)]
    fn worker(item: &Item) -> StateUpdate {
        StateUpdate::new().trail(vec![format!("worker {}", item.n)])
    }

    #[node(entry, next = side_two)]
    fn side(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["side".to_owned()])
    }

    #[node(next = END)]
    fn side_two(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["side_two".to_owned()])
    }

    #[node(next = END)]
    fn join(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["join".to_owned()])
    }
}

#[tokio::test]
async fn an_empty_send_beside_another_branch_lets_that_branch_finish() {
    let app = empty_send_beside_a_branch::graph().compile().unwrap();
    let out = app.invoke(empty_send_beside_a_branch::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.trail, ["fan", "side", "side_two"]);
    assert_eq!(out.steps, 2);
}

/// Async workers: ten thousand futures polled together in one step.
#[graph]
mod async_workers {
    use super::*;

    #[state]
    pub struct State {
        pub count: u64,
        #[reducer(add)]
        pub total: u64,
        #[reducer(add)]
        pub join_calls: u32,
    }

    #[node(entry, send = worker)]
    fn fan(state: &State) -> Vec<Item> {
        (1..=state.count).map(|n| Item { n }).collect()
    }

    #[node(next = join)]
    async fn worker(item: &Item) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().total(item.n)
    }

    #[node(next = END)]
    async fn join(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().join_calls(1)
    }
}

#[tokio::test]
async fn ten_thousand_async_workers_and_one_join() {
    let app = async_workers::graph().compile().unwrap();
    let out = app.invoke(async_workers::StateUpdate::new().count(10_000), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.total, 10_000 * 10_001 / 2);
    assert_eq!(out.state.join_calls, 1);
    assert_eq!(out.steps, 3);
}

/// A second payload type, for a Send with two targets.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Label {
    /// The text the worker records.
    pub text: String,
}

/// `route` sends to two targets with the generated `RouteSend` enum.
#[graph]
mod two_targets {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub trail: Vec<String>,
        #[reducer(add)]
        pub join_calls: u32,
    }

    #[node(entry, send = numbers | labels)]
    fn route(_state: &State) -> Vec<RouteSend> {
        vec![
            RouteSend::Labels(Label { text: "first".to_owned() }),
            RouteSend::Numbers(Item { n: 2 }),
            RouteSend::Labels(Label { text: "third".to_owned() }),
        ]
    }

    #[node(next = join)]
    fn numbers(item: &Item) -> StateUpdate {
        StateUpdate::new().trail(vec![format!("number {}", item.n)])
    }

    #[node(next = join)]
    async fn labels(label: &Label) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().trail(vec![format!("label {}", label.text)])
    }

    #[node(next = END)]
    fn join(_state: &State) -> StateUpdate {
        StateUpdate::new().join_calls(1)
    }
}

#[tokio::test]
async fn a_send_to_two_targets_runs_each_payload_on_its_target_in_send_order() {
    let app = two_targets::graph().compile().unwrap();
    let out = app.invoke(two_targets::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.trail, ["label first", "number 2", "label third"]);
    assert_eq!(out.state.join_calls, 1);
    assert_eq!(out.steps, 3);
}
