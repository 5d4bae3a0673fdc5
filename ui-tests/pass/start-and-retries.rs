//! Conditional entry (`#[start]` router and Sends from START) and several retry policies.

use graphwright::prelude::*;
use std::time::Duration;

#[graph]
mod intake {
    use super::*;

    #[state]
    pub struct State {
        pub urgent: bool,
        pub jobs: Vec<u32>,
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[start(next = triage | file)]
    fn route(state: &State) -> StartNext {
        if state.urgent { StartNext::Triage } else { StartNext::File }
    }

    #[start(send = work)]
    fn split(state: &State) -> Vec<u32> {
        state.jobs.clone()
    }

    #[node(next = file, retry = [
        RetryPolicy::new(5).retry_on(|e| e.to_string().contains("busy")),
        RetryPolicy::new(2).initial_backoff(Duration::ZERO),
    ])]
    fn triage(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["triage".into()])
    }

    #[node(next = END)]
    fn file(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["file".into()])
    }

    #[node(next = END)]
    fn work(job: &u32) -> StateUpdate {
        StateUpdate::new().log(vec![format!("job {job}")])
    }
}

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let app = intake::graph().compile().unwrap();
    let input = intake::State { urgent: true, jobs: vec![1, 2], log: Vec::new() };
    let out = runtime.block_on(app.invoke(input, &RunConfig::default())).unwrap();
    assert_eq!(out.state.log, ["triage", "job 1", "job 2", "file"]);
    assert_eq!(<intake::StartNext as Route>::TARGETS, ["triage", "file"]);
}
