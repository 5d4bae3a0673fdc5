//! `retry = ..` and `timeout = ..` on nodes.

use graphwright::prelude::*;
use std::time::Duration;

#[graph]
mod flaky {
    use super::*;

    #[state]
    pub struct State {
        pub attempts: u32,
        pub done: bool,
    }

    /// Fails on its first attempt; the retry policy runs it again.
    #[node(entry, next = bounded, retry = RetryPolicy::new(3).initial_backoff(Duration::from_millis(1)))]
    async fn unreliable(rt: &Runtime) -> Result<StateUpdate, NodeError> {
        if rt.attempt() < 2 {
            return Err(NodeError::msg("try again"));
        }
        Ok(StateUpdate::new().attempts(rt.attempt()))
    }

    #[node(next = END, timeout = Duration::from_secs(5), retry = RetryPolicy::new(2))]
    async fn bounded(_state: &State) -> StateUpdate {
        StateUpdate::new().done(true)
    }
}

fn main() {
    let app = flaky::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(app.invoke(flaky::State::default(), &RunConfig::default())).unwrap();
    assert_eq!(out.state.attempts, 2);
    assert!(out.state.done);
}
