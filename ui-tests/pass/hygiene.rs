//! The hygiene trap: prelude names shadowed at the crate root and inside the graph module.
//! Generated code names everything by absolute path, so the graph still compiles and runs.

#![allow(dead_code, non_camel_case_types, unused_imports)]

use graphwright::prelude::*;

// Shadow the prelude at the crate root.
type Result = ();
type Option = ();
struct Vec;
struct String;
struct Box;
struct Ok;
struct Err;
struct Some;
struct None;
struct Clone;
struct Debug;
struct Default;
struct Send;
struct Sync;
struct Into;
struct From;
mod core {}
mod std {}
mod serde {}

#[graph]
pub mod shadowed {
    use super::*;

    // And again inside the graph module.
    type Result = ();
    type Option = ();
    struct Vec;
    struct String;
    struct Box;
    struct Ok;
    struct Err;
    struct Some;
    struct None;
    struct Clone;
    struct Debug;
    struct Default;
    struct Into;
    struct From;
    struct Sized;
    struct Iterator;
    struct PartialEq;
    struct Eq;
    struct Hash;
    struct Copy;
    mod core {}
    mod std {}
    mod serde {}

    #[state]
    pub struct State {
        #[reducer(append)]
        pub words: ::std::vec::Vec<::std::string::String>,
        #[reducer(add)]
        pub count: u32,
        pub flag: bool,
    }

    #[node(entry, next = fan | finish)]
    fn start(_state: &State) -> (StateUpdate, StartNext) {
        (StateUpdate::new().count(1), StartNext::Fan)
    }

    #[node(send = work | other)]
    async fn fan(_rt: &Runtime) -> ::core::result::Result<::std::vec::Vec<FanSend>, NodeError> {
        ::core::result::Result::Ok(::std::vec![FanSend::Work(2), FanSend::Other(::std::string::String::from("x"))])
    }

    #[node(next = finish)]
    fn work(n: &u32) -> StateUpdate {
        StateUpdate::new().count(*n)
    }

    #[node(next = finish)]
    async fn other(word: &::std::string::String, _rt: &Runtime) -> StateUpdate {
        StateUpdate::new().words(::std::vec![word.clone()])
    }

    #[node(join, next = check, retry = RetryPolicy::new(2), timeout = ::std::time::Duration::from_secs(1))]
    async fn finish(_state: &State) -> StateUpdate {
        StateUpdate::new().flag(true)
    }

    #[node(next = start | END, route = done, defer)]
    fn check(_state: &State) -> ::core::result::Result<StateUpdate, NodeError> {
        ::core::result::Result::Ok(StateUpdate::new())
    }

    fn done(_state: &State) -> CheckNext {
        CheckNext::End
    }
}

fn main() {
    let app = shadowed::graph().compile().unwrap();
    let rt = ::tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(app.invoke(shadowed::State::default(), &RunConfig::default())).unwrap();
    assert_eq!(out.state.count, 3);
    assert_eq!(out.state.words, ["x"]);
    assert!(out.state.flag);
}
