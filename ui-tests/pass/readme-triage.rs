//! The crate-level example: a sync branching entry, an async node, append and add reducers.

use graphwright::prelude::*;

#[graph]
mod triage {

    #[state]
    pub struct State {
        pub question: String,
        #[reducer(append)]
        pub trail: Vec<String>,
        #[reducer(add)]
        pub attempts: u32,
    }

    /// Decide whether the question needs a lookup.
    #[node(entry, next = lookup | answer)]
    fn classify(state: &State) -> (StateUpdate, ClassifyNext) {
        let update = StateUpdate::new().trail(vec!["classify".into()]).attempts(1);
        if state.question.ends_with('?') {
            (update, ClassifyNext::Lookup)
        } else {
            (update, ClassifyNext::Answer)
        }
    }

    #[node(next = answer)]
    async fn lookup(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["lookup".into()])
    }

    #[node(next = END)]
    fn answer(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["answer".into()])
    }
}

fn main() {
    let app = triage::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let input = triage::StateUpdate::new().question("what is a super-step?".to_owned());
    let out = rt.block_on(app.invoke(input, &RunConfig::default())).unwrap();
    assert_eq!(out.state.trail, ["classify", "lookup", "answer"]);
    assert_eq!(out.state.attempts, 1);
    assert!(triage::MERMAID.contains("classify -.-> lookup"));
}
