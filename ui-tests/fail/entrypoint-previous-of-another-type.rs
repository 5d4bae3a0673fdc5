use graphwright::prelude::*;

#[entrypoint]
async fn count(add: u64, previous: Option<String>) -> u64 {
    add + previous.map_or(0, |p| p.len() as u64)
}

fn main() {}
