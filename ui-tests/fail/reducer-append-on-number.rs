use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        #[reducer(append)]
        pub tokens_used: u64,
    }

    #[node(entry, next = END)]
    fn count(_state: &State) -> StateUpdate {
        StateUpdate::new().tokens_used(1)
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
