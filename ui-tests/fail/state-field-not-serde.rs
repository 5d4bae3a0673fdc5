use graphwright::prelude::*;

/// A plan the user wrote without the serde derives (its JSON Schema is there).
#[derive(Clone, Debug, Default, schemars::JsonSchema)]
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
