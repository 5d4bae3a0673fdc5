//! Map-reduce with `send = worker`: `Vec<P>`, `(StateUpdate, Vec<P>)`, and both inside `Result`;
//! payload targets sync and async, with and without `&Runtime`.

use graphwright::prelude::*;
use serde::{Deserialize, Serialize};

/// One piece of work.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Job {
    pub n: u32,
}

#[graph]
mod fan {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub results: Vec<u32>,
        #[reducer(add)]
        pub dispatched: u32,
    }

    #[node(entry, next = [plain, with_update, plain_result, update_result])]
    fn start(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(send = square)]
    fn plain(_state: &State) -> Vec<Job> {
        vec![Job { n: 1 }, Job { n: 2 }]
    }

    #[node(send = cube)]
    async fn with_update(_state: &State) -> (StateUpdate, Vec<Job>) {
        (StateUpdate::new().dispatched(1), vec![Job { n: 3 }])
    }

    #[node(send = double)]
    fn plain_result(_state: &State) -> Result<Vec<u32>, NodeError> {
        Ok(vec![10])
    }

    #[node(send = negate)]
    async fn update_result(_state: &State) -> Result<(StateUpdate, Vec<i64>), std::io::Error> {
        Ok((StateUpdate::new().dispatched(1), vec![7]))
    }

    #[node(next = END)]
    fn square(job: &Job) -> StateUpdate {
        StateUpdate::new().results(vec![job.n * job.n])
    }

    #[node(next = END)]
    async fn cube(job: &Job, rt: &Runtime) -> StateUpdate {
        assert_eq!(rt.node(), "cube");
        StateUpdate::new().results(vec![job.n * job.n * job.n])
    }

    #[node(next = END)]
    fn double(n: &u32, _rt: &Runtime) -> Result<StateUpdate, NodeError> {
        Ok(StateUpdate::new().results(vec![n * 2]))
    }

    #[node(next = END)]
    async fn negate(n: &i64) -> StateUpdate {
        StateUpdate::new().results(vec![u32::try_from(100 - n).unwrap()])
    }
}

fn main() {
    let app = fan::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(app.invoke(fan::State::default(), &RunConfig::default())).unwrap();
    let mut results = out.state.results.clone();
    results.sort_unstable();
    assert_eq!(results, [1, 4, 20, 27, 93]);
    assert_eq!(out.state.dispatched, 2);
    assert!(fan::MERMAID.contains("plain -. send .-> square"));
}
