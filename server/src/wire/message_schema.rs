//! The JSON Schemas of chat messages in the shapes [`super::messages`] converts: what a state's
//! message field holds as the server gives it out (LangChain's message dicts), and what a client
//! may write into one (those dicts, OpenAI's `{"role", "content"}`, `[role, text]` pairs and
//! plain strings).
//!
//! A front end draws a message field from these, as it draws LangGraph's own: one alternative per
//! message kind, told apart by the `type` constant.

use serde_json::{Map, Value, json};

/// A message as the server gives it out: one of the four kinds, each with every key
/// `message_to_wire` writes.
pub(crate) fn output_message() -> Value {
    let content = json!({"type": "string", "description": "The text of the message."});
    json!({
        "description": "A chat message, as LangChain writes it.",
        "oneOf": [
            kind("HumanMessage", "human", "A turn of the user.", &content, &[], true),
            kind("AIMessage", "ai", "A turn of the model: its text and the tools it asks to run.", &content, &ai_keys(), true),
            kind("ToolMessage", "tool", "The result of a tool call.", &content, &tool_keys(), true),
            kind("SystemMessage", "system", "Instructions to the model.", &content, &[], true),
        ],
    })
}

/// A message as a client may write it. Extra keys are ignored, and the kind may also be named
/// by LangChain's class names and OpenAI's roles, which the schema leaves out.
pub(crate) fn input_message() -> Value {
    let content = json!({
        "description": "The text of the message, or content blocks whose text parts are joined.",
        "anyOf": [
            {"type": "string"},
            {"type": "array", "items": {"anyOf": [{"type": "string"}, {"type": "object"}]}},
        ],
    });
    json!({
        "description": "A chat message: a LangChain message dict, an OpenAI-style message, a \
                        `[role, text]` pair, or a plain string (a turn of the user).",
        "anyOf": [
            kind("HumanMessage", "human", "A turn of the user.", &content, &[], false),
            kind("AIMessage", "ai", "A turn of the model: its text and the tools it asks to run.", &content, &ai_keys(), false),
            kind("ToolMessage", "tool", "The result of a tool call.", &content, &tool_keys(), false),
            kind("SystemMessage", "system", "Instructions to the model.", &content, &[], false),
            {
                "title": "RemoveMessage",
                "description": "Deletes the message with this id from the field.",
                "type": "object",
                "properties": {"type": {"const": "remove"}, "id": {"type": "string"}},
                "required": ["type", "id"],
            },
            {
                "title": "OpenAI-style message",
                "type": "object",
                "properties": {
                    "role": {"enum": ["user", "assistant", "system", "developer", "tool"]},
                    "content": content,
                    "tool_call_id": {"type": "string"},
                    "tool_calls": {"type": "array", "items": {"type": "object"}},
                },
                "required": ["role"],
            },
            {
                "title": "[role, text]",
                "type": "array",
                "items": {"type": "string"},
                "minItems": 2,
                "maxItems": 2,
            },
            {"title": "Text", "description": "A turn of the user.", "type": "string"},
        ],
    })
}

