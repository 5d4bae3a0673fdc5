//! What `#[tool]`'s generated code calls, reached through `graphwright::__private`. The traits
//! carry the messages rustc shows when a tool's parameter or return type does not fit.

use super::error::{ArgumentProblem, ToolError};
use super::output::ToolOutput;
use crate::error::BoxError;
use schemars::{JsonSchema, SchemaGenerator};
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// A type a tool parameter may have: the model's JSON is read into it, and its schema is shown
/// to the model. `#[tool]` names each parameter's type through this trait once, at the type's
/// span, so a type that does not fit gives one error under the type the user wrote.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a tool parameter: it has no JSON Schema or cannot be read from JSON",
    label = "this parameter's type must implement `schemars::JsonSchema` and `serde::Deserialize`",
    note = "derive both on your type: `#[derive(serde::Deserialize, schemars::JsonSchema)]` \
            (with `schemars = \"1\"` in your dependencies), or take a type that has them \
            (`String`, numbers, `bool`, `Vec<T>`, `Option<T>`, maps with string keys)"
)]
pub trait ToolParameter: JsonSchema + DeserializeOwned {}

#[diagnostic::do_not_recommend]
impl<T: JsonSchema + DeserializeOwned> ToolParameter for T {}

/// How to describe and read one parameter of type `T`; made once per parameter by
/// [`param_spec`], the only place the generated code names the trait bounds.
pub struct ParamSpec<T> {
    schema: fn(&mut SchemaGenerator) -> Value,
    decode: fn(Value) -> Result<T, serde_json::Error>,
}

impl<T> Clone for ParamSpec<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for ParamSpec<T> {}

/// The spec of a parameter of type `T`.
#[must_use]
pub fn param_spec<T: ToolParameter>() -> ParamSpec<T> {
    ParamSpec { schema: |generator| generator.subschema_for::<T>().to_value(), decode: serde_json::from_value::<T> }
}

/// Builds the object schema of a tool's parameters, one property at a time.
pub struct ToolSchema {
    generator: SchemaGenerator,
    properties: serde_json::Map<String, Value>,
    required: Vec<Value>,
}

impl Default for ToolSchema {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolSchema {
    /// An object schema with no properties yet.
    #[must_use]
    pub fn new() -> Self {
        Self { generator: super::schema::generator(), properties: serde_json::Map::new(), required: Vec::new() }
    }

    /// Adds the property `name`; `description` (when not empty) and `default` annotate it.
    pub fn param<T>(
        &mut self,
        spec: ParamSpec<T>,
        name: &str,
        description: &str,
        required: bool,
        default: Option<Value>,
    ) {
        let mut schema = (spec.schema)(&mut self.generator);
        if let Value::Object(map) = &mut schema {
            if !description.is_empty() {
                map.insert("description".to_owned(), Value::String(description.to_owned()));
            }
            if let Some(default) = default {
                map.insert("default".to_owned(), default);
            }
        }
        self.properties.insert(name.to_owned(), schema);
        if required {
            self.required.push(Value::String(name.to_owned()));
        }
    }

    /// The finished schema: `{"type": "object", "properties", "required",
    /// "additionalProperties": false}`, with `$defs` when a recursive type needs them.
    #[must_use]
    pub fn finish(self) -> Value {
        let mut schema = serde_json::Map::new();
        schema.insert("type".to_owned(), Value::String("object".to_owned()));
        schema.insert("properties".to_owned(), Value::Object(self.properties));
        schema.insert("required".to_owned(), Value::Array(self.required));
        schema.insert("additionalProperties".to_owned(), Value::Bool(false));
        let definitions = self.generator.definitions().clone();
        if !definitions.is_empty() {
            schema.insert("$defs".to_owned(), Value::Object(definitions));
        }
        Value::Object(schema)
    }
}

/// A parameter's default as JSON, when its type is `Serialize`: `DefaultJson(&value).json()`
/// with [`NoDefaultJson`] in scope gives `None` for other types.
pub struct DefaultJson<'a, T>(pub &'a T);

impl<T: Serialize> DefaultJson<'_, T> {
    /// The default as JSON.
    pub fn json(&self) -> Option<Value> {
        serde_json::to_value(self.0).ok()
    }
}

/// The fallback of [`DefaultJson::json`] for types that are not `Serialize`.
pub trait NoDefaultJson {
    /// No JSON for this default.
    fn json(&self) -> Option<Value> {
        None
    }
}

impl<T> NoDefaultJson for DefaultJson<'_, T> {}

/// The model's arguments of one call, taken apart parameter by parameter.
pub struct ToolArgs {
    tool: String,
    map: serde_json::Map<String, Value>,
}

