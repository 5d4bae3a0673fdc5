//! The JSON Schemas `/assistants/{id}/schemas` serves for a graph (and `/assistants/{id}/subgraphs`
//! for each of its subgraphs): its input, output and state, made from the state type's schema
//! with the message fields in the wire's shape, and its run context (also the schema of
//! `config.configurable`, which the server reads as the context).
//!
//! They are JSON Schema 2020-12 documents without `$schema` (as LangGraph serves them), with
//! shared definitions under `$defs`, and without the number formats schemars adds (`uint32`,
//! `double`, ..), which JSON Schema does not define and strict validators reject.

use crate::wire::message_schema::{input_message, output_message};
use graphwright::{Message, State, Subgraph};
use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde_json::{Map, Value, json};
use std::collections::BTreeSet;

/// The JSON Schemas a graph is described by.
#[derive(Clone, Debug)]
pub(crate) struct Schemas {
    /// What a run's `input` may hold: any subset of the state's fields.
    pub(crate) input: Value,
    /// What a finished run gives back: the whole state.
    pub(crate) output: Value,
    /// The state, every field present.
    pub(crate) state: Value,
    /// `config.configurable`: the context's schema, or an empty object for a graph without one.
    pub(crate) config: Value,
    /// The run context's schema; `null` for a graph without a context (`()`), as LangGraph
    /// serves a graph that declares none.
    pub(crate) context: Value,
}

impl Schemas {
    /// The schemas of a graph over `S` with the context `C`. An entrypoint's input, output and
    /// state are the values its fn takes and returns, whose types the server does not see: they
    /// are described as any JSON value (as LangGraph describes an entrypoint without type hints),
    /// never as the `FlowState` that carries them.
    pub(crate) fn of<S: State, C: JsonSchema>() -> Self {
        if super::snapshot::is_entrypoint::<S>() {
            let context = context_schema::<C>();
            let any = json!({});
            return Self {
                input: any.clone(),
                output: any.clone(),
                state: any,
                config: config_schema(&context),
                context,
            };
        }
        Self::made(SchemaGenerator::root_schema_for::<S>, S::MESSAGE_FIELDS, context_schema::<C>())
    }

    /// The schemas of a subgraph of a graph whose context is `C` (a subgraph runs with its
    /// parent's context).
    pub(crate) fn of_subgraph<C: JsonSchema>(subgraph: &Subgraph) -> Self {
        Self::made(|generator| subgraph.state_schema_in(generator), subgraph.message_fields(), context_schema::<C>())
    }

    /// The schemas of a state whose root schema `root` makes, whose `message_fields` hold chat
    /// messages, run with the context whose schema is `context`.
    fn made(root: impl Fn(&mut SchemaGenerator) -> Schema, message_fields: &[&str], context: Value) -> Self {
        let state = state_schema(&root, message_fields, output_message());
        let mut input = state_schema(&root, message_fields, input_message());
        if let Value::Object(root) = &mut input {
            root.remove("required");
        }
        Self { input, output: state.clone(), state, config: config_schema(&context), context }
    }

    /// The five schemas as `/assistants/{id}/schemas` and `/assistants/{id}/subgraphs` name them.
    pub(crate) fn fields(&self) -> Map<String, Value> {
        let mut fields = Map::new();
        fields.insert("input_schema".into(), self.input.clone());
        fields.insert("output_schema".into(), self.output.clone());
        fields.insert("state_schema".into(), self.state.clone());
        fields.insert("config_schema".into(), self.config.clone());
        fields.insert("context_schema".into(), self.context.clone());
        fields
    }
}

/// `config.configurable`'s schema: the context's, or an empty object for a graph without one.
fn config_schema(context: &Value) -> Value {
    if context.is_null() {
        json!({"type": "object", "properties": {}, "additionalProperties": false})
    } else {
        context.clone()
    }
}

/// JSON Schema 2020-12, definitions under `$defs`, no `$schema` key.
fn generator() -> SchemaGenerator {
    SchemaSettings::draft2020_12().with(|s| s.meta_schema = None).into_generator()
}

/// The state's schema `root` makes, its `message_fields` holding `message` in place of
/// graphwright's [`Message`].
fn state_schema(root: impl Fn(&mut SchemaGenerator) -> Schema, message_fields: &[&str], message: Value) -> Value {
    let mut generator = generator();
    let mut schema = root(&mut generator).to_value();
    if !message_fields.is_empty() {
        // Asked of the same generator, so the reference is the one the state's schema uses.
        let message_ref = generator.subschema_for::<Message>().to_value();
        if let Some(message_ref) = message_ref.get("$ref").and_then(Value::as_str) {
            describe_messages(&mut schema, message_fields, message_ref, message);
        }
    }
    drop_unknown_formats(&mut schema);
    schema
}

