//! The prompt hash's canonical payload, written into SHA-256 a field at a time.

use crate::message::{Message, Role};
use crate::model::ModelSettings;
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// The version of the canonical payload; bumped whenever what goes into the hash changes, so
/// hashes of different versions never compare equal by accident.
const VERSION: u32 = 1;

/// The canonical payload on its way into the hash: a JSON object of sorted keys, written field
/// by field so that hashing can stop after any message and go on later. The bytes are those of
/// version 1, which serialized the whole payload as one struct (a test holds them equal).
#[derive(Clone)]
pub(super) struct Hashing {
    sha: Sha256,
    /// How many of the conversation's messages are in.
    pub(super) messages: usize,
    /// How many bytes of messages are in.
    pub(super) bytes: usize,
}

impl Hashing {
    /// The payload up to its first message.
    pub(super) fn head(max_tokens: Option<u32>) -> Self {
        let mut hashing = Self { sha: Sha256::new(), messages: 0, bytes: 0 };
        hashing.sha.update(b"{\"max_tokens\":");
        hashing.json(&max_tokens);
        hashing.sha.update(b",\"messages\":[");
        hashing
    }

    /// The conversation's next message.
    pub(super) fn message(&mut self, message: &Message) {
        if self.messages > 0 {
            self.sha.update(b",");
        }
        self.bytes += self.json(&Prompted::of(message));
        self.messages += 1;
    }

    /// The payload after its messages, and the hash of the whole.
    pub(super) fn finish(mut self, model: &str, settings: &ModelSettings) -> [u8; 32] {
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
        self.sha.finalize().into()
    }

    /// `value` as compact JSON; how many bytes it took.
    fn json(&mut self, value: &(impl Serialize + ?Sized)) -> usize {
        let mut writer = Feed { sha: &mut self.sha, written: 0 };
        // Writing into a hasher cannot fail, and every value here serializes.
        let _ = serde_json::to_writer(&mut writer, value);
        writer.written
    }
}

/// What of a message goes into the hash (not its id).
#[derive(Serialize)]
pub(super) struct Prompted<'a> {
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
    pub(super) fn same(a: &Message, b: &Message) -> bool {
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
