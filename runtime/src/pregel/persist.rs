//! Persisting a run on a thread: checkpoints after each step, the writes of finished tasks,
//! interrupts and their answers, and loading a thread back (its state, its pending tasks, the
//! outputs already saved).

use super::Task;
use super::planner::Planner;
use super::record::{self, At, Body, Decoded};
use crate::checkpoint::{
    BatchOp, CheckpointError, CheckpointRecord, Checkpointer, FORMAT_VERSION, Source, WriteRecord, new_checkpoint_id,
};
use crate::config::Durability;
use crate::error::GraphError;
use crate::graph::Inner;
use crate::interrupt::{Interrupt, Resume};
use crate::node::NodeOutput;
use crate::state::State;
use serde_json::Value;
use std::collections::{BTreeMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{SystemTime, UNIX_EPOCH};
use tokio::sync::mpsc;
use tokio::task::JoinHandle;

/// Snapshots are taken at least this often, to bound how far back a load must fold.
const MAX_CHECKPOINTS_BETWEEN_SNAPSHOTS: u32 = 256;

/// Holds a thread for one run; a second run on the same thread in this process is refused.
pub(crate) struct ThreadLock<'g> {
    busy: &'g Mutex<HashSet<Arc<str>>>,
    thread: Arc<str>,
}

impl<'g> ThreadLock<'g> {
    pub(crate) fn acquire(busy: &'g Mutex<HashSet<Arc<str>>>, thread: &Arc<str>) -> Result<Self, GraphError> {
        let mut held = busy.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if !held.insert(Arc::clone(thread)) {
            return Err(GraphError::ThreadBusy { thread: thread.to_string() });
        }
        Ok(Self { busy, thread: Arc::clone(thread) })
    }
}

impl Drop for ThreadLock<'_> {
    fn drop(&mut self) {
        let mut held = self.busy.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        held.remove(&self.thread);
    }
}

/// How many operations the background writer may hold: the run runs at most this far ahead of
/// the store, so a slow store slows the run instead of filling memory.
const WRITER_QUEUE: usize = 64;

/// The background writer of `Durability::Async`: one task that stores records in order.
struct Writer {
    queue: mpsc::Sender<BatchOp>,
    task: JoinHandle<Result<(), CheckpointError>>,
}

/// The persistence side of one run.
pub(crate) struct Persist {
    saver: Arc<dyn Checkpointer>,
    thread: Arc<str>,
    durability: Durability,
    /// The checkpoint whose next tasks are running; their writes are keyed to it.
    current: Arc<str>,
    /// Its step.
    current_step: i64,
    /// The newest stored checkpoint of the thread: what the next `put` expects as head.
    stored_head: Option<String>,
    writer: Option<Writer>,
    bytes_since_snapshot: usize,
    snapshot_len: usize,
    since_snapshot: u32,
    /// Tasks of the current step whose outputs are already in the store (loaded from it, or
    /// stored as they finished), so they are not stored again.
    pub(crate) loaded: Vec<bool>,
    /// Writes of a one-task step, stored in the same transaction as the checkpoint after it:
    /// with no sibling to protect, one commit per step is enough.
    held: Vec<WriteRecord>,
}

/// A run ready to continue: its state, its next tasks, and the planner's saved progress.
pub(crate) struct Resumed<S: State> {
    pub(crate) persist: Persist,
    pub(crate) state: S,
    pub(crate) tasks: Vec<Task>,
    pub(crate) planner: Planner,
    /// Outputs already saved for some of `tasks`, by task index.
    pub(crate) saved: Vec<Option<NodeOutput<S>>>,
}

fn now_ms() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
}

/// What is stored against one checkpoint, task by task.
struct Stored<S: State> {
    outputs: Vec<Option<NodeOutput<S>>>,
    /// Per task: interrupts raised and answers given, by call index.
    interrupts: Vec<BTreeMap<u32, Interrupt>>,
    answers: Vec<BTreeMap<u32, Value>>,
}

