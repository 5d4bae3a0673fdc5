//! Every reducer folds the writes of a real run as documented, the writes of one step are
//! folded in task order, and a step whose writes conflict is rejected whole.

// The graph modules are private to this test; their items are `pub` the way users write them.
#![allow(unreachable_pub)]

use graphwright::prelude::*;
use std::collections::{BTreeMap, HashSet};
use std::sync::Mutex;

/// A custom reducer for `with = ..`: keeps the longer text.
fn keep_longest(current: &mut String, update: String) {
    if update.len() > current.len() {
        *current = update;
    }
}

/// Every reducer, written by one entry node and then by two nodes of one parallel step.
#[graph]
mod every {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(add)]
        pub total: i64,
        #[reducer(append)]
        pub log: Vec<String>,
        #[reducer(merge)]
        pub scores: BTreeMap<String, u32>,
        #[reducer(union)]
        pub tags: HashSet<String>,
        #[reducer(max)]
        pub best: u32,
        #[reducer(min)]
        pub worst: i32,
        #[reducer(with = keep_longest)]
        pub longest: String,
        pub last: String,
    }

    #[node(entry, next = [a, b])]
    fn seed(_state: &State) -> StateUpdate {
        StateUpdate::new()
            .total(1)
            .log(vec!["seed".to_owned()])
            .scores(BTreeMap::from([("x".to_owned(), 1), ("y".to_owned(), 2)]))
            .tags(HashSet::from(["p".to_owned()]))
            .best(5)
            .worst(5)
            .longest("ab".to_owned())
    }

    #[node(next = END)]
    fn a(_state: &State) -> StateUpdate {
        StateUpdate::new()
            .total(10)
            .log(vec!["a".to_owned()])
            .scores(BTreeMap::from([("y".to_owned(), 20), ("k".to_owned(), 1)]))
            .tags(HashSet::from(["q".to_owned()]))
            .best(3)
            .worst(-3)
            .longest("abcd".to_owned())
            .last("a".to_owned())
    }

    #[node(next = END)]
    async fn b(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new()
            .total(100)
            .log(vec!["b1".to_owned(), "b2".to_owned()])
            .scores(BTreeMap::from([("k".to_owned(), 2), ("z".to_owned(), 3)]))
            .tags(HashSet::from(["p".to_owned(), "r".to_owned()]))
            .best(9)
            .worst(7)
            .longest("abc".to_owned())
    }
}

#[tokio::test]
async fn every_reducer_folds_the_writes_of_a_parallel_step() {
    let app = every::graph().compile().unwrap();
    let out = app.invoke(every::StateUpdate::new().total(1000), &RunConfig::default()).await.unwrap();
    let s = out.state;
    assert_eq!(s.total, 1111, "add: input + seed + a + b");
    assert_eq!(s.log, ["seed", "a", "b1", "b2"], "append: in task order");
    let scores: Vec<(&str, u32)> = s.scores.iter().map(|(k, v)| (k.as_str(), *v)).collect();
    assert_eq!(scores, [("k", 2), ("x", 1), ("y", 20), ("z", 3)], "merge: later tasks overwrite keys");
    assert_eq!(s.tags, HashSet::from(["p".to_owned(), "q".to_owned(), "r".to_owned()]), "union");
    assert_eq!(s.best, 9, "max");
    assert_eq!(s.worst, -3, "min");
    assert_eq!(s.longest, "abcd", "with = keep_longest");
    assert_eq!(s.last, "a", "last value");
    assert_eq!(out.steps, 2);
}

/// The `messages` reducer: `remove_all` deletes every message folded before it.
#[graph]
mod chat {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
        pub count_before_reset: usize,
    }

    #[node(entry, next = reset)]
    fn greet(_state: &State) -> StateUpdate {
        StateUpdate::new().messages(vec![Message::assistant("hello").with_id("2"), Message::user("no id yet")])
    }

    #[node(next = END)]
    fn reset(state: &State) -> StateUpdate {
        StateUpdate::new().count_before_reset(state.messages.len()).messages(vec![
            Message::system("gone too"),
            Message::remove_all(),
            Message::user("fresh"),
        ])
    }
}

