//! The in-process checkpointer.

use super::{BatchOp, CheckpointError, CheckpointRecord, Checkpointer, Claim, ListFilter, WriteRecord};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::collections::HashMap;

/// Threads keyed by their ids. foldhash hashes a short id in a fraction of
/// `SipHash`'s time (a put hashes the thread's), and its seed is random per map, which is enough
/// for a store that lives in one process.
type Map<K, V> = HashMap<K, V, foldhash::fast::RandomState>;
use std::sync::{Mutex, MutexGuard};

/// Keeps checkpoints in memory, for tests and for runs that need pauses and history but not
/// survival across processes. Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub struct MemorySaver {
    threads: Mutex<Map<String, Thread>>,
}

#[derive(Debug, Default)]
struct Thread {
    /// Checkpoints by id (ids sort by creation time).
    /// Ordered by id. Ids grow with time, so a put nearly always appends.
    checkpoints: Vec<CheckpointRecord>,
    /// Writes by checkpoint: ordered by checkpoint id, then each checkpoint's by (task, index).
    /// Both are nearly always appended at the end (ids grow with time, and a checkpoint's writes
    /// arrive while it is the newest), which costs less than hashing an id per put.
    ///
    /// Stored records leave out what their place already says (the thread of every record, the
    /// checkpoint of a write, whose id becomes its entry's key); reads put it back. A step then
    /// keeps two strings fewer for the run's length.
    writes: Vec<(String, Vec<WriteRecord>)>,
    /// Whether a claim is held, and the latest claim's fence (kept across deletes, so fences
    /// keep growing).
    claimed: bool,
    fence: u64,
}

impl Thread {
    /// Fails unless `claim` is this thread's current claim.
    fn check(&self, claim: &Claim) -> Result<(), CheckpointError> {
        if self.claimed && self.fence == claim.fence() {
            Ok(())
        } else {
            Err(CheckpointError::Fenced {
                thread: claim.thread().to_owned(),
                fence: claim.fence(),
                current: self.fence,
            })
        }
    }

    fn find(&self, id: &str) -> Result<usize, usize> {
        position(&self.checkpoints, &id, |c| c.id.as_str())
    }

    fn writes_of(&self, checkpoint: &str) -> Option<&Vec<WriteRecord>> {
        let at = position(&self.writes, &checkpoint, |(id, _)| id.as_str()).ok()?;
        Some(&self.writes[at].1)
    }

    fn insert_writes(&mut self, writes: Vec<WriteRecord>) {
        for mut write in writes {
            write.thread_id = String::new();
            let checkpoint = std::mem::take(&mut write.checkpoint_id);
            let at = position(&self.writes, &checkpoint.as_str(), |(id, _)| id.as_str()).unwrap_or_else(|at| {
                self.writes.insert(at, (checkpoint, Vec::new()));
                at
            });
            let of_checkpoint = &mut self.writes[at].1;
            // The first write under a key is kept, as a store keyed by it would.
            if let Err(at) = position(of_checkpoint, &(write.task, write.index), |w| (w.task, w.index)) {
                of_checkpoint.insert(at, write);
            }
        }
    }