impl<S: State> Stored<S> {
    async fn load<C>(graph: &Inner<S, C>, thread: &str, checkpoint: &str, tasks: usize) -> Result<Self, GraphError> {
        let at = At { thread, checkpoint };
        let mut stored = Self {
            outputs: (0..tasks).map(|_| None).collect(),
            interrupts: vec![BTreeMap::new(); tasks],
            answers: vec![BTreeMap::new(); tasks],
        };
        for write in graph.saver.writes(thread, checkpoint).await? {
            at.check_format(write.format, &format!("writes[{}].format", write.task))?;
            let task = write.task as usize;
            let decoded = record::decode_write(graph, &at, write.task, write.index, &write.body)?;
            if matches!(decoded, Decoded::Input(_)) {
                // The input checkpoint's one write: the run's input, folded into the next state.
                continue;
            }
            if task >= tasks {
                return Err(at.corrupt(format!("writes[{task}]"), "the checkpoint has no such task").into());
            }
            match decoded {
                Decoded::Output(output) => stored.outputs[task] = Some(output),
                Decoded::Interrupt(interrupt) => {
                    stored.interrupts[task].insert(interrupt.call, interrupt);
                }
                Decoded::Answer(call, answer) => {
                    stored.answers[task].insert(call, answer);
                }
                Decoded::Input(_) => {}
            }
        }
        Ok(stored)
    }

    /// The interrupts still waiting for an answer, by task.
    fn pending(&self) -> Vec<(usize, Interrupt)> {
        let mut pending = Vec::new();
        for (task, raised) in self.interrupts.iter().enumerate() {
            if self.outputs[task].is_some() {
                continue;
            }
            if let Some((call, interrupt)) = raised.iter().next_back()
                && !self.answers[task].contains_key(call)
            {
                pending.push((task, interrupt.clone()));
            }
        }
        pending
    }
}

impl Persist {
    fn new(
        saver: Arc<dyn Checkpointer>,
        thread: Arc<str>,
        durability: Durability,
        head: Option<&CheckpointRecord>,
    ) -> Self {
        let writer = (durability == Durability::Async).then(|| {
            let (queue, mut rx) = mpsc::channel::<BatchOp>(WRITER_QUEUE);
            let saver = Arc::clone(&saver);
            let task = tokio::spawn(async move {
                // Whatever queued up while the last batch was being stored goes in one batch:
                // one commit for several steps (group commit).
                let mut batch = Vec::with_capacity(WRITER_QUEUE);
                while rx.recv_many(&mut batch, WRITER_QUEUE).await > 0 {
                    saver.put_batch(std::mem::take(&mut batch)).await?;
                }
                Ok(())
            });
            Writer { queue, task }
        });
        Self {
            saver,
            thread,
            durability,
            current: head.map_or_else(|| Arc::from(""), |h| Arc::from(h.id.as_str())),
            current_step: head.map_or(-2, |h| h.step),
            stored_head: head.map(|h| h.id.clone()),
            writer,
            bytes_since_snapshot: 0,
            snapshot_len: 0,
            since_snapshot: 0,
            loaded: Vec::new(),
            held: Vec::new(),
        }
    }

    /// Starts a run from `input` on a thread: stores the input checkpoint (its write is the
    /// input) and the step-0 checkpoint whose next tasks are the entries.
    pub(crate) async fn start<S: State, C>(
        graph: &Inner<S, C>,
        thread: Arc<str>,
        durability: Durability,
        input: S::Update,
    ) -> Result<(Self, S), GraphError> {
        let head = graph.saver.get(&thread, None).await?;
        let mut state = match &head {
            Some(head) => load_state(graph, &thread, head).await?,
            None => S::default(),
        };
        let mut persist = Self::new(Arc::clone(&graph.saver), thread, durability, head.as_ref());
        persist.checkpoint(graph, &state, &[], &Planner::new(graph), Source::Input).await?;
        if durability != Durability::Exit {
            let write = record::encode_input::<S>(&input)?;
            persist.store_writes(vec![persist.write_record(0, 0, write)]).await?;
        }
        state.apply(input);
        let entries: Vec<Task> = graph.entries.iter().map(|&n| Task::pull(n)).collect();
        persist.checkpoint(graph, &state, &entries, &Planner::new(graph), Source::Loop).await?;
        Ok((persist, state))
    }

