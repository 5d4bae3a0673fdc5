use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        pub turns: u32,
    }

    #[node(entry, send = END)]
    fn dispatch(_state: &State) -> Vec<u32> {
        vec![1, 2, 3]
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
