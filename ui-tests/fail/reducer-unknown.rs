use graphwright::prelude::*;

#[graph]
mod support {
    #[state]
    pub struct State {
        #[reducer(apend)]
        pub notes: Vec<String>,
    }

    #[node(entry, next = END)]
    fn note(_state: &State) -> StateUpdate {
        StateUpdate::new().notes(vec!["seen".to_owned()])
    }
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
