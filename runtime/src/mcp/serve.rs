//! A [`ToolSet`] served as an MCP server, over stdio or streamable HTTP.

use super::content;
use super::error::McpError;
use crate::tool::{ToolError, ToolNameTaken, ToolRuntime, ToolSet, validate};
use futures::FutureExt;
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, ErrorData, Implementation, ListToolsResult, PaginatedRequestParams,
    ServerCapabilities, ServerConfig,
};
use rmcp::service::{RequestContext, RoleServer};
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use rmcp::{ServerHandler, ServiceExt};
use serde_json::Value;
use std::fmt;
use std::net::SocketAddr;
use std::panic::AssertUnwindSafe;
use std::sync::Arc;
use tracing::Instrument;

impl ToolSet {
    /// Serves the tools over MCP on this process's stdin and stdout, until the client closes
    /// stdin. Nothing else may write to stdout meanwhile (log to stderr).
    ///
    /// ```no_run
    /// use graphwright::prelude::*;
    ///
    /// /// Add two integers.
    /// #[tool]
    /// fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() -> Result<(), graphwright::mcp::McpError> {
    ///     tools![Add].serve_mcp_stdio().await
    /// }
    /// ```
    pub async fn serve_mcp_stdio(self) -> Result<(), McpError> {
        let running = Served::new(self)?
            .serve(rmcp::transport::stdio())
            .await
            .map_err(|error| McpError::Serve { reason: error.to_string() })?;
        running.waiting().await.map_err(|error| McpError::Serve { reason: error.to_string() })?;
        Ok(())
    }

    /// Serves the tools over MCP's streamable HTTP transport at `http://{addr}/mcp`, in a task
    /// of the current tokio runtime, until the returned handle is dropped or shut down. Bind a
    /// loopback address (`127.0.0.1:0` picks a free port): the server accepts only requests
    /// whose `Host` is a loopback name or the bound address, and has no authentication.
    ///
    /// ```no_run
    /// use graphwright::prelude::*;
    ///
    /// /// Add two integers.
    /// #[tool]
    /// fn add(a: i64, b: i64) -> i64 {
    ///     a + b
    /// }
    ///
    /// # async fn demo() -> Result<(), graphwright::mcp::McpError> {
    /// let server = tools![Add].serve_mcp_http("127.0.0.1:0").await?;
    /// println!("MCP at {}", server.url());
    /// server.wait().await?; // serves until the process ends
    /// # Ok(()) }
    /// ```
    pub async fn serve_mcp_http(
        self,
        addr: impl tokio::net::ToSocketAddrs + fmt::Display,
    ) -> Result<McpHttpServer, McpError> {
        let shown = addr.to_string();
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| McpError::Bind { addr: shown.clone(), source })?;
        let local = listener.local_addr().map_err(|source| McpError::Bind { addr: shown, source })?;
        let served = Served::new(self)?;
        let mut config = StreamableHttpServerConfig::default();
        config.allowed_hosts.extend([local.ip().to_string(), local.to_string()]);
        let stop = config.cancellation_token.clone();
        let service: StreamableHttpService<Served, LocalSessionManager> =
            StreamableHttpService::new(move || Ok(served.clone()), Arc::default(), config);
        let router = axum::Router::new().route_service("/mcp", service);
        let stopped = stop.clone();
        let task = tokio::spawn(async move {
            axum::serve(listener, router).with_graceful_shutdown(stopped.cancelled_owned()).await
        });
        tracing::debug!(addr = %local, "serving tools over MCP");
        Ok(McpHttpServer { addr: local, stop: Box::new(move || stop.cancel()), task: Some(task) })
    }
}

/// A [`ToolSet`] being served over streamable HTTP ([`ToolSet::serve_mcp_http`]). Dropping it
/// stops the server.
pub struct McpHttpServer {
    addr: SocketAddr,
    stop: Box<dyn Fn() + Send + Sync>,
    task: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

impl McpHttpServer {
    /// The address the server listens on.
    #[must_use]
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }

    /// The MCP endpoint, `http://{addr}/mcp`.
    #[must_use]
    pub fn url(&self) -> String {
        format!("http://{}/mcp", self.addr)
    }

