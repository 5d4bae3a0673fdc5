//! The stored records of a thread, and their decoding into runnable parts.
//!
//! A checkpoint's body holds the next step's tasks (nodes by name, Send payloads), the
//! planner's progress, the list of the parent's writes its state folds in, and now and then a
//! snapshot of the state. A write is a task's output, the run's input, an interrupt, the answer
//! to one, or the outcome of a step that paused or failed. Every body is sealed with an
//! integrity check over the body and the record's columns (see `codec::checksum`), and
//! decoding is strict: every field present, nothing extra, each write checked against the task
//! it claims to belong to. Records name nodes by name, so a graph may gain or reorder nodes and
//! still read its old threads.

use crate::checkpoint::{CheckpointError, CheckpointRecord, WriteRecord};
use crate::error::GraphError;
use crate::graph::Inner;
use crate::interrupt::Interrupt;
use crate::node::{Goto, NodeOutput, Payload};
use crate::pregel::Task;
use crate::record::codec::checksum::{self, WriteKey};
use crate::record::codec::envelope::{In, Out};
use crate::record::codec::{self, DecodeError};
pub(crate) use crate::record::format::{
    At, Ending, Folded, OUTCOME_TASK, OUTPUT_INDEX, Outcome, answer_index, check_of, encode_answer, encode_input,
    encode_interrupt, encode_outcome, encode_result, interrupt_index, result_index, seal_checkpoint, seal_write,
    unstorable,
};
use crate::record::format::{Place, RESULT_BASE, decode_outcome, key_of, kind, unknown};
use crate::state::State;
use serde_json::Value;

/// A decoded checkpoint body.
pub(crate) struct Body<S> {
    pub(crate) state: Option<S>,
    pub(crate) next: Vec<Task>,
    /// The run's input is stored but not yet applied (an input checkpoint): continuing from
    /// here applies it, then runs the graph's entry.
    pub(crate) input_pending: bool,
    pub(crate) deferred: Vec<u32>,
    pub(crate) joins: Vec<Vec<bool>>,
    /// The writes of the parent checkpoint that this state folds in, in fold order.
    pub(crate) folded: Vec<Folded>,
}

/// What a checkpoint body is made of, to encode.
pub(crate) struct BodyParts<'a, S> {
    pub(crate) state: Option<&'a S>,
    pub(crate) next: &'a [Task],
    pub(crate) input_pending: bool,
    pub(crate) deferred: &'a [u32],
    pub(crate) joins: &'a [Vec<bool>],
    pub(crate) folded: &'a [Folded],
}

/// Encodes a checkpoint body's payload (without its integrity check).
pub(crate) fn encode_body<S: State, C>(graph: &Inner<S, C>, parts: &BodyParts<'_, S>) -> Result<Vec<u8>, GraphError> {
    let mut out = Out::scratch();
    out.array(parts.next.len());
    for task in parts.next {
        let node = &graph.nodes[task.node as usize];
        match (&task.payload, &node.takes) {
            (Some(payload), Some(kind)) => {
                out.array(2);
                out.text(&node.name);
                let start = out.bytes.len();
                (kind.encode)(&**payload, &mut out.bytes)
                    .map_err(|e| unstorable(format!("a Send payload for `{}`", node.name), e))?;
                wrap_blob(&mut out.bytes, start);
            }
            _ => out.text(&node.name),
        }
    }
    out.flag(parts.input_pending);
    out.array(parts.deferred.len());
    for &node in parts.deferred {
        out.text(&graph.node_names[node as usize]);
    }
    out.array(parts.joins.len());
    for join in parts.joins {
        out.array(join.len());
        for &filled in join {
            out.flag(filled);
        }
    }
    out.array(parts.folded.len());
    for folded in parts.folded {
        out.array(3);
        out.uint(u64::from(folded.task));
        out.uint(u64::from(folded.index));
        out.uint(u64::from(folded.check));
    }
    out.flag(parts.state.is_some());
    if let Some(state) = parts.state {
        codec::encode(&mut out.bytes, state).map_err(|e| unstorable("the state", e))?;
    }
    Ok(out.into_exact())
}

