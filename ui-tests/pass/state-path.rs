//! `#[graph(state = path)]`: a state declared outside the module, taken by nodes as `&State`.

use graphwright::prelude::*;

/// A counter kept outside the graph module.
#[state]
pub struct Counter {
    /// How far it got.
    pub count: u32,
}

#[graph(state = super::Counter)]
mod chain {
    use super::{Counter, CounterUpdate};

    #[node(entry, next = second)]
    fn first(state: &Counter) -> CounterUpdate {
        CounterUpdate::new().count(state.count + 1)
    }

    #[node(next = END)]
    async fn second(state: &Counter) -> CounterUpdate {
        CounterUpdate::new().count(state.count + 1)
    }
}

fn main() {
    let app = chain::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().build().unwrap();
    let out = rt.block_on(app.invoke(Counter::default(), &RunConfig::default())).unwrap();
    assert_eq!(out.state.count, 2);
}
