use graphwright::prelude::*;

#[tool]
fn weather(city: String) -> String {
    city
}

fn main() {
    let _ = tools![Weather];
}
