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
mod definition;
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
pub use definition::{Tool, ToolFuture};
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
