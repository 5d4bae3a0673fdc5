//! What a `#[state]` field's type must have, named once per field by the generated code so
//! that a type without it gives one readable error under the type the user wrote.

use serde::Serialize;
use serde::de::DeserializeOwned;

/// A type a state field may have: checkpoints and streams carry the state as JSON, so it is
/// written with `Serialize` and read back with `Deserialize`.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a state field: it cannot be saved as JSON or read back",
    label = "this field's type must implement `serde::Serialize` and `serde::Deserialize`",
    note = "checkpoints and streams carry the state as JSON; derive both on your type: \
            `#[derive(serde::Serialize, serde::Deserialize)]` (with \
            `serde = {{ version = \"1\", features = [\"derive\"] }}` in your dependencies), \
            or use a type that has them (`String`, numbers, `bool`, `Vec<T>`, `Option<T>`, maps)"
)]
pub trait StateField: Serialize + DeserializeOwned {}

#[diagnostic::do_not_recommend]
impl<T: Serialize + DeserializeOwned> StateField for T {}

/// Names `T` as a state field's type; generated once per field, at the field type's span.
pub const fn state_field<T: StateField>() {}
