use graphwright::prelude::*;

#[state]
pub struct State<T> {
    pub value: T,
}

fn main() {}