    fn put(
        &mut self,
        mut record: CheckpointRecord,
        expected_head: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> Result<(), CheckpointError> {
        let head = self.checkpoints.last().map(|c| &c.id);
        if head.map(String::as_str) != expected_head.as_deref() {
            return Err(CheckpointError::Conflict {
                found: head.cloned(),
                thread: record.thread_id,
                expected: expected_head,
            });
        }
        self.insert_writes(writes);
        record.thread_id = String::new();
        match self.find(&record.id) {
            Ok(at) => self.checkpoints[at] = record,
            Err(at) => self.checkpoints.insert(at, record),
        }
        Ok(())
    }
}

/// Where `key` is (`Ok`) or would go (`Err`) in `items`, ordered by `key_of`. Keys nearly always
/// grow, so the last item is looked at before searching.
fn position<'a, T, K: Ord>(items: &'a [T], key: &K, key_of: impl Fn(&'a T) -> K) -> Result<usize, usize> {
    match items.last() {
        Some(last) if key_of(last) < *key => Err(items.len()),
        _ => items.binary_search_by(|item| key_of(item).cmp(key)),
    }
}

/// A stored checkpoint as a read returns it: with the thread its place left out.
fn stored_checkpoint(record: &CheckpointRecord, thread: &str) -> CheckpointRecord {
    CheckpointRecord { thread_id: thread.to_owned(), ..record.clone() }
}

impl MemorySaver {
    /// An empty saver.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn threads(&self) -> Result<MutexGuard<'_, Map<String, Thread>>, CheckpointError> {
        self.threads
            .lock()
            .map_err(|_| CheckpointError::backend("locked the in-memory store", "a run panicked while holding it"))
    }

    /// Runs `f` on the thread `claim` holds, if the claim is current.
    fn claimed<T>(
        &self,
        claim: &Claim,
        f: impl FnOnce(&mut Thread) -> Result<T, CheckpointError>,
    ) -> Result<T, CheckpointError> {
        let mut threads = self.threads()?;
        let thread = threads.get_mut(claim.thread()).ok_or_else(|| CheckpointError::Fenced {
            thread: claim.thread().to_owned(),
            fence: claim.fence(),
            current: 0,
        })?;
        thread.check(claim)?;
        f(thread)
    }
}

impl Checkpointer for MemorySaver {
    fn stores_in_memory(&self) -> bool {
        true
    }

    fn claim<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Claim, CheckpointError>> {
        let result = self.threads().and_then(|mut threads| {
            let held = threads.entry(thread.to_owned()).or_default();
            if held.claimed {
                return Err(CheckpointError::Busy { thread: thread.to_owned(), holder: None });
            }
            held.claimed = true;
            held.fence += 1;
            Ok(Claim::new(thread, held.fence))
        });
        async move { result }.boxed()
    }

    fn forget_claim(&self, claim: &Claim) {
        // The whole release is in memory: done at once.
        if let Ok(mut threads) = self.threads()
            && let Some(thread) = threads.get_mut(claim.thread())
            && thread.fence == claim.fence()
        {
            thread.claimed = false;
        }
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let result = self.threads().map(|mut threads| {
            if let Some(thread) = threads.get_mut(claim.thread())
                && thread.fence == claim.fence()
            {
                thread.claimed = false;
            }
        });
        async move { result }.boxed()
    }

