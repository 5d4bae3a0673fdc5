//! The message a client sends (`message/send`, `message/stream`), read and checked.

use super::dialect::{Dialect, Role};
use super::rpc::{RpcError, code};
use serde_json::{Map, Value};

/// A message to the agent and how the client wants the answer.
#[derive(Debug)]
pub(super) struct Incoming {
    pub(super) message_id: String,
    pub(super) role: Role,
    pub(super) context_id: Option<String>,
    pub(super) task_id: Option<String>,
    /// The text parts, one per line; `None` when there are none.
    pub(super) text: Option<String>,
    /// The data parts' fields, merged (each becomes a field of the run's input), without
    /// `resume`.
    pub(super) data: Map<String, Value>,
    /// A data part's `resume`: the answer to the question the task is waiting on.
    pub(super) resume: Option<Value>,
    /// How many messages of history to show; `None`: all.
    pub(super) history_length: Option<usize>,
    /// Whether to answer once the task ends (`false`: at once, with the task just started).
    pub(super) blocking: bool,
}

/// Reads `params` of a send.
pub(super) fn read(params: &Map<String, Value>, dialect: Dialect) -> Result<Incoming, RpcError> {
    let Some(Value::Object(message)) = params.get("message") else {
        return Err(RpcError::invalid_params("`params.message` must be a message object"));
    };
    let message_id = match message.get("messageId") {
        Some(Value::String(id)) if !id.is_empty() => id.clone(),
        _ => return Err(RpcError::invalid_params("`message.messageId` is required: a unique string the client picks")),
    };
    let role = match message.get("role").and_then(Value::as_str) {
        Some(role) => Role::parse(role).ok_or_else(|| {
            RpcError::invalid_params(format!(
                "`message.role` must be user or agent (ROLE_USER or ROLE_AGENT), not {role:?}"
            ))
        })?,
        None => return Err(RpcError::invalid_params("`message.role` is required: user (ROLE_USER)")),
    };
    let context_id = optional_string(message, "contextId")?;
    let task_id = optional_string(message, "taskId")?;
    let Some(Value::Array(parts)) = message.get("parts") else {
        return Err(RpcError::invalid_params("`message.parts` must be a list of parts"));
    };
    if parts.is_empty() {
        return Err(RpcError::invalid_params("`message.parts` is empty: send at least one text or data part"));
    }
    let mut texts = Vec::new();
    let mut data = Map::new();
    for (index, part) in parts.iter().enumerate() {
        match read_part(part).map_err(|mut e| {
            e.message = format!("`message.parts[{index}]`: {}", e.message);
            e
        })? {
            Read::Text(text) => texts.push(text),
            Read::Data(fields) => data.extend(fields),
        }
    }
    let resume = data.remove("resume");
    let configuration = match params.get("configuration") {
        None | Some(Value::Null) => Map::new(),
        Some(Value::Object(c)) => c.clone(),
        Some(_) => return Err(RpcError::invalid_params("`params.configuration` must be an object")),
    };
    let history_length = match configuration.get("historyLength") {
        None | Some(Value::Null) => None,
        Some(n) => Some(count(n, "configuration.historyLength")?),
    };
    let flag = |key: &str| match configuration.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(RpcError::invalid_params(format!("`configuration.{key}` must be true or false"))),
    };
    let blocking = match dialect {
        Dialect::V03 => flag("blocking")?.unwrap_or(true),
        Dialect::V1 => !flag("returnImmediately")?.unwrap_or(false),
    };
    let text = (!texts.is_empty()).then(|| texts.join("\n"));
    Ok(Incoming { message_id, role, context_id, task_id, text, data, resume, history_length, blocking })
}

enum Read {
    Text(String),
    Data(Map<String, Value>),
}

