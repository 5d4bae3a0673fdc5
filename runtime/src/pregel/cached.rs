//! Cached node outputs: a task of a node with a [`CachePolicy`] looks its input up in the
//! graph's cache before it runs, and stores the output it returns.
//!
//! The cache only saves work: an entry that cannot be read, or a cache that fails, is logged
//! and the node runs as if there were no entry (its output then replaces the entry).

use super::Task;
use super::record;
use super::step::Stop;
use crate::cache::Cache;
use crate::checkpoint::CheckpointError;
use crate::error::{GraphError, NodeError};
use crate::graph::{CompiledNode, Inner};
use crate::node::NodeOutput;
use crate::policy::{CachePolicy, KeyFn};
use crate::record::codec;
use crate::state::State;
use sha2::{Digest, Sha256};
use std::panic::AssertUnwindSafe;

/// Runs `task` through the graph's cache: the output stored for its input, if the cache has
/// one (`true`: the node did not run), or else what `run` returns, whose output is then stored.
pub(crate) async fn run<S: State, C>(
    graph: &Inner<S, C>,
    state: &S,
    step: u64,
    user: Option<&crate::AuthUser>,
    task: &Task,
    run: impl Future<Output = Result<NodeOutput<S>, Stop>>,
) -> (Result<NodeOutput<S>, Stop>, bool) {
    let node = &graph.nodes[task.node as usize];
    let entry = match entry(graph, node, state, user, task) {
        Ok(Some(entry)) => entry,
        Ok(None) => return (run.await, false),
        Err(error) => {
            let source = error.into_box();
            return (
                Err(Stop::Failed(GraphError::Node { node: node.name.to_string(), step, attempts: 1, source })),
                false,
            );
        }
    };
    match entry.cache.get(&entry.namespace, &entry.key).await {
        Ok(Some(bytes)) => match record::decode_cached(graph, task.node, &entry.namespace, &entry.key, &bytes) {
            Ok(output) => return (Ok(output), true),
            Err(error) => tracing::warn!(
                namespace = %entry.namespace,
                key = %entry.key,
                error = %unreadable(&error),
                "a cache entry is unreadable; the node runs, and its output replaces the entry"
            ),
        },
        Ok(None) => {}
        Err(error) => tracing::warn!(%error, "could not read the cache; the node runs"),
    }
    let result = run.await;
    if let Ok(output) = &result {
        entry.store(graph, task, output).await;
    }
    (result, false)
}

/// Where a task's output is cached.
struct Entry<'a> {
    cache: &'a dyn Cache,
    policy: &'a CachePolicy,
    namespace: String,
    key: String,
}

impl Entry<'_> {
    async fn store<S: State, C>(&self, graph: &Inner<S, C>, task: &Task, output: &NodeOutput<S>) {
        let value = match record::encode_output(graph, task, output) {
            Ok(value) => value,
            Err(error) => {
                tracing::warn!(namespace = %self.namespace, %error, "the node's output cannot be cached");
                return;
            }
        };
        if let Err(error) = self.cache.set(&self.namespace, &self.key, value, self.policy.ttl).await {
            tracing::warn!(%error, "could not store the node's output in the cache");
        }
    }
}

/// The entry of `task`'s input, if its node caches its outputs (and the input can be keyed); a
/// key function that panics fails the task.
fn entry<'g, S: State, C>(
    graph: &'g Inner<S, C>,
    node: &'g CompiledNode<S, C>,
    state: &S,
    user: Option<&crate::AuthUser>,
    task: &Task,
) -> Result<Option<Entry<'g>>, NodeError> {
    let (Some(policy), Some(cache)) = (&node.policy.cache, &graph.cache) else { return Ok(None) };
    let namespace = namespace(&graph.name, &node.name);
    let key = match (&policy.key, task.payload.as_deref()) {
        (Some(key), Some(payload)) => call_key(&*key.key, payload)?,
        (Some(key), None) => call_key(&*key.key, state)?,
        (None, payload) => digest(node, state, payload, &namespace),
    };
    let key = key.map(|key| crate::cache::scoped_key(policy, user, key));
    Ok(key.map(|key| Entry { cache: &**cache, policy, namespace, key }))
}

/// The cache namespace of a node's outputs: its graph's name and its own.
pub(crate) fn namespace(graph: &str, node: &str) -> String {
    format!("{graph}:{node}")
}

/// Calls a key function; the builder checked its input type, so `None` cannot come back.
fn call_key(key: &KeyFn, input: &dyn std::any::Any) -> Result<Option<String>, NodeError> {
    std::panic::catch_unwind(AssertUnwindSafe(|| key(input))).map_err(|payload| NodeError::panicked(&*payload))
}

/// The default key: the SHA-256 of the input's stored form, in hex.
fn digest<S: State, C>(
    node: &CompiledNode<S, C>,
    state: &S,
    payload: Option<&(dyn std::any::Any + Send + Sync)>,
    namespace: &str,
) -> Option<String> {
    let mut bytes = Vec::new();
    let encoded = match (payload, node.takes) {
        (Some(payload), Some(kind)) => (kind.encode)(payload, &mut bytes),
        _ => codec::encode(&mut bytes, state),
    };
    if let Err(error) = encoded {
        tracing::warn!(
            %namespace,
            at = %error.path,
            reason = %error.reason,
            "the node's input cannot be keyed for the cache; the node runs uncached"
        );
        return None;
    }
    let mut key = String::with_capacity(64);
    crate::model::hash::push_hex(&mut key, &Sha256::digest(&bytes));
    Some(key)
}

/// What is wrong with an unreadable entry.
fn unreadable(error: &CheckpointError) -> String {
    match error {
        CheckpointError::Corrupt { field, reason, .. } => format!("at `{field}`: {reason}"),
        other => other.to_string(),
    }
}
