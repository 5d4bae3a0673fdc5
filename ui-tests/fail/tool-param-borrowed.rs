use graphwright::prelude::*;

/// Look up the weather.
#[tool]
fn weather(city: &str) -> String {
    city.to_owned()
}

fn main() {
    let _ = tools![Weather];
}
