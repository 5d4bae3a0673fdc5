//! [`Server`]: which graphs to serve, where to keep their threads, and the listening socket.

use crate::app::{App, system_assistant_id};
use crate::error::ServerError;
use crate::meta::{self, AssistantRow, Meta};
use crate::runs::Runs;
use crate::served::{self, Schemas, Served};
use graphwright::store::SqliteStore;
use graphwright::{Checkpointer, CompiledGraph, InMemoryStore, MemorySaver, SqliteSaver, State, Store};
use serde::de::DeserializeOwned;
use serde_json::json;
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

/// The largest request body accepted unless [`Server::body_limit`] says otherwise.
pub const DEFAULT_BODY_LIMIT: usize = 8 * 1024 * 1024;

/// Where the server keeps checkpoints, the store, and its own records.
type Storage = (Arc<dyn Checkpointer>, Arc<dyn Store>, Meta);

/// An HTTP server for compiled graphs, speaking the LangGraph Agent Server API.
///
/// Each graph is served under its name, which clients pass as `assistant_id` (or use the
/// id of its default assistant). The server keeps every thread's checkpoints, its own records
/// (assistants, threads, runs) and the store in one SQLite file given with
/// [`sqlite`](Self::sqlite), or in memory without one; the checkpointer and store a graph was
/// compiled with are replaced by the server's.
///
/// ```no_run
/// use graphwright::prebuilt::MessagesState;
/// use graphwright::prelude::*;
/// use graphwright_server::Server;
///
/// # async fn serve(agent: CompiledGraph<MessagesState>) -> Result<(), graphwright_server::ServerError> {
/// Server::new().graph("agent", agent).sqlite("threads.db").serve("127.0.0.1:2024").await
/// # }
/// ```
#[must_use]
pub struct Server {
    graphs: Vec<(String, Arc<dyn Served>)>,
    database: Option<PathBuf>,
    body_limit: usize,
}

impl Default for Server {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for Server {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Server")
            .field("graphs", &self.graphs.iter().map(|(name, _)| name).collect::<Vec<_>>())
            .field("database", &self.database)
            .field("body_limit", &self.body_limit)
            .finish()
    }
}

impl Server {
    /// A server with no graphs, keeping everything in memory.
    pub fn new() -> Self {
        Self { graphs: Vec::new(), database: None, body_limit: DEFAULT_BODY_LIMIT }
    }

    /// Serves `graph` as `name`. Inputs and updates from clients are decoded into the state's
    /// update type (message fields also accept LangChain's message dicts), and a run's
    /// `context` (or `config.configurable`) into `C`.
    pub fn graph<S, C>(self, name: impl Into<String>, graph: CompiledGraph<S, C>) -> Self
    where
        S: State,
        C: DeserializeOwned + Send + Sync + 'static,
    {
        self.add(name.into(), served::erase(graph, Schemas::default()))
    }

    /// Serves `graph` as `name`, like [`graph`](Self::graph), and describes it at
    /// `/assistants/{id}/schemas` with the JSON Schemas of its state and context types.
    pub fn graph_with_schemas<S, C>(self, name: impl Into<String>, graph: CompiledGraph<S, C>) -> Self
    where
        S: State + schemars::JsonSchema,
        C: DeserializeOwned + schemars::JsonSchema + Send + Sync + 'static,
    {
        self.add(name.into(), served::erase(graph, served::schemas_of::<S, C>()))
    }

    fn add(mut self, name: String, graph: Arc<dyn Served>) -> Self {
        self.graphs.push((name, graph));
        self
    }

    /// Keeps threads, runs, assistants and the store in the SQLite file at `path` (created if
    /// missing), so that they outlive the process. One server process per file.
    pub fn sqlite(mut self, path: impl Into<PathBuf>) -> Self {
        self.database = Some(path.into());
        self
    }

    /// The largest request body accepted, in bytes; larger ones are answered 413.
    pub fn body_limit(mut self, bytes: usize) -> Self {
        self.body_limit = bytes;
        self
    }

