use graphwright::prelude::*;

pub struct Ctx;

#[graph(contxt = Ctx)]
mod support {
    #[state]
    pub struct State {
        pub turns: u32,
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
