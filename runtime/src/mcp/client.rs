//! A connection to one MCP server: start or reach it, list its tools, call them, close it.

use super::content;
use super::error::McpError;
use crate::tool::ToolOutput;
use rmcp::ServiceExt;
use rmcp::model::CallToolRequestParams;
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use serde_json::Value;
use std::fmt;
use std::future::{Future, IntoFuture};
use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a request waits for its answer unless [`McpConnect::timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_mins(1);

/// How long starting a server and its handshake may take unless
/// [`McpConnect::connect_timeout`] says otherwise.
pub const DEFAULT_CONNECT_TIMEOUT: Duration = Duration::from_mins(1);

/// A connection to an MCP server, over stdio (a child process) or streamable HTTP.
///
/// Cheap to clone: clones share the connection, and the tools [`tools`](Self::tools) returns
/// hold a clone. The connection closes when the last clone is dropped, or at once with
/// [`close`](Self::close); a child process is then stopped and reaped (drop it inside a tokio
/// runtime: the reaping runs as a task). Every request has a time limit
/// ([`DEFAULT_TIMEOUT`] unless set with [`McpConnect::timeout`]), so a server that never
/// answers gives [`McpError::Timeout`], never a hang, and one that dies gives
/// [`McpError::Closed`].
///
/// ```no_run
/// use graphwright::mcp::McpClient;
/// use graphwright::tool::ToolSet;
/// use std::time::Duration;
///
/// # async fn demo() -> Result<(), graphwright::mcp::McpError> {
/// let mut command = tokio::process::Command::new("npx");
/// command.args(["-y", "@modelcontextprotocol/server-everything", "stdio"]);
/// let everything = McpClient::stdio(command).prefix("ev_").timeout(Duration::from_secs(20)).await?;
///
/// let mut tools = ToolSet::new();
/// everything.add_to(&mut tools).await?; // `ev_echo`, `ev_get-sum`, …
/// let sum = everything.call("get-sum", serde_json::json!({"a": 2, "b": 3})).await?;
/// everything.close().await;
/// # let _ = sum; Ok(()) }
/// ```
#[derive(Clone)]
pub struct McpClient {
    shared: Arc<Shared>,
}

struct Shared {
    /// The server as errors name it: its program, or its URL.
    label: String,
    /// The name the server gave in the handshake.
    server_name: Option<String>,
    prefix: String,
    timeout: Duration,
    process_id: Option<u32>,
    peer: Peer<RoleClient>,
    /// The running connection; taken by [`McpClient::close`]. Dropping it closes the
    /// connection and stops the child process.
    service: Mutex<Option<RunningService<RoleClient, ()>>>,
}

/// Where the server is.
enum Target {
    Stdio(tokio::process::Command),
    Http(String),
}

/// A connection being set up: set its options, then `.await` it (or call
/// [`connect`](Self::connect)). Made by [`McpClient::stdio`] and [`McpClient::http`].
#[must_use = "a connection is made only when this is awaited"]
pub struct McpConnect {
    target: Target,
    prefix: String,
    timeout: Duration,
    connect_timeout: Duration,
    stderr: Option<std::process::Stdio>,
}

impl McpClient {
    /// A server run as a child process, spoken to over its stdin and stdout. Its stderr is
    /// this process's unless [`McpConnect::stderr`] says otherwise. The process is killed
    /// when the connection is dropped.
    pub fn stdio(command: tokio::process::Command) -> McpConnect {
        McpConnect::new(Target::Stdio(command))
    }

    /// A server at a streamable HTTP endpoint, e.g. `http://127.0.0.1:8000/mcp`. `https://`
    /// needs the crate's `rustls` feature.
    pub fn http(url: impl Into<String>) -> McpConnect {
        McpConnect::new(Target::Http(url.into()))
    }

    /// The server as errors name it: its program, or its URL.
    #[must_use]
    pub fn label(&self) -> &str {
        &self.shared.label
    }

    /// The name the server gave for itself in the handshake, if it gave one.
    #[must_use]
    pub fn server_name(&self) -> Option<&str> {
        self.shared.server_name.as_deref()
    }

    /// The prefix put before the server's tool names.
    #[must_use]
    pub fn prefix(&self) -> &str {
        &self.shared.prefix
    }

    /// The child process's id, for a stdio server.
    #[must_use]
    pub fn process_id(&self) -> Option<u32> {
        self.shared.process_id
    }

    /// Whether the connection is closed (closed by us, or the server went away).
    #[must_use]
    pub fn is_closed(&self) -> bool {
        self.shared.peer.is_transport_closed()
    }

    /// Calls the server's tool `tool` (its name on the server, without the prefix) with
    /// `arguments`, a JSON object (or `null` for none). A result with `isError` is
    /// [`McpError::ToolFailed`]; see [`mcp`](super) for how a result becomes a [`ToolOutput`].
    pub async fn call(&self, tool: &str, arguments: Value) -> Result<ToolOutput, McpError> {
        let what = format!("a call to tool `{tool}`");
        let arguments = match arguments {
            Value::Object(map) => Some(map),
            Value::Null => None,
            other => {
                return Err(McpError::Protocol {
                    server: self.label().to_owned(),
                    what,
                    reason: format!("the arguments must be a JSON object, not {other}"),
                });
            }
        };
        let mut request = CallToolRequestParams::new(tool.to_owned());
        request.arguments = arguments;
        request.meta = super::trace::meta();
        let result = self.limited(&what, self.shared.peer.call_tool(request)).await?;
        content::output(self.label(), tool, result)
    }

    /// Closes the connection and, for a stdio server, ends the process (closing its stdin,
    /// then signalling it) and reaps it. Other clones see [`McpError::Closed`] afterwards.
    pub async fn close(&self) {
        let service = self.shared.service.lock().map_or_else(|p| p.into_inner().take(), |mut slot| slot.take());
        if let Some(mut service) = service
            && let Err(error) = service.close_with_timeout(Duration::from_secs(10)).await
        {
            tracing::warn!(server = %self.label(), %error, "the MCP connection did not close cleanly");
        }
    }

    /// The server's tool list, as the server sends it.
    pub(super) async fn list_tools(&self) -> Result<Vec<rmcp::model::Tool>, McpError> {
        self.limited("the tool list", self.shared.peer.list_all_tools()).await
    }

    /// `request` under the connection's time limit, its errors named after `what`.
    async fn limited<T>(
        &self,
        what: &str,
        request: impl Future<Output = Result<T, rmcp::ServiceError>>,
    ) -> Result<T, McpError> {
        let limit = self.shared.timeout;
        match tokio::time::timeout(limit, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(McpError::from_service(self.label(), what.to_owned(), error)),
            Err(_) => Err(McpError::Timeout { server: self.label().to_owned(), what: what.to_owned(), limit }),
        }
    }

    /// A prefix to suggest: the server's name, as a plain identifier.
    pub(super) fn hint(&self) -> String {
        let name = self.server_name().unwrap_or(self.label());
        let name = name.rsplit(['/', '\\']).next().unwrap_or(name);
        let hint: String =
            name.chars().map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '_' }).collect();
        if hint.trim_matches('_').is_empty() { "server".to_owned() } else { hint.trim_matches('_').to_owned() }
    }
}