    /// Loads a thread's newest checkpoint to continue its pending tasks, giving `answer` to
    /// its pending interrupts. With `from` set, continues from that older checkpoint on a new
    /// branch instead (the old branch is left as it was).
    pub(crate) async fn resume<S: State, C>(
        graph: &Inner<S, C>,
        thread: Arc<str>,
        durability: Durability,
        answer: Resume,
        from: Option<&str>,
    ) -> Result<Resumed<S>, GraphError> {
        let head = graph.saver.get(&thread, None).await?.ok_or_else(|| GraphError::NothingToResume {
            thread: thread.to_string(),
            reason: "it has no checkpoint",
        })?;
        let base = match from {
            None => head.clone(),
            Some(id) => graph.saver.get(&thread, Some(id)).await?.ok_or_else(|| GraphError::NothingToResume {
                thread: thread.to_string(),
                reason: "it has no checkpoint with that id",
            })?,
        };
        let at = At { thread: &thread, checkpoint: &base.id };
        at.check_format(base.format, "format")?;
        let body: Body<S> = record::decode_body(graph, &at, &base.body)?;
        if body.next.is_empty() {
            return Err(GraphError::NothingToResume {
                thread: thread.to_string(),
                reason: "its run had finished at that checkpoint",
            });
        }
        let state = match body.state {
            Some(state) => state,
            None => load_state(graph, &thread, &base).await?,
        };
        let mut planner = Planner::new(graph);
        planner.restore(&body.deferred, body.joins);
        let mut tasks = body.next;
        let mut persist = Self::new(Arc::clone(&graph.saver), Arc::clone(&thread), durability, Some(&head));
        if from.is_some() {
            // A new branch: a copy of the old checkpoint becomes the head, so this run's writes
            // never mix with the old branch's.
            persist.current = Arc::from(base.id.as_str());
            persist.current_step = base.step;
            persist.put_checkpoint(graph, &state, &tasks, &planner, Source::Fork, true).await?;
            let saved = tasks.iter().map(|_| None).collect();
            return Ok(Resumed { persist, state, tasks, planner, saved });
        }
        let mut stored = Stored::<S>::load(graph, &thread, &base.id, tasks.len()).await?;
        let new_answers = assign_answers(&thread, &stored.pending(), answer)?;
        let mut writes = Vec::new();
        for (task, call, value) in new_answers {
            writes.push(persist.write_record(task as u32, record::answer_index(call), record::encode_answer(&value)?));
            stored.answers[task].insert(call, value);
        }
        if !writes.is_empty() {
            persist.saver.put_writes(writes).await?;
        }
        for (task, answers) in tasks.iter_mut().zip(&stored.answers) {
            if !answers.is_empty() {
                task.answers = Some(answers.values().cloned().collect());
            }
        }
        persist.loaded = stored.outputs.iter().map(Option::is_some).collect();
        Ok(Resumed { persist, state, tasks, planner, saved: stored.outputs })
    }

    /// The step of the checkpoint whose tasks run next.
    pub(crate) fn step(&self) -> i64 {
        self.current_step
    }

    /// The checkpoint whose tasks run next.
    pub(crate) fn current(&self) -> &Arc<str> {
        &self.current
    }

    fn write_record(&self, task: u32, index: u32, body: Vec<u8>) -> WriteRecord {
        WriteRecord {
            thread_id: self.thread.to_string(),
            checkpoint_id: self.current.to_string(),
            task,
            index,
            format: FORMAT_VERSION,
            body,
        }
    }

