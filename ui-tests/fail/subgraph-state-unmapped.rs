use graphwright::prelude::*;

#[graph]
mod lookup {
    #[state]
    pub struct State {
        pub query: String,
        pub hits: Vec<String>,
    }

    #[node(entry, next = END)]
    fn search(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }
}

#[graph]
mod support {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub question: String,
    }

    #[node(entry, subgraph, next = END)]
    fn research() -> StateGraph<super::lookup::State> {
        super::lookup::graph()
    }
}

fn main() {
    let _ = support::graph().compile();
}