/// A part in either version's shape: `{"kind": "text", "text"}` or `{"text"}`, `{"kind":
/// "data", "data"}` or `{"data"}`. Files (`file`, `url`, `raw`) are refused: a graph's messages
/// hold text.
fn read_part(part: &Value) -> Result<Read, RpcError> {
    let Value::Object(part) = part else { return Err(RpcError::invalid_params("a part must be an object")) };
    let kind = match part.get("kind").and_then(Value::as_str) {
        Some(kind) => kind,
        None => ["text", "data", "file", "url", "raw"].into_iter().find(|k| part.contains_key(*k)).unwrap_or(""),
    };
    match kind {
        "text" => match part.get("text") {
            Some(Value::String(text)) => Ok(Read::Text(text.clone())),
            _ => Err(RpcError::invalid_params("a text part needs `text`, a string")),
        },
        "data" => match part.get("data") {
            Some(Value::Object(fields)) => {
                Ok(Read::Data(fields.iter().map(|(k, v)| (k.clone(), whole_numbers(v))).collect()))
            }
            _ => Err(RpcError::invalid_params(
                "a data part's `data` must be an object: its fields become the run's input",
            )),
        },
        "file" | "url" | "raw" => Err(RpcError::new(
            code::CONTENT_TYPE_NOT_SUPPORTED,
            "file parts are not taken: send text (it becomes a message) or data (its fields become the input)",
        )),
        _ => Err(RpcError::invalid_params("a part must be text (`text`) or data (`data`)")),
    }
}

/// `value` with every number that has no fraction written as an integer. A2A 1.0 carries data
/// as protobuf's `Struct`, whose numbers are all doubles (`2.0`); a state's integer field takes
/// `2` but not `2.0`, and a float field takes either.
fn whole_numbers(value: &Value) -> Value {
    match value {
        Value::Number(n) if n.is_f64() => match n.as_f64() {
            #[allow(clippy::cast_precision_loss)] // the bounds only need to be near i64's
            Some(f) if f.fract() == 0.0 && f.abs() < i64::MAX as f64 => Value::from(f as i64),
            _ => value.clone(),
        },
        Value::Array(items) => items.iter().map(whole_numbers).collect(),
        Value::Object(fields) => fields.iter().map(|(k, v)| (k.clone(), whole_numbers(v))).collect(),
        other => other.clone(),
    }
}

fn optional_string(message: &Map<String, Value>, key: &str) -> Result<Option<String>, RpcError> {
    match message.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) if !s.is_empty() => Ok(Some(s.clone())),
        Some(_) => Err(RpcError::invalid_params(format!("`message.{key}` must be a non-empty string"))),
    }
}

/// A non-negative integer parameter.
pub(super) fn count(value: &Value, name: &str) -> Result<usize, RpcError> {
    value
        .as_u64()
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| RpcError::invalid_params(format!("`{name}` must be a non-negative integer, not {value}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn params(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn both_versions_parts_are_read() {
        let p = params(json!({"message": {"messageId": "m", "role": "ROLE_USER",
            "parts": [{"text": "a"}, {"kind": "text", "text": "b"}, {"data": {"x": 1.0, "y": [2.5, 3.0], "resume": "yes"}}]},
            "configuration": {"historyLength": 2, "returnImmediately": true}}));
        let read = read(&p, Dialect::V1).unwrap();
        assert_eq!(read.text.as_deref(), Some("a\nb"));
        assert_eq!(read.data, params(json!({"x": 1, "y": [2.5, 3]})));
        assert!(read.data["x"].is_i64());
        assert_eq!(read.resume, Some(json!("yes")));
        assert_eq!((read.history_length, read.blocking, read.role), (Some(2), false, Role::User));
    }

    #[test]
    fn bad_messages_say_what_is_wrong() {
        let cases = [
            (json!({}), code::INVALID_PARAMS, "`params.message`"),
            (json!({"message": {"role": "user", "parts": []}}), code::INVALID_PARAMS, "messageId"),
            (
                json!({"message": {"messageId": "m", "role": "boss", "parts": [{"text": "a"}]}}),
                code::INVALID_PARAMS,
                "role",
            ),
            (json!({"message": {"messageId": "m", "role": "user", "parts": []}}), code::INVALID_PARAMS, "empty"),
            (
                json!({"message": {"messageId": "m", "role": "user", "parts": [{"data": [1]}]}}),
                code::INVALID_PARAMS,
                "parts[0]",
            ),
            (
                json!({"message": {"messageId": "m", "role": "user", "parts": [{"kind": "file", "file": {}}]}}),
                code::CONTENT_TYPE_NOT_SUPPORTED,
                "file",
            ),
            (
                json!({"message": {"messageId": "m", "role": "user", "parts": [{"text": "a"}]},
                    "configuration": {"historyLength": -1}}),
                code::INVALID_PARAMS,
                "historyLength",
            ),
        ];
        for (given, expected, says) in cases {
            let error = read(&params(given.clone()), Dialect::V03).unwrap_err();
            assert_eq!(error.code, expected, "{given}");
            assert!(error.message.contains(says), "{given}: {}", error.message);
        }
    }
}