    /// Stores the write of one task of a step with several tasks as soon as it finishes.
    pub(crate) async fn save_finished<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        index: usize,
        task: &Task,
        output: &NodeOutput<S>,
    ) -> Result<(), GraphError> {
        if self.durability == Durability::Exit {
            return Ok(());
        }
        let body = record::encode_write(graph, task, output)?;
        self.bytes_since_snapshot += body.len();
        let write = self.write_record(index as u32, 0, body);
        self.store_writes(vec![write]).await?;
        if self.loaded.len() <= index {
            self.loaded.resize(index + 1, false);
        }
        self.loaded[index] = true;
        Ok(())
    }

    /// Saves the writes of the step's tasks that finished now (not those loaded from the store).
    pub(crate) async fn save_outputs<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        tasks: &[Task],
        outputs: &[Option<NodeOutput<S>>],
    ) -> Result<(), GraphError> {
        if self.durability == Durability::Exit {
            return Ok(());
        }
        let mut writes = self.encode_outputs(graph, tasks, outputs)?;
        if writes.is_empty() {
            return Ok(());
        }
        if tasks.len() == 1 {
            self.held.append(&mut writes);
            return Ok(());
        }
        self.store_writes(writes).await
    }

    /// Encodes the writes of the step's tasks that finished and are not in the store yet.
    fn encode_outputs<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        tasks: &[Task],
        outputs: &[Option<NodeOutput<S>>],
    ) -> Result<Vec<WriteRecord>, GraphError> {
        let mut writes = Vec::new();
        for (i, (task, output)) in tasks.iter().zip(outputs).enumerate() {
            if let (Some(output), false) = (output, self.loaded.get(i).copied().unwrap_or(false)) {
                let body = record::encode_write(graph, task, output)?;
                self.bytes_since_snapshot += body.len();
                writes.push(self.write_record(i as u32, 0, body));
            }
        }
        self.loaded.clear();
        Ok(writes)
    }

    /// Stores the checkpoint after a step: the next tasks, and the state when a snapshot is due.
    pub(crate) async fn checkpoint<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        state: &S,
        next: &[Task],
        planner: &Planner,
        source: Source,
    ) -> Result<(), GraphError> {
        self.current_step += 1;
        if self.durability == Durability::Exit {
            return Ok(());
        }
        self.put_checkpoint(graph, state, next, planner, source, false).await
    }

    /// Stores a checkpoint at the current step (with a snapshot when due, or when `force_snapshot`).
    async fn put_checkpoint<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        state: &S,
        next: &[Task],
        planner: &Planner,
        source: Source,
        force_snapshot: bool,
    ) -> Result<(), GraphError> {
        // An input checkpoint always holds a snapshot, so rebuilding a state never folds the
        // leftover writes of a step that failed before a new input restarted the thread.
        let snapshot = force_snapshot
            || source != Source::Loop
            || self.stored_head.is_none()
            || self.bytes_since_snapshot >= self.snapshot_len
            || self.since_snapshot >= MAX_CHECKPOINTS_BETWEEN_SNAPSHOTS;
        let (deferred, joins) = planner.saved();
        let body = record::encode_body(graph, snapshot.then_some(state), next, &deferred, &joins)?;
        if snapshot {
            self.snapshot_len = body.len();
            self.bytes_since_snapshot = 0;
            self.since_snapshot = 0;
        } else {
            self.since_snapshot += 1;
        }
        let id = new_checkpoint_id();
        let record = CheckpointRecord {
            thread_id: self.thread.to_string(),
            id: id.clone(),
            parent_id: (!self.current.is_empty()).then(|| self.current.to_string()),
            step: self.current_step,
            source,
            created_at_ms: now_ms(),
            format: FORMAT_VERSION,
            body,
        };
        let expected = self.stored_head.replace(id.clone());
        self.current = Arc::from(id.as_str());
        let writes = std::mem::take(&mut self.held);
        if self.writer.is_some() {
            return self.enqueue(BatchOp::Put { record, expected_head: expected, writes }).await;
        }
        Ok(self.saver.put(record, expected, writes).await?)
    }

    async fn store_writes(&mut self, writes: Vec<WriteRecord>) -> Result<(), GraphError> {
        if self.writer.is_some() {
            return self.enqueue(BatchOp::Writes(writes)).await;
        }
        Ok(self.saver.put_writes(writes).await?)
    }

    /// Hands `op` to the background writer; if the writer stopped, reports why.
    async fn enqueue(&mut self, op: BatchOp) -> Result<(), GraphError> {
        let sent = match &self.writer {
            Some(writer) => writer.queue.send(op).await.is_ok(),
            None => false,
        };
        if sent {
            return Ok(());
        }
        self.drain().await?;
        Err(writer_gone())
    }

    /// Ends the run: waits for background saves, or (under `Exit`) stores the final checkpoint.
    pub(crate) async fn finish<S: State, C>(
        mut self,
        graph: &Inner<S, C>,
        state: &S,
        planner: &Planner,
    ) -> Result<(), GraphError> {
        if self.durability == Durability::Exit {
            self.put_checkpoint(graph, state, &[], planner, Source::Loop, true).await?;
        }
        self.drain().await
    }

    /// Ends a failed step: the writes of the tasks that finished are kept so a resume does not
    /// run them again. Under `Exit` the checkpoint they belong to is stored first.
    pub(crate) async fn fail<S: State, C>(
        self,
        graph: &Inner<S, C>,
        state: &S,
        tasks: &[Task],
        outputs: &[Option<NodeOutput<S>>],
        planner: &Planner,
    ) -> Result<(), GraphError> {
        self.pause(graph, state, tasks, outputs, &[], planner).await
    }

    /// Ends a step that paused: the finished tasks' writes and the raised interrupts are
    /// stored, so `resume` runs only the paused tasks again.
    pub(crate) async fn pause<S: State, C>(
        mut self,
        graph: &Inner<S, C>,
        state: &S,
        tasks: &[Task],
        outputs: &[Option<NodeOutput<S>>],
        interrupts: &[(u32, Interrupt)],
        planner: &Planner,
    ) -> Result<(), GraphError> {
        if self.durability == Durability::Exit {
            self.put_checkpoint(graph, state, tasks, planner, Source::Loop, true).await?;
        }
        let mut writes = std::mem::take(&mut self.held);
        writes.extend(self.encode_outputs(graph, tasks, outputs)?);
        for (task, interrupt) in interrupts {
            writes.push(self.write_record(
                *task,
                record::interrupt_index(interrupt.call),
                record::encode_interrupt(interrupt)?,
            ));
        }
        if !writes.is_empty() {
            self.store_writes(writes).await?;
        }
        self.drain().await
    }

    /// Ends a run stopped between steps (the recursion limit, a rejected merge, a breakpoint):
    /// the pending tasks stay in the stored checkpoint for a later `resume`.
    pub(crate) async fn abort<S: State, C>(
        mut self,
        graph: &Inner<S, C>,
        state: &S,
        tasks: &[Task],
        planner: &Planner,
    ) -> Result<(), GraphError> {
        if self.durability == Durability::Exit {
            self.put_checkpoint(graph, state, tasks, planner, Source::Loop, true).await?;
        }
        self.drain().await
    }

    async fn drain(&mut self) -> Result<(), GraphError> {
        if let Some(Writer { queue, task }) = self.writer.take() {
            drop(queue);
            task.await.map_err(|e| CheckpointError::backend("stored checkpoints in the background", e))??;
        }
        Ok(())
    }
}

