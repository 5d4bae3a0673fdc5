//! `#[graph(context = Ctx)]`: nodes read a typed context the run is given.

use graphwright::prelude::*;

/// What the run knows and no model sees.
pub struct Ctx {
    pub user_id: String,
}

#[graph(context = Ctx)]
mod greet {
    use super::*;

    #[state]
    pub struct State {
        pub greeting: String,
    }

    #[node(entry, next = sign)]
    fn hello(rt: &Runtime<Ctx>) -> StateUpdate {
        StateUpdate::new().greeting(format!("hello {}", rt.context().user_id))
    }

    #[node(next = END)]
    async fn sign(state: &State, rt: &Runtime<Ctx>) -> Result<StateUpdate, NodeError> {
        Ok(StateUpdate::new().greeting(format!("{}, from {}", state.greeting, rt.context().user_id.len())))
    }
}

fn main() {
    let app = greet::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let cfg = RunConfig::default().context(Ctx { user_id: "u1".into() });
    let out = rt.block_on(app.invoke(greet::State::default(), &cfg)).unwrap();
    assert_eq!(out.state.greeting, "hello u1, from 2");
    let missing = rt.block_on(app.invoke(greet::State::default(), &RunConfig::default()));
    assert!(missing.is_err(), "a graph with a context needs one");
}
