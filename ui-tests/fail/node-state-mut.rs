use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        pub turns: u32,
    }

    #[node(entry, next = END)]
    fn ingress(state: &mut State) -> StateUpdate {
        state.turns += 1;
        StateUpdate::new()
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