/// Matches a resume answer to the pending interrupts: `(task, call, answer)` per match.
fn assign_answers(
    thread: &str,
    pending: &[(usize, Interrupt)],
    answer: Resume,
) -> Result<Vec<(usize, u32, Value)>, GraphError> {
    let ids = || pending.iter().map(|(_, i)| i.id.clone()).collect::<Vec<_>>();
    let fail = |reason: String| GraphError::Resume { thread: thread.to_owned(), reason, pending: ids() };
    match answer {
        Resume::Continue => Ok(Vec::new()),
        Resume::Value(value) => match pending {
            [(task, interrupt)] => Ok(vec![(*task, interrupt.call, value)]),
            [] => Err(fail("an answer was given but no interrupt is pending".to_owned())),
            _ => Err(fail(format!(
                "{} interrupts are pending, so answer each by id with `Resume::by_id`",
                pending.len()
            ))),
        },
        Resume::ById(mut answers) => {
            let mut matched = Vec::new();
            for (task, interrupt) in pending {
                if let Some(value) = answers.remove(&interrupt.id) {
                    matched.push((*task, interrupt.call, value));
                }
            }
            match answers.keys().next() {
                Some(unknown) => Err(fail(format!("no pending interrupt has the id `{unknown}`"))),
                None => Ok(matched),
            }
        }
    }
}

fn writer_gone() -> GraphError {
    GraphError::Checkpoint(CheckpointError::backend(
        "stored checkpoints in the background",
        "the background writer stopped",
    ))
}