    /// Stops accepting connections, ends the open sessions, and waits for the server to stop.
    pub async fn shutdown(mut self) -> Result<(), McpError> {
        (self.stop)();
        self.join().await
    }

    /// Serves until the process ends (or the server fails).
    pub async fn wait(mut self) -> Result<(), McpError> {
        self.join().await
    }

    async fn join(&mut self) -> Result<(), McpError> {
        let Some(task) = self.task.take() else { return Ok(()) };
        match task.await {
            Ok(Ok(())) => Ok(()),
            Ok(Err(error)) => Err(McpError::Serve { reason: error.to_string() }),
            Err(error) => Err(McpError::Serve { reason: error.to_string() }),
        }
    }
}

impl Drop for McpHttpServer {
    fn drop(&mut self) {
        (self.stop)();
    }
}

impl fmt::Debug for McpHttpServer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpHttpServer").field("addr", &self.addr).finish_non_exhaustive()
    }
}

/// The MCP side of a tool set: lists the tools, runs a call through the tool's own `call`.
#[derive(Clone)]
struct Served {
    tools: ToolSet,
}

impl Served {
    /// Fails when two tools of the set share a name (possible only through hand-made sets).
    fn new(tools: ToolSet) -> Result<Self, McpError> {
        let mut seen = ToolSet::new();
        seen.try_extend(tools.iter().cloned())
            .map_err(|ToolNameTaken { name }| McpError::Serve { reason: format!("two tools are named `{name}`") })?;
        Ok(Self { tools })
    }

    fn describe(tool: &dyn crate::tool::Tool) -> rmcp::model::Tool {
        let schema = match tool.parameters() {
            Value::Object(map) => map,
            other => {
                let mut map = serde_json::Map::new();
                map.insert("type".to_owned(), Value::from("object"));
                tracing::warn!(tool = tool.name(), schema = %other, "a tool's parameters are not an object schema");
                map
            }
        };
        rmcp::model::Tool::new(tool.name().to_owned(), tool.description().to_owned(), Arc::new(schema))
    }
}

impl ServerHandler for Served {
    fn get_info(&self) -> ServerConfig {
        let capabilities = ServerCapabilities::builder().enable_tools().build();
        ServerConfig::new(capabilities).with_server_info(Implementation::new("graphwright", env!("CARGO_PKG_VERSION")))
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        _context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        Ok(ListToolsResult::with_all_items(self.tools.iter().map(|t| Self::describe(t.as_ref())).collect()))
    }

    fn get_tool(&self, name: &str) -> Option<rmcp::model::Tool> {
        self.tools.get(name).map(|tool| Self::describe(tool.as_ref()))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        let name = request.name.as_ref();
        let Some(tool) = self.tools.get(name) else {
            let known: Vec<_> = self.tools.names().collect();
            // A name from a client is clipped: it may be anything, of any length.
            let name = crate::tool::clip(name);
            let message = format!("there is no tool named `{name}`; the tools are: {}", known.join(", "));
            return Err(ErrorData::invalid_params(message, None));
        };
        let args = Value::Object(request.arguments.unwrap_or_default());
        let problems = validate::validate(&tool.parameters(), &args);
        if !problems.is_empty() {
            let error = ToolError::InvalidArguments { tool: name.to_owned(), problems };
            return Ok(content::failure(error.to_string()).into());
        }
        let rt = ToolRuntime::detached(format!("mcp-{}", serde_json::to_string(&context.id).unwrap_or_default()));
        let span = super::trace::served_call(name, Some(&context.meta));
        let run = AssertUnwindSafe(tool.call(args, &rt)).catch_unwind().instrument(span);
        let outcome = tokio::select! {
            outcome = run => outcome,
            () = context.ct.cancelled() => return Err(ErrorData::internal_error("the call was cancelled", None)),
        };
        let result = match outcome {
            Ok(Ok(output)) => content::result(output),
            Ok(Err(error)) => content::failure(error.to_string()),
            Err(_) => {
                content::failure(format!("tool `{name}` crashed; this is a bug in the tool, not in your arguments"))
            }
        };
        Ok(result.into())
    }
}
