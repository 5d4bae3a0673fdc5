use graphwright::prelude::*;

#[task]
async fn fetch(url: &str) -> String {
    url.to_owned()
}

fn main() {}