    /// The server's routes, ready to be served by `axum` (or nested under a prefix of a
    /// larger application). Opens the storage; runs a previous process left unfinished are
    /// marked `error`, so their threads are not left busy.
    pub fn into_router(self) -> Result<axum::Router, ServerError> {
        let (saver, store, meta) = self.open()?;
        let mut graphs = BTreeMap::new();
        for (name, graph) in self.graphs {
            let graph = graph.rebind(Arc::clone(&saver), Arc::clone(&store));
            if graphs.insert(name.clone(), graph).is_some() {
                return Err(ServerError::DuplicateGraph(name));
            }
        }
        let database = self.database.as_ref().map_or_else(|| ":memory:".to_owned(), |p| p.display().to_string());
        let fail = |e: rusqlite::Error| ServerError::Database { path: database.clone(), reason: e.to_string() };
        let names: Vec<String> = graphs.keys().cloned().collect();
        let mut conn_meta = meta.clone();
        prepare(&mut conn_meta, &names).map_err(fail)?;
        let app = Arc::new(App { graphs, meta, saver, store, runs: Runs::default(), body_limit: self.body_limit });
        Ok(crate::api::router(app))
    }

    fn open(&self) -> Result<Storage, ServerError> {
        let Some(path) = &self.database else {
            let meta = Meta::open(None)
                .map_err(|e| ServerError::Database { path: ":memory:".into(), reason: e.to_string() })?;
            return Ok((Arc::new(MemorySaver::new()), Arc::new(InMemoryStore::new()), meta));
        };
        let fail = |reason: String| ServerError::Database { path: path.display().to_string(), reason };
        let saver = SqliteSaver::open(path).map_err(|e| fail(e.to_string()))?;
        let store = SqliteStore::open(path).map_err(|e| fail(e.to_string()))?;
        let meta = Meta::open(Some(path)).map_err(|e| fail(e.to_string()))?;
        Ok((Arc::new(saver), Arc::new(store), meta))
    }

    /// Binds `addr` (port 0 picks a free port) and returns the bound server, whose address is
    /// known before it serves.
    pub async fn bind(self, addr: impl tokio::net::ToSocketAddrs + std::fmt::Display) -> Result<Bound, ServerError> {
        let shown = addr.to_string();
        let router = self.into_router()?;
        let listener =
            tokio::net::TcpListener::bind(addr).await.map_err(|source| ServerError::Io { addr: shown, source })?;
        Ok(Bound { listener, router })
    }

    /// Binds `addr` and serves until the process ends.
    pub async fn serve(self, addr: impl tokio::net::ToSocketAddrs + std::fmt::Display) -> Result<(), ServerError> {
        self.bind(addr).await?.run().await
    }
}

/// Adds each graph's default assistant and fails runs left unfinished by an earlier process.
fn prepare(meta: &mut Meta, graphs: &[String]) -> rusqlite::Result<()> {
    meta.blocking(|conn| {
        for graph in graphs {
            let row = AssistantRow {
                assistant_id: system_assistant_id(graph),
                graph_id: graph.clone(),
                config: json!({}),
                context: json!({}),
                metadata: json!({"created_by": "system"}),
                name: graph.clone(),
                description: None,
            };
            meta::insert_assistant(conn, &row)?;
        }
        let failed = meta::fail_orphaned_runs(conn)?;
        if failed > 0 {
            tracing::warn!(failed, "runs left unfinished by an earlier server process were marked `error`");
        }
        Ok(())
    })
}

/// A server bound to its socket, not yet serving.
#[derive(Debug)]
pub struct Bound {
    listener: tokio::net::TcpListener,
    router: axum::Router,
}

impl Bound {
    /// The address it listens on.
    pub fn local_addr(&self) -> Result<SocketAddr, ServerError> {
        self.listener.local_addr().map_err(|source| ServerError::Io { addr: "the bound socket".into(), source })
    }

    /// Serves until the process ends.
    pub async fn run(self) -> Result<(), ServerError> {
        let addr = self.local_addr()?.to_string();
        axum::serve(self.listener, self.router).await.map_err(|source| ServerError::Io { addr, source })
    }
}
