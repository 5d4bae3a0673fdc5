//! The in-process checkpointer.

use super::{CheckpointError, CheckpointRecord, Checkpointer, Claim, ListFilter, WriteRecord};
use futures::FutureExt;
use futures::future::BoxFuture;
use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;

/// Keeps checkpoints in memory, for tests and for runs that need pauses and history but not
/// survival across processes. Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub struct MemorySaver {
    threads: Mutex<HashMap<String, Thread>>,
    /// Claims by thread: whether one is held, and the latest fence.
    claims: Mutex<HashMap<String, (bool, u64)>>,
}

#[derive(Debug, Default)]
struct Thread {
    /// Checkpoints by id (ids sort by creation time).
    checkpoints: BTreeMap<String, CheckpointRecord>,
    /// Writes by (checkpoint, task, index).
    writes: BTreeMap<(String, u32, u32), WriteRecord>,
}

impl MemorySaver {
    /// An empty saver.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    fn with_threads<T>(&self, f: impl FnOnce(&mut HashMap<String, Thread>) -> T) -> Result<T, CheckpointError> {
        let mut threads = self
            .threads
            .lock()
            .map_err(|_| CheckpointError::backend("locked the in-memory store", "a run panicked while holding it"))?;
        Ok(f(&mut threads))
    }

    fn with_claims<T>(&self, f: impl FnOnce(&mut HashMap<String, (bool, u64)>) -> T) -> Result<T, CheckpointError> {
        let mut claims = self.claims.lock().map_err(|_| {
            CheckpointError::backend("locked the in-memory claims", "a run panicked while holding them")
        })?;
        Ok(f(&mut claims))
    }

    /// Fails unless `claim` is the thread's current claim.
    fn check(&self, claim: &Claim) -> Result<(), CheckpointError> {
        let current = self.with_claims(|claims| claims.get(claim.thread()).map_or((false, 0), |c| *c))?;
        match current {
            (true, fence) if fence == claim.fence() => Ok(()),
            (_, fence) => {
                Err(CheckpointError::Fenced { thread: claim.thread().to_owned(), fence: claim.fence(), current: fence })
            }
        }
    }
}

impl Checkpointer for MemorySaver {
    fn claim<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Claim, CheckpointError>> {
        let result = self.with_claims(|claims| {
            let (held, fence) = claims.entry(thread.to_owned()).or_insert((false, 0));
            if *held {
                return Err(CheckpointError::Busy { thread: thread.to_owned(), holder: None });
            }
            *held = true;
            *fence += 1;
            Ok(Claim::new(thread, *fence))
        });
        async move { result? }.boxed()
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let result = self.with_claims(|claims| {
            if let Some((held, fence)) = claims.get_mut(claim.thread())
                && *fence == claim.fence()
            {
                *held = false;
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
        if let Err(error) = self.check(claim) {
            return async move { Err(error) }.boxed();
        }
        let result = self.with_threads(|threads| {
            let thread = threads.entry(record.thread_id.clone()).or_default();
            let head = thread.checkpoints.keys().next_back().cloned();
            if head != expected_head {
                return Err(CheckpointError::Conflict {
                    thread: record.thread_id.clone(),
                    expected: expected_head,
                    found: head,
                });
            }
            for write in writes {
                let key = (write.checkpoint_id.clone(), write.task, write.index);
                thread.writes.entry(key).or_insert(write);
            }
            thread.checkpoints.insert(record.id.clone(), record);
            Ok(())
        });
        async move { result? }.boxed()
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        if let Err(error) = self.check(claim) {
            return async move { Err(error) }.boxed();
        }
        let result = self.with_threads(|threads| {
            for write in writes {
                let thread = threads.entry(write.thread_id.clone()).or_default();
                let key = (write.checkpoint_id.clone(), write.task, write.index);
                thread.writes.entry(key).or_insert(write);
            }
        });
        async move { result }.boxed()
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        let result = self.with_threads(|threads| {
            let thread = threads.get(thread)?;
            match id {
                Some(id) => thread.checkpoints.get(id).cloned(),
                None => thread.checkpoints.values().next_back().cloned(),
            }
        });
        async move { result }.boxed()
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        let result = self.with_threads(|threads| {
            let Some(thread) = threads.get(thread) else { return Vec::new() };
            thread
                .checkpoints
                .values()
                .rev()
                .filter(|c| filter.before.as_ref().is_none_or(|before| c.id < *before))
                .filter(|c| filter.source.is_none_or(|source| c.source == source))
                .take(filter.limit.unwrap_or(usize::MAX))
                .cloned()
                .collect()
        });
        async move { result }.boxed()
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        let result = self.with_threads(|threads| {
            let Some(thread) = threads.get(thread) else { return Vec::new() };
            let from = (checkpoint.to_owned(), 0, 0);
            thread.writes.range(from..).take_while(|((c, _, _), _)| c == checkpoint).map(|(_, w)| w.clone()).collect()
        });
        async move { result }.boxed()
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), CheckpointError>> {
        let result = self.with_threads(|threads| {
            threads.remove(thread);
        });
        // The claim's fence grows, so a run still writing to the thread is fenced off.
        let result = result.and_then(|()| {
            self.with_claims(|claims| {
                if let Some((held, fence)) = claims.get_mut(thread) {
                    *held = false;
                    *fence += 1;
                }
            })
        });
        async move { result }.boxed()
    }
}
