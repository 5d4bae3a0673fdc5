//! The state a graph carries between super-steps, and the partial updates nodes return.
//!
//! `#[state]` implements these traits; the runtime only ever talks to a state through them.

use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt::Debug;

/// A graph's state: one struct whose fields each have a reducer.
///
/// Implemented by `#[state]`; writing it by hand is possible but rarely useful.
///
/// A state describes itself with a JSON Schema ([`JsonSchema`], which `#[state]` derives: field
/// doc comments become property descriptions, the struct's doc comment the schema's
/// description). Nothing computes it during a run; the HTTP server asks for it when a client
/// wants to draw a form for the graph's input.
///
/// ```
/// use graphwright::prelude::*;
///
/// /// A count of visits.
/// #[state]
/// struct Visits {
///     /// Who came, in order.
///     #[reducer(append)]
///     names: Vec<String>,
/// }
///
/// let schema = schemars::schema_for!(Visits).to_value();
/// assert_eq!(schema["description"], "A count of visits.");
/// assert_eq!(schema["properties"]["names"]["description"], "Who came, in order.");
/// assert_eq!(schema["required"], json!(["names"]));
/// ```
pub trait State: Clone + Debug + Default + Serialize + DeserializeOwned + JsonSchema + Send + Sync + 'static {
    /// The partial update nodes return (`{State}Update`).
    type Update: Update<State = Self>;

    /// The field names, in declaration order.
    const FIELDS: &'static [&'static str];

    /// The fields that hold chat [`Message`](crate::Message)s (declared as `Vec<Message>`,
    /// `Option<Message>` or `Message`), so that code outside the graph (the HTTP server) can show
    /// them in the shape chat clients expect. `#[state]` fills it in.
    const MESSAGE_FIELDS: &'static [&'static str] = &[];

    /// Folds one update into the state, each field with its reducer.
    fn apply(&mut self, mut update: Self::Update) {
        self.apply_mut(&mut update);
    }

    /// Folds one update into the state, taking each written field out of `update` (which is
    /// left empty): the executor folds updates where they are, without moving them.
    fn apply_mut(&mut self, update: &mut Self::Update);

    /// Folds the updates of one super-step, in task order, each field with its reducer; a field
    /// that one of them [`Overwrite`]s takes that value, and the step's other writes of the field
    /// are dropped (LangGraph's rule: the overwrite wins its step). The updates are left empty.
    fn apply_step(&mut self, updates: &mut [&mut Self::Update]);

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

    /// Appends the update's stored (`MessagePack`) form to `out` field by field, without going
    /// through serde for the update itself: exactly the bytes its `Serialize` impl writes for a
    /// checkpoint, which is what reads it back. `false` when it did not (no such encoder, or a
    /// value failed to encode); `out` may then hold part of it, and the caller goes through
    /// serde instead. `#[state]` generates it: a step stores its tasks' updates, and serde's
    /// layers cost several times the values they carry.
    #[doc(hidden)]
    fn encode_stored(&self, out: &mut Vec<u8>) -> bool {
        let _ = out;
        false
    }

    /// Gives every message this update adds through a `messages` reducer an id, if it has none.
    /// The runtime calls it before an update is stored or applied, so that a state rebuilt from
    /// stored writes holds the very ids the run saw (the reducer would otherwise draw new ones
    /// on every rebuild). `#[state]` implements it; the default does nothing.
    fn fill_ids(&mut self) {}
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

    /// The value written, either way, to change in place.
    pub fn value_mut(&mut self) -> &mut T {
        match self {
            Self::Reduce(value) | Self::Overwrite(value) => value,
        }
    }

    /// The value written, either way.
    pub fn value(&self) -> &T {
        match self {
            Self::Reduce(value) | Self::Overwrite(value) => value,
        }
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

/// Folds one field's writes of a super-step into `field` (what `#[state]` generates for
/// [`State::apply_step`]): the step's [`Overwrite`] of the field, if it has one, replaces the
/// value and the other writes are dropped; otherwise each write goes through `reduce`, in task
/// order. Every write is taken out of its update.
#[doc(hidden)]
pub fn fold_step<T, U>(
    field: &mut T,
    updates: &mut [&mut U],
    write_of: impl Fn(&mut U) -> &mut Option<Write<T>>,
    reduce: impl Fn(&mut T, T),
) {
    let overwritten = updates.iter_mut().any(|u| write_of(u).as_ref().is_some_and(Write::is_overwrite));
    for update in updates.iter_mut() {
        match write_of(update).take() {
            Some(Write::Overwrite(value)) => *field = value,
            Some(Write::Reduce(value)) if !overwritten => reduce(field, value),
            Some(Write::Reduce(_)) | None => {}
        }
    }
}

/// The key that marks an overwrite in the human-readable (JSON) form of an update.
const OVERWRITE_KEY: &str = "$overwrite";

/// Tags of the binary (stored) form, where a write is the pair `[tag, value]`: unlike the
/// JSON form, no user value can be mistaken for a marker, and a write of `None` stays a write.
const REDUCE_TAG: u8 = 0;
const OVERWRITE_TAG: u8 = 1;

impl<T> Write<T> {
    /// The tag and value of the binary form `[tag, value]`.
    pub(crate) fn stored_parts(&self) -> (u8, &T) {
        match self {
            Self::Reduce(value) => (REDUCE_TAG, value),
            Self::Overwrite(value) => (OVERWRITE_TAG, value),
        }
    }
}

impl<T: Serialize> Serialize for Write<T> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::{SerializeMap, SerializeTuple};
        if !serializer.is_human_readable() {
            let (tag, value) = self.stored_parts();
            let mut pair = serializer.serialize_tuple(2)?;
            pair.serialize_element(&tag)?;
            pair.serialize_element(value)?;
            return pair.end();
        }
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
        if !deserializer.is_human_readable() {
            return deserializer.deserialize_tuple(2, PairVisitor(std::marker::PhantomData));
        }
        Ok(match Either::deserialize(deserializer)? {
            Either::Overwrite(Wrapped { value }) => Self::Overwrite(value),
            Either::Reduce(value) => Self::Reduce(value),
        })
    }
}

/// Reads the binary form `[tag, value]`.
struct PairVisitor<T>(std::marker::PhantomData<T>);

impl<'de, T: Deserialize<'de>> serde::de::Visitor<'de> for PairVisitor<T> {
    type Value = Write<T>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a write: a pair of a tag (0 reduce, 1 overwrite) and a value")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Write<T>, A::Error> {
        use serde::de::Error;
        let tag: u8 = seq.next_element()?.ok_or_else(|| A::Error::invalid_length(0, &self))?;
        let value: T = seq.next_element()?.ok_or_else(|| A::Error::invalid_length(1, &self))?;
        if seq.next_element::<serde::de::IgnoredAny>()?.is_some() {
            return Err(A::Error::invalid_length(3, &self));
        }
        match tag {
            REDUCE_TAG => Ok(Write::Reduce(value)),
            OVERWRITE_TAG => Ok(Write::Overwrite(value)),
            other => Err(A::Error::custom(format!("unknown write tag {other}"))),
        }
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
