//! The prompt hash: one fingerprint per distinct prompt, computed in one place.

use super::ModelSettings;
use crate::message::{Message, Role};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The version of the canonical payload; bumped whenever what goes into the hash changes, so
/// hashes of different versions never compare equal by accident.
const VERSION: u32 = 1;

/// The hash of a prompt: `v1:` and the SHA-256, in hex, of a canonical JSON payload of the
/// model, the messages (role, text, tool calls, tool results; not the messages' ids), the
/// temperature, the reply's token limit and the tools offered. Ids that only correlate
/// requests (message ids, request ids, trace ids) are left out, so the same prompt sent twice
/// hashes the same.
///
/// ```
/// use graphwright::Message;
/// use graphwright::model::{ModelSettings, prompt_hash};
///
/// let settings = ModelSettings::default();
/// let a = prompt_hash("m", &[Message::user("hi").with_id("1")], &settings);
/// let b = prompt_hash("m", &[Message::user("hi").with_id("2")], &settings);
/// assert_eq!(a, b);
/// assert!(a.starts_with("v1:"));
/// assert_ne!(a, prompt_hash("m", &[Message::user("hello")], &settings));
/// ```
#[must_use]
pub fn prompt_hash(model: &str, messages: &[Message], settings: &ModelSettings) -> String {
    let payload = Payload {
        max_tokens: settings.max_tokens,
        messages: messages.iter().map(Prompted::of).collect(),
        model,
        response_format: settings.response_format.as_ref().map(|f| (f.name.as_str(), &f.schema)),
        temperature: settings.temperature,
        tools: settings.tools.iter().map(|t| (t.name.as_str(), t.description.as_str(), &t.parameters)).collect(),
        v: VERSION,
    };
    let mut hasher = Hashing(Sha256::new());
    // Writing into a hasher cannot fail, and every value here serializes.
    let _ = serde_json::to_writer(&mut hasher, &payload);
    let digest = hasher.0.finalize();
    let mut out = String::with_capacity(3 + 2 * digest.len());
    out.push_str("v1:");
    push_hex(&mut out, &digest);
    out
}

/// Appends `bytes` to `out` in lower-case hex.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
}

/// The canonical payload, serialized straight into the hash: fields in key order, as a JSON
/// object with sorted keys would be, so the bytes (and hashes) are those of version 1.
#[derive(Serialize)]
struct Payload<'a> {
    max_tokens: Option<u32>,
    messages: Vec<Prompted<'a>>,
    model: &'a str,
    response_format: Option<(&'a str, &'a Value)>,
    temperature: Option<f64>,
    tools: Vec<(&'a str, &'a str, &'a Value)>,
    v: u32,
}

/// What of a message goes into the hash (not its id).
#[derive(Serialize)]
struct Prompted<'a> {
    content: &'a str,
    is_error: bool,
    name: &'a Option<String>,
    role: Role,
    tool_call_id: &'a Option<String>,
    tool_calls: Vec<(&'a str, &'a str, &'a Value)>,
}

impl<'a> Prompted<'a> {
    fn of(m: &'a Message) -> Self {
        Self {
            content: &m.content,
            is_error: m.is_error,
            name: &m.name,
            role: m.role,
            tool_call_id: &m.tool_call_id,
            tool_calls: m.tool_calls.iter().map(|c| (c.id.as_str(), c.name.as_str(), &c.arguments)).collect(),
        }
    }
}

/// An `io::Write` that feeds a SHA-256.
struct Hashing(Sha256);

impl std::io::Write for Hashing {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.update(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::model::{ResponseFormat, ToolSpec};
    use serde_json::json;
    use sha2::Digest;

    /// The payload as version 1 defined it: a JSON object with sorted keys, built as a value.
    fn as_value(model: &str, messages: &[Message], settings: &ModelSettings) -> String {
        let messages: Vec<Value> = messages
            .iter()
            .map(|m| {
                json!({
                    "role": m.role, "content": m.content,
                    "tool_calls": m.tool_calls.iter().map(|c| json!([c.id, c.name, c.arguments])).collect::<Vec<_>>(),
                    "tool_call_id": m.tool_call_id, "name": m.name, "is_error": m.is_error,
                })
            })
            .collect();
        let tools: Vec<Value> = settings.tools.iter().map(|t| json!([t.name, t.description, t.parameters])).collect();
        let payload = json!({
            "v": 1, "model": model, "messages": messages, "temperature": settings.temperature,
            "max_tokens": settings.max_tokens, "tools": tools,
            "response_format": settings.response_format.as_ref().map(|f| json!([f.name, f.schema])),
        });
        let digest = Sha256::digest(payload.to_string().as_bytes());
        digest.iter().fold("v1:".to_owned(), |mut out, b| {
            use std::fmt::Write;
            let _ = write!(out, "{b:02x}");
            out
        })
    }

    #[test]
    fn the_streamed_payload_hashes_as_version_1_did() {
        let messages = [
            Message::system("be \"brief\"\n"),
            Message::user("hé").with_id("u1"),
            Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "add", json!({"b": 2, "a": [1.5, null]}))]),
            Message::tool_error("c1", "no").with_name("add"),
        ];
        let mut settings = ModelSettings { temperature: Some(0.25), max_tokens: Some(64), ..ModelSettings::default() };
        settings.tools = std::sync::Arc::from([ToolSpec {
            name: "add".into(),
            description: "Add.".into(),
            parameters: json!({"type": "object", "properties": {"a": {"type": "integer"}}}),
        }]);
        assert_eq!(prompt_hash("m", &messages, &settings), as_value("m", &messages, &settings));
        settings.response_format = Some(ResponseFormat { name: "Answer".into(), schema: json!({"type": "string"}) });
        settings.temperature = None;
        assert_eq!(prompt_hash("m", &messages, &settings), as_value("m", &messages, &settings));
    }
}
