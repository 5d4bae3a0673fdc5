use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        #[reducer(append)]
        pub results: Vec<u32>,
    }

    #[node(entry, next = END)]
    fn worker(item: &u32) -> StateUpdate {
        StateUpdate::new().results(vec![*item])
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
