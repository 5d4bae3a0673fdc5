//! Persisting a run on a thread: checkpoints after each step, the writes of finished tasks,
//! interrupts and their answers, the outcome of steps that paused or failed.

use super::Task;
use super::load::{SavedOutput, Stored};
use super::planner::Planner;
use super::record::{self, BodyParts, Ending, Folded, OUTCOME_TASK, OUTPUT_INDEX, Outcome};
use super::writer::Writer;
use crate::checkpoint::id::{new_checkpoint_id_at, now_micros};
use crate::checkpoint::{
    BatchOp, CheckpointError, CheckpointRecord, Checkpointer, Claim, FORMAT_VERSION, Source, WriteRecord,
};
use crate::config::Durability;
use crate::error::GraphError;
use crate::graph::Inner;
use crate::interrupt::Interrupt;
use crate::node::NodeOutput;
use crate::state::State;
use crate::telemetry::RunTrace;
use crate::trace_value::in_span;
use futures::future::BoxFuture;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

/// A snapshot is taken when the writes stored since the last one have grown to this many times
/// its size: storage stays linear in the run, a load folds at most that much, and a large state
/// is encoded once per several steps rather than every few.
const WRITES_PER_SNAPSHOT: usize = 2;

/// Snapshots are taken at least this often, to bound how far back a load must fold.
const MAX_CHECKPOINTS_BETWEEN_SNAPSHOTS: u32 = 256;

/// The persistence side of one run.
pub(crate) struct Persist {
    saver: Arc<dyn Checkpointer>,
    claim: Claim,
    thread: Arc<str>,
    durability: Durability,
    /// The checkpoint whose next tasks are running; their writes are keyed to it.
    current: Arc<str>,
    /// Its step.
    current_step: i64,
    /// The newest stored checkpoint of the thread: what the next `put` expects as head.
    stored_head: Option<String>,
    /// Under `Exit`: steps have finished since `current` was stored, so the run's state exists
    /// only in memory.
    unsaved: bool,
    writer: Option<Writer>,
    bytes_since_snapshot: usize,
    snapshot_len: usize,
    since_snapshot: u32,
    /// The integrity check of each task's output of the current step that is stored or held.
    saved: Vec<Option<u32>>,
    /// Writes of a one-task step, stored in the same transaction as the checkpoint after it:
    /// with no sibling to protect, one commit per step is enough.
    held: Vec<WriteRecord>,
    /// Interrupts of the current step already stored, by task: (call index, check).
    raised: Vec<(u32, u32, u32)>,
    /// The number of the next outcome record of the current step.
    next_outcome: u32,
    /// Where the run's spans are recorded, when they are exported.
    trace: Option<RunTrace>,
}

impl Persist {
    /// The persistence of a run on `thread` whose newest checkpoint is `head`. Under `Async`,
    /// its checkpoints waiting for the store take their room from `ahead`, shared with the
    /// other runs of the same invocation (a subgraph's run stores its checkpoints with a writer
    /// of its own, while its parent's may still wait), or from room of its own when none is
    /// given. Its checkpoint writes are recorded into `trace`, when the run is recorded.
    pub(crate) fn new(
        saver: Arc<dyn Checkpointer>,
        claim: Claim,
        thread: Arc<str>,
        durability: Durability,
        head: Option<&CheckpointRecord>,
        ahead: Option<Arc<Semaphore>>,
        trace: Option<&RunTrace>,
    ) -> Self {
        let writer = (durability == Durability::Async && !saver.stores_in_memory())
            .then(|| Writer::spawn(Arc::clone(&saver), claim.clone(), ahead, trace.cloned()));
        Self {
            saver,
            claim,
            thread,
            durability,
            current: head.map_or_else(|| Arc::from(""), |h| Arc::from(h.id.as_str())),
            current_step: head.map_or(-2, |h| h.step),
            stored_head: head.map(|h| h.id.clone()),
            unsaved: false,
            writer,
            bytes_since_snapshot: 0,
            snapshot_len: 0,
            since_snapshot: 0,
            saved: Vec::new(),
            held: Vec::new(),
            raised: Vec::new(),
            next_outcome: 0,
            trace: trace.cloned(),
        }
    }