/// Turns the bytes written since `start` into one `MessagePack` `bin` value, in place.
fn wrap_blob(bytes: &mut Vec<u8>, start: usize) {
    let value = bytes.split_off(start);
    let mut header = Vec::with_capacity(5);
    let _ = rmp::encode::write_bin_len(&mut header, value.len() as u32);
    bytes.extend_from_slice(&header);
    bytes.extend_from_slice(&value);
}
/// Decodes a stored checkpoint, verifying its integrity check first.
pub(crate) fn decode_body<S: State, C>(
    graph: &Inner<S, C>,
    thread: &str,
    record: &CheckpointRecord,
) -> Result<Body<S>, CheckpointError> {
    let at = At { thread, checkpoint: &record.id };
    at.check_format(record.format, "format")?;
    if record.thread_id != thread {
        return Err(at.corrupt("thread_id", format!("the record belongs to thread `{}`", record.thread_id)));
    }
    let payload = checksum::open(&record.body, |p| key_of(record).check(p)).map_err(|e| at.corrupt("body", e))?;
    let mut input = In::new(payload);
    let fail = |e: DecodeError| at.decoding("", e);
    let tasks = input.array("next").map_err(fail)?;
    let mut next = Vec::with_capacity(tasks);
    for i in 0..tasks {
        let field = format!("next[{i}]");
        let (name, payload) = if input.is_text() {
            (input.text(&field).map_err(fail)?, None)
        } else {
            if input.array(&field).map_err(fail)? != 2 {
                return Err(at.corrupt(field, "a task is a node name, or a node name and a payload"));
            }
            let name = input.text(&format!("{field}.node")).map_err(fail)?;
            (name, Some(input.blob(&format!("{field}.payload")).map_err(fail)?))
        };
        let node = node_index(graph, name).ok_or_else(|| at.corrupt(format!("{field}.node"), unknown(name)))?;
        let payload = match (payload, &graph.nodes[node as usize].takes) {
            (Some(bytes), Some(kind)) => {
                Some((kind.decode)(bytes).map_err(|e| at.decoding(&format!("{field}.payload"), e))?)
            }
            (None, None) => None,
            (Some(_), None) => {
                return Err(at.corrupt(format!("{field}.payload"), format!("node `{name}` takes no payload")));
            }
            (None, Some(_)) => {
                return Err(at.corrupt(format!("{field}.payload"), format!("node `{name}` needs a payload")));
            }
        };
        next.push(Task { node, payload, answers: None, results: None });
    }
    let input_pending = input.flag("input_pending").map_err(fail)?;
    let count = input.array("deferred").map_err(fail)?;
    let mut deferred = Vec::with_capacity(count);
    for _ in 0..count {
        let name = input.text("deferred").map_err(fail)?;
        deferred.push(node_index(graph, name).ok_or_else(|| at.corrupt("deferred", unknown(name)))?);
    }
    let count = input.array("joins").map_err(fail)?;
    let mut joins = Vec::with_capacity(count);
    for _ in 0..count {
        let slots = input.array("joins").map_err(fail)?;
        let mut join = Vec::with_capacity(slots);
        for _ in 0..slots {
            join.push(input.flag("joins").map_err(fail)?);
        }
        joins.push(join);
    }
    if joins.len() != graph.joins.len() || joins.iter().zip(&graph.joins).any(|(j, g)| j.len() != g.sources as usize) {
        return Err(at.corrupt("joins", "the graph's joins differ from the stored ones"));
    }
    let count = input.array("folded").map_err(fail)?;
    let mut folded = Vec::with_capacity(count);
    for _ in 0..count {
        if input.array("folded").map_err(fail)? != 3 {
            return Err(at.corrupt("folded", "an entry that is not (task, index, check)"));
        }
        folded.push(Folded {
            task: input.u32("folded").map_err(fail)?,
            index: input.u32("folded").map_err(fail)?,
            check: input.u32("folded").map_err(fail)?,
        });
    }
    let state = if input.flag("state").map_err(fail)? {
        Some(codec::decode::<S>(input.rest()).map_err(|e| at.decoding("state", e))?)
    } else {
        input.end("state").map_err(fail)?;
        None
    };
    Ok(Body { state, next, input_pending, deferred, joins, folded })
}
/// Encodes the output of one finished task.
pub(crate) fn encode_output<S: State, C>(
    graph: &Inner<S, C>,
    task: &Task,
    output: &NodeOutput<S>,
) -> Result<Vec<u8>, GraphError> {
    let node = &graph.nodes[task.node as usize];
    let mut out = Out::scratch();
    out.uint(kind::OUTPUT);
    out.text(&node.name);
    match &output.goto {
        Goto::Edges => out.nil(),
        Goto::Routes(routes) => {
            out.array(routes.len());
            for &route in routes {
                out.uint(u64::from(route));
            }
        }
    }
    out.array(output.sends.len());
    for payload in &output.sends {
        let target = &graph.nodes[node.sends[payload.target as usize] as usize];
        let kind = target.takes.as_ref().ok_or_else(|| GraphError::Unstorable {
            what: format!("a Send from `{}`", node.name),
            field: String::new(),
            reason: format!("its target `{}` takes no payload", target.name),
        })?;
        out.array(2);
        out.uint(u64::from(payload.target));
        let start = out.bytes.len();
        (kind.encode)(&*payload.value, &mut out.bytes)
            .map_err(|e| unstorable(format!("a Send payload from `{}` to `{}`", node.name, target.name), e))?;
        wrap_blob(&mut out.bytes, start);
    }
    codec::encode_update(&mut out.bytes, &output.update)
        .map_err(|e| unstorable(format!("the update of node `{}`", node.name), e))?;
    Ok(out.into_exact())
}

