use graphwright::prelude::*;

#[entrypoint]
async fn sum(a: u64, b: u64) -> u64 {
    a + b
}

fn main() {}
