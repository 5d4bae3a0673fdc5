//! The prompt hash: one fingerprint per distinct prompt, computed in one place.

use super::ModelSettings;
use crate::message::{Message, Role};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The version of the canonical payload; bumped whenever what goes into the hash changes, so
/// hashes of different versions never compare equal by accident.
const VERSION: u32 = 1;

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
    let mut hashing = prefixes::through(settings.max_tokens, messages);
    hashing.tail(model, settings);
    let digest = hashing.sha.finalize();
    let mut out = String::with_capacity(3 + 2 * digest.len());
    out.push_str("v1:");
    push_hex(&mut out, &digest);
    out
}

/// The canonical payload on its way into the hash: a JSON object of sorted keys, written field
/// by field so that hashing can stop after any message and go on later. The bytes are those of
/// version 1, which serialized the whole payload as one struct (a test holds them equal).
#[derive(Clone)]
struct Hashing {
    sha: Sha256,
    /// How many of the conversation's messages are in.
    messages: usize,
    /// How many bytes of messages are in.
    bytes: usize,
}

impl Hashing {
    /// The payload up to its first message.
    fn head(max_tokens: Option<u32>) -> Self {
        let mut hashing = Self { sha: Sha256::new(), messages: 0, bytes: 0 };
        hashing.sha.update(b"{\"max_tokens\":");
        hashing.json(&max_tokens);
        hashing.sha.update(b",\"messages\":[");
        hashing
    }

    /// The conversation's next message.
    fn message(&mut self, message: &Message) {
        if self.messages > 0 {
            self.sha.update(b",");
        }
        self.bytes += self.json(&Prompted::of(message));
        self.messages += 1;
    }

    /// The payload after its messages.
    fn tail(&mut self, model: &str, settings: &ModelSettings) {
        self.sha.update(b"],\"model\":");
        self.json(model);
        self.sha.update(b",\"response_format\":");
        self.json(&settings.response_format.as_ref().map(|f| (f.name.as_str(), &f.schema)));
        self.sha.update(b",\"temperature\":");
        self.json(&settings.temperature);
        self.sha.update(b",\"tools\":");
        let tools: Vec<_> =
            settings.tools.iter().map(|t| (t.name.as_str(), t.description.as_str(), &t.parameters)).collect();
        self.json(&tools);
        self.sha.update(b",\"v\":");
        self.json(&VERSION);
        self.sha.update(b"}");
    }

    /// `value` as compact JSON; how many bytes it took.
    fn json(&mut self, value: &(impl Serialize + ?Sized)) -> usize {
        let mut writer = Feed { sha: &mut self.sha, written: 0 };
        // Writing into a hasher cannot fail, and every value here serializes.
        let _ = serde_json::to_writer(&mut writer, value);
        writer.written
    }
}

/// Appends `bytes` to `out` in lower-case hex.
pub(crate) fn push_hex(out: &mut String, bytes: &[u8]) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    for &byte in bytes {
        out.push(char::from(HEX[usize::from(byte >> 4)]));
        out.push(char::from(HEX[usize::from(byte & 0xf)]));
    }
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

    /// Whether `a` and `b` hash the same: the fields `of` takes, equal, and arguments' keys in
    /// the same order (a map equal to another in another order is written otherwise).
    fn same(a: &Message, b: &Message) -> bool {
        a.content == b.content
            && a.is_error == b.is_error
            && a.name == b.name
            && a.role == b.role
            && a.tool_call_id == b.tool_call_id
            && a.tool_calls.len() == b.tool_calls.len()
            && a.tool_calls
                .iter()
                .zip(&b.tool_calls)
                .all(|(a, b)| a.id == b.id && a.name == b.name && written_alike(&a.arguments, &b.arguments))
    }
}

/// Whether `a` and `b` are written as the same JSON.
fn written_alike(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Array(a), Value::Array(b)) => a.len() == b.len() && a.iter().zip(b).all(|(a, b)| written_alike(a, b)),
        (Value::Object(a), Value::Object(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|((ka, a), (kb, b))| ka == kb && written_alike(a, b))
        }
        // `0.0` and `-0.0` are equal numbers, written apart.
        (Value::Number(a), Value::Number(b)) => a == b && a.as_f64().map(f64::to_bits) == b.as_f64().map(f64::to_bits),
        _ => a == b,
    }
}

/// An `io::Write` that feeds a SHA-256 and counts what it fed.
struct Feed<'a> {
    sha: &'a mut Sha256,
    written: usize,
}

impl std::io::Write for Feed<'_> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.sha.update(bytes);
        self.written += bytes.len();
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