/// A decoded write.
pub(crate) enum Decoded<S: State> {
    Input(S::Update),
    Output(NodeOutput<S>),
    Interrupt {
        outcome: u32,
        interrupt: Interrupt,
    },
    Answer(Value),
    Outcome(Outcome),
    /// The result of a finished call, with the call's key.
    Result(String, Value),
}

/// Decodes stored write `record` of the checkpoint whose body is `body`, verifying its integrity
/// check and that it belongs to the task it is keyed to.
pub(crate) fn decode_write<S: State, C>(
    graph: &Inner<S, C>,
    thread: &str,
    record: &WriteRecord,
    body: &Body<S>,
) -> Result<Decoded<S>, CheckpointError> {
    let at = At { thread, checkpoint: &record.checkpoint_id };
    let (task, index) = (record.task, record.index);
    let slot =
        if task == OUTCOME_TASK { format!("writes[outcome {index}]") } else { format!("writes[{task}.{index}]") };
    at.check_format(record.format, &format!("{slot}.format"))?;
    let key = WriteKey { thread, checkpoint: &record.checkpoint_id, task, index, format: record.format };
    let payload = checksum::open(&record.body, |p| key.check(p)).map_err(|e| at.corrupt(&slot, e))?;
    let mut input = In::new(payload);
    let place = Place { at: &at, slot: &slot, task, index };
    match input.uint("kind").map_err(|e| place.fail(e))? {
        kind::INPUT => {
            if !body.input_pending || task != 0 || index != OUTPUT_INDEX {
                return Err(place.wrong("a run's input"));
            }
            Ok(Decoded::Input(codec::decode(input.rest()).map_err(|e| place.field("update", e))?))
        }
        kind::OUTPUT => decode_output(graph, &place, input, body),
        kind::INTERRUPT => {
            let name = input.text("node").map_err(|e| place.fail(e))?;
            if index % 2 != 1 || node_of(&place, graph, body) != Some(name) {
                return Err(place.wrong(&format!("an interrupt of node `{name}`")));
            }
            let outcome = input.u32("outcome").map_err(|e| place.fail(e))?;
            let id = input.text("id").map_err(|e| place.fail(e))?.to_owned();
            let value = codec::decode(input.rest()).map_err(|e| place.field("value", e))?;
            let interrupt = Interrupt { id, node: name.to_owned(), value, task, call: (index - 1) / 2 };
            Ok(Decoded::Interrupt { outcome, interrupt })
        }
        kind::ANSWER => {
            if index < 2 || index % 2 != 0 || node_of(&place, graph, body).is_none() {
                return Err(place.wrong("an answer to an interrupt"));
            }
            Ok(Decoded::Answer(codec::decode(input.rest()).map_err(|e| place.field("answer", e))?))
        }
        kind::RESULT => {
            if index & RESULT_BASE == 0 || node_of(&place, graph, body).is_none() {
                return Err(place.wrong("the result of a call"));
            }
            let key = input.text("key").map_err(|e| place.fail(e))?.to_owned();
            Ok(Decoded::Result(key, codec::decode(input.rest()).map_err(|e| place.field("result", e))?))
        }
        kind::OUTCOME => {
            if task != OUTCOME_TASK {
                return Err(place.wrong("a step's outcome"));
            }
            decode_outcome(&place, input).map(Decoded::Outcome)
        }
        other => Err(at.corrupt(format!("{slot}.kind"), format!("unknown kind of write {other}"))),
    }
}

