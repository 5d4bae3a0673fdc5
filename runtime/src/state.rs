//! The state a graph carries between super-steps, and the partial updates nodes return.
//!
//! `#[state]` implements these traits; the runtime only ever talks to a state through them.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt::Debug;

/// A graph's state: one struct whose fields each have a reducer.
///
/// Implemented by `#[state]`; writing it by hand is possible but rarely useful.
pub trait State: Clone + Debug + Default + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The partial update nodes return (`{State}Update`).
    type Update: Update<State = Self>;

    /// The field names, in declaration order.
    const FIELDS: &'static [&'static str];

    /// Folds one update into the state, each field with its reducer.
    fn apply(&mut self, mut update: Self::Update) {
        self.apply_mut(&mut update);
    }

    /// Folds one update into the state, taking each written field out of `update` (which is
    /// left empty): the executor folds updates where they are, without moving them.
    fn apply_mut(&mut self, update: &mut Self::Update);

    /// The first field that the updates of one super-step may not all write: a last-value field
    /// written twice, or any field given two [`Overwrite`]s. Indices point into `updates`.
    fn conflict(updates: &[&Self::Update]) -> Option<Conflict>;
}

/// A partial update of a [`State`]: one optional write per field.
pub trait Update: Clone + Debug + Default + Serialize + DeserializeOwned + Send + Sync + 'static {
    /// The state this update applies to.
    type State: State<Update = Self>;

    /// Whether the update writes no field.
    fn is_empty(&self) -> bool;
}

/// Two writes of one field in one super-step that the field's reducer cannot take.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Conflict {
    /// The field.
    pub field: &'static str,
    /// Index of the first update that wrote it.
    pub first: usize,
    /// Index of the second.
    pub second: usize,
}

/// One field's write inside an update: folded by the field's reducer, or replacing the value.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Write<T> {
    /// Folded into the current value by the field's reducer (replaces it for last-value fields).
    Reduce(T),
    /// Replaces the current value, bypassing the reducer.
    Overwrite(T),
}

impl<T> Write<T> {
    /// Whether this write bypasses the reducer.
    pub fn is_overwrite(&self) -> bool {
        matches!(self, Self::Overwrite(_))
    }
}

impl<T> From<T> for Write<T> {
    fn from(value: T) -> Self {
        Self::Reduce(value)
    }
}

impl<T> From<Overwrite<T>> for Write<T> {
    fn from(Overwrite(value): Overwrite<T>) -> Self {
        Self::Overwrite(value)
    }
}

/// Replaces a field's value for one write, bypassing its reducer.
///
/// ```
/// use graphwright::prelude::*;
///
/// #[state]
/// struct Notes {
///     #[reducer(append)]
///     lines: Vec<String>,
/// }
///
/// let mut notes = Notes { lines: vec!["old".into()] };
/// notes.apply(NotesUpdate::new().lines(vec!["new".into()]));
/// assert_eq!(notes.lines, ["old", "new"]);
/// notes.apply(NotesUpdate::new().lines(Overwrite(vec!["only".into()])));
/// assert_eq!(notes.lines, ["only"]);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Overwrite<T>(pub T);

const OVERWRITE_KEY: &str = "$overwrite";

impl<T: Serialize> Serialize for Write<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeMap;
        match self {
            Self::Reduce(value) => value.serialize(serializer),
            Self::Overwrite(value) => {
                let mut map = serializer.serialize_map(Some(1))?;
                map.serialize_entry(OVERWRITE_KEY, value)?;
                map.end()
            }
        }
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Write<T> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(deny_unknown_fields)]
        struct Wrapped<T> {
            #[serde(rename = "$overwrite")]
            value: T,
        }
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Either<T> {
            Overwrite(Wrapped<T>),
            Reduce(T),
        }
        Ok(match Either::deserialize(deserializer)? {
            Either::Overwrite(Wrapped { value }) => Self::Overwrite(value),
            Either::Reduce(value) => Self::Reduce(value),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::{Overwrite, Write};

    #[test]
    fn writes_round_trip_through_json() {
        let plain: Write<Vec<u32>> = Write::from(vec![1, 2]);
        let forced: Write<Vec<u32>> = Overwrite(vec![3]).into();
        let plain_json = serde_json::to_string(&plain).unwrap();
        let forced_json = serde_json::to_string(&forced).unwrap();
        assert_eq!(plain_json, "[1,2]");
        assert_eq!(forced_json, r#"{"$overwrite":[3]}"#);
        assert_eq!(serde_json::from_str::<Write<Vec<u32>>>(&plain_json).unwrap(), plain);
        assert_eq!(serde_json::from_str::<Write<Vec<u32>>>(&forced_json).unwrap(), forced);
    }
}
