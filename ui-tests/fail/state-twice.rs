use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        pub turns: u32,
    }

    #[state]
    pub struct Other {
        pub notes: Vec<String>,
    }

    #[node(entry, next = END)]
    fn ingress(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
