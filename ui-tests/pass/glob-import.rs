//! `use super::*;` in a graph module whose code names nothing from outside: `#[graph]` consumes
//! the `#[state]` and `#[node]` markers the glob imported, and must not leave it reported as
//! unused (nor as a wildcard import, under clippy's pedantic lints).

#![deny(unused_imports)]

use graphwright::prelude::*;

#[graph]
mod review {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(add)]
        pub rounds: u32,
    }

    #[node(entry, next = END)]
    fn write(_state: &State) -> StateUpdate {
        StateUpdate::new().rounds(1)
    }
}

#[graph]
mod prelude_glob {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub done: bool,
    }

    #[node(entry, next = END)]
    fn finish(_state: &State) -> StateUpdate {
        StateUpdate::new().done(true)
    }
}

fn main() {
    let _ = (review::graph().compile(), prelude_glob::graph().compile());
}
