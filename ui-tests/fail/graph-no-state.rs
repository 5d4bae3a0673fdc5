use graphwright::prelude::*;

#[graph]
mod support {
    #[node(entry, next = END)]
    fn ingress() {}
}

fn main() {
    let _ = support::graph().compile();
    let _ = (support::MERMAID, support::Node::ALL);
}
