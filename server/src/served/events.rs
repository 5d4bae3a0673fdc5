//! A run's events in the wire's terms: event names, LangChain message chunks, the metadata
//! clients read from `messages` events, and the interrupt events LangGraph's server adds.

use super::chains::{Chains, task_id};
use super::run::{Modes, Outcome, RunSpec, WireEvent};
use super::snapshot::{shown, state_to_wire, to_wire, update_to_wire};
use crate::time;
use crate::wire::messages::{ai_chunk, fields_to_wire};
use crate::wire::names::node_to_wire;
use graphwright::{Event, EventKind, GraphError, State};
use serde_json::{Value, json};
use std::collections::HashSet;

/// Turns one run's events into wire events.
pub(crate) struct Translator {
    modes: Modes,
    run_id: String,
    thread_id: String,
    fields: &'static [&'static str],
    /// Replies whose text already went out as chunks: their complete form is not sent again.
    streamed: HashSet<String>,
    /// The last values, for `checkpoints` events.
    values: Value,
    /// The `events` mode's runs, when it was asked for.
    chains: Option<Chains>,
}

impl Translator {
    pub(crate) fn new(spec: &RunSpec, fields: &'static [&'static str]) -> Self {
        let chains =
            spec.modes.events.then(|| Chains::new(&spec.run_id, &spec.thread_id, &spec.graph_id, &spec.assistant_id));
        Self {
            modes: spec.modes,
            run_id: spec.run_id.clone(),
            thread_id: spec.thread_id.clone(),
            fields,
            streamed: HashSet::new(),
            values: Value::Null,
            chains,
        }
    }

    /// The wire events that open the run, before any of the graph's: in `events` mode, the
    /// start of the root chain with the run's `input`.
    pub(crate) fn begin(&self, input: impl FnOnce() -> Value) -> Vec<WireEvent> {
        let mut out = Vec::new();
        if let Some(chains) = &self.chains {
            chains.begin(input(), &mut out);
        }
        out
    }

    /// The wire events for `event` (none for modes the client did not ask for), or the run's
    /// outcome for a terminal event.
    #[allow(clippy::too_many_lines)] // one arm per event kind, each short
    pub(crate) fn translate<S: State>(&mut self, event: Event<S>, out: &mut Vec<WireEvent>) -> Option<Outcome> {
        let Event { namespace: levels, step, kind, .. } = event;
        let ns = namespace(&levels);
        let m = self.modes;
        // Step events of subgraphs come when the client asked for them (`events` mode asks the
        // graph for them too, for its own use).
        let shown_here = levels.is_empty() || m.subgraphs;
        match kind {
            EventKind::Values(state) => {
                self.values = state_to_wire(&state, self.fields);
                if let Some(chains) = &mut self.chains {
                    chains.values(&levels, &self.values);
                }
                if m.values {
                    out.push(named("values", &ns, self.values.clone()));
                }
            }
            EventKind::SubgraphValues(mut values) => {
                fields_to_wire(&mut values, self.fields);
                if let Some(chains) = &mut self.chains {
                    chains.values(&levels, &values);
                }
                if m.values && shown_here {
                    out.push(named("values", &ns, values));
                }
            }
            EventKind::Update { node, update, cached } => {
                let update = update_to_wire::<S>(&update, self.fields);
                let node = node_to_wire(&node);
                if let Some(chains) = &mut self.chains {
                    chains.task_updated(&levels, node, &update);
                }
                self.whole_messages(node, step, &ns, &update, out);
                if m.updates {
                    out.push(named("updates", &ns, updates_part(node, &update, cached)));
                }
            }
            EventKind::SubgraphUpdate { node, mut update, cached } => {
                fields_to_wire(&mut update, self.fields);
                let node = node_to_wire(&node);
                if let Some(chains) = &mut self.chains {
                    chains.task_updated(&levels, node, &update);
                }
                if shown_here {
                    self.whole_messages(node, step, &ns, &update, out);
                    if m.updates {
                        out.push(named("updates", &ns, updates_part(node, &update, cached)));
                    }
                }
            }
            EventKind::Custom { node, value } => {
                if let Some(chains) = &self.chains {
                    chains.custom(&levels, step, &node, value.clone(), out);
                }
                if m.custom {
                    out.push(named("custom", &ns, value));
                }
            }
            EventKind::Tool { node, event } => {
                if let Some(chains) = &mut self.chains {
                    chains.tool(&levels, step, &node, &event, out);
                }
                if m.custom {
                    let mut value = serde_json::to_value(&event).unwrap_or(Value::Null);
                    if let Value::Object(o) = &mut value {
                        o.insert("node".into(), node.into());
                    }
                    out.push(named("custom", &ns, json!({"type": "tool", "data": value})));
                }
            }
            EventKind::Message { node, message_id, delta } => {
                if let Some(chains) = &mut self.chains {
                    chains.reply_piece(&levels, step, &node, &message_id, &delta, None, out);
                }
                if m.messages {
                    let chunk = ai_chunk(&message_id, &delta, &[]);
                    out.push(named("messages", &ns, json!([chunk, self.metadata(&node, step, &ns)])));
                    self.streamed.insert(message_id);
                }
            }
            EventKind::ToolCallDelta { node, message_id, index, id, name, arguments } => {
                if let Some(chains) = &mut self.chains {
                    let call = (index, id.as_deref(), name.as_deref(), arguments.as_str());
                    chains.reply_piece(&levels, step, &node, &message_id, "", Some(call), out);
                }
                if m.messages {
                    let call =
                        json!({"index": index, "id": id, "name": name, "args": arguments, "type": "tool_call_chunk"});
                    let chunk = ai_chunk(&message_id, "", &[call]);
                    out.push(named("messages", &ns, json!([chunk, self.metadata(&node, step, &ns)])));
                    self.streamed.insert(message_id);
                }
            }
            EventKind::Usage { node, message_id, usage } => {
                if let Some(chains) = &mut self.chains {
                    chains.usage(&levels, step, &node, &message_id, usage, out);
                }
            }
            EventKind::TaskStarted { node, task } => {
                let node = node_to_wire(&node);
                if let Some(chains) = &mut self.chains {
                    chains.task_started(&levels, &ns, step, node, task, out);
                }
                if shown_here {
                    let payload =
                        json!({"id": task_id(&self.run_id, step, task), "name": node, "input": null, "triggers": []});
                    self.task_event("task", step, &ns, payload, out);
                }
            }
            EventKind::TaskFinished { node, task, error, interrupted, result } => {
                let node = node_to_wire(&node);
                let result = result.map(|r| to_wire(&r, self.fields));
                if let Some(chains) = &mut self.chains {
                    let stopped = error.is_some() || interrupted;
                    chains.task_finished(&levels, step, node, task, result.clone(), stopped, out);
                }
                if shown_here {
                    let result = result.map(pairs).unwrap_or_default();
                    let interrupts: Vec<Value> = if interrupted { vec![json!({"value": null})] } else { Vec::new() };
                    let payload = json!({"id": task_id(&self.run_id, step, task), "name": node, "error": error,
                        "interrupts": interrupts, "result": result});
                    self.task_event("task_result", step, &ns, payload, out);
                }
            }
            EventKind::Checkpoint { id, step: at, source } if shown_here => {
                let config =
                    json!({"configurable": {"thread_id": self.thread_id, "checkpoint_ns": "", "checkpoint_id": id}});
                let payload = json!({"config": config, "metadata": {"step": at, "source": source.as_str()},
                    "values": self.values, "next": [], "parent_config": null, "tasks": []});
                if m.checkpoints {
                    out.push(named("checkpoints", &ns, payload.clone()));
                }
                if m.debug {
                    out.push(named("debug", &ns, debug("checkpoint", step, &payload)));
                }
            }
            EventKind::Finished { state, .. } => {
                let values = state_to_wire(&state, self.fields);
                if let Some(chains) = &mut self.chains {
                    chains.end(values.clone(), out);
                }
                return Some(Outcome::Finished { values });
            }
            EventKind::Interrupted { state, interrupts } => {
                let interrupts = shown(&interrupts);
                // LangGraph's server reports a pause on the stream as an `__interrupt__` update,
                // or as values when the client did not ask for updates.
                let pause = json!({"__interrupt__": interrupts});
                out.push(named(if m.updates { "updates" } else { "values" }, "", pause));
                let values = state_to_wire(&state, self.fields);
                if let Some(chains) = &mut self.chains {
                    chains.end(values.clone(), out);
                }
                return Some(Outcome::Interrupted { values, interrupts });
            }
            EventKind::Failed(error) => return Some(failed(&error)),
            EventKind::Cancelled => {
                return Some(Outcome::Failed {
                    error: "CancelledError".into(),
                    message: "the run was cancelled".into(),
                });
            }
            _ => {}
        }
        None
    }

    /// In `messages` mode, LangGraph also sends each message a node wrote that was not
    /// streamed token by token (a tool's result, a scripted reply), whole.
    fn whole_messages(&mut self, node: &str, step: u64, ns: &str, update: &Value, out: &mut Vec<WireEvent>) {
        if !self.modes.messages {
            return;
        }
        for field in self.fields {
            let written = match update.get(*field) {
                Some(Value::Object(o)) if o.contains_key("$overwrite") => &o["$overwrite"],
                Some(v) => v,
                None => continue,
            };
            let items = match written {
                Value::Array(items) => items.as_slice(),
                single => std::slice::from_ref(single),
            };
            for message in items.iter().filter(|m| m.is_object()) {
                let id = message.get("id").and_then(Value::as_str).unwrap_or_default();
                if self.streamed.contains(id) || message.get("type").and_then(Value::as_str) == Some("remove") {
                    continue;
                }
                out.push(named("messages", ns, json!([message, self.metadata(node, step, ns)])));
            }
        }
    }

    fn task_event(&self, kind: &str, step: u64, ns: &str, payload: Value, out: &mut Vec<WireEvent>) {
        if self.modes.debug {
            out.push(named("debug", ns, debug(kind, step, &payload)));
        }
        if self.modes.tasks {
            out.push(named("tasks", ns, payload));
        }
    }

    fn metadata(&self, node: &str, step: u64, ns: &str) -> Value {
        json!({
            "langgraph_node": node_to_wire(node),
            "langgraph_step": step,
            "langgraph_checkpoint_ns": ns,
            "checkpoint_ns": ns,
            "thread_id": self.thread_id,
            "run_id": self.run_id,
        })
    }
}