/// Writes a new checkpoint holding the state of `from` (or the head) with `update` folded in;
/// its next tasks are those `as_node`'s edges lead to, or the base's pending tasks.
pub(crate) async fn update_state<S: State, C>(
    graph: &Inner<S, C>,
    thread: Arc<str>,
    from: Option<&str>,
    update: S::Update,
    as_node: Option<u32>,
) -> Result<String, GraphError> {
    let no_checkpoint =
        || GraphError::NothingToResume { thread: thread.to_string(), reason: "it has no checkpoint to update" };
    let head = graph.saver.get(&thread, None).await?.ok_or_else(no_checkpoint)?;
    let base = match from {
        None => head.clone(),
        Some(id) => graph.saver.get(&thread, Some(id)).await?.ok_or_else(no_checkpoint)?,
    };
    let at = At { thread: &thread, checkpoint: &base.id };
    at.check_format(base.format, "format")?;
    let body: Body<S> = record::decode_body(graph, &at, &base.body)?;
    let mut state = match body.state {
        Some(state) => state,
        None => load_state(graph, &thread, &base).await?,
    };
    state.apply(update);
    let mut planner = Planner::new(graph);
    planner.restore(&body.deferred, body.joins);
    let next = match as_node {
        None => body.next,
        Some(node) => {
            let spec = &graph.nodes[node as usize];
            if spec.router.is_none() && !spec.routes.is_empty() {
                return Err(GraphError::UpdateState {
                    thread: thread.to_string(),
                    reason: format!(
                        "node `{}` picks its route in its body, so an update cannot act as it; name a node with static edges or a router",
                        spec.name
                    ),
                });
            }
            let ran = [Task::pull(node)];
            let mut outputs = [Some(NodeOutput::update(S::Update::default()))];
            planner.plan(graph, &ran, &mut outputs, &state, u64::MAX)
        }
    };
    let mut persist = Persist::new(Arc::clone(&graph.saver), Arc::clone(&thread), Durability::Sync, Some(&head));
    persist.current = Arc::from(base.id.as_str());
    persist.current_step = base.step + 1;
    persist.put_checkpoint(graph, &state, &next, &planner, Source::Update, true).await?;
    Ok(persist.current.to_string())
}

/// The interrupts pending at `checkpoint` of `thread`.
pub(crate) async fn pending_interrupts<S: State, C>(
    graph: &Inner<S, C>,
    thread: &str,
    checkpoint: &str,
    tasks: usize,
) -> Result<Vec<Interrupt>, GraphError> {
    let stored = Stored::<S>::load(graph, thread, checkpoint, tasks).await?;
    Ok(stored.pending().into_iter().map(|(_, i)| i).collect())
}

/// Rebuilds the state at `record`: its snapshot, or the nearest snapshot before it with the
/// writes of every step since folded in.
pub(crate) async fn load_state<S: State, C>(
    graph: &Inner<S, C>,
    thread: &str,
    record: &CheckpointRecord,
) -> Result<S, GraphError> {
    let mut chain = Vec::new();
    let mut cursor = record.clone();
    let base = loop {
        let at = At { thread, checkpoint: &cursor.id };
        at.check_format(cursor.format, "format")?;
        let body: Body<S> = record::decode_body(graph, &at, &cursor.body)?;
        if let Some(state) = body.state {
            break state;
        }
        let parent_id =
            cursor.parent_id.clone().ok_or_else(|| at.corrupt("parent", "no snapshot before this checkpoint"))?;
        let parent = graph
            .saver
            .get(thread, Some(&parent_id))
            .await?
            .ok_or_else(|| at.corrupt("parent", format!("its parent {parent_id} is missing")))?;
        chain.push(parent.id.clone());
        cursor = parent;
    };
    let mut state = base;
    for checkpoint in chain.iter().rev() {
        let at = At { thread, checkpoint };
        for write in graph.saver.writes(thread, checkpoint).await? {
            match record::decode_write(graph, &at, write.task, write.index, &write.body)? {
                Decoded::Input(update) => state.apply(update),
                Decoded::Output(mut output) => state.apply_mut(&mut output.update),
                Decoded::Interrupt(_) | Decoded::Answer(..) => {}
            }
        }
    }
    Ok(state)
}
