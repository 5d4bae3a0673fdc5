//! `route = f`: a branching node that returns only an update, and a sync router that reads the
//! state after the step.

use graphwright::prelude::*;

#[graph]
mod agent {
    #[state]
    pub struct State {
        #[reducer(add)]
        pub calls: u32,
    }

    #[node(entry, next = tools | END, route = should_continue)]
    async fn model(_state: &State) -> StateUpdate {
        StateUpdate::new().calls(1)
    }

    /// Keep calling tools until three model calls have been made.
    fn should_continue(state: &State) -> ModelNext {
        if state.calls < 3 { ModelNext::Tools } else { ModelNext::End }
    }

    #[node(next = model)]
    fn tools(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }
}

fn main() {
    let app = agent::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(app.invoke(agent::State::default(), &RunConfig::default())).unwrap();
    assert_eq!(out.state.calls, 3);
    assert!(agent::MERMAID.contains("model -.-> tools"));
}