/// A run that failed, as the wire's `error` event says it.
pub(crate) fn failed(error: &GraphError) -> Outcome {
    let debug = format!("{error:?}");
    let kind = debug.split(|c: char| !c.is_alphanumeric()).next().unwrap_or("GraphError").to_owned();
    Outcome::Failed { error: kind, message: error.to_string() }
}

/// An `updates` part: the node's update under its name, and, for an output the node's cache
/// gave, LangGraph's `__metadata__` saying so.
fn updates_part(node: &str, update: &Value, cached: bool) -> Value {
    if cached { json!({ node: update, "__metadata__": {"cached": true} }) } else { json!({ node: update }) }
}

fn named(mode: &str, ns: &str, data: Value) -> WireEvent {
    let name = if ns.is_empty() { mode.to_owned() } else { format!("{mode}|{ns}") };
    WireEvent { name, data }
}

fn debug(kind: &str, step: u64, payload: &Value) -> Value {
    json!({"type": kind, "timestamp": time::now(), "step": step, "payload": payload})
}

/// The namespace as LangGraph writes it: `node:task-uuid` per level, joined by `|`.
fn namespace(levels: &[String]) -> String {
    levels
        .iter()
        .map(|level| match level.split_once(':') {
            Some((node, rest)) => {
                format!("{node}:{}", uuid::Uuid::new_v5(&uuid::Uuid::NAMESPACE_OID, rest.as_bytes()))
            }
            None => level.clone(),
        })
        .collect::<Vec<_>>()
        .join("|")
}

/// An update as the list of `[channel, value]` pairs LangGraph's task results carry.
fn pairs(update: Value) -> Value {
    match update {
        Value::Object(fields) => Value::Array(fields.into_iter().map(|(k, v)| json!([k, v])).collect()),
        other => other,
    }
}