/// The node of the task the write at `place` is keyed to.
fn node_of<'g, S: State, C>(place: &Place<'_>, graph: &'g Inner<S, C>, body: &Body<S>) -> Option<&'g str> {
    body.next.get(place.task as usize).map(|t| &*graph.node_names[t.node as usize])
}

/// A task's output: its node (checked against the task's), routes, Sends and update.
fn decode_output<S: State, C>(
    graph: &Inner<S, C>,
    place: &Place<'_>,
    mut input: In<'_>,
    body: &Body<S>,
) -> Result<Decoded<S>, CheckpointError> {
    let name = input.text("node").map_err(|e| place.fail(e))?;
    if place.index != OUTPUT_INDEX {
        return Err(place.wrong("a task's output"));
    }
    match node_of(place, graph, body) {
        Some(expected) if expected == name => {}
        Some(expected) => {
            return Err(place
                .corrupt("node", format!("the write names node `{name}`, but task {} runs `{expected}`", place.task)));
        }
        None => return Err(place.at.corrupt(place.slot, format!("the checkpoint has no task {}", place.task))),
    }
    output_parts(graph, body.next[place.task as usize].node, place, input).map(Decoded::Output)
}

/// Reads back an output of node `node` that a cache held (as [`encode_output`] wrote it): the
/// errors name the entry's `namespace` and `key` where a stored write names its thread and
/// checkpoint.
pub(crate) fn decode_cached<S: State, C>(
    graph: &Inner<S, C>,
    node: u32,
    namespace: &str,
    key: &str,
    bytes: &[u8],
) -> Result<NodeOutput<S>, CheckpointError> {
    let at = At { thread: namespace, checkpoint: key };
    let place = Place { at: &at, slot: "cache entry", task: 0, index: OUTPUT_INDEX };
    let mut input = In::new(bytes);
    if input.uint("kind").map_err(|e| place.fail(e))? != kind::OUTPUT {
        return Err(place.wrong("something other than a node's output"));
    }
    let name = input.text("node").map_err(|e| place.fail(e))?;
    let expected = &graph.nodes[node as usize].name;
    if name != &**expected {
        return Err(place.corrupt("node", format!("the entry is an output of `{name}`, not of `{expected}`")));
    }
    output_parts(graph, node, &place, input)
}

