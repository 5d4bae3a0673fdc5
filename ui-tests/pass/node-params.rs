//! Every parameter shape, sync and async: none, `&State`, `&Runtime<..>`, and both in either order.

use graphwright::prelude::*;

#[graph]
mod params {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    fn mark(name: &str) -> StateUpdate {
        StateUpdate::new().trail(vec![name.to_owned()])
    }

    #[node(entry, next = sync_state)]
    fn sync_none() -> StateUpdate {
        mark("sync_none")
    }

    #[node(next = sync_runtime)]
    fn sync_state(state: &State) -> StateUpdate {
        assert_eq!(state.trail, ["sync_none"]);
        mark("sync_state")
    }

    #[node(next = sync_both)]
    fn sync_runtime(rt: &Runtime) -> StateUpdate {
        assert_eq!(rt.node(), "sync_runtime");
        mark("sync_runtime")
    }

    #[node(next = sync_both_swapped)]
    fn sync_both(state: &State, rt: &Runtime) -> StateUpdate {
        assert_eq!(state.trail.len() as u64, rt.step() - 1);
        mark("sync_both")
    }

    #[node(next = async_none)]
    fn sync_both_swapped(rt: &Runtime, state: &State) -> StateUpdate {
        assert_eq!(state.trail.len() as u64, rt.step() - 1);
        mark("sync_both_swapped")
    }

    #[node(next = async_state)]
    async fn async_none() -> StateUpdate {
        mark("async_none")
    }

    #[node(next = async_runtime)]
    async fn async_state(state: &State) -> StateUpdate {
        assert_eq!(state.trail.len(), 6);
        mark("async_state")
    }

    #[node(next = async_both)]
    async fn async_runtime(rt: &Runtime) -> StateUpdate {
        assert_eq!(rt.node(), "async_runtime");
        mark("async_runtime")
    }

    #[node(next = async_both_swapped)]
    async fn async_both(state: &State, rt: &Runtime) -> StateUpdate {
        assert_eq!(state.trail.len() as u64, rt.step() - 1);
        mark("async_both")
    }

    #[node(next = END)]
    async fn async_both_swapped(rt: &Runtime, state: &State) -> StateUpdate {
        assert_eq!(state.trail.len() as u64, rt.step() - 1);
        mark("async_both_swapped")
    }
}

fn main() {
    let app = params::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(app.invoke(params::State::default(), &RunConfig::default())).unwrap();
    assert_eq!(
        out.state.trail,
        [
            "sync_none",
            "sync_state",
            "sync_runtime",
            "sync_both",
            "sync_both_swapped",
            "async_none",
            "async_state",
            "async_runtime",
            "async_both",
            "async_both_swapped",
        ]
    );
    assert_eq!(params::Node::ALL.len(), 10);
    assert_eq!(params::Node::SyncBoth.name(), "sync_both");
}
