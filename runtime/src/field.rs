//! What a `#[state]` field's type must have, named by the generated code wherever the type is
//! stored or read, so that a type without it gives one readable error under the type the user
//! wrote.
//!
//! The state's and its update's serde impls reach each field through [`StateField`]'s functions
//! (`serialize_with` / `deserialize_with`, spanned at the field's type), so every place that
//! needs the field's serde impls asks for the same trait at the same span, and rustc reports the
//! missing impl once, with this trait's message, instead of once per use in serde's generated
//! code. The state's JSON Schema reaches each field's schema the same way, through
//! [`field_schema`] and [`StateFieldSchema`] (`#[schemars(schema_with = ..)]`, spanned at the
//! field's type).

use crate::state::Write;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// A type a state field may have: checkpoints store the state and streams carry it, written
/// with `Serialize` and read back with `Deserialize`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a state field: it cannot be stored in a checkpoint or read back",
    label = "this field's type must implement `serde::Serialize` and `serde::Deserialize`",
    note = "checkpoints and streams carry the state through serde; derive both on your type: \
            `#[derive(serde::Serialize, serde::Deserialize)]` (with \
            `serde = {{ version = \"1\", features = [\"derive\"] }}` in your dependencies), \
            or use a type that has them (`String`, numbers, `bool`, `Vec<T>`, `Option<T>`, maps)"
)]
pub trait StateField: Sized {
    /// Writes a field of the state.
    fn serialize_field<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error>;

    /// Reads a field of the state.
    fn deserialize_field<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error>;

    /// Writes a field of the state's update.
    fn serialize_write<S: Serializer>(write: &Option<Write<Self>>, serializer: S) -> Result<S::Ok, S::Error>;

    /// Reads a field of the state's update.
    fn deserialize_write<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Write<Self>>, D::Error>;

    /// Appends a write of this field in the stored form of an update (the pair `[tag, value]`)
    /// without serde's layers around the value; `false` if it did not, and the update is then
    /// stored through serde (see [`Update::encode_stored`](crate::state::Update::encode_stored)).
    #[doc(hidden)]
    fn encode_write(write: &Write<Self>, out: &mut Vec<u8>) -> bool {
        let _ = (write, out);
        false
    }
}

#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned> StateField for T {
    fn serialize_field<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.serialize(serializer)
    }

    fn deserialize_field<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        T::deserialize(deserializer)
    }

    fn serialize_write<S: Serializer>(write: &Option<Write<Self>>, serializer: S) -> Result<S::Ok, S::Error> {
        write.serialize(serializer)
    }

    fn deserialize_write<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Write<Self>>, D::Error> {
        Option::<Write<T>>::deserialize(deserializer)
    }

    fn encode_write(write: &Write<Self>, out: &mut Vec<u8>) -> bool {
        crate::record::codec::encode_write(out, write)
    }
}

/// A type a state field may have, as far as the state's JSON Schema goes: the server describes
/// the state to front ends (forms for a run's input) with the schemas of its fields.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a state field: it has no JSON Schema",
    label = "this field's type must implement `schemars::JsonSchema`",
    note = "the server shows front ends the state's JSON Schema, made of its fields' schemas; derive \
            one on your type: `#[derive(schemars::JsonSchema)]` (with `schemars = \"1\"` in your \
            dependencies), or give the field the schema of a type that has one, e.g. \
            `#[schemars(with = \"String\")]`"
)]
pub trait StateFieldSchema: JsonSchema {}

#[diagnostic::do_not_recommend]
impl<T: JsonSchema> StateFieldSchema for T {}

/// The schema of a state field of type `T`, exactly the one schemars gives `T` in place (a
/// `$ref` to its definition for a named type): `#[state]` names it in each field's
/// `#[schemars(schema_with = ..)]`, so that the bound is asked once, under the field's type.
pub fn field_schema<T: StateFieldSchema>(generator: &mut SchemaGenerator) -> Schema {
    generator.subschema_for::<T>()
}
