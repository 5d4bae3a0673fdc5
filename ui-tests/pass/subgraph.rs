//! A subgraph node in the macro: a child of another state type, mapped both ways by `From`,
//! and a child of the parent's own state.
use graphwright::prelude::*;

#[graph]
mod lookup {
    #[state]
    pub struct State {
        pub query: String,
        #[reducer(append)]
        pub hits: Vec<String>,
    }

    #[node(entry, next = END)]
    fn search(state: &State) -> StateUpdate {
        StateUpdate::new().hits(vec![format!("{} (doc)", state.query)])
    }
}

#[graph]
mod polish {
    #[state]
    pub struct State {
        pub question: String,
        pub answer: String,
    }

    #[node(entry, next = END)]
    fn shorten(state: &State) -> StateUpdate {
        StateUpdate::new().answer(state.answer.trim().to_owned())
    }
}

#[graph(state = super::polish::State)]
mod support {
    use super::polish::{State, StateUpdate};
    use graphwright::prelude::*;

    #[node(entry, subgraph, next = finish)]
    fn research() -> StateGraph<super::lookup::State> {
        super::lookup::graph()
    }

    #[node(subgraph, next = END)]
    fn finish() -> CompiledGraph<State> {
        super::polish::graph().compile().expect("polish is wired")
    }

    #[allow(dead_code)]
    fn unused(_: StateUpdate) {}
}

impl From<&polish::State> for lookup::State {
    fn from(parent: &polish::State) -> Self {
        Self { query: parent.question.clone(), hits: Vec::new() }
    }
}

impl From<lookup::State> for polish::StateUpdate {
    fn from(done: lookup::State) -> Self {
        polish::StateUpdate::new().answer(format!("  {}  ", done.hits.join(", ")))
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let app = support::graph().compile().unwrap();
    let input = polish::StateUpdate::new().question("tides".to_owned());
    let out = app.invoke(input, &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.answer, "tides (doc)");
}
