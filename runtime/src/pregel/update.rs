//! Editing a thread's state from outside a run (LangGraph's `update_state` and
//! `bulk_update_state`): each super-step of updates becomes one new checkpoint.

use super::Task;
use super::begin::{self, Carry};
use super::hold::{Held, ThreadLock};
use super::load::Stored;
use super::persist::{Branch, Persist};
use super::planner::Planner;
use super::record;
use crate::checkpoint::{CheckpointRecord, Source};
use crate::config::Durability;
use crate::error::GraphError;
use crate::graph::Inner;
use crate::node::NodeOutput;
use crate::state::State;
use std::sync::Arc;

/// What an update acts as.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum AsNode {
    /// No node: the pending tasks stay pending (and paused ones keep their interrupts).
    Pending,
    /// The output of this node: its edges and routers decide what runs next.
    Node(u32),
    /// END: the finished tasks' outputs are applied, and nothing is left to run.
    End,
}

/// Applies `supersteps` to the thread, one new checkpoint each, starting from its head or from
/// `from` (a new branch). Returns the id of the last checkpoint.
pub(crate) async fn update_thread<S: State, C>(
    graph: &Inner<S, C>,
    thread: Arc<str>,
    from: Option<&str>,
    supersteps: Vec<Vec<(S::Update, AsNode)>>,
) -> Result<String, GraphError> {
    let invalid = |reason: String| GraphError::UpdateState { thread: thread.to_string(), reason };
    if supersteps.is_empty() || supersteps.iter().any(Vec::is_empty) {
        return Err(invalid("no update was given: each super-step needs at least one".to_owned()));
    }
    let _lock = ThreadLock::acquire(&graph.busy, &thread)?;
    let held = Held::take(&graph.saver, &thread).await?;
    let result = async {
        let newest = graph.saver.get(&thread, None).await?;
        let mut persist = Persist::new(
            Arc::clone(&graph.saver),
            held.claim().clone(),
            Arc::clone(&thread),
            Durability::Sync,
            newest.as_ref(),
            None,
            None,
        );
        let mut base = match (from, &newest) {
            (Some(id), Some(newest)) if id != newest.id => {
                Some(graph.saver.get(&thread, Some(id)).await?.ok_or_else(|| GraphError::NothingToResume {
                    thread: thread.to_string(),
                    reason: "it has no checkpoint with that id",
                })?)
            }
            (Some(_), None) => {
                return Err(GraphError::NothingToResume { thread: thread.to_string(), reason: "it has no checkpoint" });
            }
            _ => newest.clone(),
        };
        let mut at_head = base.as_ref().map(|b| &b.id) == newest.as_ref().map(|h| &h.id);
        for superstep in supersteps {
            let next = apply(graph, &thread, &mut persist, base.as_ref(), at_head, superstep).await?;
            base = Some(next);
            at_head = true;
        }
        Ok(base.map(|b| b.id).unwrap_or_default())
    }
    .await;
    held.release().await;
    result
}

/// Applies one super-step of updates on `base` (the thread's head when `at_head`).
async fn apply<S: State, C>(
    graph: &Inner<S, C>,
    thread: &str,
    persist: &mut Persist,
    base: Option<&CheckpointRecord>,
    at_head: bool,
    mut updates: Vec<(S::Update, AsNode)>,
) -> Result<CheckpointRecord, GraphError> {
    let invalid = |reason: String| GraphError::UpdateState { thread: thread.to_owned(), reason };
    let several = updates.len() > 1;
    if several && updates.iter().any(|(_, n)| *n != AsNode::Pending && !matches!(n, AsNode::Node(_))) {
        return Err(invalid(
            "END clears a thread's tasks on its own: it cannot be combined with other updates".to_owned(),
        ));
    }
    if several && updates.iter().any(|(_, n)| *n == AsNode::Pending) {
        return Err(invalid("each of several updates in one super-step needs the node it acts as".to_owned()));
    }
    let loaded = match base {
        Some(base) => {
            let body = record::decode_body(graph, thread, base)?;
            let stored = Stored::load(graph, thread, base, &body).await?;
            Some((base, body, stored))
        }
        None => None,
    };
    let (mut state, stored) = match loaded {
        Some((base, body, stored)) if matches!(updates[..], [(_, AsNode::Pending)]) => {
            let (update, _) = updates.pop().expect("one update");
            // Pending interrupts survive an edit of the thread's head; a branch from an older
            // checkpoint runs its tasks afresh.
            let carry = Carry { outputs: false, interrupts: at_head };
            return begin::branch(graph, persist, base, body, stored, Some(update), &[], carry, Source::Update).await;
        }
        Some((base, mut body, stored)) => {
            let progress = (std::mem::take(&mut body.deferred), std::mem::take(&mut body.joins));
            (begin::state_of(graph, thread, base, body).await?, Some((stored, progress)))
        }
        None => (S::default(), None),
    };
    let mut planner = Planner::new(graph);
    let stored = match stored {
        Some((stored, (deferred, joins))) => {
            planner.restore(&deferred, joins);
            Some(stored)
        }
        None => None,
    };
    let next: Vec<Task> = match updates.as_mut_slice() {
        [(update, AsNode::Pending)] => {
            state.apply(std::mem::take(update));
            Vec::new()
        }
        [(update, AsNode::End)] => {
            if at_head && let Some(stored) = stored {
                let mut outputs: Vec<S::Update> =
                    stored.outputs.into_iter().flatten().map(|o| o.output.update).collect();
                let mut refs: Vec<&mut S::Update> = outputs.iter_mut().collect();
                state.apply_step(&mut refs);
            }
            state.apply(std::mem::take(update));
            Vec::new()
        }
        many => {
            let mut ran = crate::pregel::step::Tasks::with_capacity(many.len());
            for (_, as_node) in many.iter() {
                let AsNode::Node(node) = *as_node else { continue };
                let spec = &graph.nodes[node as usize];
                if spec.edges.is_empty() && spec.routers.is_empty() && !spec.routes.is_empty() {
                    return Err(invalid(format!(
                        "node `{}` picks its route in its body, so an update acting as it leads nowhere; \
                         name a node with static edges or a router",
                        spec.name
                    )));
                }
                ran.push(Task::pull(node));
            }
            let refs: Vec<&S::Update> = many.iter().map(|(u, _)| u).collect();
            if let Some(conflict) = S::conflict(&refs) {
                let name = |i: usize| graph.node_names[ran[i].node as usize].to_string();
                return Err(GraphError::InvalidUpdate {
                    field: conflict.field,
                    first: name(conflict.first),
                    second: name(conflict.second),
                    step: 0,
                });
            }
            let mut refs: Vec<&mut S::Update> = many.iter_mut().map(|(u, _)| u).collect();
            state.apply_step(&mut refs);
            let mut outputs: Vec<Option<NodeOutput<S>>> =
                ran.iter().map(|_| Some(NodeOutput::update(S::Update::default()))).collect();
            planner.plan(graph, &mut ran, &mut outputs, &state);
            ran.into_vec()
        }
    };
    let (parent, step) = base.map_or(("", 0), |b| (b.id.as_str(), b.step + 1));
    let branch = Branch {
        parent,
        step,
        next: &next,
        input_pending: false,
        source: Source::Update,
        carried: Vec::new(),
        outcome: false,
    };
    persist.put_branch(graph, &state, &planner, branch).await
}
