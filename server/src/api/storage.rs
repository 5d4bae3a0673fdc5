//! `GET /threads/{id}/storage`: the bytes a thread's checkpoints occupy in the checkpointer, in
//! the shape of LangGraph's `ThreadStorage`.
//!
//! The checkpointer keeps a checkpoint's record (the next step's tasks, and now and then a
//! snapshot of the state) and the writes of its tasks (each a task's update); it keeps no
//! value per channel and version, as LangGraph's `checkpoint_blobs` does. So `checkpoints`
//! counts the checkpoint records, `pending_writes` every write record (LangGraph counts its
//! writes table whole too), and `channel_values` is empty: the state's values are inside those
//! two (see docs/decisions.md). Subgraphs' records, stored under the thread, are counted with
//! the thread's own.

use super::respond::json;
use crate::app::App;
use crate::error::ApiError;
use axum::extract::{Path, State};
use axum::response::Response;
use graphwright::Checkpointer;
use graphwright::checkpoint::{CheckpointError, CheckpointRecord, ListFilter, WriteRecord};
use serde_json::{Value, json};
use std::sync::Arc;

/// How many records, and how many bytes they hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Tally {
    count: u64,
    bytes: u64,
}

impl Tally {
    fn add(&mut self, bytes: usize) {
        self.count += 1;
        self.bytes += bytes as u64;
    }

    fn json(self) -> Value {
        json!({"count": self.count, "bytes": self.bytes})
    }
}

/// The bytes of a checkpoint record as stored: its body and its columns (the key it is stored
/// under, its id and its parent's, why it was written, and the step, time and format numbers).
fn checkpoint_bytes(key: &str, record: &CheckpointRecord) -> usize {
    let numbers = size_of::<i64>() + size_of::<u64>() + size_of::<u16>();
    key.len()
        + record.id.len()
        + record.parent_id.as_ref().map_or(0, String::len)
        + record.source.as_str().len()
        + numbers
        + record.body.len()
}

/// The bytes of a write record as stored: its body and its columns (the key, the checkpoint
/// it belongs to, the task and write numbers, and the format).
fn write_bytes(key: &str, write: &WriteRecord) -> usize {
    let numbers = size_of::<u32>() + size_of::<u32>() + size_of::<u16>();
    key.len() + write.checkpoint_id.len() + numbers + write.body.len()
}

/// What the thread's checkpoints and writes occupy, under each of its keys.
async fn tally(saver: &dyn Checkpointer, thread: &str) -> Result<(Tally, Tally), ApiError> {
    let failed = |e: CheckpointError| ApiError::Storage(e.to_string());
    let (mut checkpoints, mut writes) = (Tally::default(), Tally::default());
    for key in saver.thread_keys(thread).await.map_err(failed)? {
        for record in saver.list(&key, &ListFilter::default()).await.map_err(failed)? {
            checkpoints.add(checkpoint_bytes(&key, &record));
            for write in saver.writes(&key, &record.id).await.map_err(failed)? {
                writes.add(write_bytes(&key, &write));
            }
        }
    }
    Ok((checkpoints, writes))
}

pub(super) async fn get(State(app): State<Arc<App>>, Path(id): Path<String>) -> Result<Response, ApiError> {
    if app.meta.thread(&id).await?.is_none() {
        return Err(ApiError::thread_not_found(&id));
    }
    let (checkpoints, writes) = tally(app.saver.as_ref(), &id).await?;
    Ok(json(&json!({
        "thread_id": id,
        "total_bytes": checkpoints.bytes + writes.bytes,
        "checkpoints": checkpoints.json(),
        "channel_values": {"count": 0, "bytes": 0, "by_channel": {}},
        "pending_writes": writes.json(),
    })))
}
