//! Every reducer: add, append, messages, merge, union, max, min, `with = path`, last value,
//! and `Overwrite` bypassing a reducer.

use graphwright::prelude::*;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};

/// A custom reducer: keeps the longer string.
pub fn longest(current: &mut String, update: String) {
    if update.len() > current.len() {
        *current = update;
    }
}

pub mod folds {
    /// Sets the update's bits.
    pub fn bits(current: &mut u64, update: u64) {
        *current |= update;
    }
}

#[graph]
mod every {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(add)]
        pub total: u64,
        #[reducer(add)]
        pub score: f64,
        #[reducer(append)]
        pub list: Vec<u32>,
        #[reducer(append)]
        pub queue: VecDeque<u32>,
        #[reducer(messages)]
        pub messages: Vec<Message>,
        #[reducer(merge)]
        pub hash_map: HashMap<String, u32>,
        #[reducer(merge)]
        pub tree_map: BTreeMap<String, u32>,
        #[reducer(union)]
        pub hash_set: HashSet<u32>,
        #[reducer(union)]
        pub tree_set: BTreeSet<String>,
        #[reducer(max)]
        pub high: i64,
        #[reducer(min)]
        pub low: i64,
        #[reducer(with = longest)]
        pub longest: String,
        #[reducer(with = folds::bits)]
        pub bits: u64,
        pub last: Option<String>,
        pub plain: u32,
    }

    #[node(entry, next = [left, right])]
    fn seed(_state: &State) -> StateUpdate {
        StateUpdate::new()
            .total(1)
            .score(0.5)
            .list(vec![1])
            .queue(VecDeque::from([1]))
            .messages(vec![Message::user("hi").with_id("m1")])
            .hash_map(HashMap::from([("a".to_owned(), 1)]))
            .tree_map(BTreeMap::from([("a".to_owned(), 1)]))
            .hash_set(HashSet::from([1]))
            .tree_set(BTreeSet::from(["a".to_owned()]))
            .high(5)
            .low(5)
            .longest("ab".to_owned())
            .bits(1)
            .last(Some("seed".to_owned()))
            .plain(1)
    }

    /// Runs in the same step as `right`: every reducer field takes both writes.
    #[node(next = finish)]
    fn left(_state: &State) -> StateUpdate {
        StateUpdate::new()
            .total(10)
            .score(0.25)
            .list(vec![2])
            .queue(VecDeque::from([2]))
            .messages(vec![Message::assistant("hello").with_id("m2")])
            .hash_map(HashMap::from([("a".to_owned(), 10)]))
            .tree_map(BTreeMap::from([("b".to_owned(), 2)]))
            .hash_set(HashSet::from([1, 2]))
            .tree_set(BTreeSet::from(["b".to_owned()]))
            .high(9)
            .low(7)
            .longest("abcd".to_owned())
            .bits(2)
            .last(Some("left".to_owned()))
    }

    #[node(next = finish)]
    fn right(_state: &State) -> StateUpdate {
        StateUpdate::new()
            .total(100)
            .list(vec![3])
            .messages(vec![Message::assistant("hello again").with_id("m2")])
            .high(2)
            .low(-3)
            .longest("abc".to_owned())
            .bits(4)
    }

    #[node(join, next = END)]
    fn finish(_state: &State) -> StateUpdate {
        StateUpdate::new().list(Overwrite(vec![42])).plain(2)
    }
}

fn main() {
    let app = every::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(app.invoke(every::State::default(), &RunConfig::default())).unwrap();
    let s = out.state;
    assert_eq!(s.total, 111);
    assert!((s.score - 0.75).abs() < f64::EPSILON);
    assert_eq!(s.list, [42], "Overwrite replaces the appended list");
    assert_eq!(s.queue, [1, 2]);
    let texts: Vec<&str> = s.messages.iter().map(|m| m.content.as_str()).collect();
    assert_eq!(texts, ["hi", "hello again"], "a message with a known id replaces it");
    assert_eq!(s.hash_map["a"], 10);
    assert_eq!(s.tree_map.len(), 2);
    assert_eq!(s.hash_set.len(), 2);
    assert_eq!(s.tree_set.len(), 2);
    assert_eq!((s.high, s.low), (9, -3));
    assert_eq!(s.longest, "abcd");
    assert_eq!(s.bits, 7);
    assert_eq!(s.last.as_deref(), Some("left"));
    assert_eq!(s.plain, 2);
}