    fn put<'a>(
        &'a self,
        claim: &'a Claim,
        record: CheckpointRecord,
        expected_head: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let result = self.claimed(claim, |thread| thread.put(record, expected_head, writes));
        async move { result }.boxed()
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let result = self.claimed(claim, |thread| {
            thread.insert_writes(writes);
            Ok(())
        });
        async move { result }.boxed()
    }

    fn put_batch<'a>(&'a self, claim: &'a Claim, ops: Vec<BatchOp>) -> BoxFuture<'a, Result<(), CheckpointError>> {
        // One lock for the batch; ops apply in order and stop at the first error, as the
        // default does.
        let result = self.claimed(claim, |thread| {
            for op in ops {
                match op {
                    BatchOp::Writes(writes) => thread.insert_writes(writes),
                    BatchOp::Put { record, expected_head, writes } => thread.put(record, expected_head, writes)?,
                }
            }
            Ok(())
        });
        async move { result }.boxed()
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        let result = self.threads().map(|threads| {
            let found = threads.get(thread)?;
            let record = match id {
                Some(id) => found.find(id).ok().map(|at| &found.checkpoints[at]),
                None => found.checkpoints.last(),
            };
            record.map(|r| stored_checkpoint(r, thread))
        });
        async move { result }.boxed()
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        let result = self.threads().map(|threads| {
            let Some(found) = threads.get(thread) else { return Vec::new() };
            found
                .checkpoints
                .iter()
                .rev()
                .filter(|c| filter.before.as_ref().is_none_or(|before| c.id < *before))
                .filter(|c| filter.source.is_none_or(|source| c.source == source))
                .take(filter.limit.unwrap_or(usize::MAX))
                .map(|c| stored_checkpoint(c, thread))
                .collect()
        });
        async move { result }.boxed()
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        let result = self.threads().map(|threads| {
            let Some(writes) = threads.get(thread).and_then(|t| t.writes_of(checkpoint)) else { return Vec::new() };
            writes
                .iter()
                .map(|w| WriteRecord {
                    thread_id: thread.to_owned(),
                    checkpoint_id: checkpoint.to_owned(),
                    ..w.clone()
                })
                .collect()
        });
        async move { result }.boxed()
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let result = self.threads().map(|mut threads| {
            if let Some(found) = threads.get_mut(thread) {
                // The claim's fence grows, so a run still writing to the thread is fenced off.
                *found = Thread { fence: found.fence + 1, ..Thread::default() };
            }
        });
        async move { result }.boxed()
    }

    fn prune_to_head<'a>(
        &'a self,
        claim: &'a Claim,
        head: CheckpointRecord,
        subgraph_keys: Vec<String>,
    ) -> BoxFuture<'a, Result<usize, CheckpointError>> {
        let result = super::check_prune(claim, &head, &subgraph_keys).and_then(|()| {
            // One lock for the whole of it: no reader sees the thread half-pruned.
            let mut threads = self.threads()?;
            let thread = threads.get_mut(claim.thread()).ok_or_else(|| CheckpointError::Fenced {
                thread: claim.thread().to_owned(),
                fence: claim.fence(),
                current: 0,
            })?;
            thread.check(claim)?;
            let found = thread.checkpoints.last().map(|c| c.id.clone());
            if found.as_deref() != Some(head.id.as_str()) {
                return Err(CheckpointError::Conflict { thread: head.thread_id, expected: Some(head.id), found });
            }
            let mut deleted = thread.checkpoints.len() - 1;
            thread.writes.retain(|(id, _)| *id == head.id);
            thread.checkpoints.clear();
            thread.checkpoints.push(CheckpointRecord { thread_id: String::new(), ..head });
            for key in subgraph_keys {
                // The entry goes with its fence: the key names a task of a deleted checkpoint,
                // so no run claims it again.
                if let Some(subgraph) = threads.remove(&key) {
                    deleted += subgraph.checkpoints.len();
                }
            }
            Ok(deleted)
        });
        async move { result }.boxed()
    }

    fn thread_keys<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Vec<String>, CheckpointError>> {
        let nested = format!("{thread}{}", super::NAMESPACE_SEPARATOR);
        let keys = self.threads().map(|threads| {
            threads
                .iter()
                .filter(|(key, found)| (*key == thread || key.starts_with(&nested)) && !found.checkpoints.is_empty())
                .map(|(key, _)| key.clone())
                .collect()
        });
        async move { keys }.boxed()
    }

    fn delete_after<'a>(
        &'a self,
        thread: &'a str,
        after: Option<&'a str>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let result = self.threads().map(|mut threads| {
            let nested = format!("{thread}{}", super::NAMESPACE_SEPARATOR);
            for (key, found) in threads.iter_mut() {
                if key != thread && !key.starts_with(&nested) {
                    continue;
                }
                let keep = after.map_or(0, |id| found.find(id).map_or_else(|at| at, |at| at + 1));
                found.checkpoints.truncate(keep);
                found.writes.retain(|(id, _)| after.is_some_and(|after| id.as_str() <= after));
                if key == thread {
                    found.fence += 1;
                    found.claimed = false;
                }
            }
        });
        async move { result }.boxed()
    }
}
