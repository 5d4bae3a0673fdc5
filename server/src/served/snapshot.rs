//! A thread's state as the wire shows it (`ThreadState`).

use crate::time;
use crate::wire::messages::fields_to_wire;
use crate::wire::names::node_to_wire;
use graphwright::{Interrupt, State, StateSnapshot};
use serde_json::{Map, Value, json};

/// An interrupt as clients read it.
pub(crate) fn interrupt(interrupt: &Interrupt) -> Value {
    json!({"value": interrupt.value, "id": interrupt.id})
}

/// The interrupts clients are shown: those nodes raised. A breakpoint pauses the thread (its
/// status is `interrupted`, `next` names the node) but, as in LangGraph, asks nothing.
pub(crate) fn shown(interrupts: &[Interrupt]) -> Vec<Value> {
    interrupts.iter().filter(|i| !i.is_breakpoint()).map(interrupt).collect()
}

/// A task's id: stable for the checkpoint and the task's position, a UUID as clients expect.
pub(crate) fn task_id(checkpoint: &str, index: u32) -> String {
    uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, format!("{checkpoint}:{index}").as_bytes()).to_string()
}

/// A value converted to JSON, its message fields in the clients' shape.
pub(crate) fn to_wire<T: serde::Serialize>(value: &T, message_fields: &[&str]) -> Value {
    // A state or update that does not serialize (a map with non-string keys) is shown as null
    // rather than failing the whole read.
    let mut json = serde_json::to_value(value).unwrap_or(Value::Null);
    fields_to_wire(&mut json, message_fields);
    json
}

/// A state as clients see it: field by field, or, for an entrypoint's, the value it returned
/// (LangGraph shows an entrypoint's thread by its return value).
pub(crate) fn state_to_wire<S: State>(state: &S, message_fields: &[&str]) -> Value {
    let json = to_wire(state, message_fields);
    if is_entrypoint::<S>() { json.get("output").cloned().unwrap_or(Value::Null) } else { json }
}

/// A node's update as clients see it: for an entrypoint's node, the value it returned.
pub(crate) fn update_to_wire<S: State>(update: &S::Update, message_fields: &[&str]) -> Value {
    let json = to_wire(update, message_fields);
    if is_entrypoint::<S>() { json.get("output").cloned().unwrap_or(Value::Null) } else { json }
}

/// Whether `S` is the state of an `#[entrypoint]`'s graph.
pub(crate) fn is_entrypoint<S: State>() -> bool {
    std::any::TypeId::of::<S>() == std::any::TypeId::of::<graphwright::functional::FlowState>()
}

fn checkpoint_ref(thread: &str, id: &str) -> Value {
    // No `checkpoint_map`: LangGraph's document makes it an object when present, and graphwright
    // has none to give (a subgraph's checkpoint is found by its namespace).
    json!({"thread_id": thread, "checkpoint_ns": "", "checkpoint_id": id})
}

/// `ThreadState` of one checkpoint.
pub(crate) fn thread_state<S: State>(thread: &str, snapshot: &StateSnapshot<S>) -> Value {
    let fields = S::MESSAGE_FIELDS;
    let tasks: Vec<Value> = snapshot
        .tasks
        .iter()
        .map(|task| {
            let name = node_to_wire(&task.node);
            json!({
                "id": task_id(&snapshot.checkpoint_id, task.index),
                "name": name,
                "path": ["__pregel_pull", name],
                "error": task.error,
                "interrupts": shown(&task.interrupts),
                "checkpoint": null,
                "state": null,
                "result": task.result.as_ref().map(|r| to_wire(r, fields)),
            })
        })
        .collect();
    json!({
        "values": state_to_wire(&snapshot.state, fields),
        "next": snapshot.next.iter().map(|node| node_to_wire(node)).collect::<Vec<_>>(),
        "tasks": tasks,
        "metadata": {"step": snapshot.step, "source": snapshot.source.as_str(), "parents": {}},
        "created_at": time::from_millis(snapshot.created_at_ms),
        "checkpoint": checkpoint_ref(thread, &snapshot.checkpoint_id),
        "parent_checkpoint": snapshot.parent_id.as_deref().map(|id| checkpoint_ref(thread, id)),
        "interrupts": shown(&snapshot.interrupts),
    })
}

/// The pending interrupts of a `ThreadState`, by task id (a thread's `interrupts`).
pub(crate) fn interrupts_by_task(state: &Value) -> Map<String, Value> {
    let mut by_task = Map::new();
    for task in state["tasks"].as_array().into_iter().flatten() {
        if let (Some(id), Some(list)) = (task["id"].as_str(), task["interrupts"].as_array())
            && !list.is_empty()
        {
            by_task.insert(id.to_owned(), Value::Array(list.clone()));
        }
    }
    by_task
}
