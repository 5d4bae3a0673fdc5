//! Pausing a run for a human: interrupts raised by nodes, and the answers that resume them.

use serde::{Deserialize, Serialize};
use serde_json::Value;
use std::collections::HashMap;

/// A pause raised by a node with [`Runtime::interrupt`](crate::Runtime::interrupt), or by an
/// `interrupt_before`/`interrupt_after` breakpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Interrupt {
    /// Identifies the interrupt within its thread; pass it to [`Resume::by_id`] when several are
    /// pending.
    pub id: String,
    /// The node that paused.
    pub node: String,
    /// What the node asked (`null` for a breakpoint).
    pub value: Value,
    /// The position in its step of the task that raised it (0 for the first), as
    /// [`PendingTask::index`](crate::PendingTask::index); for an `interrupt_after` breakpoint,
    /// the position the node's task had in the step that just ran.
    #[serde(default)]
    pub task: u32,
    /// Which `interrupt` call of the task raised it (0 for the first).
    #[serde(default)]
    pub(crate) call: u32,
}

impl Interrupt {
    pub(crate) fn breakpoint(checkpoint: &str, when: &str, node: &str, task: u32) -> Self {
        Self { id: format!("{checkpoint}:{when}:{node}"), node: node.to_owned(), value: Value::Null, task, call: 0 }
    }

    /// Whether a breakpoint (`interrupt_before`/`interrupt_after`) raised it, not a node's
    /// [`Runtime::interrupt`](crate::Runtime::interrupt) call: it asks nothing, and
    /// [`resume`](crate::CompiledGraph::resume) with no answer goes on.
    #[must_use]
    pub fn is_breakpoint(&self) -> bool {
        let node = &self.node;
        self.value.is_null()
            && [":before:", ":after:"]
                .iter()
                .any(|when| self.id.strip_suffix(node.as_str()).is_some_and(|head| head.ends_with(when)))
    }
}

/// The answer a resumed run gives to its pending interrupts.
///
/// ```
/// use graphwright::interrupt::Resume;
/// use serde_json::json;
///
/// let one: Resume = json!({"approved": true}).into();
/// let none: Resume = ().into();
/// let several = Resume::by_id([("t1:0:0", json!("yes")), ("t1:1:0", json!("no"))]);
/// # let _ = (one, none, several);
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
pub enum Resume {
    /// No answer: continue pending tasks (after a crash or a failure); a pending interrupt is
    /// raised again.
    #[default]
    Continue,
    /// The answer to the one pending interrupt.
    Value(Value),
    /// Answers by interrupt id, for several pending interrupts.
    ById(HashMap<String, Value>),
}

impl Resume {
    /// Answers by interrupt id.
    pub fn by_id<I, K>(answers: I) -> Self
    where
        I: IntoIterator<Item = (K, Value)>,
        K: Into<String>,
    {
        Self::ById(answers.into_iter().map(|(k, v)| (k.into(), v)).collect())
    }
}

impl From<Value> for Resume {
    fn from(value: Value) -> Self {
        Self::Value(value)
    }
}

impl From<()> for Resume {
    fn from((): ()) -> Self {
        Self::Continue
    }
}

impl From<bool> for Resume {
    fn from(value: bool) -> Self {
        Self::Value(Value::Bool(value))
    }
}

impl From<&str> for Resume {
    fn from(value: &str) -> Self {
        Self::Value(Value::String(value.to_owned()))
    }
}

impl From<String> for Resume {
    fn from(value: String) -> Self {
        Self::Value(Value::String(value))
    }
}

macro_rules! resume_from_number {
    ($($t:ty),*) => {$(
        impl From<$t> for Resume {
            fn from(value: $t) -> Self {
                Self::Value(Value::from(value))
            }
        }
    )*};
}

resume_from_number!(i32, i64, u32, u64, f64);

impl Resume {
    /// The answer to the one pending interrupt, from any serializable value (what
    /// [`Runtime::interrupt`](crate::Runtime::interrupt) will decode it into).
    ///
    /// # Errors
    /// When `value` cannot be represented as JSON (a map with non-string keys, say).
    pub fn value(value: impl serde::Serialize) -> Result<Self, serde_json::Error> {
        serde_json::to_value(value).map(Self::Value)
    }
}
