use graphwright::prelude::*;

pub struct Handle;

#[task]
async fn fetch(handle: Handle) -> String {
    let _ = handle;
    "page".to_owned()
}

fn main() {}
