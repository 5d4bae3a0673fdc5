//! Reducers: how a field folds the writes it receives.
//!
//! `#[reducer(name)]` on a `#[state]` field picks one of these traits; the generated code
//! calls it through the field's type, so a reducer on a type it cannot fold is a compile error
//! that names the reducer and the types it works on.
//!
//! | attribute | folds | works on |
//! | --- | --- | --- |
//! | none | last value wins; two writes in one step are an error | any type |
//! | `add` | `current += update` | numbers (`AddAssign`) |
//! | `append` | extends the list | `Vec<T>`, `VecDeque<T>` |
//! | `messages` | appends; same id replaces; [`Message::remove`] deletes | `Vec<Message>` |
//! | `merge` | inserts or overwrites keys | `HashMap`, `BTreeMap`, `serde_json::Map` |
//! | `union` | inserts elements | `HashSet`, `BTreeSet` |
//! | `max` / `min` | keeps the larger / smaller | `PartialOrd` types |
//! | `with = path::f` | calls `f(&mut current, update)` | whatever `f` takes |

use crate::message::Message;
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet, VecDeque};
use std::hash::{BuildHasher, Hash};

/// `#[reducer(add)]`: adds the update to the current value.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(add)]` cannot add to a field of type `{Self}`",
    label = "this field's type has no `+=`",
    note = "`add` works on numbers and any type that implements `AddAssign`"
)]
pub trait AddReducer {
    /// Folds `update` into `self`.
    fn reduce(&mut self, update: Self);
}

impl<T: std::ops::AddAssign> AddReducer for T {
    fn reduce(&mut self, update: Self) {
        *self += update;
    }
}

/// `#[reducer(append)]`: extends the current list with the update's elements.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(append)]` cannot append to a field of type `{Self}`",
    label = "not a list",
    note = "`append` works on `Vec<T>` and `VecDeque<T>`; for a number use `#[reducer(add)]`"
)]
pub trait AppendReducer {
    /// Folds `update` into `self`.
    fn reduce(&mut self, update: Self);
}

impl<T> AppendReducer for Vec<T> {
    fn reduce(&mut self, mut update: Self) {
        if self.is_empty() {
            *self = update;
        } else {
            self.append(&mut update);
        }
    }
}

impl<T> AppendReducer for VecDeque<T> {
    fn reduce(&mut self, mut update: Self) {
        self.append(&mut update);
    }
}

/// `#[reducer(messages)]`: LangGraph's `add_messages`.
///
/// Appends each message; a message whose id is already present replaces it; a
/// [`Message::remove`] marker deletes the message with its id, and [`Message::remove_all`]
/// clears the list. A message without an id gets a fresh one.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(messages)]` needs a `Vec<Message>` field, not `{Self}`",
    label = "not a list of messages",
    note = "for a list of anything else use `#[reducer(append)]`"
)]
pub trait MessagesReducer {
    /// Folds `update` into `self`.
    fn reduce(&mut self, update: Self);

    /// Gives each message without an id a fresh one (before the update is stored, so that
    /// folding it again gives the same state).
    fn fill_ids(&mut self) {}
}

impl MessagesReducer for Vec<Message> {
    fn fill_ids(&mut self) {
        for message in self.iter_mut().filter(|m| m.id.is_none() && !m.is_remove_all()) {
            message.id = Some(crate::message::fresh_id());
        }
    }

    fn reduce(&mut self, update: Self) {
        for mut message in update {
            if message.is_remove_all() {
                self.clear();
                continue;
            }
            let id = message.id.get_or_insert_with(crate::message::fresh_id);
            let existing = self.iter().position(|m| m.id.as_deref() == Some(id.as_str()));
            match (existing, message.is_remove()) {
                (Some(at), true) => {
                    self.remove(at);
                }
                (Some(at), false) => self[at] = message,
                (None, true) => {}
                (None, false) => self.push(message),
            }
        }
    }
}

/// `#[reducer(merge)]`: inserts the update's entries, overwriting keys already present.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(merge)]` cannot merge into a field of type `{Self}`",
    label = "not a map",
    note = "`merge` works on `HashMap`, `BTreeMap` and `serde_json::Map`; for sets use `#[reducer(union)]`"
)]
pub trait MergeReducer {
    /// Folds `update` into `self`.
    fn reduce(&mut self, update: Self);
}