impl fmt::Debug for McpClient {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpClient")
            .field("server", &self.shared.label)
            .field("prefix", &self.shared.prefix)
            .field("timeout", &self.shared.timeout)
            .finish_non_exhaustive()
    }
}

impl McpConnect {
    fn new(target: Target) -> Self {
        Self {
            target,
            prefix: String::new(),
            timeout: DEFAULT_TIMEOUT,
            connect_timeout: DEFAULT_CONNECT_TIMEOUT,
            stderr: None,
        }
    }

    /// Puts `prefix` before every tool name of the server (`"fs_"` makes `read_file`
    /// `fs_read_file`), so that tools of several servers, or of a server and local tools, keep
    /// apart. Calls to the server use its own names.
    pub fn prefix(mut self, prefix: impl Into<String>) -> Self {
        self.prefix = prefix.into();
        self
    }

    /// How long every request (the tool list, each call) waits for its answer before it is
    /// cancelled with [`McpError::Timeout`]. [`DEFAULT_TIMEOUT`] unless set.
    pub fn timeout(mut self, limit: Duration) -> Self {
        self.timeout = limit;
        self
    }

    /// How long the server may take to start and finish the handshake before the connection
    /// is given up with [`McpError::Timeout`] (and a child process stopped).
    /// [`DEFAULT_CONNECT_TIMEOUT`] unless set.
    pub fn connect_timeout(mut self, limit: Duration) -> Self {
        self.connect_timeout = limit;
        self
    }

