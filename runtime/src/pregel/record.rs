//! The bodies of checkpoint and write records, and their decoding into runnable parts.
//!
//! Records name nodes by name, not index, so a record stays readable when nodes are added or
//! reordered. Bodies are JSON: self-describing (the state types may use any serde feature),
//! readable when a record has to be inspected, and decoded field by field so a damaged record
//! is reported with the field that failed.

use crate::checkpoint::{CheckpointError, FORMAT_VERSION};
use crate::graph::Inner;
use crate::interrupt::Interrupt;
use crate::node::{Goto, NodeOutput, Payload};
use crate::pregel::Task;
use crate::state::State;
use serde::{Deserialize, Serialize};
use serde_json::Value;

/// The node name of the pseudo-task that carries a run's input.
pub(crate) const INPUT: &str = "__input__";

#[derive(Serialize)]
struct BodyOut<'a, S> {
    #[serde(skip_serializing_if = "Option::is_none")]
    state: Option<&'a S>,
    next: Vec<TaskOut<'a>>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    deferred: Vec<&'a str>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    joins: Vec<Vec<bool>>,
}

#[derive(Serialize)]
struct TaskOut<'a> {
    node: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<Value>,
}

#[derive(Deserialize)]
struct BodyIn {
    #[serde(default)]
    state: Option<Value>,
    next: Vec<TaskIn>,
    #[serde(default)]
    deferred: Vec<String>,
    #[serde(default)]
    joins: Vec<Vec<bool>>,
}

#[derive(Deserialize)]
struct TaskIn {
    node: String,
    #[serde(default)]
    payload: Option<Value>,
}

#[derive(Serialize)]
struct WriteOut<'a, U> {
    node: &'a str,
    update: &'a U,
    #[serde(skip_serializing_if = "Option::is_none")]
    goto: Option<&'a [u32]>,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    sends: Vec<(u32, Value)>,
}

#[derive(Deserialize)]
struct WriteIn {
    node: String,
    update: Value,
    #[serde(default)]
    goto: Option<Vec<u32>>,
    #[serde(default)]
    sends: Vec<(u32, Value)>,
}

/// A decoded checkpoint body.
pub(crate) struct Body<S> {
    pub(crate) state: Option<S>,
    pub(crate) next: Vec<Task>,
    pub(crate) deferred: Vec<u32>,
    pub(crate) joins: Vec<Vec<bool>>,
}

/// Where a decoding error is reported.
pub(crate) struct At<'a> {
    pub(crate) thread: &'a str,
    pub(crate) checkpoint: &'a str,
}

impl At<'_> {
    // Callers hand over errors they no longer need; taking them by value keeps the many call
    // sites short.
    #[allow(clippy::needless_pass_by_value)]
    pub(crate) fn corrupt(&self, field: impl Into<String>, reason: impl ToString) -> CheckpointError {
        CheckpointError::Corrupt {
            thread: self.thread.to_owned(),
            checkpoint: self.checkpoint.to_owned(),
            field: field.into(),
            reason: reason.to_string(),
        }
    }

    pub(crate) fn check_format(&self, format: u16, field: &str) -> Result<(), CheckpointError> {
        if format == FORMAT_VERSION {
            Ok(())
        } else {
            Err(self.corrupt(field, format!("format {format} is not the supported format {FORMAT_VERSION}")))
        }
    }
}

/// Encodes a checkpoint body: the state when `snapshot`, and the next step's tasks.
pub(crate) fn encode_body<S: State, C>(
    graph: &Inner<S, C>,
    state: Option<&S>,
    next: &[Task],
    deferred: &[u32],
    joins: &[Vec<bool>],
) -> Result<Vec<u8>, CheckpointError> {
    let mut tasks = Vec::with_capacity(next.len());
    for task in next {
        let node = &graph.nodes[task.node as usize];
        let payload = match (&task.payload, &node.takes) {
            (Some(payload), Some(kind)) => Some(
                (kind.encode)(&**payload)
                    .map_err(|e| CheckpointError::backend(format!("encoded a payload for `{}`", node.name), e))?,
            ),
            _ => None,
        };
        tasks.push(TaskOut { node: &node.name, payload });
    }
    let body = BodyOut {
        state,
        next: tasks,
        deferred: deferred.iter().map(|&n| &*graph.node_names[n as usize]).collect(),
        joins: joins.to_vec(),
    };
    serde_json::to_vec(&body).map_err(|e| CheckpointError::backend("encoded a checkpoint", e))
}

