use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        pub turns: u32,
    }

    #[node(entry, next = END, route = should_continue)]
    fn agent(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    fn should_continue(_state: &State) {}
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
