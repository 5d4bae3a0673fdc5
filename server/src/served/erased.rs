//! The one interface the server drives every graph through, whatever its state and context types.

use super::run::{Emitted, RunSpec};
use super::schemas::Schemas;
use crate::error::ApiError;
use futures::future::BoxFuture;
use futures::stream::BoxStream;
use graphwright::{Checkpointer, Drawing, Store, Subgraph};
use serde_json::Value;
use std::sync::Arc;

/// A compiled graph behind the server, its types erased.
pub(crate) trait Served: Send + Sync + 'static {
    /// Its nodes and edges.
    fn drawing(&self) -> Drawing;
    /// Its input, output, state, config and context schemas, made on the first call.
    fn schemas(&self) -> &Schemas;
    /// Its subgraph nodes, each with the graph it runs described, and theirs.
    fn subgraphs(&self) -> Vec<Subgraph>;
    /// The schemas of `subgraph`, one of its subgraphs at any depth (run with its context).
    fn subgraph_schemas(&self, subgraph: &Subgraph) -> Schemas;
    /// The state fields that hold chat messages (`State::MESSAGE_FIELDS`).
    fn message_fields(&self) -> &'static [&'static str];
    /// Checks a run's input and context before the run is accepted.
    fn validate(&self, spec: &RunSpec) -> Result<(), ApiError>;
    /// Starts a run; dropping the stream cancels it.
    fn start(&self, spec: RunSpec) -> BoxFuture<'_, Result<BoxStream<'static, Emitted>, ApiError>>;
    /// The thread's state (at `checkpoint`, or its latest), as a `ThreadState`; `None` for a
    /// thread with no checkpoint.
    fn state<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<Value>, ApiError>>;
    /// The thread's checkpoints, newest first, as `ThreadState`s.
    fn history<'a>(
        &'a self,
        thread: &'a str,
        limit: usize,
        before: Option<String>,
    ) -> BoxFuture<'a, Result<Vec<Value>, ApiError>>;
    /// Applies `values` as if `as_node` had written them; the new checkpoint's id.
    fn update_state<'a>(
        &'a self,
        thread: &'a str,
        values: Value,
        as_node: Option<String>,
        checkpoint: Option<String>,
    ) -> BoxFuture<'a, Result<String, ApiError>>;
    /// Prunes the thread's history to its latest checkpoint (`keep_latest`); how many
    /// checkpoints were deleted. A thread with a run in progress is a conflict.
    fn prune_history<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<usize, ApiError>>;
    /// The same graph over the server's storage.
    fn rebind(&self, saver: Arc<dyn Checkpointer>, store: Arc<dyn Store>) -> Arc<dyn Served>;
}