impl<K: Eq + Hash, V, H: BuildHasher> MergeReducer for HashMap<K, V, H> {
    fn reduce(&mut self, update: Self) {
        self.extend(update);
    }
}

impl<K: Ord, V> MergeReducer for BTreeMap<K, V> {
    fn reduce(&mut self, update: Self) {
        self.extend(update);
    }
}

impl MergeReducer for serde_json::Map<String, serde_json::Value> {
    fn reduce(&mut self, update: Self) {
        self.extend(update);
    }
}

/// `#[reducer(union)]`: inserts the update's elements.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(union)]` cannot take the union into a field of type `{Self}`",
    label = "not a set",
    note = "`union` works on `HashSet` and `BTreeSet`; for maps use `#[reducer(merge)]`"
)]
pub trait UnionReducer {
    /// Folds `update` into `self`.
    fn reduce(&mut self, update: Self);
}

impl<T: Eq + Hash, H: BuildHasher> UnionReducer for HashSet<T, H> {
    fn reduce(&mut self, update: Self) {
        self.extend(update);
    }
}

impl<T: Ord> UnionReducer for BTreeSet<T> {
    fn reduce(&mut self, update: Self) {
        self.extend(update);
    }
}

/// `#[reducer(max)]` and `#[reducer(min)]`: keep the larger or the smaller value.
#[diagnostic::on_unimplemented(
    message = "`#[reducer(max)]` and `#[reducer(min)]` need a comparable field, not `{Self}`",
    label = "this field's type has no order",
    note = "`max` and `min` work on types that implement `PartialOrd`"
)]
pub trait OrdReducer {
    /// Keeps the larger of `self` and `update`.
    fn max(&mut self, update: Self);
    /// Keeps the smaller of `self` and `update`.
    fn min(&mut self, update: Self);
}

impl<T: PartialOrd> OrdReducer for T {
    fn max(&mut self, update: Self) {
        if update > *self {
            *self = update;
        }
    }

    fn min(&mut self, update: Self) {
        if update < *self {
            *self = update;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_append_replace_and_remove_by_id() {
        let mut history = vec![Message::user("hi").with_id("1"), Message::assistant("hello").with_id("2")];
        MessagesReducer::reduce(
            &mut history,
            vec![Message::assistant("hello again").with_id("2"), Message::user("bye").with_id("3")],
        );
        let texts: Vec<_> = history.iter().map(|m| m.content.as_str()).collect();
        assert_eq!(texts, ["hi", "hello again", "bye"]);
        MessagesReducer::reduce(&mut history, vec![Message::remove("1"), Message::remove("missing")]);
        let ids: Vec<_> = history.iter().map(|m| m.id.as_deref().unwrap()).collect();
        assert_eq!(ids, ["2", "3"]);
        MessagesReducer::reduce(&mut history, vec![Message::remove_all(), Message::user("fresh")]);
        assert_eq!(history.len(), 1);
        assert!(history[0].id.is_some(), "a message without an id gets one");
    }

    #[test]
    fn ordered_reducers_keep_extremes() {
        let mut high = 3_i64;
        OrdReducer::max(&mut high, 1);
        OrdReducer::max(&mut high, 9);
        assert_eq!(high, 9);
        let mut low = 3.5_f64;
        OrdReducer::min(&mut low, 7.0);
        OrdReducer::min(&mut low, -1.0);
        assert!((low + 1.0).abs() < f64::EPSILON);
    }

    #[test]
    fn collection_reducers_fold() {
        let mut map = HashMap::from([("a", 1), ("b", 2)]);
        MergeReducer::reduce(&mut map, HashMap::from([("b", 20), ("c", 3)]));
        assert_eq!(map, HashMap::from([("a", 1), ("b", 20), ("c", 3)]));
        let mut set = BTreeSet::from([1, 2]);
        UnionReducer::reduce(&mut set, BTreeSet::from([2, 3]));
        assert_eq!(set, BTreeSet::from([1, 2, 3]));
        let mut list = vec![1];
        AppendReducer::reduce(&mut list, vec![2, 3]);
        assert_eq!(list, [1, 2, 3]);
        let mut total = 1_u64;
        AddReducer::reduce(&mut total, 41);
        assert_eq!(total, 42);
    }
}
