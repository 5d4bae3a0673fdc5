use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        #[reducer(add)]
        #[reducer(max)]
        pub turns: u32,
    }

    #[node(entry, next = END)]
    fn ingress(_state: &State) -> StateUpdate {
        StateUpdate::new().turns(1)
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
