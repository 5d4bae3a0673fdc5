//! The background writer of `Durability::Async`: one task per run that stores its records in
//! order, a batch per commit, and the bound on how far a run may get ahead of it.

use crate::checkpoint::{BatchOp, CheckpointError, Checkpointer, Claim};
use crate::config::Durability;
use crate::telemetry::RunTrace;
use crate::trace_value::in_span;
use std::sync::Arc;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, mpsc};
use tokio::task::JoinHandle;

/// Under [`Durability::Async`], how many checkpoints may wait for the store: a run goes on to
/// the next step only while fewer than this are queued or being stored (its own and those of
/// the subgraphs it runs, which share the count), so a slow store slows
/// the run instead of letting it race ahead, and a crash loses at most this many steps. 64 lets
/// a store that pays a disk flush per commit take many fast steps per commit; steps that call a
/// model or a tool never get near it.
pub const MAX_STEPS_AHEAD: usize = 64;

/// The room for checkpoints waiting for `saver` that a run under `durability` shares with the
/// runs of its subgraphs: [`MAX_STEPS_AHEAD`] permits under `Async`, none where nothing waits
/// (other durabilities, and a store written in line).
pub(crate) fn room_ahead(durability: Durability, saver: &dyn Checkpointer) -> Option<Arc<Semaphore>> {
    (durability == Durability::Async && !saver.stores_in_memory()).then(|| Arc::new(Semaphore::new(MAX_STEPS_AHEAD)))
}

/// How many operations the background writer's queue holds (task writes and checkpoints).
const WRITER_QUEUE: usize = 64;

/// The background writer of `Durability::Async`: one task that stores records in order.
pub(super) struct Writer {
    pub(super) queue: WriteQueue,
    /// One permit per checkpoint queued or being stored, by this run or by any other run of
    /// the same invocation (its subgraphs', its parent's).
    pub(super) steps: Arc<Semaphore>,
    pub(super) task: JoinHandle<Result<(), CheckpointError>>,
}

/// What the background writer stores, in order: each op with the permit of the checkpoint it
/// holds, if it holds one.
pub(crate) type WriteQueue = mpsc::Sender<QueuedOp>;

/// One entry of the background writer's queue.
pub(crate) type QueuedOp = (BatchOp, Option<OwnedSemaphorePermit>);

impl Writer {
    /// Starts the writer of a run storing in `saver` under `claim`; its checkpoints waiting for
    /// the store take their room from `ahead`, or from room of its own when none is given.
    pub(super) fn spawn(
        saver: Arc<dyn Checkpointer>,
        claim: Claim,
        ahead: Option<Arc<Semaphore>>,
        trace: Option<RunTrace>,
    ) -> Self {
        let (queue, mut rx) = mpsc::channel::<(BatchOp, Option<OwnedSemaphorePermit>)>(WRITER_QUEUE);
        // The writer's spans sit under the run's, though the writer outlives none of it.
        let run_span = tracing::Span::current();
        let task = tokio::spawn(async move {
            // Whatever queued up while the last batch was being stored goes in one batch:
            // one commit for several steps (group commit).
            let mut batch = Vec::with_capacity(WRITER_QUEUE);
            while let Some(first) = rx.recv().await {
                batch.push(first);
                // The run was waiting for the last commit: give it one turn to queue the
                // steps it has ready, or each commit after a full batch would take one step.
                tokio::task::yield_now().await;
                while batch.len() < WRITER_QUEUE
                    && let Ok(op) = rx.try_recv()
                {
                    batch.push(op);
                }
                let (ops, permits): (Vec<_>, Vec<_>) = batch.drain(..).unzip();
                let span = run_span.in_scope(|| super::write_span::checkpoint_write(&ops));
                let recorded = trace.as_ref().map(|trace| super::write_span::Recorded::open(trace, &ops));
                let stored = in_span(&span, saver.put_batch(&claim, ops)).await;
                super::write_span::record_write(&span, &stored);
                if let Some(recorded) = recorded {
                    recorded.end(&stored);
                }
                stored?;
                drop(permits);
            }
            Ok(())
        });
        let steps = ahead.unwrap_or_else(|| Arc::new(Semaphore::new(MAX_STEPS_AHEAD)));
        Self { queue, steps, task }
    }
}
