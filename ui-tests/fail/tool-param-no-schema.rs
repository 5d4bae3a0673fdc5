use graphwright::prelude::*;

/// A place the model names.
pub struct Place {
    pub name: String,
}

/// Look up the weather at a place.
#[tool]
fn weather(place: Place) -> String {
    place.name
}

fn main() {
    let _ = tools![Weather];
}
