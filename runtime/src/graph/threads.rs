//! Reading and editing a thread's checkpoints: its current state, its history, updates.

use super::compiled::CompiledGraph;
use super::snapshot::{PendingTask, StateSnapshot};
use crate::checkpoint::{CheckpointError, CheckpointRecord, ListFilter};
use crate::config::RunConfig;
use crate::error::GraphError;
use crate::node::{END, START};
use crate::pregel::record::Body;
use crate::pregel::{AsNode, Stored, record, state_of};
use crate::state::State;
use std::collections::{HashMap, HashSet};

/// How many times a read of a thread's newest state is made when it failed while a run
/// committed a newer checkpoint (see `head_moved`).
const HEAD_READS: usize = 3;

impl<S: State, C: Send + Sync + 'static> CompiledGraph<S, C> {
    /// [`get_state`](Self::get_state), with the state of every subgraph its pending tasks run
    /// (LangGraph's `get_state(config, subgraphs=True)`): each such task's
    /// [`subgraph`](PendingTask::subgraph), down to the deepest level. A paused nested run shows
    /// where it paused this way.
    ///
    /// ```
    /// use graphwright::prelude::*;
    ///
    /// #[graph]
    /// mod inner {
    ///     use graphwright::prelude::*;
    ///
    ///     #[state]
    ///     pub struct State {
    ///         pub answer: String,
    ///     }
    ///
    ///     #[node(entry, next = END)]
    ///     fn ask(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
    ///         let answer: String = rt.interrupt("name?")?;
    ///         Ok(StateUpdate::new().answer(answer))
    ///     }
    /// }
    ///
    /// #[graph(state = super::inner::State)]
    /// mod outer {
    ///     use graphwright::prelude::*;
    ///
    ///     #[node(entry, subgraph, next = END)]
    ///     fn interview() -> StateGraph<super::inner::State> {
    ///         super::inner::graph()
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Report> {
    /// let app = outer::graph().compile()?;
    /// let cfg = RunConfig::thread("t1");
    /// app.invoke(inner::State::default(), &cfg).await?;
    /// let snapshot = app.get_state_with_subgraphs(&cfg).await?.unwrap();
    /// let inside = snapshot.tasks[0].subgraph.as_ref().unwrap();
    /// assert_eq!(inside.next, ["ask"]);
    /// assert_eq!(inside.interrupts[0].value, "name?");
    /// assert!(inside.namespace[0].starts_with("interview:"));
    /// # Ok(())
    /// # }
    /// ```
    pub async fn get_state_with_subgraphs(&self, cfg: &RunConfig<C>) -> Result<Option<StateSnapshot<S>>, GraphError> {
        self.snapshot_nested(cfg, &[]).await
    }

    /// `get_state` of the run at `namespace` (empty for this graph), its subgraphs included.
    pub(crate) async fn snapshot_nested(
        &self,
        cfg: &RunConfig<C>,
        namespace: &[String],
    ) -> Result<Option<StateSnapshot<S>>, GraphError> {
        let Some(mut snapshot) = self.get_state(cfg).await? else { return Ok(None) };
        let thread = self.thread_of(cfg)?;
        let graph = self.inner();
        for task in &mut snapshot.tasks {
            let Some(&node) = graph.node_index.get(task.node.as_str()) else { continue };
            let Some(inspect) = &graph.nodes[node as usize].subgraph else { continue };
            let segment = super::subgraph::segment(&task.node, &snapshot.checkpoint_id, task.index);
            let key = super::subgraph::key(&thread, &segment);
            let mut path = namespace.to_vec();
            path.push(segment);
            task.subgraph = inspect.snapshot(&graph.saver, key, path).await?.map(Box::new);
        }
        Ok(Some(snapshot))
    }

    /// The thread's newest state, or `None` for a thread with no checkpoint. With
    /// [`RunConfig::checkpoint`] set, the state at that checkpoint instead, as it was stored
    /// (without the outputs of tasks that finished after it).
    pub async fn get_state(&self, cfg: &RunConfig<C>) -> Result<Option<StateSnapshot<S>>, GraphError> {
        let thread = self.thread_of(cfg)?;
        let pinned = cfg.checkpoint_id.as_deref();
        let mut reads = 0;
        loop {
            reads += 1;
            let Some(record) = self.inner().saver.get(&thread, pinned).await? else {
                return match pinned {
                    Some(_) => Err(GraphError::NothingToResume {
                        thread: thread.to_string(),
                        reason: "it has no checkpoint with that id",
                    }),
                    None => Ok(None),
                };
            };
            let head = record.id.clone();
            match self.snapshot(&thread, record, pinned.is_none()).await {
                Err(_) if pinned.is_none() && reads < HEAD_READS && self.head_moved(&thread, &head).await? => {}
                read => return read.map(Some),
            }
        }
    }

    /// Whether the thread's newest checkpoint is no longer `head`. The head and its writes are
    /// separate reads, so a run that commits its next step in between (the step's write and
    /// the checkpoint after it, in one transaction) makes the head look as if that checkpoint
    /// were lost; a read that failed while the head moved is made again.
    async fn head_moved(&self, thread: &str, head: &str) -> Result<bool, GraphError> {
        Ok(self.inner().saver.get(thread, None).await?.is_some_and(|newest| newest.id != head))
    }

    /// The thread's checkpoints, newest first.
    pub async fn state_history(&self, cfg: &RunConfig<C>) -> Result<Vec<StateSnapshot<S>>, GraphError> {
        self.state_history_filtered(cfg, &ListFilter::default()).await
    }

    /// The thread's checkpoints that pass `filter`, newest first. A checkpoint whose parent is
    /// missing from the thread is reported as damage.
    pub async fn state_history_filtered(
        &self,
        cfg: &RunConfig<C>,
        filter: &ListFilter,
    ) -> Result<Vec<StateSnapshot<S>>, GraphError> {
        let thread = self.thread_of(cfg)?;
        let whole = *filter == ListFilter::default();
        let mut reads = 0;
        loop {
            reads += 1;
            let (head, read) = self.history_once(&thread, filter, whole).await;
            match (read, head) {
                (Err(_), Some(head)) if whole && reads < HEAD_READS && self.head_moved(&thread, &head).await? => {}
                (read, _) => return read,
            }
        }
    }

    /// One read of the history: the newest checkpoint it listed, and the history. `whole`: the
    /// filter is the default one, so the list starts at the thread's head and ends at its first
    /// checkpoint.
    async fn history_once(
        &self,
        thread: &str,
        filter: &ListFilter,
        whole: bool,
    ) -> (Option<String>, Result<Vec<StateSnapshot<S>>, GraphError>) {
        let graph = self.inner();
        let records = match graph.saver.list(thread, filter).await {
            Ok(records) => records,
            Err(error) => return (None, Err(error.into())),
        };
        let head = records.first().map(|r| r.id.clone());
        (head, self.history_of(thread, records, whole).await)
    }

    async fn history_of(
        &self,
        thread: &str,
        records: Vec<CheckpointRecord>,
        whole: bool,
    ) -> Result<Vec<StateSnapshot<S>>, GraphError> {
        let graph = self.inner();
        if whole {
            check_parents(thread, &records)?;
        }
        let mut loaded = Vec::with_capacity(records.len());
        for record in records {
            let body = record::decode_body(graph, thread, &record)?;
            let stored = Stored::load(graph, thread, &record, &body).await?;
            loaded.push((record, body, stored));
        }
        check_folded(thread, &loaded)?;
        if let (Some((head, _, stored)), true) = (loaded.first(), whole) {
            stored.check_head(thread, &head.id)?;
        }
        let mut history = Vec::with_capacity(loaded.len());
        for (record, body, stored) in loaded {
            history.push(self.snapshot_of(thread, record, body, stored, false).await?);
        }
        Ok(history)
    }

    /// Writes `update` to the thread as a new checkpoint (LangGraph's `update_state`), folded
    /// in with the reducers, and returns its id.
    ///
    /// - `as_node` `None`: the pending tasks stay pending, and interrupts waiting for an answer
    ///   keep waiting (the next `resume` answers them); tasks that had finished run again, on
    ///   the edited state.
    /// - `as_node` a node: the update counts as that node's output, and its edges (or routers,
    ///   on the updated state) decide what runs next.
    /// - `as_node` [`END`]: the outputs of the tasks that had finished are applied, the update
    ///   too, and nothing is left to run (pending tasks and interrupts are dropped).
    ///
    /// A thread with no checkpoint starts from the default state. With [`RunConfig::checkpoint`]
    /// set, the update starts a new branch from that checkpoint, whose tasks run afresh.
    pub async fn update_state(
        &self,
        cfg: &RunConfig<C>,
        update: impl Into<S::Update>,
        as_node: Option<&str>,
    ) -> Result<String, GraphError> {
        self.bulk_update_state(cfg, vec![vec![(update.into(), as_node)]]).await
    }

    /// Applies several super-steps of updates at once (LangGraph's `bulk_update_state`): each
    /// inner list is one super-step, whose updates are folded together as a step's task outputs
    /// are (a last-value field written twice is an error), and becomes one checkpoint. Several
    /// updates in one super-step each name the node they act as.
    pub async fn bulk_update_state(
        &self,
        cfg: &RunConfig<C>,
        supersteps: Vec<Vec<(S::Update, Option<&str>)>>,
    ) -> Result<String, GraphError> {
        let thread = self.thread_of(cfg)?;
        let graph = self.inner();
        let mut steps = Vec::with_capacity(supersteps.len());
        for superstep in supersteps {
            let mut updates = Vec::with_capacity(superstep.len());
            for (mut update, as_node) in superstep {
                crate::state::Update::fill_ids(&mut update);
                let as_node = match as_node {
                    None => AsNode::Pending,
                    Some(END) => AsNode::End,
                    Some(name) => {
                        AsNode::Node(graph.node_index.get(name).copied().ok_or_else(|| GraphError::UpdateState {
                            thread: thread.to_string(),
                            reason: format!("`as_node` names no node `{name}`"),
                        })?)
                    }
                };
                updates.push((update, as_node));
            }
            steps.push(updates);
        }
        crate::pregel::update_thread(graph, thread, cfg.checkpoint_id.as_deref(), steps).await
    }

    /// Prunes the thread's history down to its newest checkpoint (LangGraph's thread pruning
    /// with the `keep_latest` strategy) and returns how many checkpoints were deleted. The
    /// thread keeps its latest state and reads as before, and a later run or
    /// [`resume`](Self::resume) continues it exactly as it would have.
    ///
    /// - The newest checkpoint keeps its id, its state, its next tasks and everything stored
    ///   against it: the outputs of tasks that finished, the interrupts waiting for an answer
    ///   and the answers already given, the results of finished tool calls. It is rewritten to
    ///   stand alone (a snapshot of its state, no parent), so its
    ///   [`parent_id`](StateSnapshot::parent_id) becomes `None` and
    ///   [`state_history`](Self::state_history) has this one entry.
    /// - Every older checkpoint goes with its writes, in the same transaction as the rewrite: a
    ///   crash half-way leaves the thread as it was.
    /// - Subgraphs' checkpoints: those of the newest checkpoint's own tasks stay as they are (a
    ///   resume continues a subgraph paused there); all others go, as nothing can read them
    ///   again. A finished thread keeps none.
    ///
    /// It holds the thread as a run does, so no run interleaves: with a run in progress it fails
    /// with [`GraphError::ThreadBusy`] and changes nothing. A thread with no checkpoint is left
    /// alone (0). With [`RunConfig::checkpoint`] set, the thread is pruned only while that
    /// checkpoint is still its newest, and is otherwise a
    /// [`CheckpointError::Conflict`]. The newest checkpoint is read whole first (its state
    /// rebuilt, its writes checked), so damage there is [`CheckpointError::Corrupt`] and
    /// nothing is deleted; damaged older records that the state is not rebuilt from are
    /// deleted like the rest. The checkpointer must implement
    /// [`Checkpointer::prune_to_head`](crate::checkpoint::Checkpointer::prune_to_head) (the
    /// built-in ones do).
    ///
    /// ```
    /// use graphwright::prelude::*;
    ///
    /// #[state]
    /// struct Count {
    ///     #[reducer(add)]
    ///     total: u64,
    /// }
    ///
    /// fn add_one(_state: &Count) -> CountUpdate {
    ///     CountUpdate::new().total(1)
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Report> {
    /// let app = StateGraph::<Count>::new()
    ///     .add_node("add_one", add_one)
    ///     .add_edge(START, "add_one")
    ///     .add_edge("add_one", END)
    ///     .compile()?;
    /// let cfg = RunConfig::thread("counter");
    /// for _ in 0..3 {
    ///     app.invoke(CountUpdate::new(), &cfg).await?;
    /// }
    /// // Three checkpoints a run: its input, the step that applies it, the step of `add_one`.
    /// assert_eq!(app.state_history(&cfg).await?.len(), 9);
    ///
    /// assert_eq!(app.prune_history(&cfg).await?, 8);
    /// let history = app.state_history(&cfg).await?;
    /// assert_eq!((history.len(), history[0].state.total), (1, 3));
    /// assert_eq!(history[0].parent_id, None);
    ///
    /// // The thread goes on from its latest state.
    /// app.invoke(CountUpdate::new(), &cfg).await?;
    /// assert_eq!(app.get_state(&cfg).await?.unwrap().state.total, 4);
    /// # Ok(())
    /// # }
    /// ```
    pub async fn prune_history(&self, cfg: &RunConfig<C>) -> Result<usize, GraphError> {
        let thread = self.thread_of(cfg)?;
        crate::pregel::prune_thread(self.inner(), thread, cfg.checkpoint_id.as_deref()).await
    }

    /// The snapshot of `record`; `current` applies the outputs of the tasks that finished.
    async fn snapshot(
        &self,
        thread: &str,
        record: CheckpointRecord,
        current: bool,
    ) -> Result<StateSnapshot<S>, GraphError> {
        let graph = self.inner();
        let body = record::decode_body(graph, thread, &record)?;
        let stored = Stored::load(graph, thread, &record, &body).await?;
        if current {
            stored.check_head(thread, &record.id)?;
        }
        self.snapshot_of(thread, record, body, stored, current).await
    }

    async fn snapshot_of(
        &self,
        thread: &str,
        record: CheckpointRecord,
        mut body: Body<S>,
        stored: Stored<S>,
        current: bool,
    ) -> Result<StateSnapshot<S>, GraphError> {
        let graph = self.inner();
        let next_tasks = std::mem::take(&mut body.next);
        let input_pending = body.input_pending;
        let mut state = state_of(graph, thread, &record, body).await?;
        let errors = stored.errors();
        let pending = stored.pending();
        let mut tasks = Vec::with_capacity(next_tasks.len() + 1);
        if input_pending {
            tasks.push(PendingTask {
                node: START.to_owned(),
                index: 0,
                result: stored.input.as_ref().map(|(input, _)| input.clone()),
                error: None,
                interrupts: Vec::new(),
                subgraph: None,
            });
        }
        for (index, task) in next_tasks.iter().enumerate() {
            tasks.push(PendingTask {
                node: graph.node_names[task.node as usize].to_string(),
                index: index as u32,
                result: stored.outputs[index].as_ref().map(|o| o.output.update.clone()),
                error: errors[index].clone(),
                interrupts: pending.iter().filter(|(t, _)| *t == index).map(|(_, i)| i.clone()).collect(),
                subgraph: None,
            });
        }
        let mut next: Vec<String> = tasks.iter().map(|t| t.node.clone()).collect();
        if current && tasks.iter().any(|t| t.result.is_some()) {
            let mut finished: Vec<S::Update> = tasks.iter().filter_map(|t| t.result.clone()).collect();
            let refs: Vec<&S::Update> = finished.iter().collect();
            if S::conflict(&refs).is_none() {
                let mut refs: Vec<&mut S::Update> = finished.iter_mut().collect();
                state.apply_step(&mut refs);
                next = tasks.iter().filter(|t| t.result.is_none()).map(|t| t.node.clone()).collect();
            }
        }
        Ok(StateSnapshot {
            state,
            next,
            tasks,
            checkpoint_id: record.id,
            parent_id: record.parent_id,
            step: record.step,
            source: record.source,
            created_at_ms: record.created_at_ms,
            interrupts: pending.into_iter().map(|(_, i)| i).collect(),
        })
    }
}

/// Fails when a checkpoint lists a write of its parent (one its state folds in) that the
/// parent no longer holds as it was.
fn check_folded<S: State>(thread: &str, loaded: &[(CheckpointRecord, Body<S>, Stored<S>)]) -> Result<(), GraphError> {
    let by_id: HashMap<&str, usize> = loaded.iter().enumerate().map(|(i, (r, _, _))| (r.id.as_str(), i)).collect();
    for (record, body, _) in loaded {
        let Some(&parent) = record.parent_id.as_deref().and_then(|p| by_id.get(p)) else { continue };
        let (parent_record, _, parent_stored) = &loaded[parent];
        for folded in &body.folded {
            if parent_stored.check_of(folded.task, folded.index) != Some(folded.check) {
                return Err(CheckpointError::Corrupt {
                    thread: thread.to_owned(),
                    checkpoint: parent_record.id.clone(),
                    field: format!("writes[{}.{}]", folded.task, folded.index),
                    reason: format!("checkpoint {} folds in this write, but it is missing or was changed", record.id),
                }
                .into());
            }
        }
    }
    Ok(())
}

/// Fails when a listed checkpoint names a parent the thread does not have.
fn check_parents(thread: &str, records: &[CheckpointRecord]) -> Result<(), GraphError> {
    let ids: HashSet<&str> = records.iter().map(|r| r.id.as_str()).collect();
    for record in records {
        if let Some(parent) = &record.parent_id
            && !ids.contains(parent.as_str())
        {
            return Err(CheckpointError::Corrupt {
                thread: thread.to_owned(),
                checkpoint: record.id.clone(),
                field: "parent_id".to_owned(),
                reason: format!("its parent {parent} is not in the thread"),
            }
            .into());
        }
    }
    Ok(())
}
