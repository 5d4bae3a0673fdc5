//! The state every request handler shares: the graphs, the storage, the runs in progress.

use crate::error::ApiError;
use crate::meta::Meta;
use crate::runs::{Cancel, Live, Runs};
use crate::served::Served;
use graphwright::{Checkpointer, Store};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::Arc;

/// The namespace LangGraph derives a graph's default assistant id from (uuid5 of the graph id).
const SYSTEM_ASSISTANTS: uuid::Uuid = uuid::uuid!("6ba7b821-9dad-11d1-80b4-00c04fd430c8");

/// The id of a graph's default assistant, as LangGraph's server computes it.
pub(crate) fn system_assistant_id(graph_id: &str) -> String {
    uuid::Uuid::new_v5(&SYSTEM_ASSISTANTS, graph_id.as_bytes()).to_string()
}

/// Where the stateless runs a client waits on or streams run: each graph bound to one
/// in-memory checkpointer, since their threads are deleted when they end and the client that
/// would see them is attached to this process.
pub(crate) struct Scratch {
    pub(crate) graphs: BTreeMap<String, Arc<dyn Served>>,
    pub(crate) saver: Arc<dyn Checkpointer>,
}

pub(crate) struct App {
    pub(crate) graphs: BTreeMap<String, Arc<dyn Served>>,
    /// The same graphs over memory, for stateless runs a client waits on or streams.
    pub(crate) scratch: Scratch,
    pub(crate) meta: Meta,
    pub(crate) saver: Arc<dyn Checkpointer>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) runs: Arc<Runs>,
    /// The other server processes on the same PostgreSQL database, if any.
    #[cfg(feature = "postgres")]
    pub(crate) cluster: Option<Arc<crate::cluster::Cluster>>,
    /// The largest request body accepted, in bytes.
    pub(crate) body_limit: usize,
    /// The most runs in flight one authenticated user may have (`None`: no limit).
    pub(crate) max_runs_per_user: Option<usize>,
    /// What `/metrics` reports.
    pub(crate) metrics: Arc<crate::metrics::Metrics>,
    /// Wakes the cron scheduler when crons change.
    pub(crate) crons: crate::crons::Alarm,
    /// Whether requests are authenticated (`/info` says so).
    pub(crate) authenticated: bool,
    /// Who may see and do what (`None`: every caller everything).
    pub(crate) policy: Option<Arc<crate::authz::Policy>>,
    /// Set when the process is shutting down: no run starts any more.
    pub(crate) draining: tokio::sync::watch::Sender<bool>,
}

impl App {
    /// Whether the process is shutting down.
    pub(crate) fn is_draining(&self) -> bool {
        *self.draining.borrow()
    }

    /// Resolves once this process has lost the PostgreSQL lease that shows it is alive (never
    /// without PostgreSQL).
    pub(crate) async fn lease_lost(&self) {
        #[cfg(feature = "postgres")]
        if let Some(cluster) = &self.cluster {
            return cluster.lease_lost().await;
        }
        std::future::pending::<()>().await;
    }

    /// Resolves once the process is shutting down.
    pub(crate) async fn drained(&self) {
        let mut rx = self.draining.subscribe();
        // The sender lives in `self`: `wait_for` fails only if it is dropped, never here.
        let _ = rx.wait_for(|draining| *draining).await;
    }

    /// The graph named `graph_id`.
    pub(crate) fn graph(&self, graph_id: &str) -> Result<&Arc<dyn Served>, ApiError> {
        self.graphs.get(graph_id).ok_or_else(|| {
            let known: Vec<&str> = self.graphs.keys().map(String::as_str).collect();
            ApiError::NotFound(format!("No graph named {graph_id:?}: this server serves {}", known.join(", ")))
        })
    }

    /// An assistant, by its id or by the name of its graph (the graph's default assistant).
    pub(crate) async fn assistant(&self, id: &str) -> Result<Value, ApiError> {
        let id = if self.graphs.contains_key(id) { system_assistant_id(id) } else { id.to_owned() };
        let found = self.meta.assistant(&id).await?;
        found.ok_or_else(|| {
            let known: Vec<&str> = self.graphs.keys().map(String::as_str).collect();
            ApiError::NotFound(format!(
                "No assistant found for {id:?}: pass an assistant id or a graph name ({})",
                known.join(", ")
            ))
        })
    }

    /// The graph of a thread's runs, if one has run or it was created for one.
    pub(crate) async fn thread_graph(&self, thread: &str) -> Result<Option<Arc<dyn Served>>, ApiError> {
        let graph = self.meta.thread_graph(thread).await?;
        match graph {
            None => Err(ApiError::thread_not_found(thread)),
            Some(None) => Ok(None),
            Some(Some(graph_id)) => Ok(self.graphs.get(&graph_id).cloned()),
        }
    }

    /// A run's progress: this process's own run, a copy of one another process executes, or
    /// `None` when the run ended and no process keeps its events.
    #[cfg_attr(not(feature = "postgres"), allow(clippy::unused_async))] // awaits only with PostgreSQL
    pub(crate) async fn follow(&self, thread: &str, run: &str) -> Result<Option<Arc<Live>>, ApiError> {
        if let Some(live) = self.runs.get(run) {
            return Ok(Some(live));
        }
        #[cfg(feature = "postgres")]
        if let Some(cluster) = &self.cluster {
            let Some(record) = self.meta.run_of(thread, run).await? else { return Ok(None) };
            let resumable = record["kwargs"]["resumable"].as_bool().unwrap_or(false);
            return Ok(Some(cluster.follow(&self.runs, thread, run, resumable)));
        }
        let _ = thread;
        Ok(None)
    }

    /// Asks a run to stop, wherever it executes.
    #[cfg_attr(not(feature = "postgres"), allow(clippy::unused_async))] // awaits only with PostgreSQL
    pub(crate) async fn cancel_run(&self, run: &str, how: Cancel) -> Result<(), ApiError> {
        match self.runs.get(run) {
            Some(live) if !live.remote => live.cancel(how),
            #[cfg(feature = "postgres")]
            _ if self.cluster.is_some() => {
                if let Some(cluster) = &self.cluster {
                    cluster.cancel(run, how).await?;
                }
            }
            _ => {}
        }
        Ok(())
    }

    /// Tells the followers of `thread`, in every server process, that its state was changed
    /// outside a run. The change is made whether or not they can be told.
    #[cfg_attr(not(feature = "postgres"), allow(clippy::unused_async))] // awaits only with PostgreSQL
    pub(crate) async fn state_changed(&self, thread: &str) {
        #[cfg(feature = "postgres")]
        if let Some(cluster) = &self.cluster {
            if let Err(error) = cluster.state_changed(thread).await {
                tracing::warn!(%thread, %error, "could not tell other server processes a thread's state changed");
            }
            return;
        }
        self.runs.feeds.state_changed(thread);
    }
}
