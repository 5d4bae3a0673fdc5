//! The [`Checkpointer`] trait every backend implements, the argument checks its backends
//! share, and copying a thread through the methods every backend has.

use super::error::CheckpointError;
use super::record::{BatchOp, CheckpointRecord, Claim, ListFilter, NAMESPACE_SEPARATOR, WriteRecord};
use crate::record::format::{moved_checkpoint, moved_writes};
use futures::future::BoxFuture;
use std::collections::HashMap;

/// A store of checkpoints. Implementations must be safe to share between runs and threads.
///
/// A run first [`claim`](Checkpointer::claim)s its thread: while the claim is held, no other
/// run (in this process or, for shared backends, in any other) can claim it, so two runs never
/// interleave on one thread; the loser of a race gets [`CheckpointError::Busy`] before it has
/// run anything. Every write carries the claim, and backends refuse writes whose fence is not
/// the thread's current one ([`CheckpointError::Fenced`]).
///
/// `put` is also a compare-and-set on the thread's head: it succeeds only when `expected_head`
/// is the id of the thread's newest checkpoint (or `None` for a thread with none).
pub trait Checkpointer: Send + Sync + 'static {
    /// Claims `thread` for one run. Fails with [`CheckpointError::Busy`] while another claim on
    /// it is held by a live run.
    ///
    /// The default grants every claim with fence 0 and excludes nothing: a backend shared by
    /// several processes should override it (the executor still refuses a second run on one
    /// thread within one compiled graph).
    fn claim<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Claim, CheckpointError>> {
        Box::pin(async move { Ok(Claim::new(thread, 0)) })
    }

    /// Lets this process claim the thread again at once, before [`release`](Self::release)
    /// has told the store: a run that is dropped (cancelled) calls it from its destructor,
    /// then leaves `release` to a task, so that a run started right after it in this process
    /// is not refused with `Busy`. A backend that refuses claims of its own process's running
    /// threads (as the built-in ones do) forgets `claim` here; the default does nothing.
    fn forget_claim(&self, claim: &Claim) {
        let _ = claim;
    }

    /// Gives a claim back, so the thread can be claimed again.
    fn release<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let _ = claim;
        Box::pin(async { Ok(()) })
    }

    /// Stores `record`, and `writes` with it in the same transaction, if the thread's newest
    /// checkpoint is still `expected_head` and `claim` is the thread's current claim; stores
    /// nothing otherwise.
    fn put<'a>(
        &'a self,
        claim: &'a Claim,
        record: CheckpointRecord,
        expected_head: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>>;

    /// Stores writes of finished tasks if `claim` is current; a write already stored under the
    /// same key is kept as it was.
    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>>;

    /// The checkpoint `id` of `thread`, or its newest when `id` is `None`.
    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>>;

    /// The thread's checkpoints, newest first.
    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>>;

    /// The writes saved against checkpoint `checkpoint` of `thread`, ordered by task and index.
    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>>;

    /// Deletes every checkpoint and write of `thread`.
    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), CheckpointError>>;

    /// Deletes the checkpoints of `thread` newer than `after` (all of them when `None`), with
    /// their writes, and those its subgraphs stored under the thread (keys
    /// starting with the thread id and [`NAMESPACE_SEPARATOR`]) in the same span: the thread
    /// reads as it did at `after`, as if the runs since had never happened. A run still
    /// writing to the thread is fenced off. Used to roll a cancelled run back. `after` is
    /// compared as an id, so it need not name a stored checkpoint: an id from
    /// [`new_checkpoint_id`](super::new_checkpoint_id) taken before a run starts marks everything the run wrote.
    ///
    /// The default refuses: a backend must say how it deletes a span of a thread.
    fn delete_after<'a>(
        &'a self,
        thread: &'a str,
        after: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let _ = after;
        Box::pin(async move {
            Err(CheckpointError::backend(
                format!("rolled thread `{thread}` back"),
                "this checkpointer does not implement `Checkpointer::delete_after`",
            ))
        })
    }

    /// Leaves the thread `claim` holds with one checkpoint, `head`: in one transaction (all or
    /// nothing, so a crash half-way never leaves the thread without its head), the stored
    /// record with `head`'s id is replaced by `head` (the same checkpoint rewritten to stand
    /// alone: no parent, a snapshot of its state), every other checkpoint of the thread is
    /// deleted with its writes (the head's writes stay as they are), and so is everything
    /// stored under each key in `subgraph_keys` (keys of the thread's subgraphs: the thread
    /// id, [`NAMESPACE_SEPARATOR`], then a namespace). Returns how many checkpoints were
    /// deleted. Used by [`CompiledGraph::prune_history`](crate::CompiledGraph::prune_history).
    ///
    /// Stores nothing and fails with [`CheckpointError::Fenced`] when `claim` is no longer the
    /// thread's current claim, with [`CheckpointError::Conflict`] when `head` is not (or no
    /// longer) the thread's newest checkpoint, and with [`CheckpointError::Backend`] when
    /// `head` belongs to another thread or a key is not one of the thread's subgraphs'.
    ///
    /// The default refuses: a backend must say how it replaces and deletes in one step.
    fn prune_to_head<'a>(
        &'a self,
        claim: &'a Claim,
        head: CheckpointRecord,
        subgraph_keys: Vec<String>,
    ) -> BoxFuture<'a, Result<usize, CheckpointError>> {
        let _ = (head, subgraph_keys);
        Box::pin(async move {
            Err(CheckpointError::backend(
                format!("pruned the history of thread `{}`", claim.thread()),
                "this checkpointer does not implement `Checkpointer::prune_to_head`",
            ))
        })
    }

    /// The keys `thread`'s checkpoints are stored under: the thread's own (when it has any) and
    /// those of the subgraphs its runs ran (the thread id, [`NAMESPACE_SEPARATOR`], then the
    /// subgraph's namespace), in no particular order.
    ///
    /// The default returns the thread's own key when it has a checkpoint: a backend that
    /// stores subgraphs' checkpoints should list their keys too, or
    /// [`copy_thread`](Self::copy_thread) leaves them behind.
    fn thread_keys<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Vec<String>, CheckpointError>> {
        Box::pin(async move { Ok(self.get(thread, None).await?.map(|_| vec![thread.to_owned()]).unwrap_or_default()) })
    }

    /// Copies every checkpoint and write of thread `from`, subgraphs' included, to the new
    /// thread `to`, which must have none: the copy reads as `from` did, with the same
    /// checkpoint ids and history, and the two go their own ways afterwards. Each record's
    /// integrity check is verified and made again for its new thread, so damage in `from` is
    /// [`CheckpointError::Corrupt`] and nothing of it is copied. Returns how many checkpoints
    /// were copied.
    ///
    /// `to` is claimed while it is written, so no run uses it half-copied. The default is built
    /// on the other methods; backends may do it in one transaction.
    fn copy_thread<'a>(&'a self, from: &'a str, to: &'a str) -> BoxFuture<'a, Result<usize, CheckpointError>> {
        Box::pin(copy_thread(self, from, to))
    }

    /// Whether a put completes in this process's memory, without I/O. Under
    /// [`Durability::Async`](crate::Durability::Async) such a store is written in line: a
    /// background writer would only add a hand-off, with no I/O to overlap, and the run is never
    /// behind its store. `false` unless a backend says otherwise.
    fn stores_in_memory(&self) -> bool {
        false
    }

    /// Applies `ops` in order. Backends with transactions override this to apply them in one
    /// (all or nothing), so a run under `Durability::Async` pays one commit for several steps.
    /// The default applies them one by one and stops at the first error.
    fn put_batch<'a>(&'a self, claim: &'a Claim, ops: Vec<BatchOp>) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            for op in ops {
                match op {
                    BatchOp::Writes(writes) => self.put_writes(claim, writes).await?,
                    BatchOp::Put { record, expected_head, writes } => {
                        self.put(claim, record, expected_head, writes).await?;
                    }
                }
            }
            Ok(())
        })
    }
}