/// The schema of the context `C`, or `null` when it admits only `null` (the unit type): there is
/// nothing to give.
fn context_schema<C: JsonSchema>() -> Value {
    let mut schema = generator().into_root_schema_for::<C>().to_value();
    if schema.get("type").is_some_and(|t| t == "null") {
        return Value::Null;
    }
    drop_unknown_formats(&mut schema);
    schema
}

/// Points every reference to `message_ref` inside the properties `fields` at a new definition,
/// `message` (named `AnyMessage`, or with a number after it if the state has a type of that
/// name), then drops the definitions nothing refers to any more (graphwright's `Message`, its
/// `Role` and `ToolCall`, unless another field holds them).
fn describe_messages(schema: &mut Value, fields: &[&str], message_ref: &str, message: Value) {
    let Value::Object(root) = schema else { return };
    let taken = |name: &str| root.get("$defs").and_then(Value::as_object).is_some_and(|d| d.contains_key(name));
    let names = (1..).map(|n| if n == 1 { "AnyMessage".to_owned() } else { format!("AnyMessage{n}") });
    let Some(name) = names.into_iter().find(|n| !taken(n)) else { return };
    let new_ref = format!("#/$defs/{name}");
    let mut retargeted = false;
    if let Some(Value::Object(properties)) = root.get_mut("properties") {
        for field in fields {
            if let Some(property) = properties.get_mut(*field) {
                walk(property, &mut |map| {
                    if map.get("$ref").and_then(Value::as_str) == Some(message_ref) {
                        map.insert("$ref".into(), Value::String(new_ref.clone()));
                        retargeted = true;
                    }
                });
            }
        }
    }
    if retargeted {
        let definitions = root.entry("$defs").or_insert_with(|| Value::Object(Map::new()));
        if let Value::Object(definitions) = definitions {
            definitions.insert(name, message);
        }
        drop_unused_definitions(root);
    }
}

/// Removes the definitions under `$defs` that neither the schema nor a definition it uses refers
/// to.
fn drop_unused_definitions(root: &mut Map<String, Value>) {
    let Some(Value::Object(mut definitions)) = root.remove("$defs") else { return };
    let mut used = BTreeSet::new();
    let mut pending = references(&mut Value::Object(root.clone()));
    while let Some(name) = pending.pop() {
        if used.insert(name.clone())
            && let Some(definition) = definitions.get_mut(&name)
        {
            pending.extend(references(definition));
        }
    }
    definitions.retain(|name, _| used.contains(name));
    if !definitions.is_empty() {
        root.insert("$defs".into(), Value::Object(definitions));
    }
}

/// The names of the definitions `schema` refers to (`#/$defs/{name}`), outside `$defs`.
fn references(schema: &mut Value) -> Vec<String> {
    let mut names = Vec::new();
    walk(schema, &mut |map| {
        if let Some(name) = map.get("$ref").and_then(Value::as_str).and_then(|r| r.strip_prefix("#/$defs/")) {
            names.push(name.to_owned());
        }
    });
    names
}

/// The formats JSON Schema 2020-12 defines; schemars adds others for Rust's number types.
const KNOWN_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// Removes every `format` JSON Schema does not define (`uint32`, `double`, ..): they say no
/// more than the `minimum`/`maximum` beside them, and a strict validator (ajv, which JavaScript
/// front ends use) refuses a schema with an unknown format.
fn drop_unknown_formats(schema: &mut Value) {
    walk(schema, &mut |map| {
        if map.get("format").and_then(Value::as_str).is_some_and(|f| !KNOWN_FORMATS.contains(&f)) {
            map.remove("format");
        }
    });
}