    /// Where a stdio server's stderr goes (this process's stderr unless set; a setting made on
    /// the command itself is replaced). `Stdio::null()` silences a chatty server.
    pub fn stderr(mut self, stderr: impl Into<std::process::Stdio>) -> Self {
        self.stderr = Some(stderr.into());
        self
    }

    /// Starts or reaches the server and runs the MCP handshake.
    pub async fn connect(self) -> Result<McpClient, McpError> {
        let Self { target, prefix, timeout, connect_timeout, stderr } = self;
        let (label, process_id, started) = match target {
            Target::Stdio(mut command) => {
                let label = command.as_std().get_program().to_string_lossy().into_owned();
                command.kill_on_drop(true);
                let builder =
                    TokioChildProcess::builder(command).stderr(stderr.unwrap_or_else(std::process::Stdio::inherit));
                let (process, _) =
                    builder.spawn().map_err(|source| McpError::Spawn { command: label.clone(), source })?;
                let id = process.id();
                let started: Pin<Box<dyn Future<Output = _> + Send>> = Box::pin(().serve(process));
                (label, id, started)
            }
            Target::Http(url) => {
                let transport = StreamableHttpClientTransport::from_uri(url.clone());
                let started: Pin<Box<dyn Future<Output = _> + Send>> = Box::pin(().serve(transport));
                (url, None, started)
            }
        };
        let service = match tokio::time::timeout(connect_timeout, started).await {
            Ok(Ok(service)) => service,
            Ok(Err(error)) => return Err(McpError::Connect { server: label, reason: error.to_string() }),
            Err(_) => {
                let what = "the handshake".to_owned();
                return Err(McpError::Timeout { server: label, what, limit: connect_timeout });
            }
        };
        let server_name =
            service.peer_info().and_then(|info| info.server_info.as_ref().map(|server| server.name.clone()));
        let peer = service.peer().clone();
        tracing::debug!(server = %label, name = ?server_name, "connected to an MCP server");
        let shared =
            Shared { label, server_name, prefix, timeout, process_id, peer, service: Mutex::new(Some(service)) };
        Ok(McpClient { shared: Arc::new(shared) })
    }
}

impl IntoFuture for McpConnect {
    type Output = Result<McpClient, McpError>;
    type IntoFuture = Pin<Box<dyn Future<Output = Self::Output> + Send>>;

    fn into_future(self) -> Self::IntoFuture {
        Box::pin(self.connect())
    }
}

impl fmt::Debug for McpConnect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let target = match &self.target {
            Target::Stdio(command) => format!("stdio: {:?}", command.as_std()),
            Target::Http(url) => format!("http: {url}"),
        };
        f.debug_struct("McpConnect")
            .field("target", &target)
            .field("prefix", &self.prefix)
            .field("timeout", &self.timeout)
            .field("connect_timeout", &self.connect_timeout)
            .field("stderr", &self.stderr)
            .finish()
    }
}
