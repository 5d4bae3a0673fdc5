use graphwright::prelude::*;

#[state]
pub struct State {
    pub turns: u32,
}

#[node(entry, next = END)]
fn ingress(_state: &State) -> StateUpdate {
    StateUpdate::new()
}

fn main() {}
