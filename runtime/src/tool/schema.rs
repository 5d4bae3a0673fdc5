//! Tool schemas in the forms model providers take: OpenAI functions (plain and `strict`) and
//! Anthropic tools.
//!
//! ```
//! use graphwright::prelude::*;
//! use graphwright::tool::schema;
//! use serde_json::json;
//!
//! /// Look up the weather.
//! #[tool]
//! fn weather(
//!     /// The city.
//!     city: String,
//!     /// Days ahead, today if absent.
//!     days: Option<u8>,
//! ) -> String {
//!     format!("sunny in {city} in {} days", days.unwrap_or(0))
//! }
//!
//! let plain = schema::openai_function(&Weather);
//! assert_eq!(plain["function"]["parameters"]["required"], json!(["city"]));
//!
//! let strict = schema::openai_strict_function(&Weather);
//! assert_eq!(strict["function"]["strict"], json!(true));
//! let parameters = &strict["function"]["parameters"];
//! assert_eq!(parameters["required"], json!(["city", "days"]));
//! assert_eq!(parameters["additionalProperties"], json!(false));
//! assert_eq!(parameters["properties"]["days"]["type"], json!(["integer", "null"]));
//!
//! let anthropic = schema::anthropic_tool(&Weather);
//! assert_eq!(anthropic["input_schema"], Weather.parameters());
//! ```

use super::Tool;
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};

/// The generator `#[tool]` schemas come from: JSON Schema 2020-12 with subschemas inlined
/// (recursive types keep a `$ref` into `$defs`).
#[must_use]
pub fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12()
        .with(|s| {
            s.inline_subschemas = true;
            s.meta_schema = None;
        })
        .into_generator()
}

/// The schema of `T` as a tool parameter schema: inlined, no `$schema` and no `title`. Use it
/// for a hand-written [`Tool`] whose arguments are one `#[derive(JsonSchema)]` struct.
#[must_use]
pub fn schema_for<T: JsonSchema>() -> Value {
    let mut schema = generator().into_root_schema_for::<T>().to_value();
    if let Value::Object(map) = &mut schema {
        map.remove("title");
        map.remove("$schema");
    }
    schema
}

/// `{"type": "function", "function": {"name", "description", "parameters"}}`, the form of
/// OpenAI-compatible chat completions (OpenAI, Ollama, vLLM, the llama.cpp server, `LiteLLM`).
#[must_use]
pub fn openai_function(tool: &dyn Tool) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name(),
            "description": tool.description(),
            "parameters": tool.parameters(),
        }
    })
}

/// The same with `"strict": true` and the parameters made [`strict`].
#[must_use]
pub fn openai_strict_function(tool: &dyn Tool) -> Value {
    json!({
        "type": "function",
        "function": {
            "name": tool.name(),
            "description": tool.description(),
            "parameters": strict(tool.parameters()),
            "strict": true,
        }
    })
}

/// `{"name", "description", "input_schema"}`, the form of Anthropic's Messages API.
#[must_use]
pub fn anthropic_tool(tool: &dyn Tool) -> Value {
    json!({
        "name": tool.name(),
        "description": tool.description(),
        "input_schema": tool.parameters(),
    })
}

/// The formats OpenAI's strict mode accepts; any other `format` is dropped.
const STRICT_FORMATS: &[&str] = &["date-time", "time", "date", "duration", "email", "hostname", "ipv4", "ipv6", "uuid"];

/// A schema rewritten for OpenAI's strict mode (structured outputs): in every object, every
/// property is required and `additionalProperties` is `false`; a property that was optional
/// becomes nullable (`"type": [T, "null"]`, or `anyOf` with `{"type": "null"}`), so the model
/// sends `null` where it would have left the field out, which a `#[tool]` reads as absent.
/// `oneOf` becomes `anyOf`; `default` and formats strict mode rejects are dropped.
#[must_use]
pub fn strict(mut schema: Value) -> Value {
    make_strict(&mut schema);
    schema
}

fn make_strict(schema: &mut Value) {
    let Value::Object(map) = schema else { return };
    map.remove("default");
    if map.get("format").and_then(Value::as_str).is_some_and(|f| !STRICT_FORMATS.contains(&f)) {
        map.remove("format");
    }
    if let Some(one_of) = map.remove("oneOf") {
        map.insert("anyOf".to_owned(), one_of);
    }
    for key in ["anyOf", "allOf", "prefixItems"] {
        if let Some(Value::Array(list)) = map.get_mut(key) {
            list.iter_mut().for_each(make_strict);
        }
    }
    for key in ["items", "additionalProperties"] {
        if let Some(inner @ Value::Object(_)) = map.get_mut(key) {
            make_strict(inner);
        }
    }
    if let Some(Value::Object(defs)) = map.get_mut("$defs") {
        defs.values_mut().for_each(make_strict);
    }
    if map.get("properties").is_some_and(Value::is_object) {
        let required: Vec<String> = map
            .get("required")
            .and_then(Value::as_array)
            .map(|r| r.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        strict_object(map, &required);
    }
}

/// Every property required (those already required first, in their order; then the rest) and
/// no others allowed.
fn strict_object(map: &mut Map<String, Value>, required: &[String]) {
    let mut names: Vec<Value> = required.iter().cloned().map(Value::String).collect();
    if let Some(Value::Object(properties)) = map.get_mut("properties") {
        for (name, property) in properties.iter_mut() {
            make_strict(property);
            if !required.contains(name) {
                make_nullable(property);
                names.push(Value::String(name.clone()));
            }
        }
    }
    map.insert("required".to_owned(), Value::Array(names));
    map.insert("additionalProperties".to_owned(), Value::Bool(false));
}

fn make_nullable(schema: &mut Value) {
    let null = Value::String("null".to_owned());
    let Value::Object(map) = schema else { return };
    if let Some(Value::Array(values)) = map.get_mut("enum")
        && !values.contains(&Value::Null)
    {
        values.push(Value::Null);
    }
    match map.get_mut("type") {
        Some(Value::String(single)) if single == "null" => {}
        Some(Value::String(single)) => {
            let single = std::mem::take(single);
            map.insert("type".to_owned(), json!([single, "null"]));
        }
        Some(Value::Array(types)) => {
            if !types.contains(&null) {
                types.push(null);
            }
        }
        _ => {
            if let Some(Value::Array(alternatives)) = map.get_mut("anyOf") {
                if !alternatives.iter().any(|a| a.get("type") == Some(&null)) {
                    alternatives.push(json!({"type": "null"}));
                }
            } else {
                let description = map.remove("description");
                let inner = Value::Object(std::mem::take(map));
                map.insert("anyOf".to_owned(), json!([inner, {"type": "null"}]));
                if let Some(description) = description {
                    map.insert("description".to_owned(), description);
                }
            }
        }
    }
}
