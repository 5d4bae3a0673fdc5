use graphwright::prelude::*;

#[graph]
fn support() {}

fn main() {
    support();
}
