use graphwright::prelude::*;

#[graph]
mod support {
    use super::*;

    #[state]
    pub struct State {
        pub turns: u32,
    }

    #[node(entry, next = tools | END)]
    fn planner(state: &State) -> (StateUpdate, PlannerNext) {
        if state.turns > 2 {
            (StateUpdate::new(), PlannerNext::Generator)
        } else {
            (StateUpdate::new(), PlannerNext::Tools)
        }
    }

    #[node(next = planner)]
    fn tools(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = END)]
    fn generator(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }
}

fn main() {
    let _ = support::graph().compile();
}
