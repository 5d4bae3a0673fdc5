//! Chat messages between graphwright's form and LangChain's, which LangGraph clients read and
//! write: `{"type": "human" | "ai" | "system" | "tool", "content", "id", "tool_calls": [{"id",
//! "name", "args"}], "tool_call_id"}`.
//!
//! Only the state fields that hold messages ([`State::MESSAGE_FIELDS`]) are converted, so user
//! data that happens to look like a message is left alone.
//!
//! [`State::MESSAGE_FIELDS`]: graphwright::State::MESSAGE_FIELDS

use serde_json::{Map, Value, json};

/// Rewrites the message fields of a state or update (a JSON object) for clients.
pub(crate) fn fields_to_wire(value: &mut Value, fields: &[&str]) {
    each_field(value, fields, message_to_wire);
}

/// Rewrites the message fields of an input or update a client sent into graphwright's form.
/// Strings, `[role, text]` pairs and OpenAI-style `{"role", "content"}` objects are accepted as
/// LangChain accepts them.
pub(crate) fn fields_from_wire(value: &mut Value, fields: &[&str]) {
    each_field(value, fields, message_from_wire);
}

fn each_field(value: &mut Value, fields: &[&str], convert: fn(&mut Value)) {
    let Value::Object(object) = value else { return };
    for field in fields {
        let Some(slot) = object.get_mut(*field) else { continue };
        // An `Overwrite` write: `{"$overwrite": [...]}`.
        let slot = match slot {
            Value::Object(o) if o.len() == 1 && o.contains_key("$overwrite") => &mut o["$overwrite"],
            other => other,
        };
        match slot {
            Value::Array(items) => items.iter_mut().for_each(convert),
            Value::Null => {}
            single => convert(single),
        }
    }
}

/// graphwright's message → LangChain's.
pub(crate) fn message_to_wire(message: &mut Value) {
    let Value::Object(m) = message else { return };
    let kind = match m.remove("role").as_ref().and_then(Value::as_str) {
        Some("user") => "human",
        Some("assistant") => "ai",
        Some("tool") => "tool",
        Some("remove") => "remove",
        _ => "system",
    };
    let mut out = Map::new();
    out.insert("type".into(), kind.into());
    out.insert("content".into(), m.remove("content").unwrap_or_else(|| "".into()));
    out.insert("id".into(), m.remove("id").unwrap_or(Value::Null));
    out.insert("name".into(), m.remove("name").unwrap_or(Value::Null));
    out.insert("additional_kwargs".into(), json!({}));
    out.insert("response_metadata".into(), json!({}));
    match kind {
        "ai" => {
            let calls = match m.remove("tool_calls") {
                Some(Value::Array(calls)) => calls.into_iter().map(call_to_wire).collect(),
                _ => Vec::new(),
            };
            out.insert("tool_calls".into(), Value::Array(calls));
            out.insert("invalid_tool_calls".into(), json!([]));
        }
        "tool" => {
            out.insert("tool_call_id".into(), m.remove("tool_call_id").unwrap_or(Value::Null));
            let failed = m.remove("is_error").and_then(|v| v.as_bool()).unwrap_or(false);
            out.insert("status".into(), if failed { "error" } else { "success" }.into());
        }
        _ => {}
    }
    *message = Value::Object(out);
}

/// A streamed piece of a reply, as LangChain's `AIMessageChunk`: its text and the pieces of tool
/// calls it carries (`tool_call_chunks`).
pub(crate) fn ai_chunk(id: &str, text: &str, calls: &[Value]) -> Value {
    let mut message = json!({"id": id, "role": "assistant", "content": text});
    message_to_wire(&mut message);
    if let Value::Object(m) = &mut message {
        m.insert("type".into(), "AIMessageChunk".into());
        m.insert("tool_call_chunks".into(), Value::Array(calls.to_vec()));
    }
    message
}

fn call_to_wire(call: Value) -> Value {
    let Value::Object(mut c) = call else { return call };
    json!({
        "id": c.remove("id").unwrap_or(Value::Null),
        "name": c.remove("name").unwrap_or(Value::Null),
        "args": c.remove("arguments").unwrap_or_else(|| json!({})),
        "type": "tool_call",
    })
}

