//! The [`Tool`] trait every tool implements, and the future its calls return.

use super::error::ToolError;
use super::output::ToolOutput;
use super::runtime::ToolRuntime;
use std::future::Future;
use std::pin::Pin;

/// The future [`Tool::call`] returns, boxed so tools of different types fit in one set.
pub type ToolFuture<'a> = Pin<Box<dyn Future<Output = Result<ToolOutput, ToolError>> + Send + 'a>>;

/// A function the model may call.
///
/// `#[tool]` implements it for you; implement it by hand for tools built at run time (from an
/// MCP server's list, say). It is object-safe: tools live in a [`ToolSet`](super::ToolSet) as `Arc<dyn Tool>`.
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
    /// `false` to spare [`ToolNode`](super::ToolNode) a copy of the state.
    fn reads_runtime(&self) -> bool {
        true
    }

    /// Runs the tool with the model's arguments. [`ToolNode`](super::ToolNode) has already checked `args`
    /// against [`Tool::parameters`]; a tool called by hand should still not trust them.
    fn call<'a>(&'a self, args: serde_json::Value, rt: &'a ToolRuntime) -> ToolFuture<'a>;
}
