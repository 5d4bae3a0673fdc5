use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        pub question: String,
    }

    #[node(entry, subgraph, next = END)]
    fn research(state: &State) -> StateGraph<State> {
        let _ = state;
        StateGraph::new()
    }
}

fn main() {
    let _ = support::graph().compile();
}
