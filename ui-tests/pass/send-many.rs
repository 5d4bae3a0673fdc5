//! `send = a | b`: the generated `{Node}Send` enum carries each target's payload; returned as
//! `Vec<..>`, `(StateUpdate, Vec<..>)`, and inside `Result` with an error type of its own
//! (`hygiene.rs` has `Result<Vec<..>, NodeError>`).

use graphwright::prelude::*;

#[graph]
mod route_work {
    #[state]
    pub struct State {
        #[reducer(append)]
        pub words: Vec<String>,
        #[reducer(add)]
        pub total: u64,
        pub mode: u8,
    }

    #[node(entry, next = plain | with_update | in_result)]
    fn choose(state: &State) -> (StateUpdate, ChooseNext) {
        let next = match state.mode {
            0 => ChooseNext::Plain,
            1 => ChooseNext::WithUpdate,
            _ => ChooseNext::InResult,
        };
        (StateUpdate::new(), next)
    }

    #[node(send = shout | count)]
    fn plain(_state: &State) -> Vec<PlainSend> {
        vec![PlainSend::Shout("hi".to_owned()), PlainSend::Count(2), PlainSend::Count(3)]
    }

    #[node(send = shout | count)]
    async fn with_update(_state: &State) -> (StateUpdate, Vec<WithUpdateSend>) {
        (StateUpdate::new().total(100), vec![WithUpdateSend::Shout("yo".to_owned())])
    }

    #[node(send = count | shout)]
    fn in_result(_state: &State) -> Result<(StateUpdate, Vec<InResultSend>), std::fmt::Error> {
        Ok((StateUpdate::new(), vec![InResultSend::Count(5), InResultSend::Shout("ok".to_owned())]))
    }

    #[node(next = END)]
    fn shout(word: &String) -> StateUpdate {
        StateUpdate::new().words(vec![word.to_uppercase()])
    }

    #[node(next = END)]
    async fn count(n: &u64) -> StateUpdate {
        StateUpdate::new().total(*n)
    }
}

fn main() {
    let app = route_work::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let run = |mode: u8| {
        let input = route_work::StateUpdate::new().mode(mode);
        rt.block_on(app.invoke(input, &RunConfig::default())).unwrap().state
    };
    let state = run(0);
    assert_eq!((state.words, state.total), (vec!["HI".to_owned()], 5));
    let state = run(1);
    assert_eq!((state.words, state.total), (vec!["YO".to_owned()], 100));
    let state = run(2);
    assert_eq!((state.words, state.total), (vec!["OK".to_owned()], 5));
}
