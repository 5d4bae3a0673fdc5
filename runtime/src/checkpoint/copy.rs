//! Copying a thread through the [`Checkpointer`] methods every backend has.

use super::{CheckpointError, Checkpointer, ListFilter};
use crate::record::format::{moved_checkpoint, moved_writes};
use std::collections::HashMap;

/// [`Checkpointer::copy_thread`] built on `thread_keys`, `list`, `writes`, `claim` and `put`.
pub(super) async fn copy_thread<C: Checkpointer + ?Sized>(
    saver: &C,
    from: &str,
    to: &str,
) -> Result<usize, CheckpointError> {
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
