//! Why talking to an MCP server failed. Each variant names the server and what was asked of it,
//! and says what to do.

use std::time::Duration;

/// An MCP server could not be reached, did not answer, or answered with an error.
///
/// A remote tool's failure reaches a [`ToolNode`](crate::tool::ToolNode) as
/// [`ToolError::Failed`](crate::tool::ToolError::Failed) with this error as its source (or
/// [`ToolError::Timeout`](crate::tool::ToolError::Timeout) for [`McpError::Timeout`]); get it
/// back by matching `ToolError::Failed { source, .. }` and `source.downcast_ref::<McpError>()`.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's process could not be started.
    #[error("could not start the MCP server `{command}` ({source}): check that the program exists and can be run")]
    Spawn {
        /// The program that was run.
        command: String,
        /// Why it could not be run.
        #[source]
        source: std::io::Error,
    },
    /// The server was reached but the MCP handshake failed.
    #[error(
        "could not connect to the MCP server `{server}`: {reason}; check that it speaks MCP on this \
         transport (a stdio server must write nothing but MCP messages to stdout)"
    )]
    Connect {
        /// The server (its program, or its URL).
        server: String,
        /// What went wrong.
        reason: String,
    },
    /// The server did not answer in time; the request was cancelled.
    #[error(
        "the MCP server `{server}` did not answer {what} within {limit:?}; the request was \
         cancelled (raise the limit with `.timeout(..)` if the server is slow)"
    )]
    Timeout {
        /// The server.
        server: String,
        /// What was asked: "the handshake", "the tool list", "a call to tool `x`".
        what: String,
        /// The limit.
        limit: Duration,
    },
    /// The server went away (its process exited, or the connection closed) before answering.
    #[error(
        "the MCP server `{server}` closed the connection before answering {what}{}; \
         connect again to go on using it",
        reason.as_deref().map(|r| format!(" ({r})")).unwrap_or_default()
    )]
    Closed {
        /// The server.
        server: String,
        /// What was asked.
        what: String,
        /// What the transport said, when it said something.
        reason: Option<String>,
    },
    /// The server answered with a JSON-RPC error (an unknown tool, invalid parameters, a crash).
    #[error("the MCP server `{server}` refused {what}: {message} (JSON-RPC error {code})")]
    Server {
        /// The server.
        server: String,
        /// What was asked.
        what: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message.
        message: String,
    },
    /// The tool ran and reported a failure (a result with `isError: true`).
    #[error("tool `{tool}` of the MCP server `{server}` reported an error: {message}")]
    ToolFailed {
        /// The server.
        server: String,
        /// The tool, by the server's name for it.
        tool: String,
        /// The result's text (or its structured content as JSON).
        message: String,
    },
    /// The server answered with something this client does not handle (a request for user
    /// input, a task to poll), or the request could not be sent as asked.
    #[error("the MCP server `{server}` answered {what} in a way graphwright does not handle: {reason}")]
    Protocol {
        /// The server.
        server: String,
        /// What was asked.
        what: String,
        /// What was wrong.
        reason: String,
    },
    /// A tool of the server has the name of a tool already in the set.
    #[error(
        "tool `{name}` of the MCP server `{server}` has the name of a tool already in the set: \
         connect with a prefix (`.prefix(\"{server_hint}_\")`) so that every name stays unique"
    )]
    NameClash {
        /// The server.
        server: String,
        /// The name both tools have (with the client's prefix).
        name: String,
        /// A prefix to suggest, derived from the server's name.
        server_hint: String,
    },
    /// An MCP server of ours could not listen on the address.
    #[error("could not serve MCP on {addr} ({source}): pick a free port (or port 0) on an address of this machine")]
    Bind {
        /// The address asked for.
        addr: String,
        /// Why it could not be bound.
        #[source]
        source: std::io::Error,
    },
    /// An MCP server of ours stopped on an error.
    #[error("the MCP server stopped: {reason}")]
    Serve {
        /// What went wrong.
        reason: String,
    },
}

impl McpError {
    /// Whether the server is gone: its process exited or its connection closed. Every later
    /// request to it fails the same way, so connecting again is the only way on.
    #[must_use]
    pub fn is_closed(&self) -> bool {
        matches!(self, Self::Closed { .. })
    }

    /// Whether the server did not answer within the limit.
    #[must_use]
    pub fn is_timeout(&self) -> bool {
        matches!(self, Self::Timeout { .. })
    }

    /// From rmcp's error for one request.
    pub(crate) fn from_service(server: &str, what: String, error: rmcp::ServiceError) -> Self {
        let server = server.to_owned();
        match error {
            rmcp::ServiceError::McpError(data) => {
                Self::Server { server, what, code: data.code.0, message: data.message.into_owned() }
            }
            rmcp::ServiceError::TransportClosed => Self::Closed { server, what, reason: None },
            rmcp::ServiceError::TransportSend(error) => Self::Closed { server, what, reason: Some(error.to_string()) },
            rmcp::ServiceError::Cancelled { reason } => Self::Closed { server, what, reason },
            rmcp::ServiceError::Timeout { timeout } => Self::Timeout { server, what, limit: timeout },
            other => Self::Protocol { server, what, reason: other.to_string() },
        }
    }
}
