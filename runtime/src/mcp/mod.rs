//! MCP, the Model Context Protocol: tools of MCP servers in a [`ToolSet`](crate::tool::ToolSet), and a
//! [`ToolSet`](crate::tool::ToolSet) served to MCP clients. Enabled by the `mcp` feature; built on `rmcp`.
//!
//! [`McpClient`] connects to a server, a child process spoken to over stdio or a streamable
//! HTTP endpoint, and turns its tools into [`McpTool`]s: they keep the server's names (after an
//! optional prefix), descriptions and input schemas, so a [`ToolNode`](crate::tool::ToolNode)
//! checks the model's arguments against the server's schema before the call and applies its
//! timeout, retry and redaction as for any tool. [`McpClient::add_to`] refuses a name already in
//! the set ([`McpError::NameClash`]) instead of replacing the tool; give each server a prefix.
//!
//! ```no_run
//! use graphwright::mcp::McpClient;
//! use graphwright::model::ScriptedModel;
//! use graphwright::prebuilt::{MessagesState, react_agent};
//! use graphwright::prelude::*;
//!
//! /// Today's weather in a city.
//! #[tool]
//! fn weather(city: String) -> String {
//!     format!("{city}: 4 °C, light rain")
//! }
//!
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mut command = tokio::process::Command::new("npx");
//! command.args(["-y", "@modelcontextprotocol/server-everything", "stdio"]);
//! let everything = McpClient::stdio(command).prefix("ev_").await?;
//! let http = McpClient::http("http://127.0.0.1:8000/mcp").prefix("py_").await?;
//!
//! let mut tools = tools![Weather];
//! everything.add_to(&mut tools).await?; // ev_echo, ev_get-sum, …
//! http.add_to(&mut tools).await?;
//!
//! let model = ScriptedModel::new([
//!     Message::assistant("").with_tool_calls(vec![ToolCall::new("c1", "ev_get-sum", json!({"a": 2, "b": 3}))]),
//!     Message::assistant("2 + 3 = 5"),
//! ]);
//! let app = react_agent(model, tools).compile()?;
//! let out = app.invoke(MessagesState::new([Message::user("2 + 3?")]), &RunConfig::default()).await?;
//! println!("{}", out.state.messages[2].content); // The sum of 2 and 3 is 5.
//! # Ok(()) }
//! ```
//!
//! What a result becomes: a result with `isError: true` is the tool's error
//! ([`McpError::ToolFailed`]; the model gets an error tool message with its text). Otherwise
//! `structuredContent`, when the server sends it, is the output as JSON; without it the content
//! blocks are joined as text, one per line (text as it is, an embedded text resource as its
//! text, a bracketed note for images, audio, blobs and links).
//!
//! Failures never hang and never panic: every request has a time limit
//! ([`McpConnect::timeout`], and [`McpConnect::connect_timeout`] for the start), a server that exits or drops the connection gives
//! [`McpError::Closed`] to every call after and during it, and the child process of a stdio
//! server is killed and reaped when the last clone of its client is dropped (or at
//! [`McpClient::close`]).
//!
//! Serving: [`ToolSet::serve_mcp_stdio`](crate::tool::ToolSet::serve_mcp_stdio) and
//! [`ToolSet::serve_mcp_http`](crate::tool::ToolSet::serve_mcp_http) expose every tool of
//! a set with its name, description and JSON schema (for a `#[tool]`, the derived one). A call
//! is checked against the schema, then runs through the tool's own [`Tool::call`](crate::Tool::call)
//! with a detached [`ToolRuntime`](crate::tool::ToolRuntime) (no graph state); its text is one
//! text block, a JSON result also `structuredContent` when it is an object, and a failure a
//! result with `isError: true` whose text tells the model what went wrong.

mod client;
mod content;
mod error;
mod serve;
mod tool;
mod trace;

pub use client::{DEFAULT_CONNECT_TIMEOUT, DEFAULT_TIMEOUT, McpClient, McpConnect};
pub use error::McpError;
pub use serve::McpHttpServer;
pub use tool::McpTool;