/// The keys only an AI message has.
fn ai_keys() -> [(&'static str, Value); 2] {
    let call = json!({
        "type": "object",
        "properties": {
            "id": {"type": ["string", "null"], "description": "The call's id; the tool's result names it."},
            "name": {"type": "string", "description": "The tool to run."},
            "args": {"type": "object", "description": "The arguments, as the model wrote them."},
            "type": {"const": "tool_call"},
        },
        "required": ["name", "args"],
    });
    [
        (
            "tool_calls",
            json!({"type": "array", "items": call, "description": "The tools to run, in the model's order."}),
        ),
        ("invalid_tool_calls", json!({"type": "array", "items": {"type": "object"}})),
    ]
}

/// The keys only a tool message has.
fn tool_keys() -> [(&'static str, Value); 2] {
    [
        ("tool_call_id", json!({"type": ["string", "null"], "description": "The id of the call this answers."})),
        ("status", json!({"enum": ["success", "error"], "description": "Whether the call failed."})),
    ]
}

/// One kind of LangChain message: `type` is the constant `tag`; on output every key is there
/// (`output`), on input only `type` and `content` must be.
fn kind(title: &str, tag: &str, description: &str, content: &Value, own: &[(&str, Value)], output: bool) -> Value {
    let mut properties = Map::new();
    properties.insert("type".into(), json!({"const": tag}));
    properties.insert("content".into(), content.clone());
    properties
        .insert("id".into(), json!({"type": ["string", "null"], "description": "A stable id within the thread."}));
    properties.insert("name".into(), json!({"type": ["string", "null"]}));
    properties.insert("additional_kwargs".into(), json!({"type": "object"}));
    properties.insert("response_metadata".into(), json!({"type": "object"}));
    for (key, schema) in own {
        properties.insert((*key).into(), schema.clone());
    }
    let required = if output {
        Value::Array(properties.keys().cloned().map(Value::String).collect())
    } else {
        json!(["type", "content"])
    };
    json!({
        "title": title,
        "description": description,
        "type": "object",
        "properties": properties,
        "required": required,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wire::messages::{fields_from_wire, fields_to_wire};

    /// The alternatives of `schema` (`oneOf` or `anyOf`) that `value` fits, by title, checking
    /// only what these schemas use: `type` constants and required keys.
    fn fitting(schema: &Value, value: &Value) -> Vec<String> {
        let alternatives = schema.get("oneOf").or_else(|| schema.get("anyOf")).and_then(Value::as_array).unwrap();
        alternatives
            .iter()
            .filter(|alt| match (alt["type"].as_str(), value) {
                (Some("object"), Value::Object(object)) => {
                    let tag = &alt["properties"]["type"]["const"];
                    let tag_fits = tag.is_null() || object.get("type") == Some(tag);
                    let required = alt["required"].as_array().unwrap();
                    tag_fits && required.iter().all(|key| object.contains_key(key.as_str().unwrap()))
                }
                (Some("string"), Value::String(_)) | (Some("array"), Value::Array(_)) => true,
                _ => false,
            })
            .map(|alt| alt["title"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn every_message_the_server_gives_out_fits_exactly_one_output_kind() {
        let mut state = json!({"messages": [
            {"id": "1", "role": "user", "content": "hi"},
            {"id": "2", "role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1}}]},
            {"id": "3", "role": "tool", "content": "2", "tool_call_id": "c1", "name": "add"},
            {"id": "4", "role": "system", "content": "be brief"},
        ]});
        fields_to_wire(&mut state, &["messages"]);
        let schema = output_message();
        let kinds: Vec<Vec<String>> =
            state["messages"].as_array().unwrap().iter().map(|m| fitting(&schema, m)).collect();
        assert_eq!(kinds, [["HumanMessage"], ["AIMessage"], ["ToolMessage"], ["SystemMessage"]]);
    }

    #[test]
    fn every_input_shape_the_server_reads_has_an_alternative() {
        let inputs = json!([
            {"type": "human", "content": "hi"},
            {"role": "user", "content": [{"type": "text", "text": "a"}]},
            ["ai", "hello"],
            "plain",
            {"type": "remove", "id": "1"},
        ]);
        let schema = input_message();
        for input in inputs.as_array().unwrap() {
            assert!(!fitting(&schema, input).is_empty(), "{input} fits no alternative");
            let mut field = json!({"messages": [input]});
            fields_from_wire(&mut field, &["messages"]);
            assert!(field["messages"][0]["role"].is_string(), "the server does not read {input}");
        }
        assert!(fitting(&schema, &json!({"content": "no kind"})).is_empty());
        assert!(fitting(&schema, &json!(7)).is_empty());
    }
}
