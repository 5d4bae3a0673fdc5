//! Reading a subgraph's checkpoints and shape without knowing its state type: what a
//! compiled node keeps of the graph it runs.

use super::snapshot::SubgraphSnapshot;
use crate::checkpoint::Checkpointer;
use crate::error::GraphError;
use std::sync::Arc;

/// Reading a subgraph's checkpoints without knowing its state type.
pub(crate) trait Inspect: Send + Sync {
    /// The subgraph's state under `key` in `saver`, with its own subgraphs', if it has one.
    fn snapshot<'a>(
        &'a self,
        saver: &'a Arc<dyn Checkpointer>,
        key: String,
        namespace: Vec<String>,
    ) -> futures::future::BoxFuture<'a, Result<Option<SubgraphSnapshot>, GraphError>>;

    /// The subgraph, as run by the node `node`, described without its types.
    fn describe(&self, node: &str) -> super::describe::Subgraph;
}
