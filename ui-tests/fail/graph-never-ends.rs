use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        pub turns: u32,
    }

    #[node(entry, next = a | END)]
    fn ingress(_state: &State) -> (StateUpdate, IngressNext) {
        (StateUpdate::new(), IngressNext::A)
    }

    #[node(next = b)]
    fn a(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = a)]
    fn b(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
