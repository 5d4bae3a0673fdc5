use graphwright::prelude::*;
use serde::{Deserialize, Serialize};

/// A plan the user stores in the state but never described with a JSON Schema.
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub struct Plan {
    pub steps: Vec<String>,
}

#[graph]
mod planner {
    use super::*;

    #[state]
    pub struct State {
        pub plan: Plan,
        #[reducer(add)]
        pub rounds: u32,
    }

    #[node(entry, next = END)]
    fn plan(state: &State) -> StateUpdate {
        StateUpdate::new().rounds(state.rounds + 1)
    }
}

fn main() {
    let _ = planner::graph().compile();
}
