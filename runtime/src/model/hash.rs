//! The prompt hash: one fingerprint per distinct prompt, computed in one place.

use super::ModelSettings;
use crate::message::Message;

mod payload;
mod prefixes;

/// The hash of a prompt: `v1:` and the SHA-256, in hex, of a canonical JSON payload of the
/// model, the messages (role, text, tool calls, tool results; not the messages' ids), the
/// temperature, the reply's token limit and the tools offered. Ids that only correlate
/// requests (message ids, request ids, trace ids) are left out, so the same prompt sent twice
/// hashes the same.
///
/// An agent sends its whole conversation again with every call; each thread keeps the last
/// four conversations it hashed (a copy of their messages, up to 1 MiB of them each) with the
/// hash's state after them, so a prompt that goes on from one of them hashes only its new
/// messages. The hash is the same either way.
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
    // The conversation's earlier prompts are picked up where this thread left them (see
    // `prefixes`): an agent's every call sends the whole conversation again, so hashing each from
    // the start made a run's hashing grow with the square of its length.
    let digest = prefixes::through(settings.max_tokens, messages).finish(model, settings);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::{Role, ToolCall};
    use crate::model::{ResponseFormat, ToolSpec};
    use serde_json::Value;
    use serde_json::json;
    use sha2::{Digest, Sha256};

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

    /// A change to an assistant message that asked for one tool call.
    type Change = fn(&mut Message);

    /// A growing conversation: the messages an agent's calls send, one turn more each time.
    fn conversation(turns: usize) -> Vec<Message> {
        let mut messages = vec![Message::system("be brief"), Message::user("add them all")];
        for turn in 0..turns {
            let id = format!("c{turn}");
            let call =
                ToolCall::new(id.clone(), "add", json!({"a": turn, "b": 0.5, "nested": {"z": [turn], "y": null}}));
            messages.push(Message::assistant(format!("turn {turn}")).with_tool_calls(vec![call]));
            messages.push(Message::tool(id, format!("{turn}.5")).with_name("add"));
        }
        messages
    }

    /// `prompt_hash` on a thread that has hashed nothing before.
    fn from_scratch(model: &str, messages: &[Message], settings: &ModelSettings) -> String {
        let (model, messages, settings) = (model.to_owned(), messages.to_vec(), settings.clone());
        std::thread::spawn(move || prompt_hash(&model, &messages, &settings)).join().unwrap()
    }

    #[test]
    fn a_conversation_taken_on_from_its_earlier_prompts_hashes_as_from_its_start() {
        let settings = ModelSettings { max_tokens: Some(100), ..ModelSettings::default() };
        let full = conversation(12);
        for len in 1..=full.len() {
            let prompt = &full[..len];
            assert_eq!(prompt_hash("m", prompt, &settings), as_value("m", prompt, &settings), "{len} messages");
        }
        // The same prompt again, and one the kept conversation is longer than.
        assert_eq!(prompt_hash("m", &full, &settings), as_value("m", &full, &settings));
        assert_eq!(prompt_hash("m", &full[..5], &settings), as_value("m", &full[..5], &settings));
        // What follows the messages is never kept: another model, temperature or tool set.
        let other = ModelSettings { temperature: Some(0.5), ..settings.clone() };
        assert_eq!(prompt_hash("n", &full, &other), as_value("n", &full, &other));
    }

    #[test]
    fn a_prompt_that_differs_from_a_kept_conversation_is_not_taken_for_it() {
        let settings = ModelSettings::default();
        let base = conversation(6);
        let before = prompt_hash("m", &base, &settings);
        let changes: [(&str, Change); 10] = [
            ("content", |m| m.content.push('!')),
            ("role", |m| m.role = Role::User),
            ("is_error", |m| m.is_error = !m.is_error),
            ("name", |m| m.name = Some("other".into())),
            ("tool_call_id", |m| m.tool_call_id = Some("other".into())),
            ("an argument", |m| m.tool_calls[0].arguments["b"] = json!(1.5)),
            ("an argument's name", |m| {
                let arguments = m.tool_calls[0].arguments.as_object_mut().unwrap();
                let b = arguments.remove("b").unwrap();
                arguments.insert("c".into(), b);
            }),
            ("a call's id", |m| m.tool_calls[0].id.push('x')),
            ("a call's name", |m| m.tool_calls[0].name.push('x')),
            ("a call more", |m| m.tool_calls.push(ToolCall::new("x", "y", json!({})))),
        ];
        for (what, change) in &changes {
            // An early assistant message changed, then the conversation goes on.
            let mut edited = base.clone();
            change(&mut edited[2]);
            edited.push(Message::user("more"));
            let hash = prompt_hash("m", &edited, &settings);
            assert_eq!(hash, from_scratch("m", &edited, &settings), "{what}");
            assert_eq!(hash, as_value("m", &edited, &settings), "{what}");
        }
        // Equal numbers written apart: `0.0` kept, `-0.0` asked for after it.
        let mut zero = base.clone();
        zero[2].tool_calls[0].arguments["b"] = json!(0.0);
        let _ = prompt_hash("m", &zero, &settings);
        let mut negative = zero.clone();
        negative[2].tool_calls[0].arguments["b"] = json!(-0.0);
        negative.push(Message::user("and more"));
        assert_eq!(prompt_hash("m", &negative, &settings), from_scratch("m", &negative, &settings));
        // Another reply limit is another payload from its first bytes.
        let limited = ModelSettings { max_tokens: Some(7), ..settings.clone() };
        assert_eq!(prompt_hash("m", &base, &limited), as_value("m", &base, &limited));
        assert_eq!(prompt_hash("m", &base, &settings), before, "the kept conversation is still whole");
    }

    #[test]
    fn conversations_interleaved_beyond_what_a_thread_keeps_still_hash_right() {
        let settings = ModelSettings::default();
        let conversations: Vec<Vec<Message>> = (0..7)
            .map(|n| {
                let mut messages = conversation(4);
                messages[1].content = format!("conversation {n}");
                messages
            })
            .collect();
        for len in [3, 5, 7, 9, 10] {
            for messages in &conversations {
                let prompt = &messages[..len];
                assert_eq!(prompt_hash("m", prompt, &settings), as_value("m", prompt, &settings));
            }
        }
        // One longer than what is kept: hashed from its start each time, and still right.
        let mut long = conversation(2);
        long[1].content = "x".repeat(prefixes::KEPT_BYTES);
        assert_eq!(prompt_hash("m", &long, &settings), as_value("m", &long, &settings));
        long.push(Message::user("more"));
        assert_eq!(prompt_hash("m", &long, &settings), as_value("m", &long, &settings));
        assert_eq!(prompt_hash("m", &[], &settings), as_value("m", &[], &settings));
    }
}
