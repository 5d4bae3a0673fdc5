//! Tools: functions a model may call, with JSON schemas derived from their parameters, and
//! [`ToolNode`], which runs the calls of an assistant message without ever losing one.
//!
//! Write a tool as a plain function and mark it [`#[tool]`](macro@crate::tool); the macro derives its
//! JSON Schema from the parameters and implements [`Tool`] on a unit struct named after it.
//! A parameter of type [`ToolRuntime`] is filled by the runtime (graph state, context, call id,
//! progress writer) and never appears in the schema.
//!
//! ```
//! use graphwright::prelude::*;
//! use graphwright::tool::{schema, ToolEnv};
//! use serde_json::json;
//!
//! /// Add two integers.
//! #[tool]
//! fn add(
//!     /// The first term.
//!     a: i64,
//!     /// The second term.
//!     b: i64,
//! ) -> i64 {
//!     a + b
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() {
//! assert_eq!(add(2, 3), 5); // still a plain function
//! assert_eq!(Add.name(), "add");
//! assert_eq!(schema::anthropic_tool(&Add)["input_schema"]["required"], json!(["a", "b"]));
//!
//! let node = ToolNode::new(tools![Add]);
//! let ask = Message::assistant("").with_tool_calls(vec![
//!     ToolCall::new("c1", "add", json!({"a": 2, "b": 3})),
//!     ToolCall::new("c2", "add", json!({"a": 2})),
//! ]);
//! let results = node.run_in(&[ask], &ToolEnv::new()).await;
//! assert_eq!(results[0].content, "5");
//! assert!(results[1].is_error);
//! assert!(results[1].content.contains("`b`"), "{}", results[1].content);
//! # }
//! ```
//!
//! The pipeline of one call, in this order: validate the arguments against the tool's schema →
//! execute (under the tool's timeout and retry policy, panics caught) → validate the result →
//! redact → emit the result event → return the tool message. Every failure on the way becomes
//! a tool message with `is_error = true` that tells the model what to fix.

mod condition;
mod error;
mod event;
mod finished_calls;
mod node;
mod output;
mod pipeline;
mod policy;
mod runtime;
pub mod schema;
mod set;
mod span;
pub(crate) mod support;
pub(crate) mod validate;
mod writer;

pub use condition::{ToolRoute, tools_condition};
#[cfg(feature = "mcp")]
pub(crate) use error::clip;
pub use error::{ArgumentProblem, ToolError};
pub use event::{EventSink, ToolEvent};
pub use node::ToolNode;
pub use output::ToolOutput;
pub use policy::{Redactor, ToolPolicy};
pub use runtime::{Erased, Injectable, ToolEnv, ToolRuntime};
pub use set::{ToolNameTaken, ToolSet};
pub use writer::ToolWriter;

use std::future::Future;
use std::pin::Pin;

/// The future [`Tool::call`] returns, boxed so tools of different types fit in one set.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;

/// A function the model may call.
///
/// `#[tool]` implements it for you; implement it by hand for tools built at run time (from an
/// MCP server's list, say). It is object-safe: tools live in a [`ToolSet`] as `Arc<dyn Tool>`.
///
/// ```
/// use graphwright::tool::{Tool, ToolError, ToolFuture, ToolOutput, ToolRuntime};
/// use serde_json::{json, Value};
///
/// /// Echoes its `text` argument.
/// struct Echo;
///
/// impl Tool for Echo {
///     fn name(&self) -> &str {
///         "echo"
///     }
///     fn description(&self) -> &str {
///         "Repeat the text you are given."
///     }
///     fn parameters(&self) -> Value {
///         json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]})
///     }
///     fn call<'a>(&'a self, args: Value, _rt: &'a ToolRuntime) -> ToolFuture<'a> {
///         Box::pin(async move {
///             match args["text"].as_str() {
///                 Some(text) => Ok(ToolOutput::text(text)),
///                 None => Err(ToolError::msg("echo", "`text` must be a string")),
///             }
///         })
///     }
/// }
/// # let _ = graphwright::tools![Echo];
/// ```
#[diagnostic::on_unimplemented(
    message = "`{Self}` is not a tool",
    label = "expected a tool",
    note = "mark a fn with `#[tool]`, which generates a unit struct implementing `Tool`, and pass that struct"
)]
pub trait Tool: Send + Sync + 'static {
    /// The name the model calls the tool by (`^[a-zA-Z0-9_-]{1,64}$` for most providers).
    fn name(&self) -> &str;

    /// What the tool does, for the model: it decides from this when to call the tool.
    fn description(&self) -> &str;

    /// The JSON Schema of the arguments: an object schema, one property per parameter.
    fn parameters(&self) -> serde_json::Value;

    /// Whether the tool takes a [`ToolRuntime`] (and so may read the state). `#[tool]` answers
    /// from the fn's parameters; a hand-written tool that never reads the runtime can return
    /// `false` to spare [`ToolNode`] a copy of the state.
    fn reads_runtime(&self) -> bool {
        true
    }

    /// Runs the tool with the model's arguments. [`ToolNode`] has already checked `args`
    /// against [`Tool::parameters`]; a tool called by hand should still not trust them.
    fn call<'a>(&'a self, args: serde_json::Value, rt: &'a ToolRuntime) -> ToolFuture<'a>;
}