/// Decodes a checkpoint body.
pub(crate) fn decode_body<S: State, C>(
    graph: &Inner<S, C>,
    at: &At<'_>,
    bytes: &[u8],
) -> Result<Body<S>, CheckpointError> {
    let body: BodyIn = serde_json::from_slice(bytes).map_err(|e| at.corrupt("body", e))?;
    let state = match body.state {
        Some(value) => Some(serde_json::from_value::<S>(value).map_err(|e| at.corrupt("state", e))?),
        None => None,
    };
    let mut next = Vec::with_capacity(body.next.len());
    for (i, task) in body.next.into_iter().enumerate() {
        let node =
            node_index(graph, &task.node).ok_or_else(|| at.corrupt(format!("next[{i}].node"), unknown(&task.node)))?;
        let payload = match (task.payload, &graph.nodes[node as usize].takes) {
            (Some(value), Some(kind)) => {
                Some((kind.decode)(value).map_err(|e| at.corrupt(format!("next[{i}].payload"), e))?)
            }
            (None, None) => None,
            (Some(_), None) => {
                return Err(at.corrupt(format!("next[{i}].payload"), format!("node `{}` takes no payload", task.node)));
            }
            (None, Some(_)) => {
                return Err(at.corrupt(format!("next[{i}].payload"), format!("node `{}` needs a payload", task.node)));
            }
        };
        next.push(Task { node, payload, answers: None });
    }
    let deferred = body
        .deferred
        .iter()
        .map(|name| node_index(graph, name).ok_or_else(|| at.corrupt("deferred", unknown(name))))
        .collect::<Result<_, _>>()?;
    if body.joins.len() != graph.joins.len()
        || body.joins.iter().zip(&graph.joins).any(|(j, g)| j.len() != g.sources as usize)
    {
        return Err(at.corrupt("joins", "the graph's joins differ from the stored ones"));
    }
    Ok(Body { state, next, deferred, joins: body.joins })
}

/// Encodes the write of one finished task.
pub(crate) fn encode_write<S: State, C>(
    graph: &Inner<S, C>,
    task: &Task,
    output: &NodeOutput<S>,
) -> Result<Vec<u8>, CheckpointError> {
    let node = &graph.nodes[task.node as usize];
    let mut sends = Vec::with_capacity(output.sends.len());
    for payload in &output.sends {
        let target = &graph.nodes[node.sends[payload.target as usize] as usize];
        let kind = target
            .takes
            .as_ref()
            .ok_or_else(|| CheckpointError::backend("encoded a Send", "its target takes no payload"))?;
        let value = (kind.encode)(&*payload.value)
            .map_err(|e| CheckpointError::backend(format!("encoded a payload for `{}`", target.name), e))?;
        sends.push((payload.target, value));
    }
    let goto = match &output.goto {
        Goto::Edges => None,
        Goto::Routes(routes) => Some(routes.as_slice()),
    };
    encode_input_like(&node.name, &output.update, goto, sends)
}

/// Encodes a run's input as the write of the input pseudo-task.
pub(crate) fn encode_input<S: State>(update: &S::Update) -> Result<Vec<u8>, CheckpointError> {
    encode_input_like(INPUT, update, None, Vec::new())
}

fn encode_input_like<U: Serialize>(
    node: &str,
    update: &U,
    goto: Option<&[u32]>,
    sends: Vec<(u32, Value)>,
) -> Result<Vec<u8>, CheckpointError> {
    serde_json::to_vec(&WriteOut { node, update, goto, sends })
        .map_err(|e| CheckpointError::backend("encoded a task's write", e))
}

