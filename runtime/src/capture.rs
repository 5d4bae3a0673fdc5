//! What a run's log and spans may carry beyond names, timings and counts, and the redaction of
//! secret-looking keys every capture goes through. A leaf: the log, the model calls' and tool
//! calls' spans read it without reaching each other.

use serde::Serialize;
use serde_json::Value;

/// What the log records beyond the fact that a node ran.
#[derive(Clone, Debug, PartialEq, Eq)]
#[allow(clippy::struct_excessive_bools, reason = "each is one thing to capture, set by name")]
pub struct CapturePolicy {
    /// The state (or Send payload) each node read.
    pub inputs: bool,
    /// The update each node returned.
    pub outputs: bool,
    /// The whole state after each step.
    pub state: bool,
    /// What model calls were asked and answered (prompts and completions) and what tool calls
    /// were given and gave back, on their tracing spans (`gen_ai.input.messages`,
    /// `gen_ai.output.messages`, `gen_ai.tool.call.arguments`, `gen_ai.tool.call.result`), so on
    /// whatever the spans are exported to.
    pub messages: bool,
    /// Object keys whose values are replaced by `"[redacted]"`, compared without case and as
    /// substrings (`api_key` also hides `openai_api_key`).
    pub redact_keys: Vec<String>,
}

impl Default for CapturePolicy {
    /// Node names, steps, timings, token counts and errors only; no values and no text.
    fn default() -> Self {
        Self { inputs: false, outputs: false, state: false, messages: false, redact_keys: default_secret_keys() }
    }
}

impl CapturePolicy {
    /// Inputs, outputs, state, prompts and completions, with the default secret keys redacted.
    #[must_use]
    pub fn everything() -> Self {
        Self { inputs: true, outputs: true, state: true, messages: true, ..Self::default() }
    }

    /// Only prompts and completions (and tool calls' arguments and results), on the spans; no
    /// state in the log.
    #[must_use]
    pub fn messages() -> Self {
        Self { messages: true, ..Self::default() }
    }

    /// `value` as JSON text with secret-looking keys redacted, when `on`: what a span carries.
    pub(crate) fn text(&self, on: bool, value: &impl Serialize) -> Option<String> {
        self.capture(on, value).map(|value| value.to_string())
    }

    /// Also redacts values under `key`.
    #[must_use]
    pub fn redact(mut self, key: impl Into<String>) -> Self {
        self.redact_keys.push(key.into().to_lowercase());
        self
    }

    pub(crate) fn capture(&self, on: bool, value: &impl Serialize) -> Option<Value> {
        if !on {
            return None;
        }
        let mut value =
            crate::record::codec::to_json(value).unwrap_or_else(|e| Value::String(format!("unserializable: {e}")));
        redact(&mut value, &self.redact_keys);
        Some(value)
    }
}

/// Keys that look secret: redacted by default.
fn default_secret_keys() -> Vec<String> {
    [
        "password",
        "passwd",
        "secret",
        "token",
        "api_key",
        "apikey",
        "authorization",
        "cookie",
        "private_key",
        "credential",
    ]
    .into_iter()
    .map(str::to_owned)
    .collect()
}

/// Replaces, everywhere in `value`, the values of object keys that contain one of `keys`.
fn redact(value: &mut Value, keys: &[String]) {
    match value {
        Value::Object(map) => {
            for (key, inner) in map.iter_mut() {
                let lower = key.to_lowercase();
                if keys.iter().any(|k| lower.contains(k.as_str())) {
                    *inner = Value::String("[redacted]".to_owned());
                } else {
                    redact(inner, keys);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|v| redact(v, keys)),
        _ => {}
    }
}
