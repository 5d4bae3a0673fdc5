//! The JSON Schema `#[state]` derives: doc comments become descriptions, reducers stay out of
//! it, every field is required (a state always has them all), nested user types are described
//! by their own schemas, and `#[schemars(..)]` on a field is honoured.

use graphwright::prebuilt::MessagesState;
use graphwright::prelude::*;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// What the agent means to do.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Plan {
    /// The steps, in order.
    pub steps: Vec<String>,
}

/// How urgent a ticket is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    /// Whenever.
    #[default]
    Low,
    /// Today.
    High,
}

/// A type from another crate: serde, but no JSON Schema of its own.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Foreign(String);

/// A support ticket on its way through the graph.
///
/// Every field of it is a channel.
#[state]
pub struct Ticket {
    /// Tokens spent so far.
    #[reducer(add)]
    pub tokens: u64,
    /// What the customer wrote.
    pub text: String,
    /// How sure the classifier is, once it ran.
    pub confidence: Option<f64>,
    /// How urgent it is.
    pub priority: Priority,
    /// The plan, once made.
    pub plan: Plan,
    /// Notes of every node.
    #[reducer(append)]
    pub notes: Vec<String>,
    /// Kept from an older version of the state.
    #[serde(default)]
    pub legacy: u8,
    /// Described as text, which it is on the wire.
    #[schemars(with = "String")]
    pub reference: Foreign,
}

fn schema_of<T: JsonSchema>() -> Value {
    schemars::schema_for!(T).to_value()
}

#[test]
fn doc_comments_become_descriptions() {
    let schema = schema_of::<Ticket>();
    assert_eq!(schema["title"], "Ticket");
    assert_eq!(
        schema["description"],
        "A support ticket on its way through the graph.\n\nEvery field of it is a channel."
    );
    assert_eq!(schema["properties"]["tokens"]["description"], "Tokens spent so far.");
    assert_eq!(schema["properties"]["plan"]["description"], "The plan, once made.");
    assert_eq!(schema["$defs"]["Plan"]["description"], "What the agent means to do.");
    assert_eq!(schema["$defs"]["Plan"]["properties"]["steps"]["description"], "The steps, in order.");
}

#[test]
fn fields_have_their_types_and_reducers_stay_out() {
    let schema = schema_of::<Ticket>();
    let properties = &schema["properties"];
    assert_eq!(properties["tokens"]["type"], "integer");
    assert_eq!(properties["tokens"]["minimum"], 0);
    assert_eq!(properties["text"]["type"], "string");
    assert_eq!(properties["confidence"]["type"], json!(["number", "null"]));
    assert_eq!(properties["priority"]["$ref"], "#/$defs/Priority");
    let levels: Vec<&Value> =
        schema["$defs"]["Priority"]["oneOf"].as_array().unwrap().iter().map(|l| &l["const"]).collect();
    assert_eq!(levels, [&json!("low"), &json!("high")]);
    assert_eq!(schema["$defs"]["Priority"]["oneOf"][1]["description"], "Today.");
    assert_eq!(properties["notes"]["items"]["type"], "string");
    assert_eq!(properties["reference"]["type"], "string");
    assert_eq!(schema["additionalProperties"], false);
    let text = schema.to_string();
    for leaked in ["reducer", "append", "field_schema", "StateField"] {
        assert!(!text.contains(leaked), "the schema mentions {leaked:?}: {text}");
    }
}

#[test]
fn every_field_is_required() {
    let schema = schema_of::<Ticket>();
    let required: Vec<&str> = schema["required"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
    // An `Option` is required too (a state always has it, `null` or not), and so is `legacy`,
    // whose serde default only lets an older stored state read: schemars is told to leave the
    // default out (it would write it through the field's serde hook).
    assert_eq!(required, ["tokens", "text", "confidence", "priority", "plan", "notes", "legacy", "reference"]);
    assert!(schema["properties"]["legacy"].get("default").is_none());
    let keys: Vec<&String> = schema["properties"].as_object().unwrap().keys().collect();
    let mut fields: Vec<&str> = Ticket::FIELDS.to_vec();
    fields.sort_unstable();
    assert_eq!(keys, fields);
}

#[test]
fn a_state_as_serialized_has_every_required_field() {
    let schema = schema_of::<Ticket>();
    let value = serde_json::to_value(Ticket::default()).unwrap();
    for field in schema["required"].as_array().unwrap() {
        assert!(value.get(field.as_str().unwrap()).is_some(), "{field} is missing from {value}");
    }
    assert_eq!(value["priority"], "low");
    assert_eq!(value["reference"], "");
}

#[test]
fn prebuilt_states_describe_their_messages() {
    let schema = schema_of::<MessagesState>();
    assert_eq!(schema["properties"]["messages"]["items"]["$ref"], "#/$defs/Message");
    let message = &schema["$defs"]["Message"];
    assert_eq!(message["required"], json!(["role"]));
    assert_eq!(message["properties"]["role"]["$ref"], "#/$defs/Role");
    let roles: Vec<&Value> = schema["$defs"]["Role"]["oneOf"].as_array().unwrap().iter().map(|r| &r["const"]).collect();
    assert_eq!(roles, [&json!("system"), &json!("user"), &json!("assistant"), &json!("tool"), &json!("remove")]);
    assert_eq!(schema["$defs"]["ToolCall"]["required"], json!(["id", "name"]));
    assert_eq!(MessagesState::MESSAGE_FIELDS, ["messages"]);
}