#[tokio::test]
async fn messages_remove_all_clears_the_history() {
    let app = chat::graph().compile().unwrap();
    let input = chat::StateUpdate::new().messages(vec![Message::user("hi").with_id("1")]);
    let out = app.invoke(input, &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.count_before_reset, 3);
    let texts: Vec<&str> = out.state.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["fresh"], "remove_all clears what came before it, in the same write too");
    assert!(out.state.messages[0].id.is_some(), "a message without an id gets one");
}

/// Append, replace by id and remove by id, from two nodes of one step.
#[graph]
mod chat_history {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = [edit, prune])]
    fn greet(_state: &State) -> StateUpdate {
        StateUpdate::new().messages(vec![Message::assistant("hello").with_id("2"), Message::user("no id yet")])
    }

    #[node(next = END)]
    fn edit(_state: &State) -> StateUpdate {
        StateUpdate::new()
            .messages(vec![Message::assistant("hello again").with_id("2"), Message::user("bye").with_id("3")])
    }

    #[node(next = END)]
    fn prune(_state: &State) -> StateUpdate {
        StateUpdate::new().messages(vec![Message::remove("1"), Message::remove("missing")])
    }
}

#[tokio::test]
async fn messages_replace_by_id_in_place_and_remove_by_id() {
    let app = chat_history::graph().compile().unwrap();
    let input = chat_history::StateUpdate::new().messages(vec![Message::user("hi").with_id("1")]);
    let out = app.invoke(input, &RunConfig::default()).await.unwrap();
    let texts: Vec<&str> = out.state.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["hello again", "no id yet", "bye"], "replaced in place, `1` removed, `missing` ignored");
    let ids: Vec<Option<&str>> = out.state.messages.iter().map(|m| m.id.as_deref()).collect();
    assert_eq!(ids[0], Some("2"));
    assert_eq!(ids[2], Some("3"));
    assert!(ids[1].is_some_and(|id| !["1", "2", "3"].contains(&id)), "fresh id: {ids:?}");
    assert_eq!(out.state.messages[0].role, Role::Assistant);
}

/// `Overwrite` replaces a reducer field for one write; later writes fold as usual again.
#[graph]
mod overwrite {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub log: Vec<String>,
        #[reducer(add)]
        pub total: u32,
        pub last: String,
    }

    #[node(entry, next = reset)]
    fn fill(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["one".to_owned(), "two".to_owned()]).total(5)
    }

    #[node(next = more)]
    fn reset(_state: &State) -> StateUpdate {
        StateUpdate::new().log(Overwrite(vec!["reset".to_owned()])).total(Overwrite(1)).last(Overwrite("x".to_owned()))
    }

    #[node(next = END)]
    fn more(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["more".to_owned()]).total(2)
    }
}

#[tokio::test]
async fn overwrite_bypasses_the_reducer_for_one_write() {
    let app = overwrite::graph().compile().unwrap();
    let out =
        app.invoke(overwrite::StateUpdate::new().log(vec!["input".to_owned()]), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.log, ["reset", "more"]);
    assert_eq!(out.state.total, 3);
    assert_eq!(out.state.last, "x", "an Overwrite of a last-value field is a plain write");
}

/// Records every value the `audit` field's reducer folds, to see what a step applied.
static AUDITED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn audit(current: &mut Vec<String>, update: Vec<String>) {
    AUDITED.lock().unwrap().extend(update.iter().cloned());
    current.extend(update);
}

/// `a` and `b` both write the last-value field `last` in step 2; `a` also writes `audit`.
#[graph]
mod clash {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    pub static AFTER_CALLS: AtomicUsize = AtomicUsize::new(0);

    #[state]
    pub struct State {
        #[reducer(with = audit)]
        pub audit: Vec<String>,
        pub last: String,
    }

