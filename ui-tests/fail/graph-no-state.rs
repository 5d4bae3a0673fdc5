use graphwright::prelude::*;

#[graph]
mod support {
    #[node(entry, next = END)]
    fn ingress() {}
}

fn main() {}
