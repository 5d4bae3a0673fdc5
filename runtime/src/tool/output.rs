//! What a tool gives back: text, or JSON the model reads as text.

use super::error::ToolError;
use serde::Serialize;
use serde_json::Value;

/// A tool's result. A `#[tool]` fn may return any `Serialize` value (or a `Result` of one): a
/// string becomes [`ToolOutput::Text`] as it is, anything else [`ToolOutput::Json`].
///
/// ```
/// use graphwright::tool::ToolOutput;
/// use serde_json::json;
///
/// assert_eq!(ToolOutput::text("sunny").into_content(), "sunny");
/// assert_eq!(ToolOutput::json(json!({"temp": 4})).into_content(), r#"{"temp":4}"#);
/// assert_eq!(ToolOutput::from_serialize("tool", &"plain").unwrap(), ToolOutput::text("plain"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ToolOutput {
    /// Text, passed to the model as it is.
    Text(String),
    /// A JSON value, passed to the model in its compact JSON form.
    Json(Value),
}

impl ToolOutput {
    /// A text result.
    pub fn text(text: impl Into<String>) -> Self {
        Self::Text(text.into())
    }

    /// A JSON result.
    #[must_use]
    pub fn json(value: Value) -> Self {
        Self::Json(value)
    }

    /// Any serializable value: a JSON string becomes text, anything else JSON.
    ///
    /// # Errors
    /// [`ToolError::InvalidResult`] when the value cannot be serialized (a map with non-string
    /// keys, say); `tool` names the tool in that error.
    pub fn from_serialize<T: Serialize + ?Sized>(tool: &str, value: &T) -> Result<Self, ToolError> {
        match serde_json::to_value(value) {
            Ok(Value::String(text)) => Ok(Self::Text(text)),
            Ok(value) => Ok(Self::Json(value)),
            Err(error) => Err(ToolError::InvalidResult {
                tool: tool.to_owned(),
                reason: format!("it cannot be written as JSON ({error})"),
            }),
        }
    }

    /// The text of the tool message that carries this result.
    #[must_use]
    pub fn into_content(self) -> String {
        match self {
            Self::Text(text) => text,
            Self::Json(value) => value.to_string(),
        }
    }
}

impl From<String> for ToolOutput {
    fn from(text: String) -> Self {
        Self::Text(text)
    }
}

impl From<&str> for ToolOutput {
    fn from(text: &str) -> Self {
        Self::Text(text.to_owned())
    }
}

impl From<Value> for ToolOutput {
    fn from(value: Value) -> Self {
        Self::Json(value)
    }
}