    #[node(entry, next = [a, b])]
    fn fan(_state: &State) -> StateUpdate {
        StateUpdate::new().audit(vec!["fan".to_owned()])
    }

    #[node(next = after)]
    fn a(_state: &State) -> StateUpdate {
        StateUpdate::new().audit(vec!["a".to_owned()]).last("a".to_owned())
    }

    #[node(next = after)]
    async fn b(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().last("b".to_owned())
    }

    #[node(next = END)]
    fn after(_state: &State) -> StateUpdate {
        AFTER_CALLS.fetch_add(1, Ordering::SeqCst);
        StateUpdate::new()
    }
}

#[tokio::test]
async fn two_last_value_writes_in_one_step_fail_the_step_whole() {
    let app = clash::graph().compile().unwrap();
    let error = app.invoke(clash::State::default(), &RunConfig::default()).await.unwrap_err();
    match &error {
        GraphError::InvalidUpdate { field, first, second, step } => {
            assert_eq!(*field, "last");
            assert_eq!((first.as_str(), second.as_str()), ("a", "b"));
            assert_eq!(*step, 2);
        }
        other => panic!("expected InvalidUpdate, got {other:?}"),
    }
    let message = error.to_string();
    for part in ["`last`", "`a`", "`b`", "step 2"] {
        assert!(message.contains(part), "{message:?} should name {part}");
    }
    assert_eq!(*AUDITED.lock().unwrap(), ["fan"], "nothing of step 2 was folded, not even `a`'s other field");
    assert_eq!(clash::AFTER_CALLS.load(std::sync::atomic::Ordering::SeqCst), 0, "no later step ran");
}

/// Two nodes of one step give the same reducer field an `Overwrite` each.
#[graph]
mod double_overwrite {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub log: Vec<String>,
        #[reducer(add)]
        pub total: u32,
    }

    #[node(entry, next = [a, b, c])]
    fn fan(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = END)]
    fn a(_state: &State) -> StateUpdate {
        StateUpdate::new().log(Overwrite(vec!["a".to_owned()])).total(1)
    }

    #[node(next = END)]
    fn b(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["b".to_owned()]).total(Overwrite(7))
    }

    #[node(next = END)]
    fn c(_state: &State) -> StateUpdate {
        StateUpdate::new().log(Overwrite(vec!["c".to_owned()]))
    }
}

#[tokio::test]
async fn two_overwrites_of_a_reducer_field_in_one_step_are_an_invalid_update() {
    let app = double_overwrite::graph().compile().unwrap();
    let error = app.invoke(double_overwrite::State::default(), &RunConfig::default()).await.unwrap_err();
    assert!(
        matches!(&error, GraphError::InvalidUpdate { field: "log", first, second, step: 2 } if first == "a" && second == "c"),
        "{error:?}"
    );
}

/// One `Overwrite` among plain reducer writes of the same step wins the step, as in LangGraph:
/// the step's plain writes of that field are dropped, whatever the task order.
#[graph]
mod one_overwrite {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub items: Vec<String>,
        #[reducer(add)]
        pub total: u32,
    }

    #[node(entry, next = [b, c])]
    fn fan(_state: &State) -> StateUpdate {
        StateUpdate::new().items(vec!["a".into()]).total(100)
    }

    #[node(next = d)]
    fn b(_state: &State) -> StateUpdate {
        StateUpdate::new().items(Overwrite(vec!["b".into()])).total(2)
    }

    #[node(next = d)]
    fn c(_state: &State) -> StateUpdate {
        StateUpdate::new().items(vec!["c".into()]).total(Overwrite(1))
    }

    #[node(next = END)]
    fn d(_state: &State) -> StateUpdate {
        StateUpdate::new().items(vec!["d".into()])
    }
}

