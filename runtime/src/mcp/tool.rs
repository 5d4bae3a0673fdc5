//! One tool of an MCP server, as a [`Tool`] of ours.

use super::client::McpClient;
use super::error::McpError;
use crate::tool::{Tool, ToolError, ToolFuture, ToolRuntime, ToolSet};
use serde_json::Value;
use std::fmt;
use std::sync::Arc;

/// A tool of an MCP server. Its name is the server's (after the client's prefix), its
/// description and input schema are the server's, and a call goes to the server. Made by
/// [`McpClient::tools`] and [`McpClient::add_to`].
///
/// In a [`ToolNode`](crate::tool::ToolNode) it is run like any tool: the arguments are checked
/// against the server's schema before the call, and the node's timeout, retry and redaction
/// apply. A failure is [`ToolError::Failed`] with the [`McpError`] as its source, except
/// [`McpError::Timeout`], which is [`ToolError::Timeout`] so that retry policies treat it as a
/// timeout.
#[derive(Clone)]
pub struct McpTool {
    client: McpClient,
    name: String,
    remote: String,
    description: String,
    schema: Value,
}

impl McpTool {
    pub(crate) fn new(client: McpClient, tool: rmcp::model::Tool) -> Self {
        let remote = tool.name.into_owned();
        let description = tool.description.map(std::borrow::Cow::into_owned).unwrap_or_default();
        let schema = Value::Object(Arc::unwrap_or_clone(tool.input_schema));
        Self { name: format!("{}{remote}", client.prefix()), remote, description, schema, client }
    }

    /// The tool's name on the server (without the prefix).
    #[must_use]
    pub fn remote_name(&self) -> &str {
        &self.remote
    }

    /// The connection the tool calls through.
    #[must_use]
    pub fn client(&self) -> &McpClient {
        &self.client
    }
}

// The client's methods that make tools live here, beside the tool, so that the client knows
// nothing of it.
impl McpClient {
    /// The server's tools, as [`Tool`]s: each named as the server names it (after the
    /// prefix), with the server's description and input schema, and calling the server.
    pub async fn tools(&self) -> Result<Vec<McpTool>, McpError> {
        let listed = self.list_tools().await?;
        Ok(listed.into_iter().map(|tool| McpTool::new(self.clone(), tool)).collect())
    }

    /// Adds the server's tools to `set` and returns how many. Fails with
    /// [`McpError::NameClash`], adding none, when a name (after the prefix) is already in the
    /// set: a tool never silently replaces another.
    pub async fn add_to(&self, set: &mut ToolSet) -> Result<usize, McpError> {
        let tools = self.tools().await?;
        let count = tools.len();
        set.try_extend(tools.into_iter().map(|tool| Arc::new(tool) as Arc<dyn Tool>)).map_err(|taken| {
            McpError::NameClash { server: self.label().to_owned(), name: taken.name, server_hint: self.hint() }
        })?;
        Ok(count)
    }
}

impl Tool for McpTool {
    fn name(&self) -> &str {
        &self.name
    }

    fn description(&self) -> &str {
        &self.description
    }

    fn parameters(&self) -> Value {
        self.schema.clone()
    }

    fn reads_runtime(&self) -> bool {
        false
    }

    fn call<'a>(&'a self, args: Value, _rt: &'a ToolRuntime) -> ToolFuture<'a> {
        Box::pin(async move {
            self.client.call(&self.remote, args).await.map_err(|error| match error {
                McpError::Timeout { limit, .. } => ToolError::Timeout { tool: self.name.clone(), limit },
                other => ToolError::failed(self.name.clone(), other),
            })
        })
    }
}

impl fmt::Debug for McpTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpTool")
            .field("name", &self.name)
            .field("server", &self.client.label())
            .field("remote", &self.remote)
            .finish_non_exhaustive()
    }
}
