use graphwright::prelude::*;

#[state]
struct Count {
    n: u32,
}

#[start(next = a | b)]
fn route(_count: &Count) -> u32 {
    0
}

fn main() {}
