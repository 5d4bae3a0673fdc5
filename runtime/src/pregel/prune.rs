//! Pruning a thread's history (LangGraph's `keep_latest`): the thread keeps its newest
//! checkpoint only, rewritten to stand alone, and reads and continues as it did.
//!
//! The head of a thread is usually a delta (its state is its parent's with the step's writes
//! folded in), so it cannot simply outlive its ancestors: it is rewritten with a snapshot of
//! its state, rebuilt the way a load rebuilds it, and with its tasks and the planner's
//! progress as they are, no parent and nothing folded. Its id stays, and so do the writes
//! stored against it (outputs of finished tasks, interrupts, answers, results of finished
//! calls), which are keyed by that id. The checkpointer then swaps the record and deletes the
//! rest in one transaction.
//!
//! Subgraphs keep their checkpoints under keys naming the checkpoint whose task ran them
//! (`thread`, the separator, then `node:checkpoint:task`). A resume continues the head's
//! tasks, and a read with subgraphs looks under the head's tasks, so only the keys naming the
//! head can ever be read again: those stay, untouched, and every other one goes. A head with
//! no tasks (a finished run) keeps none.

use super::begin::state_of;
use super::hold::{Held, ThreadLock};
use super::load::Stored;
use super::record::{self, BodyParts};
use crate::checkpoint::{CheckpointError, CheckpointRecord, Claim, NAMESPACE_SEPARATOR};
use crate::error::GraphError;
use crate::graph::Inner;
use crate::state::State;
use std::sync::Arc;

/// Prunes `thread` to its newest checkpoint, under the thread's lock and claim (so no run
/// interleaves); `pinned`, when given, must still be that checkpoint. Returns how many
/// checkpoints were deleted.
pub(crate) async fn prune_thread<S: State, C>(
    graph: &Inner<S, C>,
    thread: Arc<str>,
    pinned: Option<&str>,
) -> Result<usize, GraphError> {
    let _lock = ThreadLock::acquire(&graph.busy, &thread)?;
    let held = Held::take(&graph.saver, &thread).await?;
    let result = prune_held(graph, &thread, pinned, held.claim()).await;
    held.release().await;
    result
}

async fn prune_held<S: State, C>(
    graph: &Inner<S, C>,
    thread: &str,
    pinned: Option<&str>,
    claim: &Claim,
) -> Result<usize, GraphError> {
    let head = graph.saver.get(thread, None).await?;
    if let Some(pinned) = pinned.filter(|id| head.as_ref().is_none_or(|head| head.id != *id)) {
        return Err(CheckpointError::Conflict {
            thread: thread.to_owned(),
            expected: Some(pinned.to_owned()),
            found: head.map(|head| head.id),
        }
        .into());
    }
    let Some(head) = head else { return Ok(0) };
    let standalone = standalone(graph, thread, head).await?;
    let dropped = graph
        .saver
        .thread_keys(thread)
        .await?
        .into_iter()
        .filter(|key| key != thread && !ran_from(key, thread, &standalone.id))
        .collect();
    Ok(graph.saver.prune_to_head(claim, standalone, dropped).await?)
}

/// `head` rewritten to stand alone: a snapshot of its state, its tasks and the planner's
/// progress as they are, no parent, nothing folded; sealed again (the integrity check covers
/// the parent). Its writes are read and checked first: they are all the thread will have, so
/// damage in them stops the prune before anything is deleted.
async fn standalone<S: State, C>(
    graph: &Inner<S, C>,
    thread: &str,
    head: CheckpointRecord,
) -> Result<CheckpointRecord, GraphError> {
    let mut body = record::decode_body(graph, thread, &head)?;
    let stored = Stored::load(graph, thread, &head, &body).await?;
    stored.check_head(thread, &head.id)?;
    let next = std::mem::take(&mut body.next);
    let deferred = std::mem::take(&mut body.deferred);
    let joins = std::mem::take(&mut body.joins);
    let input_pending = body.input_pending;
    let state = state_of(graph, thread, &head, body).await?;
    let parts =
        BodyParts { state: Some(&state), next: &next, input_pending, deferred: &deferred, joins: &joins, folded: &[] };
    let payload = record::encode_body(graph, &parts)?;
    Ok(record::seal_checkpoint(CheckpointRecord { parent_id: None, body: Vec::new(), ..head }, payload))
}

/// Whether the subgraph key `key` of `thread` belongs to a task of checkpoint `checkpoint`:
/// its first namespace segment is `node:checkpoint:task`, as `graph::subgraph::segment` makes
/// it (a node's name may hold a colon, so the segment is read from its end).
fn ran_from(key: &str, thread: &str, checkpoint: &str) -> bool {
    let Some(namespace) = key.strip_prefix(thread).and_then(|rest| rest.strip_prefix(NAMESPACE_SEPARATOR)) else {
        return false;
    };
    let first = namespace.split(NAMESPACE_SEPARATOR).next().unwrap_or_default();
    let mut parts = first.rsplitn(3, ':');
    let (_task, found, _node) = (parts.next(), parts.next(), parts.next());
    found == Some(checkpoint)
}

#[cfg(test)]
mod tests {
    use super::ran_from;

    #[test]
    fn a_subgraph_key_belongs_to_the_checkpoint_its_first_segment_names() {
        let sep = crate::checkpoint::NAMESPACE_SEPARATOR;
        assert!(ran_from(&format!("t{sep}inner:c2:0"), "t", "c2"));
        assert!(ran_from(&format!("t{sep}inner:c2:3{sep}deeper:x9:0"), "t", "c2"), "nested under the head's task");
        assert!(ran_from(&format!("t{sep}a:b:c2:1"), "t", "c2"), "a node name with a colon");
        assert!(!ran_from(&format!("t{sep}inner:c1:0"), "t", "c2"), "a task of another checkpoint");
        assert!(!ran_from(&format!("t{sep}inner:c1:0{sep}deeper:c2:0"), "t", "c2"), "only the first segment counts");
        assert!(!ran_from(&format!("tt{sep}inner:c2:0"), "t", "c2"), "another thread");
        assert!(!ran_from("t", "t", "c2"), "the thread's own key");
    }
}
