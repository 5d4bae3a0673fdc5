use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        #[reducer(append)]
        pub results: Vec<u32>,
    }

    #[node(entry, next = finish | END, send = worker)]
    fn dispatch(_state: &State) -> Vec<u32> {
        vec![1, 2, 3]
    }

    #[node(next = finish)]
    fn worker(item: &u32) -> StateUpdate {
        StateUpdate::new().results(vec![*item])
    }

    #[node(next = END)]
    fn finish(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