/// Calls `visit` on `schema` and on every schema inside it, definitions included, going only
/// where JSON Schema puts subschemas: a default, an example or a constant that looks like a
/// schema is left alone.
fn walk(schema: &mut Value, visit: &mut impl FnMut(&mut Map<String, Value>)) {
    let Value::Object(map) = schema else { return };
    visit(map);
    for (key, value) in map.iter_mut() {
        match (key.as_str(), value) {
            ("properties" | "patternProperties" | "$defs" | "dependentSchemas", Value::Object(named)) => {
                for sub in named.values_mut() {
                    walk(sub, visit);
                }
            }
            ("anyOf" | "oneOf" | "allOf" | "prefixItems", Value::Array(list)) => {
                for sub in list {
                    walk(sub, visit);
                }
            }
            (
                "items"
                | "additionalProperties"
                | "not"
                | "if"
                | "then"
                | "else"
                | "contains"
                | "propertyNames"
                | "unevaluatedItems"
                | "unevaluatedProperties",
                sub,
            ) => walk(sub, visit),
            _ => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use graphwright::{END, START, StateGraph};

    /// A conversation, for a subgraph with message fields.
    #[graphwright::state]
    struct Chat {
        #[reducer(messages)]
        messages: Vec<Message>,
        turns: u32,
    }

    fn listen(_state: &Chat) -> ChatUpdate {
        ChatUpdate::new()
    }

    #[test]
    fn a_subgraph_is_described_as_its_state_would_be_on_its_own() {
        let child = StateGraph::<Chat>::new().add_node("listen", listen).add_edge(START, "listen");
        let parent = StateGraph::<Chat>::new()
            .add_subgraph("talk", child.add_edge("listen", END))
            .add_edge(START, "talk")
            .add_edge("talk", END)
            .compile()
            .unwrap();
        let subgraph = &parent.subgraphs()[0];
        let (nested, direct) = (Schemas::of_subgraph::<()>(subgraph), Schemas::of::<Chat, ()>());
        assert_eq!(nested.fields(), direct.fields());
        let messages = &nested.state["properties"]["messages"]["items"]["$ref"];
        assert_eq!(messages, "#/$defs/AnyMessage", "message fields as LangChain's messages");
        assert!(nested.state["$defs"].get("Message").is_none(), "graphwright's own message type is gone");
        assert!(nested.input.get("required").is_none() && nested.context.is_null());
    }

    #[test]
    fn an_entrypoint_takes_and_gives_any_value_not_its_flow_state() {
        let schemas = Schemas::of::<graphwright::functional::FlowState, ()>();
        assert_eq!((&schemas.input, &schemas.output, &schemas.state), (&json!({}), &json!({}), &json!({})));
        assert_eq!(schemas.config, json!({"type": "object", "properties": {}, "additionalProperties": false}));
    }

    #[test]
    fn unused_definitions_go_and_used_ones_stay_with_what_they_use() {
        let mut schema = json!({
            "type": "object",
            "properties": {"a": {"$ref": "#/$defs/A"}},
            "$defs": {
                "A": {"type": "array", "items": {"$ref": "#/$defs/B"}},
                "B": {"type": "string"},
                "Unused": {"$ref": "#/$defs/AlsoUnused"},
                "AlsoUnused": {"type": "number"},
            },
        });
        let Value::Object(root) = &mut schema else { unreachable!() };
        drop_unused_definitions(root);
        let names: Vec<&String> = schema["$defs"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["A", "B"]);
    }

    #[test]
    fn formats_json_schema_does_not_define_go_and_values_are_left_alone() {
        let mut schema = json!({
            "type": "object",
            "properties": {
                "n": {"type": "integer", "format": "uint32", "minimum": 0},
                "at": {"type": "string", "format": "date-time"},
                "format": {"type": "string", "default": {"format": "uint8"}},
            },
        });
        drop_unknown_formats(&mut schema);
        assert_eq!(schema["properties"]["n"], json!({"type": "integer", "minimum": 0}));
        assert_eq!(schema["properties"]["at"]["format"], "date-time");
        assert_eq!(schema["properties"]["format"]["default"], json!({"format": "uint8"}));
    }

    #[test]
    fn message_references_of_other_fields_are_kept() {
        let mut schema = json!({
            "properties": {
                "messages": {"type": "array", "items": {"$ref": "#/$defs/Message"}},
                "pinned": {"$ref": "#/$defs/Message"},
            },
            "$defs": {"Message": {"type": "object"}, "AnyMessage": {"type": "string"}},
        });
        describe_messages(&mut schema, &["messages"], "#/$defs/Message", json!({"oneOf": []}));
        assert_eq!(schema["properties"]["messages"]["items"]["$ref"], "#/$defs/AnyMessage2");
        assert_eq!(schema["properties"]["pinned"]["$ref"], "#/$defs/Message");
        let names: Vec<&String> = schema["$defs"].as_object().unwrap().keys().collect();
        assert_eq!(names, ["AnyMessage2", "Message"]);
    }
}
