//! `next = [a, b]` fan-out, `join` (waits for every source), and `defer` (waits until nothing
//! else is pending).

use graphwright::prelude::*;

#[graph]
mod gather {
    #[state]
    pub struct State {
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    fn mark(name: &str) -> StateUpdate {
        StateUpdate::new().trail(vec![name.to_owned()])
    }

    #[node(entry, next = [short, long_1])]
    fn split(_state: &State) -> StateUpdate {
        mark("split")
    }

    #[node(next = merge)]
    fn short(_state: &State) -> StateUpdate {
        mark("short")
    }

    #[node(next = long_2)]
    fn long_1(_state: &State) -> StateUpdate {
        mark("long_1")
    }

    #[node(next = merge)]
    fn long_2(_state: &State) -> StateUpdate {
        mark("long_2")
    }

    /// Runs once, after both `short` and `long_2`.
    #[node(join, next = tidy)]
    fn merge(state: &State) -> StateUpdate {
        assert!(state.trail.iter().any(|t| t == "short"));
        assert!(state.trail.iter().any(|t| t == "long_2"));
        mark("merge")
    }

    #[node(next = END, defer)]
    async fn tidy(_state: &State) -> StateUpdate {
        mark("tidy")
    }
}

fn main() {
    let app = gather::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(app.invoke(gather::State::default(), &RunConfig::default())).unwrap();
    let trail = out.state.trail;
    assert_eq!(trail.first().map(String::as_str), Some("split"));
    assert_eq!(trail.iter().filter(|t| *t == "merge").count(), 1, "{trail:?}");
    assert_eq!(&trail[trail.len() - 2..], ["merge", "tidy"], "{trail:?}");
}
