//! The state an entrypoint runs on: its input, what it returned, and what it saved.

use serde_json::Value;

/// The state of an entrypoint's runs on a thread: the graph an [`Entrypoint`](super::Entrypoint)
/// compiles to carries it, one super-step per run.
///
/// Values are kept as JSON: the entrypoint's typed surface converts them at its edges, and a
/// served entrypoint shows them to clients as they are.
#[crate::state]
pub struct FlowState {
    /// What the last run was called with.
    pub input: Value,
    /// What the last run returned (`null` until one has).
    pub output: Value,
    /// What the last run saved for the next one on the thread, its `previous` (`null` when none
    /// has; the returned value unless the entrypoint returned a [`Final`](super::Final)).
    pub saved: Value,
}
