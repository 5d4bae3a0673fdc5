//! Reading a thread's checkpoints: its current state and its history.

use super::compiled::CompiledGraph;
use crate::checkpoint::{CheckpointRecord, ListFilter, Source};
use crate::config::RunConfig;
use crate::error::GraphError;
use crate::interrupt::Interrupt;
use crate::pregel::{load_state, pending_interrupts, record};
use crate::state::State;

/// A thread's state at one checkpoint.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct StateSnapshot<S> {
    /// The state.
    pub state: S,
    /// The nodes that run next (empty when the run finished).
    pub next: Vec<String>,
    /// The checkpoint's id.
    pub checkpoint_id: String,
    /// The checkpoint it follows.
    pub parent_id: Option<String>,
    /// The super-step it was taken after (-1 for a run's input).
    pub step: i64,
    /// Why it was written.
    pub source: Source,
    /// When, in milliseconds since the Unix epoch.
    pub created_at_ms: u64,
    /// The interrupts waiting for an answer at this checkpoint.
    pub interrupts: Vec<Interrupt>,
}

impl<S: State, C: Send + Sync + 'static> CompiledGraph<S, C> {
    /// The thread's newest state, or `None` for a thread with no checkpoint.
    pub async fn get_state(&self, cfg: &RunConfig<C>) -> Result<Option<StateSnapshot<S>>, GraphError> {
        let thread = self.thread_of(cfg)?;
        match self.inner().saver.get(&thread, None).await? {
            Some(head) => Ok(Some(self.snapshot(&thread, head).await?)),
            None => Ok(None),
        }
    }

    /// The thread's checkpoints, newest first.
    pub async fn state_history(&self, cfg: &RunConfig<C>) -> Result<Vec<StateSnapshot<S>>, GraphError> {
        self.state_history_filtered(cfg, &ListFilter::default()).await
    }

    /// The thread's checkpoints that pass `filter`, newest first.
    pub async fn state_history_filtered(
        &self,
        cfg: &RunConfig<C>,
        filter: &ListFilter,
    ) -> Result<Vec<StateSnapshot<S>>, GraphError> {
        let thread = self.thread_of(cfg)?;
        let records = self.inner().saver.list(&thread, filter).await?;
        let mut history = Vec::with_capacity(records.len());
        for record in records {
            history.push(self.snapshot(&thread, record).await?);
        }
        Ok(history)
    }

    /// Writes `update` to the thread as a new checkpoint (LangGraph's `update_state`), folded
    /// in with the reducers, and returns its id. With `as_node`, the update counts as that
    /// node's output: its edges (or its router, on the updated state) decide what runs next.
    /// Without, the pending tasks stay pending (their finished writes are not carried over).
    /// With [`RunConfig::checkpoint`] set, the update starts a new branch from that checkpoint.
    pub async fn update_state(
        &self,
        cfg: &RunConfig<C>,
        update: impl Into<S::Update>,
        as_node: Option<&str>,
    ) -> Result<String, GraphError> {
        let thread = self.thread_of(cfg)?;
        let graph = self.inner();
        let node = match as_node {
            None => None,
            Some(name) => {
                Some(graph.node_names.iter().position(|n| &**n == name).ok_or_else(|| GraphError::UpdateState {
                    thread: thread.to_string(),
                    reason: format!("`as_node` names no node `{name}`"),
                })? as u32)
            }
        };
        crate::pregel::update_thread(graph, thread, cfg.checkpoint_id.as_deref(), update.into(), node).await
    }

    async fn snapshot(&self, thread: &str, record: CheckpointRecord) -> Result<StateSnapshot<S>, GraphError> {
        let graph = self.inner();
        let at = record::At { thread, checkpoint: &record.id };
        at.check_format(record.format, "format")?;
        let body = record::decode_body::<S, C>(graph, &at, &record.body)?;
        let state = match body.state {
            Some(state) => state,
            None => load_state(graph, thread, &record).await?,
        };
        let next: Vec<String> = body.next.iter().map(|t| graph.node_names[t.node as usize].to_string()).collect();
        let interrupts = pending_interrupts(graph, thread, &record.id, next.len()).await?;
        Ok(StateSnapshot {
            state,
            next,
            checkpoint_id: record.id,
            parent_id: record.parent_id,
            step: record.step,
            source: record.source,
            created_at_ms: record.created_at_ms,
            interrupts,
        })
    }
}