    /// The step of the checkpoint whose tasks run next.
    pub(crate) fn step(&self) -> i64 {
        self.current_step
    }

    /// The checkpoint whose tasks run next.
    pub(crate) fn current(&self) -> &Arc<str> {
        &self.current
    }

    /// Where tasks store their finished calls' results: nowhere under `Exit`, where a crash
    /// loses the run's steps anyway.
    pub(crate) fn call_store(&self) -> Option<super::calls::CallStore> {
        (self.durability != Durability::Exit).then(|| super::calls::CallStore {
            saver: Arc::clone(&self.saver),
            claim: self.claim.clone(),
            thread: Arc::clone(&self.thread),
            queue: self.writer.as_ref().map(|w| w.queue.downgrade()),
        })
    }

    /// Continues from checkpoint `id` of step `step`, where outputs, interrupts and outcomes
    /// may already be stored (`stored`).
    pub(crate) fn continue_at<S: State>(&mut self, id: &str, step: i64, stored: Option<&Stored<S>>) {
        self.current = Arc::from(id);
        self.current_step = step;
        self.saved.clear();
        self.raised.clear();
        self.next_outcome = 0;
        if let Some(stored) = stored {
            self.saved = stored.outputs.iter().map(|o| o.as_ref().map(|o| o.check)).collect();
            for (task, raised) in stored.interrupts.iter().enumerate() {
                for (call, (_, check)) in raised {
                    self.raised.push((task as u32, *call, *check));
                }
            }
            self.next_outcome = stored.next_outcome();
        }
    }

    /// A write record of the current checkpoint.
    fn write(&self, task: u32, index: u32, payload: Vec<u8>) -> WriteRecord {
        record::seal_write(&self.thread, &self.current, task, index, payload)
    }

