use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        pub turns: u32,
    }

    #[node(entry, next = generator | tools)]
    async fn planner(_state: &State) -> (StateUpdate, PlannerNext) {
        (StateUpdate::new(), PlannerNext::Summarizer)
    }

    #[node(next = planner)]
    async fn tools(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = END)]
    async fn generator(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