/// A decoded write: the task's output, the run's input, an interrupt the task raised, or the
/// answer it was given. Index 0 holds the output (or input); index `1 + 2n` the task's `n`-th
/// interrupt; index `2 + 2n` its answer.
pub(crate) enum Decoded<S: State> {
    Input(S::Update),
    Output(NodeOutput<S>),
    Interrupt(Interrupt),
    Answer(u32, Value),
}

/// The write index of a task's `n`-th interrupt.
pub(crate) fn interrupt_index(call: u32) -> u32 {
    1 + 2 * call
}

/// The write index of the answer to a task's `n`-th interrupt.
pub(crate) fn answer_index(call: u32) -> u32 {
    2 + 2 * call
}

/// Encodes an interrupt a task raised.
pub(crate) fn encode_interrupt(interrupt: &Interrupt) -> Result<Vec<u8>, CheckpointError> {
    serde_json::to_vec(interrupt).map_err(|e| CheckpointError::backend("encoded an interrupt", e))
}

/// Encodes an answer to an interrupt.
pub(crate) fn encode_answer(answer: &Value) -> Result<Vec<u8>, CheckpointError> {
    serde_json::to_vec(answer).map_err(|e| CheckpointError::backend("encoded an interrupt's answer", e))
}

/// Decodes stored write `index` of task `task` of checkpoint `at`.
pub(crate) fn decode_write<S: State, C>(
    graph: &Inner<S, C>,
    at: &At<'_>,
    task: u32,
    index: u32,
    bytes: &[u8],
) -> Result<Decoded<S>, CheckpointError> {
    let field = |name: &str| format!("writes[{task}].{name}");
    if index > 0 {
        let call = (index - 1) / 2;
        return if index % 2 == 1 {
            serde_json::from_slice(bytes).map(Decoded::Interrupt).map_err(|e| at.corrupt(field("interrupt"), e))
        } else {
            serde_json::from_slice(bytes).map(|v| Decoded::Answer(call, v)).map_err(|e| at.corrupt(field("answer"), e))
        };
    }
    let write: WriteIn = serde_json::from_slice(bytes).map_err(|e| at.corrupt(field("body"), e))?;
    let update: S::Update = serde_json::from_value(write.update).map_err(|e| at.corrupt(field("update"), e))?;
    if write.node == INPUT {
        return Ok(Decoded::Input(update));
    }
    let node = node_index(graph, &write.node).ok_or_else(|| at.corrupt(field("node"), unknown(&write.node)))?;
    let spec = &graph.nodes[node as usize];
    let goto = match write.goto {
        None => Goto::Edges,
        Some(routes) => {
            if let Some(bad) = routes.iter().find(|&&r| r as usize >= spec.routes.len()) {
                return Err(at.corrupt(field("goto"), format!("route {bad} is not a route of `{}`", write.node)));
            }
            Goto::Routes(routes)
        }
    };
    let mut sends = Vec::with_capacity(write.sends.len());
    for (target, value) in write.sends {
        let kind = spec
            .sends
            .get(target as usize)
            .and_then(|&t| graph.nodes[t as usize].takes)
            .ok_or_else(|| at.corrupt(field("sends"), format!("`{}` has no Send target {target}", write.node)))?;
        let payload = (kind.decode)(value).map_err(|e| at.corrupt(field("sends"), e))?;
        sends.push(Payload { target, value: payload });
    }
    Ok(Decoded::Output(NodeOutput { update: Box::new(update), goto, sends }))
}

fn node_index<S: State, C>(graph: &Inner<S, C>, name: &str) -> Option<u32> {
    graph.node_names.iter().position(|n| &**n == name).map(|i| i as u32)
}

fn unknown(name: &str) -> String {
    format!("no node named `{name}` in this graph (was it renamed or removed?)")
}