/// Checks the arguments of [`Checkpointer::prune_to_head`] before a backend changes anything:
/// `head` belongs to the claimed thread, and every key is one of its subgraphs'.
pub(crate) fn check_prune(
    claim: &Claim,
    head: &CheckpointRecord,
    subgraph_keys: &[String],
) -> Result<(), CheckpointError> {
    let thread = claim.thread();
    let refuse =
        |reason: String| Err(CheckpointError::backend(format!("pruned the history of thread `{thread}`"), reason));
    if head.thread_id != thread {
        return refuse(format!("the new head belongs to thread `{}`, not to the claimed thread", head.thread_id));
    }
    let nested = format!("{thread}{NAMESPACE_SEPARATOR}");
    if let Some(key) = subgraph_keys.iter().find(|key| !key.starts_with(&nested)) {
        return refuse(format!("`{key}` is not the key of a subgraph of the thread"));
    }
    Ok(())
}

/// [`Checkpointer::copy_thread`] built on `thread_keys`, `list`, `writes`, `claim` and `put`.
async fn copy_thread<C: Checkpointer + ?Sized>(saver: &C, from: &str, to: &str) -> Result<usize, CheckpointError> {
    if saver.get(to, None).await?.is_some() {
        return Err(CheckpointError::backend(
            format!("copied thread `{from}` to `{to}`"),
            format!("thread `{to}` already has checkpoints: copy to a new thread id"),
        ));
    }
    // Everything is read and checked before anything is written: per key (the thread's,
    // then its subgraphs'), its records oldest first, each with its writes.
    let mut planned = Vec::new();
    for key in saver.thread_keys(from).await? {
        let Some(namespace) = key.strip_prefix(from) else {
            return Err(CheckpointError::backend(
                format!("copied thread `{from}` to `{to}`"),
                format!("`thread_keys` listed `{key}`, which is not a key of thread `{from}`"),
            ));
        };
        let target = format!("{to}{namespace}");
        let mut records = saver.list(&key, &ListFilter::default()).await?;
        records.reverse();
        let mut moved = Vec::with_capacity(records.len());
        // The checks each checkpoint's writes were given: a child checkpoint lists the
        // writes of its parent it folded in by their checks.
        let mut renewed = HashMap::new();
        for record in records {
            let (writes, checks) = moved_writes(saver.writes(&key, &record.id).await?, &target)?;
            let parent = record.parent_id.as_ref().and_then(|p| renewed.get(p));
            let id = record.id.clone();
            moved.push((moved_checkpoint(record, &target, parent)?, writes));
            renewed.insert(id, checks);
        }
        planned.push((target, moved));
    }
    let mut copied = 0;
    // Each key is written under a claim of its own, as a run of it would be.
    for (target, records) in planned {
        let claim = saver.claim(&target).await?;
        let mut head = None;
        let mut result = Ok(());
        for (record, writes) in records {
            let id = record.id.clone();
            if let Err(error) = saver.put(&claim, record, head.replace(id), writes).await {
                result = Err(error);
                break;
            }
            copied += 1;
        }
        saver.release(&claim).await?;
        result?;
    }
    Ok(copied)
}