/// A client's message (LangChain dict, OpenAI dict, `[role, text]`, or a bare string) →
/// graphwright's. Anything else is left as it is, for the state's own decoding to reject with
/// a clear error.
pub(crate) fn message_from_wire(message: &mut Value) {
    match message {
        Value::String(text) => *message = json!({"role": "user", "content": text}),
        Value::Array(pair) if pair.len() == 2 && pair.iter().all(Value::is_string) => {
            let role = pair[0].as_str().and_then(role_of).unwrap_or("user");
            *message = json!({"role": role, "content": pair[1]});
        }
        Value::Object(m) => {
            let kind = m.get("type").or_else(|| m.get("role")).and_then(Value::as_str).and_then(role_of);
            let Some(role) = kind else { return };
            let mut out = Map::new();
            out.insert("role".into(), role.into());
            out.insert("content".into(), text_of(m.remove("content")).into());
            for key in ["id", "name", "tool_call_id"] {
                if let Some(v) = m.remove(key).filter(|v| !v.is_null()) {
                    out.insert(key.into(), v);
                }
            }
            if let Some(Value::Array(calls)) = m.remove("tool_calls")
                && !calls.is_empty()
            {
                out.insert("tool_calls".into(), Value::Array(calls.into_iter().map(call_from_wire).collect()));
            }
            if m.get("status").and_then(Value::as_str) == Some("error") {
                out.insert("is_error".into(), true.into());
            }
            *message = Value::Object(out);
        }
        _ => {}
    }
}

fn role_of(kind: &str) -> Option<&'static str> {
    Some(match kind {
        "human" | "user" | "HumanMessage" | "HumanMessageChunk" => "user",
        "ai" | "assistant" | "AIMessage" | "AIMessageChunk" => "assistant",
        "system" | "developer" | "SystemMessage" => "system",
        "tool" | "ToolMessage" => "tool",
        "remove" | "RemoveMessage" => "remove",
        _ => return None,
    })
}

/// The text of a message's content: a string, or the text parts of a list of content blocks.
fn text_of(content: Option<Value>) -> String {
    match content {
        Some(Value::String(text)) => text,
        Some(Value::Array(blocks)) => blocks
            .iter()
            .filter_map(|b| b.as_str().or_else(|| b.get("text").and_then(Value::as_str)))
            .collect::<Vec<_>>()
            .join(""),
        _ => String::new(),
    }
}

fn call_from_wire(call: Value) -> Value {
    let Value::Object(mut c) = call else { return call };
    let arguments = c.remove("args").or_else(|| c.remove("arguments")).unwrap_or_else(|| json!({}));
    // OpenAI-style calls nest the name and the arguments (as text) under `function`.
    let (name, arguments) = match c.remove("function") {
        Some(Value::Object(mut f)) => {
            let args = match f.remove("arguments") {
                Some(Value::String(text)) => serde_json::from_str(&text).unwrap_or(Value::String(text)),
                Some(other) => other,
                None => arguments,
            };
            (f.remove("name").unwrap_or(Value::Null), args)
        }
        _ => (c.remove("name").unwrap_or(Value::Null), arguments),
    };
    json!({"id": c.remove("id").unwrap_or(Value::Null), "name": name, "arguments": arguments})
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_goes_out_as_langchain_dicts_and_comes_back() {
        let mut state = json!({
            "messages": [
                {"id": "1", "role": "user", "content": "hi"},
                {"id": "2", "role": "assistant", "content": "", "tool_calls": [{"id": "c1", "name": "add", "arguments": {"a": 1}}]},
                {"id": "3", "role": "tool", "content": "boom", "tool_call_id": "c1", "name": "add", "is_error": true},
            ],
            "other": {"role": "user", "content": "not a message field"},
        });
        let original = state.clone();
        fields_to_wire(&mut state, &["messages"]);
        assert_eq!(state["messages"][0]["type"], "human");
        assert_eq!(
            state["messages"][1]["tool_calls"][0],
            json!({"id": "c1", "name": "add", "args": {"a": 1}, "type": "tool_call"})
        );
        assert_eq!(state["messages"][2]["status"], "error");
        assert_eq!(state["other"], original["other"]);
        fields_from_wire(&mut state, &["messages"]);
        assert_eq!(state["messages"], original["messages"]);
    }

    #[test]
    fn client_shorthands_become_messages() {
        let mut input = json!({"messages": ["hello", ["ai", "hi"], {"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}]});
        fields_from_wire(&mut input, &["messages"]);
        assert_eq!(
            input["messages"],
            json!([{"role": "user", "content": "hello"}, {"role": "assistant", "content": "hi"}, {"role": "user", "content": "ab"}])
        );
    }

    #[test]
    fn an_unknown_shape_is_left_for_the_state_to_reject() {
        let mut input = json!({"messages": [{"type": "alien", "content": 1}, 7]});
        let before = input.clone();
        fields_from_wire(&mut input, &["messages"]);
        assert_eq!(input, before);
    }
}
