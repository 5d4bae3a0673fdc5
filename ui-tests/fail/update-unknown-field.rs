use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        #[reducer(add)]
        pub count: u32,
    }

    #[node(entry, next = END)]
    fn counter(_state: &State) -> StateUpdate {
        StateUpdate::new().cnt(1)
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
