//! A run's hold on its thread: in this process (a second run on the thread is refused at once)
//! and in the store (the claim a run of another process would lose to).

use crate::checkpoint::{CheckpointError, Checkpointer, Claim};
use crate::error::GraphError;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// Holds a thread for one run in this graph; a second run on the same thread in this process is
/// refused at once, before the store is asked.
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

/// A run's claim on its thread in the store, given back when the run ends (or, if the run is
/// dropped, by a task spawned on the way out).
pub(crate) struct Held {
    saver: Arc<dyn Checkpointer>,
    claim: Option<Claim>,
}

impl Held {
    /// Claims `thread`: the loser of a race learns it here, before anything has run.
    pub(crate) async fn take(saver: &Arc<dyn Checkpointer>, thread: &str) -> Result<Self, GraphError> {
        match saver.claim(thread).await {
            Ok(claim) => Ok(Self { saver: Arc::clone(saver), claim: Some(claim) }),
            Err(CheckpointError::Busy { thread, .. }) => Err(GraphError::ThreadBusy { thread }),
            Err(error) => Err(error.into()),
        }
    }

    pub(crate) fn claim(&self) -> &Claim {
        self.claim.as_ref().expect("a claim is held until it is released")
    }

    /// Gives the claim back.
    pub(crate) async fn release(mut self) {
        if let Some(claim) = self.claim.take()
            && let Err(error) = self.saver.release(&claim).await
        {
            tracing::warn!(thread = claim.thread(), %error, "could not release the claim on a thread");
        }
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let (Some(claim), Ok(runtime)) = (self.claim.take(), tokio::runtime::Handle::try_current()) {
            // The thread is this process's to claim again before the drop returns (the next run
            // on it, the one that cancelled this run say, must not be refused); the store hears
            // of it from the task.
            self.saver.forget_claim(&claim);
            let saver = Arc::clone(&self.saver);
            runtime.spawn(async move {
                let _ = saver.release(&claim).await;
            });
        }
    }
}