/// The routes, Sends and update of an output of node `node`, after its header.
fn output_parts<S: State, C>(
    graph: &Inner<S, C>,
    node: u32,
    place: &Place<'_>,
    mut input: In<'_>,
) -> Result<NodeOutput<S>, CheckpointError> {
    let spec = &graph.nodes[node as usize];
    let name = &*spec.name;
    let goto = if input.nil() {
        Goto::Edges
    } else {
        let count = input.array("goto").map_err(|e| place.fail(e))?;
        let mut routes = Vec::with_capacity(count);
        for _ in 0..count {
            let route = input.u32("goto").map_err(|e| place.fail(e))?;
            if route as usize >= spec.routes.len() {
                return Err(place.corrupt("goto", format!("route {route} is not a route of `{name}`")));
            }
            routes.push(route);
        }
        Goto::Routes(routes)
    };
    let count = input.array("sends").map_err(|e| place.fail(e))?;
    let mut sends = Vec::with_capacity(count);
    for _ in 0..count {
        if input.array("sends").map_err(|e| place.fail(e))? != 2 {
            return Err(place.corrupt("sends", "a Send is a target and a payload"));
        }
        let target = input.u32("sends").map_err(|e| place.fail(e))?;
        let bytes = input.blob("sends").map_err(|e| place.fail(e))?;
        let kind = spec
            .sends
            .get(target as usize)
            .and_then(|&t| graph.nodes[t as usize].takes)
            .ok_or_else(|| place.corrupt("sends", format!("`{name}` has no Send target {target}")))?;
        let value = (kind.decode)(bytes).map_err(|e| place.field("sends", e))?;
        sends.push(Payload { target, value });
    }
    let update = codec::decode::<S::Update>(input.rest()).map_err(|e| place.field("update", e))?;
    Ok(NodeOutput { update, goto, sends })
}
fn node_index<S: State, C>(graph: &Inner<S, C>, name: &str) -> Option<u32> {
    graph.node_names.iter().position(|n| &**n == name).map(|i| i as u32)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::{FORMAT_VERSION, Source};
    use crate::graph::CompiledGraph;
    use crate::prelude::*;
    use serde_json::{Value, json};

    #[crate::state]
    struct Doc {
        name: String,
        counter: i64,
        items: Vec<String>,
    }

    fn graph() -> CompiledGraph<Doc> {
        let a = |_d: &Doc| DocUpdate::new().counter(1);
        let b = |_d: &Doc| DocUpdate::new().counter(2);
        StateGraph::<Doc>::new()
            .add_node("a", a)
            .add_node("b", b)
            .add_edge(START, "a")
            .add_edge("a", "b")
            .add_edge("b", END)
            .compile()
            .unwrap()
    }

    fn record(payload: Vec<u8>) -> CheckpointRecord {
        let record = CheckpointRecord {
            thread_id: "t".into(),
            id: "c1".into(),
            parent_id: None,
            step: 0,
            source: Source::Loop,
            created_at_ms: 1,
            format: FORMAT_VERSION,
            body: Vec::new(),
        };
        seal_checkpoint(record, payload)
    }

    /// A body with `next` tasks by name, and `state` (any JSON) when given.
    fn body(next: &[&str], state: Option<Value>, extra: &[u8]) -> Vec<u8> {
        let mut out = Out::with_capacity(64);
        out.array(next.len());
        for task in next {
            out.text(task);
        }
        out.flag(false);
        out.array(0);
        out.array(0);
        out.array(0);
        out.flag(state.is_some());
        if let Some(state) = state {
            codec::encode(&mut out.bytes, &state).unwrap();
        }
        out.bytes.extend_from_slice(extra);
        out.bytes
    }

    fn field_of<T>(result: Result<T, CheckpointError>) -> (String, String) {
        match result {
            Err(CheckpointError::Corrupt { field, reason, .. }) => (field, reason),
            Err(other) => panic!("expected a Corrupt error, got {other:?}"),
            Ok(_) => panic!("expected a Corrupt error, got a value"),
        }
    }

    fn decode(payload: Vec<u8>) -> Result<Body<Doc>, CheckpointError> {
        let app = graph();
        decode_body(app.inner(), "t", &record(payload))
    }

    #[test]
    fn a_stored_state_must_have_every_field_and_no_other() {
        let good = json!({"name": "n", "counter": 3, "items": ["x"]});
        assert_eq!(decode(body(&["a"], Some(good), &[])).unwrap().state.unwrap().counter, 3);
        let cases = [
            (json!({"name": "n", "counter": 3}), "state", "missing field `items`"),
            (json!({"name": "n", "counter": 3, "items": [], "bogus": 1}), "state.bogus", "unknown field `bogus`"),
            (json!({"name": "n", "counter": "three", "items": []}), "state.counter", "invalid type"),
            (json!({"name": "n", "counter": 3, "items": [1]}), "state.items[0]", "invalid type"),
            (json!([1, 2]), "state[0]", "invalid type"),
        ];
        for (state, field, reason) in cases {
            let (got_field, got_reason) = field_of(decode(body(&["a"], Some(state.clone()), &[])));
            assert_eq!(got_field, field, "{state}");
            assert!(got_reason.contains(reason), "{state}: {got_reason}");
        }
    }

    #[test]
    fn a_checkpoint_body_is_read_field_by_field_and_to_its_end() {
        let (field, reason) = field_of(decode(body(&["c"], None, &[])));
        assert_eq!((field.as_str(), reason.contains("no node named `c`")), ("next[0].node", true));
        let (field, _) = field_of(decode(body(&["a"], None, &[0xc0])));
        assert_eq!(field, "state", "bytes after the last field");
        let (field, _) = field_of(decode(vec![0x91, 0x01]));
        assert_eq!(field, "next[0]", "a task that is neither a name nor (name, payload)");
        let mut joins = Out::with_capacity(8);
        joins.array(0);
        joins.flag(false);
        joins.array(0);
        joins.array(1);
        joins.array(0);
        joins.array(0);
        joins.flag(false);
        let (field, _) = field_of(decode(joins.bytes));
        assert_eq!(field, "joins", "a join the graph does not have");
    }

    fn write(task: u32, index: u32, payload: Vec<u8>) -> WriteRecord {
        seal_write("t", "c1", task, index, payload)
    }

    fn output(node: &str, update: &Value) -> Vec<u8> {
        let mut out = Out::with_capacity(32);
        out.uint(kind::OUTPUT);
        out.text(node);
        out.nil();
        out.array(0);
        codec::encode(&mut out.bytes, update).unwrap();
        out.bytes
    }

    fn decode_write_of(record: &WriteRecord, input_pending: bool) -> Result<Decoded<Doc>, CheckpointError> {
        let app = graph();
        let mut body = decode_body(app.inner(), "t", &record_of(&["a"])).unwrap();
        body.input_pending = input_pending;
        super::decode_write(app.inner(), "t", record, &body)
    }

    fn record_of(next: &[&str]) -> CheckpointRecord {
        record(body(next, None, &[]))
    }

    #[test]
    fn a_task_write_is_strict_and_must_belong_to_its_task() {
        let good = write(0, 0, output("a", &json!({"counter": [0, 5]})));
        assert!(matches!(decode_write_of(&good, false), Ok(Decoded::Output(_))));
        let cases = [
            (write(0, 0, output("a", &json!({"bogus": [0, 1]}))), "writes[0.0].update.bogus", "unknown field `bogus`"),
            (write(0, 0, output("a", &json!({"counter": 5}))), "writes[0.0].update.counter", "invalid type"),
            (
                write(0, 0, output("a", &json!({"counter": [7, 5]}))),
                "writes[0.0].update.counter",
                "unknown write tag 7",
            ),
            (write(0, 0, output("b", &json!({}))), "writes[0.0].node", "task 0 runs `a`"),
            (write(1, 0, output("a", &json!({}))), "writes[1.0]", "has no task 1"),
            (write(0, 2, output("a", &json!({}))), "writes[0.2]", "wrong key"),
        ];
        for (record, field, reason) in cases {
            let (got_field, got_reason) = field_of(decode_write_of(&record, false));
            assert_eq!(got_field, field, "{reason}");
            assert!(got_reason.contains(reason), "{field}: {got_reason}");
        }
        let mut routed = Out::with_capacity(16);
        routed.uint(kind::OUTPUT);
        routed.text("a");
        routed.array(1);
        routed.uint(3);
        routed.array(0);
        codec::encode(&mut routed.bytes, &json!({})).unwrap();
        let (field, reason) = field_of(decode_write_of(&write(0, 0, routed.bytes), false));
        assert_eq!((field.as_str(), reason.contains("route 3")), ("writes[0.0].goto", true));
    }

    #[test]
    fn inputs_interrupts_answers_and_outcomes_are_strict_too() {
        let mut input = Out::with_capacity(16);
        input.uint(kind::INPUT);
        codec::encode(&mut input.bytes, &json!({"nmae": [0, "x"]})).unwrap();
        let misspelt = write(0, 0, input.bytes.clone());
        let (field, reason) = field_of(decode_write_of(&misspelt, true));
        assert_eq!((field.as_str(), reason.contains("unknown field `nmae`")), ("writes[0.0].update.nmae", true));
        let (field, reason) = field_of(decode_write_of(&misspelt, false));
        assert_eq!(
            (field.as_str(), reason.contains("wrong key")),
            ("writes[0.0]", true),
            "an input on a loop checkpoint"
        );

        let interrupt = Interrupt { id: "c1:0:0".into(), node: "b".into(), value: json!("?"), task: 0, call: 0 };
        let (field, reason) = field_of(decode_write_of(&write(0, 1, encode_interrupt(&interrupt, 0).unwrap()), false));
        assert_eq!((field.as_str(), reason.contains("an interrupt of node `b`")), ("writes[0.1]", true));
        let mut truncated = encode_interrupt(&Interrupt { node: "a".into(), ..interrupt }, 0).unwrap();
        truncated.truncate(6);
        assert!(decode_write_of(&write(0, 1, truncated), false).is_err());
        let (field, _) = field_of(decode_write_of(&write(0, 1, encode_answer(&json!(1)).unwrap()), false));
        assert_eq!(field, "writes[0.1]", "an answer under an interrupt's index");

        let outcome = Outcome { ending: Ending::Paused, writes: Vec::new(), errors: vec![(0, "boom".into())] };
        let mut bytes = encode_outcome(&outcome);
        assert!(
            matches!(decode_write_of(&write(OUTCOME_TASK, 0, bytes.clone()), false), Ok(Decoded::Outcome(o)) if o == outcome)
        );
        bytes.push(0xc0);
        assert!(decode_write_of(&write(OUTCOME_TASK, 0, bytes), false).is_err(), "bytes after the last field");
        let mut unknown = Out::with_capacity(8);
        unknown.uint(kind::OUTCOME);
        unknown.uint(9);
        let (field, _) = field_of(decode_write_of(&write(OUTCOME_TASK, 0, unknown.bytes), false));
        assert_eq!(field, "writes[outcome 0].ending");
        let mut strange = Out::with_capacity(4);
        strange.uint(42);
        let (field, _) = field_of(decode_write_of(&write(0, 0, strange.bytes), false));
        assert_eq!(field, "writes[0.0].kind");
    }

    #[test]
    fn call_results_are_strict_and_keyed_to_their_slot() {
        let message = json!({"role": "tool", "content": "42", "tool_call_id": "c1"});
        let stored = encode_result("c1", &message).unwrap();
        let decoded = decode_write_of(&write(0, result_index(3), stored.clone()), false);
        assert!(matches!(decoded, Ok(Decoded::Result(key, value)) if key == "c1" && value == message));
        let (field, reason) = field_of(decode_write_of(&write(0, 5, stored.clone()), false));
        assert_eq!((field.as_str(), reason.contains("the result of a call")), ("writes[0.5]", true));
        let (field, _) = field_of(decode_write_of(&write(7, result_index(0), stored.clone()), false));
        assert_eq!(field, format!("writes[7.{}]", result_index(0)), "a task the checkpoint does not have");
        let mut truncated = stored;
        truncated.truncate(3);
        assert!(decode_write_of(&write(0, result_index(0), truncated), false).is_err());
        assert_eq!(result_index(0), 1 << 31);
        assert!(result_index(5) > interrupt_index(1 << 20) && result_index(5) > answer_index(1 << 20));
    }
}