    /// Stores the run's input on an input checkpoint holding `state` (before the input), then
    /// the checkpoint after the input whose next tasks are `entries` (step 0).
    pub(crate) async fn start<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        state: &S,
        input: &S::Update,
    ) -> Result<(), GraphError> {
        self.current_step += 1;
        if self.durability == Durability::Exit {
            return Ok(());
        }
        let parts =
            BodyParts { state: Some(state), next: &[], input_pending: true, deferred: &[], joins: &[], folded: &[] };
        let record = self.new_record(graph, &parts, Source::Input)?;
        let write = record::seal_write(&self.thread, &record.id, 0, OUTPUT_INDEX, record::encode_input::<S>(input)?);
        self.saved = vec![Some(record::check_of(&write.body))];
        self.commit(record, vec![write], true).await
    }

    /// Builds a checkpoint record at the current step, following the current checkpoint.
    fn new_record<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        parts: &BodyParts<'_, S>,
        source: Source,
    ) -> Result<CheckpointRecord, GraphError> {
        let payload = record::encode_body(graph, parts)?;
        if parts.state.is_some() {
            self.snapshot_len = payload.len();
            self.bytes_since_snapshot = 0;
            self.since_snapshot = 0;
        } else {
            self.since_snapshot += 1;
        }
        // One reading of the clock for the id and the time.
        let now = now_micros();
        let record = CheckpointRecord {
            thread_id: String::from(&*self.thread),
            id: new_checkpoint_id_at(now),
            parent_id: (!self.current.is_empty()).then(|| String::from(&*self.current)),
            step: self.current_step,
            source,
            created_at_ms: now / 1000,
            format: FORMAT_VERSION,
            body: Vec::new(),
        };
        Ok(record::seal_checkpoint(record, payload))
    }

    /// Stores `record` (with `writes` in its transaction) as the thread's new head, and makes it
    /// current. Under `Async` the store happens in the background, at most
    /// [`MAX_STEPS_AHEAD`] checkpoints behind.
    async fn commit(
        &mut self,
        record: CheckpointRecord,
        writes: Vec<WriteRecord>,
        is_step: bool,
    ) -> Result<(), GraphError> {
        let op = self.begin_commit(record, writes);
        self.send(op, is_step).await
    }

    /// Stores `op` now, or hands it to the background writer.
    pub(crate) async fn send(&mut self, op: BatchOp, is_step: bool) -> Result<(), GraphError> {
        if self.queues() {
            return self.queue(op, is_step).await;
        }
        Ok(self.store(op).await?)
    }

    /// Makes `record` the thread's head for what follows; returns the operation that stores it.
    fn begin_commit(&mut self, record: CheckpointRecord, writes: Vec<WriteRecord>) -> BatchOp {
        let expected_head = self.stored_head.replace(record.id.clone());
        self.current = Arc::from(record.id.as_str());
        self.unsaved = false;
        self.saved_for_next_step();
        BatchOp::Put { record, expected_head, writes }
    }

    /// Whether checkpoints go through the background writer ([`Persist::queue`]) rather than
    /// straight to the saver ([`Persist::store`]).
    pub(crate) fn queues(&self) -> bool {
        self.writer.is_some()
    }

    /// Stores `op` with the saver, now: its own (boxed) future.
    pub(crate) fn store(&self, op: BatchOp) -> BoxFuture<'_, Result<(), CheckpointError>> {
        let span = super::write_span::checkpoint_write(std::slice::from_ref(&op));
        let recorded =
            self.trace.as_ref().map(|trace| super::write_span::Recorded::open(trace, std::slice::from_ref(&op)));
        let stored = match op {
            BatchOp::Put { record, expected_head, writes } => {
                self.saver.put(&self.claim, record, expected_head, writes)
            }
            op @ BatchOp::Writes(_) => self.saver.put_batch(&self.claim, vec![op]),
        };
        if span.is_disabled() && recorded.is_none() {
            return stored;
        }
        Box::pin(async move {
            let stored = in_span(&span, stored).await;
            super::write_span::record_write(&span, &stored);
            if let Some(recorded) = recorded {
                recorded.end(&stored);
            }
            stored
        })
    }

    /// Hands a checkpoint to the background writer; a step's waits for room among the
    /// [`MAX_STEPS_AHEAD`] steps the writer may hold.
    pub(crate) async fn queue(&mut self, op: BatchOp, is_step: bool) -> Result<(), GraphError> {
        let permit = match (&self.writer, is_step) {
            (Some(writer), true) => Some(Arc::clone(&writer.steps).acquire_owned().await.map_err(|_| writer_gone())?),
            _ => None,
        };
        self.enqueue(op, permit).await
    }

    /// Clears what belongs to the step that just finished.
    fn saved_for_next_step(&mut self) {
        self.raised.clear();
        self.next_outcome = 0;
    }

    /// Encodes the output of a task that just finished; under `Sync` and `Async` it is to be
    /// stored at once when the task has siblings (so a crash while they run cannot lose it):
    /// that write is returned, for [`Persist::store_writes`]. When the task ran alone it is held
    /// for the checkpoint's transaction, and nothing is returned: a lone task's step awaits no
    /// store here. A value that cannot be stored fails the task, before anything of it is stored.
    pub(crate) fn save_finished<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        index: usize,
        task: &Task,
        output: &NodeOutput<S>,
        alone: bool,
    ) -> Result<Option<WriteRecord>, GraphError> {
        if self.durability == Durability::Exit || self.saved.get(index).copied().flatten().is_some() {
            return Ok(None);
        }
        let payload = record::encode_output(graph, task, output)?;
        self.bytes_since_snapshot += payload.len();
        let write = self.write(index as u32, OUTPUT_INDEX, payload);
        if self.saved.len() <= index {
            self.saved.resize(index + 1, None);
        }
        self.saved[index] = Some(record::check_of(&write.body));
        if alone {
            self.held.push(write);
            return Ok(None);
        }
        Ok(Some(write))
    }

    /// Makes the checkpoint after a step (the next tasks, the writes its state folds in, and the
    /// state when a snapshot is due) and returns the operation that stores it, if any: the
    /// caller stores it with [`Persist::send`]. The run's loop awaits the saver's future
    /// ([`Persist::store`], boxed by the saver) in its own frame, and boxes only the rarer wait
    /// for the background writer.
    pub(crate) fn begin_checkpoint<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        state: &S,
        ran: usize,
        next: &[Task],
        planner: &Planner,
    ) -> Result<Option<BatchOp>, GraphError> {
        self.current_step += 1;
        if self.durability == Durability::Exit {
            self.unsaved = true;
            self.saved.clear();
            return Ok(None);
        }
        let snapshot = self.stored_head.is_none()
            || self.bytes_since_snapshot >= WRITES_PER_SNAPSHOT * self.snapshot_len
            || self.since_snapshot >= MAX_CHECKPOINTS_BETWEEN_SNAPSHOTS;
        // Which writes of the step this state folds in: needed to rebuild it without a snapshot,
        // and kept with a snapshot too, so a write of the step that is later lost or altered is
        // noticed when the history is read.
        let mut folded = Vec::with_capacity(ran);
        for task in 0..ran {
            let Some(check) = self.saved.get(task).copied().flatten() else {
                // An output that was not stored cannot be folded: store the state instead.
                let (record, writes) = self.snapshot(graph, state, next, planner)?;
                return Ok(Some(self.begin_commit(record, writes)));
            };
            folded.push(Folded { task: task as u32, index: OUTPUT_INDEX, check });
        }
        let (deferred, joins) = planner.saved();
        let parts = BodyParts {
            state: snapshot.then_some(state),
            next,
            input_pending: false,
            deferred: &deferred,
            joins,
            folded: &folded,
        };
        let record = self.new_record(graph, &parts, Source::Loop)?;
        self.saved.clear();
        let writes = std::mem::take(&mut self.held);
        Ok(Some(self.begin_commit(record, writes)))
    }

    /// Makes and stores the checkpoint after a step ([`Persist::begin_checkpoint`], then
    /// [`Persist::send`]), for callers off the run's loop.
    pub(crate) async fn checkpoint<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        state: &S,
        ran: usize,
        next: &[Task],
        planner: &Planner,
    ) -> Result<(), GraphError> {
        match self.begin_checkpoint(graph, state, ran, next, planner)? {
            Some(op) => self.send(op, true).await,
            None => Ok(()),
        }
    }

    /// Stores a checkpoint at the current step with a snapshot of `state`.
    async fn put_snapshot<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        state: &S,
        next: &[Task],
        planner: &Planner,
    ) -> Result<(), GraphError> {
        let (record, writes) = self.snapshot(graph, state, next, planner)?;
        self.commit(record, writes, true).await
    }

    /// A checkpoint at the current step with a snapshot of `state`, and the writes held for it.
    fn snapshot<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        state: &S,
        next: &[Task],
        planner: &Planner,
    ) -> Result<(CheckpointRecord, Vec<WriteRecord>), GraphError> {
        let (deferred, joins) = planner.saved();
        let parts =
            BodyParts { state: Some(state), next, input_pending: false, deferred: &deferred, joins, folded: &[] };
        let record = self.new_record(graph, &parts, Source::Loop)?;
        self.saved.clear();
        Ok((record, std::mem::take(&mut self.held)))
    }

    /// Stores task writes of the current step (through the background writer under `Async`).
    pub(crate) async fn store_writes(&mut self, writes: Vec<WriteRecord>) -> Result<(), GraphError> {
        if self.writer.is_some() {
            return self.enqueue(BatchOp::Writes(writes), None).await;
        }
        Ok(self.saver.put_writes(&self.claim, writes).await?)
    }

    /// Hands `op` to the background writer; if the writer stopped, reports why.
    async fn enqueue(&mut self, op: BatchOp, permit: Option<OwnedSemaphorePermit>) -> Result<(), GraphError> {
        let sent = match &self.writer {
            Some(writer) => writer.queue.send((op, permit)).await.is_ok(),
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
        if self.durability == Durability::Exit && self.unsaved {
            self.put_snapshot(graph, state, &[], planner).await?;
        }
        self.drain().await
    }

    /// Under `Exit`, stores the checkpoint the run is at if only memory holds it, so that what
    /// follows (writes, outcomes) has a stored checkpoint to belong to.
    async fn save_position<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        state: &S,
        tasks: &[Task],
        planner: &Planner,
    ) -> Result<(), GraphError> {
        if self.durability == Durability::Exit && self.unsaved {
            self.put_snapshot(graph, state, tasks, planner).await?;
        }
        Ok(())
    }

    /// Ends a step that paused or failed: the outputs of the tasks that finished, the raised
    /// interrupts and an outcome record listing them (with the errors of failed tasks) are
    /// stored, so `resume` runs only the unfinished tasks again and a lost or altered record of
    /// the pause is noticed. Under `Exit` the checkpoint they belong to is stored first.
    pub(crate) async fn end_step<S: State, C>(
        mut self,
        graph: &Inner<S, C>,
        state: &S,
        tasks: &[Task],
        outputs: &[Option<NodeOutput<S>>],
        planner: &Planner,
        ending: StepEnding<'_>,
    ) -> Result<(), GraphError> {
        self.save_position(graph, state, tasks, planner).await?;
        let mut writes = std::mem::take(&mut self.held);
        for (i, (task, output)) in tasks.iter().zip(outputs).enumerate() {
            if let (Some(output), None) = (output, self.saved.get(i).copied().flatten()) {
                let write = self.write(i as u32, OUTPUT_INDEX, record::encode_output(graph, task, output)?);
                if self.saved.len() <= i {
                    self.saved.resize(i + 1, None);
                }
                self.saved[i] = Some(record::check_of(&write.body));
                writes.push(write);
            }
        }
        let number = self.next_outcome;
        let mut listed: Vec<Folded> = self
            .saved
            .iter()
            .enumerate()
            .filter_map(|(task, check)| check.map(|check| Folded { task: task as u32, index: OUTPUT_INDEX, check }))
            .collect();
        let (kind, errors, interrupts) = match ending {
            StepEnding::Paused(interrupts) => (Ending::Paused, Vec::new(), interrupts),
            StepEnding::Failed(errors) => (Ending::Failed, errors, &[][..]),
            StepEnding::Breakpoint => (Ending::Breakpoint, Vec::new(), &[][..]),
        };
        for (task, interrupt) in interrupts {
            let index = record::interrupt_index(interrupt.call);
            let write = self.write(*task, index, record::encode_interrupt(interrupt, number)?);
            listed.push(Folded { task: *task, index, check: record::check_of(&write.body) });
            writes.push(write);
        }
        for &(task, call, check) in &self.raised {
            listed.push(Folded { task, index: record::interrupt_index(call), check });
        }
        listed.sort_by_key(|f| (f.task, f.index));
        listed.dedup_by_key(|f| (f.task, f.index));
        let outcome = Outcome { ending: kind, writes: listed, errors };
        writes.push(self.write(OUTCOME_TASK, number, record::encode_outcome(&outcome)));
        self.store_writes(writes).await?;
        self.drain().await
    }

    /// Ends a run stopped between steps (the recursion limit): the pending tasks stay in the
    /// stored checkpoint for a later `resume`.
    pub(crate) async fn abort<S: State, C>(
        mut self,
        graph: &Inner<S, C>,
        state: &S,
        tasks: &[Task],
        planner: &Planner,
    ) -> Result<(), GraphError> {
        self.save_position(graph, state, tasks, planner).await?;
        self.drain().await
    }

    /// Stores the first checkpoint of a new branch (a fork, an edit, a command's update), with
    /// a snapshot of `state` and the writes it carries over re-keyed to it, directly (not
    /// through the background writer: what follows reads it back). Returns the new checkpoint.
    pub(crate) async fn put_branch<S: State, C>(
        &mut self,
        graph: &Inner<S, C>,
        state: &S,
        planner: &Planner,
        branch: Branch<'_>,
    ) -> Result<CheckpointRecord, GraphError> {
        self.current = Arc::from(branch.parent);
        self.current_step = branch.step;
        let (deferred, joins) = planner.saved();
        let parts = BodyParts {
            state: Some(state),
            next: branch.next,
            input_pending: branch.input_pending,
            deferred: &deferred,
            joins,
            folded: &[],
        };
        let record = self.new_record(graph, &parts, branch.source)?;
        let mut writes: Vec<WriteRecord> = branch
            .carried
            .into_iter()
            .map(|(task, index, payload)| record::seal_write(&self.thread, &record.id, task, index, payload))
            .collect();
        if branch.outcome {
            let listed = writes
                .iter()
                .map(|w| Folded { task: w.task, index: w.index, check: record::check_of(&w.body) })
                .filter(|f| f.index == OUTPUT_INDEX || f.index % 2 == 1)
                .collect();
            let outcome = Outcome { ending: Ending::Paused, writes: listed, errors: Vec::new() };
            writes.push(record::seal_write(
                &self.thread,
                &record.id,
                OUTCOME_TASK,
                0,
                record::encode_outcome(&outcome),
            ));
        }
        let expected = self.stored_head.replace(record.id.clone());
        self.current = Arc::from(record.id.as_str());
        self.unsaved = false;
        self.saved_for_next_step();
        self.saver.put(&self.claim, record.clone(), expected, writes).await?;
        Ok(record)
    }

    /// Records that task `task`'s output of the current step is stored, with check `check`.
    pub(crate) fn mark_saved(&mut self, task: usize, check: u32) {
        if self.saved.len() <= task {
            self.saved.resize(task + 1, None);
        }
        self.saved[task] = Some(check);
    }

    /// Stores answers to interrupts of the current checkpoint.
    pub(crate) async fn store_answers(&mut self, answers: Vec<(u32, u32, Vec<u8>)>) -> Result<(), GraphError> {
        if answers.is_empty() {
            return Ok(());
        }
        let writes = answers
            .into_iter()
            .map(|(task, call, payload)| self.write(task, record::answer_index(call), payload))
            .collect();
        Ok(self.saver.put_writes(&self.claim, writes).await?)
    }

    async fn drain(&mut self) -> Result<(), GraphError> {
        if let Some(Writer { queue, task, .. }) = self.writer.take() {
            drop(queue);
            task.await.map_err(|e| CheckpointError::backend("stored checkpoints in the background", e))??;
        }
        Ok(())
    }
}