impl ToolArgs {
    /// The arguments as an object whose keys are all among `names`.
    ///
    /// # Errors
    /// [`ToolError::InvalidJson`] or [`ToolError::InvalidArguments`], naming `tool`.
    pub fn new(tool: &str, args: Value, names: &[&str]) -> Result<Self, ToolError> {
        let invalid = |path: &str, message: String| ToolError::InvalidArguments {
            tool: tool.to_owned(),
            problems: vec![ArgumentProblem { path: path.to_owned(), message }],
        };
        let map = match normalize(tool, args)? {
            Value::Object(map) => map,
            other => {
                return Err(invalid("", format!("expected the arguments as a JSON object, got {other}")));
            }
        };
        if let Some(unknown) = map.keys().find(|k| !names.contains(&k.as_str())) {
            let hint = graphwright_wiring::closest(unknown, names.iter().copied())
                .map(|near| format!("did you mean `{near}`? "))
                .unwrap_or_default();
            let known = names.iter().map(|n| format!("`{n}`")).collect::<Vec<_>>().join(", ");
            return Err(invalid(unknown, format!("unknown field; {hint}the fields are: {known}")));
        }
        Ok(Self { tool: tool.to_owned(), map })
    }

    /// Reads the argument `name`; an absent one reads as `null` unless it is `required`.
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] naming the field.
    pub fn take<T>(&mut self, spec: ParamSpec<T>, name: &str, required: bool) -> Result<T, ToolError> {
        let value = match self.map.remove(name) {
            Some(value) => value,
            None if required => {
                return Err(self.problem(name, "this required field is missing".to_owned()));
            }
            None => Value::Null,
        };
        (spec.decode)(value).map_err(|error| self.problem(name, error.to_string()))
    }

    /// Reads the argument `name`, or `default()` when it is absent or `null`.
    ///
    /// # Errors
    /// [`ToolError::InvalidArguments`] naming the field.
    pub fn take_or<T>(&mut self, spec: ParamSpec<T>, name: &str, default: fn() -> T) -> Result<T, ToolError> {
        match self.map.remove(name) {
            None | Some(Value::Null) => Ok(default()),
            Some(value) => (spec.decode)(value).map_err(|error| self.problem(name, error.to_string())),
        }
    }

    fn problem(&self, path: &str, message: String) -> ToolError {
        ToolError::InvalidArguments {
            tool: self.tool.clone(),
            problems: vec![ArgumentProblem { path: path.to_owned(), message }],
        }
    }
}

/// A value a tool may return: anything `Serialize`.
#[diagnostic::on_unimplemented(
    message = "a tool cannot return `{Self}`: the model reads results as text or JSON",
    label = "this type does not implement `serde::Serialize`",
    note = "return a `Serialize` type (`String`, numbers, `serde_json::Value`, a struct deriving \
            `Serialize`) or a `Result` of one"
)]
pub trait ToolReturn {
    /// The value as a tool output.
    fn into_tool_output(self, tool: &str) -> Result<ToolOutput, ToolError>;
}

impl<T: Serialize> ToolReturn for T {
    fn into_tool_output(self, tool: &str) -> Result<ToolOutput, ToolError> {
        ToolOutput::from_serialize(tool, &self)
    }
}

/// An error a tool may return in its `Result`.
#[diagnostic::on_unimplemented(
    message = "a tool cannot fail with `{Self}`",
    label = "this error type does not convert into `Box<dyn Error + Send + Sync>`",
    note = "use an error type that implements `std::error::Error + Send + Sync`, or `String`"
)]
pub trait ToolFailure {
    /// The error as a boxed error.
    fn into_box_error(self) -> BoxError;
}

impl<E: Into<BoxError>> ToolFailure for E {
    fn into_box_error(self) -> BoxError {
        self.into()
    }
}

/// A fallible tool's result as a tool output.
///
/// # Errors
/// [`ToolError::Failed`] with the tool's error, or what [`ToolReturn`] reports.
pub fn tool_result<T: ToolReturn, E: ToolFailure>(tool: &str, result: Result<T, E>) -> Result<ToolOutput, ToolError> {
    match result {
        Ok(value) => value.into_tool_output(tool),
        Err(error) => Err(ToolError::failed(tool, error.into_box_error())),
    }
}

/// An infallible tool's result as a tool output.
///
/// # Errors
/// What [`ToolReturn`] reports.
pub fn tool_return<T: ToolReturn>(tool: &str, value: T) -> Result<ToolOutput, ToolError> {
    value.into_tool_output(tool)
}

/// The arguments as a JSON value: text is parsed (an empty text is no arguments), `null` is no
/// arguments.
pub(crate) fn normalize(tool: &str, args: Value) -> Result<Value, ToolError> {
    match args {
        Value::Null => Ok(Value::Object(serde_json::Map::new())),
        Value::String(text) if text.trim().is_empty() => Ok(Value::Object(serde_json::Map::new())),
        Value::String(text) => serde_json::from_str(&text)
            .map_err(|error| ToolError::InvalidJson { tool: tool.to_owned(), reason: error.to_string() }),
        other => Ok(other),
    }
}
