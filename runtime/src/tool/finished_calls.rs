//! What the tools need of a task's memory of finished calls: the executor keeps the memory,
//! and hands the tools this narrow view of it so the tool layer stays below the executor.

use futures::future::BoxFuture;
use serde_json::Value;

/// The results of a task's finished calls, by slot (the call's position among the task's
/// calls) with the call's key (its id).
pub(crate) trait FinishedCalls: Send + Sync {
    /// The result of the call in `slot`, if that call (the same `key`) finished before.
    fn get(&self, slot: u32, key: &str) -> Option<Value>;

    /// Keeps the result of the call in `slot` (and stores it, where the run stores results).
    fn put<'a>(&'a self, slot: u32, key: &'a str, value: Value) -> BoxFuture<'a, ()>;
}
