//! The prompt hash: one fingerprint per distinct prompt, computed in one place.

use super::ModelSettings;
use crate::message::Message;
use serde_json::{Value, json};
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
    let messages: Vec<Value> = messages
        .iter()
        .map(|m| {
            json!({
                "role": m.role,
                "content": m.content,
                "tool_calls": m.tool_calls.iter().map(|c| json!([c.id, c.name, c.arguments])).collect::<Vec<_>>(),
                "tool_call_id": m.tool_call_id,
                "name": m.name,
                "is_error": m.is_error,
            })
        })
        .collect();
    let tools: Vec<Value> = settings.tools.iter().map(|t| json!([t.name, t.description, t.parameters])).collect();
    let payload = json!({
        "v": VERSION,
        "model": model,
        "messages": messages,
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "tools": tools,
        "response_format": settings.response_format.as_ref().map(|f| json!([f.name, f.schema])),
    });
    let digest = Sha256::digest(payload.to_string().as_bytes());
    let mut out = format!("v{VERSION}:");
    for byte in digest {
        use std::fmt::Write;
        let _ = write!(out, "{byte:02x}");
    }
    out
}
