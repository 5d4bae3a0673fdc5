//! Durable calls: the result of each finished call inside a task (a `ToolNode`'s tool calls) is
//! stored as a write of the task as soon as it finishes, so when the task runs again (after a
//! crash, an interrupt, a failure or a retry) a call that had finished is answered from its
//! stored result instead of running twice.

use crate::checkpoint::{BatchOp, CheckpointError, Checkpointer, Claim, WriteRecord};
use crate::record::format;
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

/// Where a run stores call results: its checkpointer, its claim on the thread, the thread.
#[derive(Clone)]
pub(crate) struct CallStore {
    pub(crate) saver: Arc<dyn Checkpointer>,
    pub(crate) claim: Claim,
    pub(crate) thread: Arc<str>,
    /// The background writer under `Durability::Async`: a result goes through it, after the
    /// checkpoint it belongs to, so it is never stored against a checkpoint a crash lost. Weak:
    /// the writer stops once the run drops its own sender, whatever tasks still hold.
    pub(crate) queue: Option<tokio::sync::mpsc::WeakSender<super::writer::QueuedOp>>,
}

/// The call results of one task, by slot (the call's position among the task's calls) with the
/// call's key (its id): those stored by earlier runs of the task, and those of this run.
pub(crate) struct CallResults {
    known: Mutex<BTreeMap<u32, (String, Value)>>,
    place: Option<Place>,
}

/// Where one task's results are stored.
struct Place {
    store: CallStore,
    checkpoint: Arc<str>,
    task: u32,
}

impl CallResults {
    /// The results of task `task` of `checkpoint`, starting from `stored`; with no store (a run
    /// without a thread, or under `Durability::Exit`) they last only as long as the task's
    /// attempts.
    pub(crate) fn new(
        stored: Option<&Arc<BTreeMap<u32, (String, Value)>>>,
        store: Option<&CallStore>,
        checkpoint: Option<&Arc<str>>,
        task: u32,
    ) -> Self {
        let place = match (store, checkpoint) {
            (Some(store), Some(checkpoint)) => {
                Some(Place { store: store.clone(), checkpoint: Arc::clone(checkpoint), task })
            }
            _ => None,
        };
        Self { known: Mutex::new(stored.map(|s| (**s).clone()).unwrap_or_default()), place }
    }

    /// The result of the call in `slot`, if that call (the same `key`) finished before.
    pub(crate) fn get(&self, slot: u32, key: &str) -> Option<Value> {
        let known = self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        known.get(&slot).filter(|(k, _)| k == key).map(|(_, value)| value.clone())
    }

    /// What is known of the call in `slot`: its key and result, whatever the key.
    pub(crate) fn stored(&self, slot: u32) -> Option<(String, Value)> {
        let known = self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        known.get(&slot).cloned()
    }

    /// Keeps the result of the call in `slot` and stores it. A result that cannot be stored is
    /// still returned to the caller: the call ran, and its answer goes on with the task's
    /// output; only a crash before the step ends could run it again.
    pub(crate) async fn put(&self, slot: u32, key: &str, value: Value) {
        if let Some(place) = &self.place {
            let stored = match format::encode_result(key, &value) {
                Ok(payload) => {
                    let write = format::seal_write(
                        &place.store.thread,
                        &place.checkpoint,
                        place.task,
                        format::result_index(slot),
                        payload,
                    );
                    place.store.store(write).await
                }
                Err(unstorable) => Err(unstorable.to_string()),
            };
            if let Err(error) = stored {
                tracing::warn!(call = key, %error, "could not store a finished call's result; a crash now would run it again");
            }
        }
        let mut known = self.known.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        known.insert(slot, (key.to_owned(), value));
    }
}

impl CallStore {
    /// Stores `write`: through the background writer when there is one (after the checkpoint it
    /// belongs to), else at once. Why it could not be stored, as text for the run's log.
    async fn store(&self, write: WriteRecord) -> Result<(), String> {
        match &self.queue {
            Some(queue) => match queue.upgrade() {
                Some(queue) => queue.send((BatchOp::Writes(vec![write]), None)).await.map_err(|_| writer_stopped()),
                None => Err(writer_stopped()),
            },
            None => self.saver.put_writes(&self.claim, vec![write]).await.map_err(|error| error.to_string()),
        }
    }
}

fn writer_stopped() -> String {
    CheckpointError::backend("store a call's result", "the run's background writer has stopped").to_string()
}