#[tokio::test]
async fn an_overwrite_wins_its_step_over_the_reducer_writes_beside_it() {
    let app = one_overwrite::graph().compile().unwrap();
    let out = app.invoke(one_overwrite::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.items, ["b", "d"], "`b`'s overwrite drops `c`'s append of the same step; `d` appends after");
    assert_eq!(out.state.total, 1, "`c`'s overwrite drops `b`'s earlier add of the same step");
}

#[tokio::test]
async fn a_state_rebuilt_from_stored_writes_folds_an_overwrite_the_same_way() {
    let app = one_overwrite::graph().compile().unwrap();
    let cfg = RunConfig::thread("rebuilt").durability(graphwright::Durability::Sync);
    let out = app.invoke(one_overwrite::State::default(), &cfg).await.unwrap();
    for snapshot in app.state_history(&cfg).await.unwrap() {
        if snapshot.next == ["d"] {
            assert_eq!(snapshot.state.items, ["b"], "the checkpoint after the step, rebuilt from its writes");
            assert_eq!(snapshot.state.total, 1);
        }
    }
    assert_eq!(app.get_state(&cfg).await.unwrap().unwrap().state.items, out.state.items);
}

mod update_type {
    use graphwright::Write;
    use graphwright::prelude::*;
    use serde_json::json;

    /// The update `#[state]` generates: one pointer wide whatever the state holds, its writes read
    /// and changed through `{State}Writes`, printed and serialized as the writes themselves.
    #[state]
    pub struct Wide {
        #[reducer(add)]
        pub count: i64,
        #[reducer(append)]
        pub log: Vec<String>,
        pub note: String,
        pub a: String,
        pub b: String,
        pub c: String,
        pub d: String,
        pub e: String,
    }

    #[test]
    fn an_update_is_one_pointer_wide_however_many_fields_its_state_has() {
        assert_eq!(std::mem::size_of::<WideUpdate>(), std::mem::size_of::<usize>());
        // The writes themselves are as wide as before: one `Option<Write<T>>` per field.
        assert!(std::mem::size_of::<WideWrites>() >= 8 * std::mem::size_of::<Option<Write<i64>>>());
    }

    #[test]
    fn writes_are_read_and_changed_through_the_update() {
        let mut update = WideUpdate::new().count(2).note(Overwrite("n".to_owned()));
        assert!(matches!(update.count, Some(Write::Reduce(2))));
        assert!(matches!(&update.note, Some(Write::Overwrite(n)) if n == "n"));
        assert!(update.log.is_none());

        update.log = Some(Write::Reduce(vec!["x".to_owned()]));
        update.count = None;
        let mut state = Wide { count: 5, ..Wide::default() };
        state.apply(update);
        assert_eq!((state.count, state.log.as_slice(), state.note.as_str()), (5, ["x".to_owned()].as_slice(), "n"));

        let built = WideUpdate::from(WideWrites { count: Some(Write::Reduce(1)), ..WideWrites::default() });
        assert!(matches!(built.count, Some(Write::Reduce(1))) && built.note.is_none());
    }

    #[test]
    fn an_update_prints_and_serializes_as_its_writes() {
        let update = WideUpdate::new().count(3).log(vec!["x".to_owned()]);
        let printed = format!("{update:?}");
        assert!(
            printed.starts_with("WideUpdate { count: Some(Reduce(3)), log: Some(Reduce([\"x\"])), note: None"),
            "{printed}"
        );
        assert_eq!(format!("{:?}", *update), printed, "the writes print under the update's name");

        let value = serde_json::to_value(&update).unwrap();
        let back: WideUpdate = serde_json::from_value(value.clone()).unwrap();
        assert_eq!(serde_json::to_value(&back).unwrap(), value);
        assert_eq!(value.as_object().map(serde_json::Map::len), Some(2), "only written fields are serialized: {value}");
        assert!(value.get("count").is_some() && value.get("log").is_some(), "{value}");

        let unknown = serde_json::from_value::<WideUpdate>(json!({"count": 1, "bogus": 2}));
        assert!(unknown.is_err_and(|e| e.to_string().contains("bogus")), "an unknown field is refused");
    }
}