/// The first checkpoint of a new branch, to store.
pub(crate) struct Branch<'a> {
    /// The checkpoint it branches from.
    pub(crate) parent: &'a str,
    /// Its step.
    pub(crate) step: i64,
    pub(crate) next: &'a [Task],
    pub(crate) input_pending: bool,
    pub(crate) source: Source,
    /// Writes carried over from the old checkpoint: (task, index, payload).
    pub(crate) carried: Vec<(u32, u32, Vec<u8>)>,
    /// The carried writes include interrupts, which need an outcome record listing them.
    pub(crate) outcome: bool,
}

/// How a step that did not complete ended.
pub(crate) enum StepEnding<'a> {
    /// Tasks raised these interrupts (task index, interrupt).
    Paused(&'a [(u32, Interrupt)]),
    /// Tasks failed with these errors (task index, error text).
    Failed(Vec<(u32, String)>),
    /// A breakpoint stopped the run.
    Breakpoint,
}

fn writer_gone() -> GraphError {
    GraphError::Checkpoint(CheckpointError::backend(
        "stored checkpoints in the background",
        "the background writer stopped",
    ))
}

/// The outputs already stored for the tasks of a checkpoint, as the executor takes them.
pub(crate) fn saved_outputs<S: State>(outputs: Vec<Option<SavedOutput<S>>>) -> super::step::Slots<S> {
    outputs.into_iter().map(|o| o.map(|o| o.output)).collect()
}
