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

use super::codec::checksum::{self, CheckpointKey, WriteKey};
use super::codec::envelope::{In, Out};
use super::codec::{self, DecodeError, EncodeError};
use crate::checkpoint::{CheckpointError, CheckpointRecord, FORMAT_VERSION, WriteRecord};
use crate::error::GraphError;
use crate::graph::Inner;
use crate::interrupt::Interrupt;
use crate::node::{Goto, NodeOutput, Payload};
use crate::pregel::Task;
use crate::state::State;
use serde_json::Value;

/// The write index of a task's output (or of the run's input).
pub(crate) const OUTPUT_INDEX: u32 = 0;
/// The task index under which a step's outcome records are stored (one per pause or failure).
pub(crate) const OUTCOME_TASK: u32 = u32::MAX;

/// The first write index of the results of a task's finished calls (durable tool calls): far
/// above the indices of interrupts and answers, which count up from 1.
const RESULT_BASE: u32 = 1 << 31;

/// The write index of the result of a task's call in `slot`.
pub(crate) fn result_index(slot: u32) -> u32 {
    RESULT_BASE | (slot & !RESULT_BASE)
}

/// The write index of a task's `n`-th interrupt.
pub(crate) fn interrupt_index(call: u32) -> u32 {
    1 + 2 * call
}

/// The write index of the answer to a task's `n`-th interrupt.
pub(crate) fn answer_index(call: u32) -> u32 {
    2 + 2 * call
}

mod kind {
    pub(super) const OUTPUT: u64 = 0;
    pub(super) const INPUT: u64 = 1;
    pub(super) const INTERRUPT: u64 = 2;
    pub(super) const ANSWER: u64 = 3;
    pub(super) const OUTCOME: u64 = 4;
    pub(super) const RESULT: u64 = 5;
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

    /// A decoding error under `field` (its path within the value appended).
    fn decoding(&self, field: &str, error: DecodeError) -> CheckpointError {
        let field = match (field.is_empty(), error.path.is_empty()) {
            (_, true) => field.to_owned(),
            (true, false) => error.path,
            (false, false) if error.path.starts_with('[') => format!("{field}{}", error.path),
            (false, false) => format!("{field}.{}", error.path),
        };
        self.corrupt(field, error.reason)
    }

    pub(crate) fn check_format(&self, format: u16, field: &str) -> Result<(), CheckpointError> {
        if format == FORMAT_VERSION {
            Ok(())
        } else if format & crate::encryption::ENCRYPTED_FORMAT != 0 {
            Err(self.corrupt(
                field,
                "the record is encrypted: open the checkpointer with its keys (`.encrypted(keys)`) to read it"
                    .to_owned(),
            ))
        } else {
            Err(self.corrupt(field, format!("format {format} is not the supported format {FORMAT_VERSION}")))
        }
    }
}

/// A value of a step that cannot be stored: the step fails with this error, naming what held it.
pub(crate) fn unstorable(what: impl Into<String>, error: EncodeError) -> GraphError {
    GraphError::Unstorable { what: what.into(), field: error.path, reason: error.reason }
}

/// A write of the step before a checkpoint that the checkpoint's state includes: its key and check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Folded {
    pub(crate) task: u32,
    pub(crate) index: u32,
    pub(crate) check: u32,
}

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

/// Seals a checkpoint payload into a stored record.
pub(crate) fn seal_checkpoint(mut record: CheckpointRecord, payload: Vec<u8>) -> CheckpointRecord {
    let check = key_of(&record).check(&payload);
    record.body = checksum::seal(payload, check);
    record
}

/// The integrity checks a move gave the writes of one checkpoint: `(task, index)` → the old
/// check and the new one.
pub(crate) type Renewed = std::collections::HashMap<(u32, u32), (u32, u32)>;

/// `record` as a record of thread key `thread`: its integrity check verified under the key it
/// was stored under, then made again under the new one (the check covers the thread). Its body
/// lists the parent checkpoint's writes it folds in by their checks: `parent` renews them.
pub(crate) fn moved_checkpoint(
    mut record: CheckpointRecord,
    thread: &str,
    parent: Option<&Renewed>,
) -> Result<CheckpointRecord, CheckpointError> {
    let at = At { thread: &record.thread_id, checkpoint: &record.id };
    let payload = checksum::open(&record.body, |p| key_of(&record).check(p)).map_err(|e| at.corrupt("body", e))?;
    let payload = match parent {
        Some(renewed) => renew_folded(payload, &at, renewed)?,
        None => payload.to_vec(),
    };
    thread.clone_into(&mut record.thread_id);
    let check = key_of(&record).check(&payload);
    record.body = checksum::seal(payload, check);
    Ok(record)
}

/// A checkpoint payload whose list of folded writes names their renewed checks; the fields
/// before it are skipped as stored, the state after it kept byte for byte.
fn renew_folded(payload: &[u8], at: &At<'_>, renewed: &Renewed) -> Result<Vec<u8>, CheckpointError> {
    let mut input = In::new(payload);
    let fail = |e: DecodeError| at.decoding("", e);
    for i in 0..input.array("next").map_err(fail)? {
        if input.is_text() {
            input.text("next").map_err(fail)?;
        } else {
            if input.array("next").map_err(fail)? != 2 {
                return Err(at.corrupt(format!("next[{i}]"), "a task is a node name, or a node name and a payload"));
            }
            input.text("next").map_err(fail)?;
            input.blob("next").map_err(fail)?;
        }
    }
    input.flag("input_pending").map_err(fail)?;
    for _ in 0..input.array("deferred").map_err(fail)? {
        input.text("deferred").map_err(fail)?;
    }
    for _ in 0..input.array("joins").map_err(fail)? {
        for _ in 0..input.array("joins").map_err(fail)? {
            input.flag("joins").map_err(fail)?;
        }
    }
    let prefix = payload.len() - input.remaining();
    let mut out = Out::with_capacity(payload.len());
    out.bytes.extend_from_slice(&payload[..prefix]);
    let count = input.array("folded").map_err(fail)?;
    out.array(count);
    for _ in 0..count {
        if input.array("folded").map_err(fail)? != 3 {
            return Err(at.corrupt("folded", "an entry that is not (task, index, check)"));
        }
        let (task, index) = (input.u32("folded").map_err(fail)?, input.u32("folded").map_err(fail)?);
        let check = renew(renewed, task, index, input.u32("folded").map_err(fail)?);
        out.array(3);
        out.uint(u64::from(task));
        out.uint(u64::from(index));
        out.uint(u64::from(check));
    }
    out.bytes.extend_from_slice(input.rest());
    Ok(out.bytes)
}

/// The renewed check of write `task`.`index`, if `check` is the one it had; otherwise `check`
/// as it was, so the copy reports that damage as the original does.
fn renew(renewed: &Renewed, task: u32, index: u32, check: u32) -> u32 {
    match renewed.get(&(task, index)) {
        Some(&(old, new)) if old == check => new,
        _ => check,
    }
}

/// The writes of one checkpoint as writes of thread key `thread`, each check verified and made
/// again; an outcome record lists the writes of its step by their checks, so it is rewritten
/// to list the new ones.
pub(crate) fn moved_writes(
    writes: Vec<WriteRecord>,
    thread: &str,
) -> Result<(Vec<WriteRecord>, Renewed), CheckpointError> {
    let mut renewed = Renewed::new();
    let mut moved = Vec::with_capacity(writes.len());
    let mut outcomes = Vec::new();
    for write in writes {
        if write.task == OUTCOME_TASK {
            outcomes.push(write);
            continue;
        }
        let old = check_of(&write.body);
        let write = moved_write(write, thread, None)?;
        renewed.insert((write.task, write.index), (old, check_of(&write.body)));
        moved.push(write);
    }
    for write in outcomes {
        moved.push(moved_write(write, thread, Some(&renewed))?);
    }
    Ok((moved, renewed))
}

/// One write moved to `thread`; an outcome's list of checks renewed from `renewed`
/// (`(task, index)` → old and new check).
fn moved_write(
    mut record: WriteRecord,
    thread: &str,
    renewed: Option<&Renewed>,
) -> Result<WriteRecord, CheckpointError> {
    let key = |record: &WriteRecord, thread: &str, payload: &[u8]| {
        WriteKey {
            thread,
            checkpoint: &record.checkpoint_id,
            task: record.task,
            index: record.index,
            format: record.format,
        }
        .check(payload)
    };
    let at = At { thread: &record.thread_id, checkpoint: &record.checkpoint_id };
    let slot = format!("writes[{}.{}]", record.task, record.index);
    let payload =
        checksum::open(&record.body, |p| key(&record, &record.thread_id, p)).map_err(|e| at.corrupt(&slot, e))?;
    let payload = match renewed {
        None => payload.to_vec(),
        Some(renewed) => {
            let place = Place { at: &at, slot: &slot, task: record.task, index: record.index };
            let mut input = In::new(payload);
            if input.uint("kind").map_err(|e| place.fail(e))? != kind::OUTCOME {
                return Err(place.wrong("a write that is not an outcome"));
            }
            let mut outcome = decode_outcome(&place, input)?;
            for listed in &mut outcome.writes {
                listed.check = renew(renewed, listed.task, listed.index, listed.check);
            }
            encode_outcome(&outcome)
        }
    };
    let check = key(&record, thread, &payload);
    thread.clone_into(&mut record.thread_id);
    record.body = checksum::seal(payload, check);
    Ok(record)
}

fn key_of(record: &CheckpointRecord) -> CheckpointKey<'_> {
    CheckpointKey {
        thread: &record.thread_id,
        id: &record.id,
        parent: record.parent_id.as_deref(),
        step: record.step,
        source: record.source,
        created_at_ms: record.created_at_ms,
        format: record.format,
    }
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

/// Seals a write payload into a stored record keyed to `checkpoint`'s task `task`.
pub(crate) fn seal_write(thread: &str, checkpoint: &str, task: u32, index: u32, payload: Vec<u8>) -> WriteRecord {
    let key = WriteKey { thread, checkpoint, task, index, format: FORMAT_VERSION };
    let check = key.check(&payload);
    WriteRecord {
        thread_id: thread.to_owned(),
        checkpoint_id: checkpoint.to_owned(),
        task,
        index,
        format: FORMAT_VERSION,
        body: checksum::seal(payload, check),
    }
}

/// The integrity check a sealed record ends with.
pub(crate) fn check_of(body: &[u8]) -> u32 {
    let tail = &body[body.len().saturating_sub(checksum::LEN)..];
    tail.try_into().map_or(0, u32::from_le_bytes)
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

/// Encodes a run's input.
pub(crate) fn encode_input<S: State>(update: &S::Update) -> Result<Vec<u8>, GraphError> {
    let mut out = Out::with_capacity(32);
    out.uint(kind::INPUT);
    codec::encode_update(&mut out.bytes, update).map_err(|e| unstorable("the run's input", e))?;
    Ok(out.bytes)
}

/// Encodes an interrupt a task raised during the pause numbered `outcome`.
pub(crate) fn encode_interrupt(interrupt: &Interrupt, outcome: u32) -> Result<Vec<u8>, GraphError> {
    let mut out = Out::with_capacity(64);
    out.uint(kind::INTERRUPT);
    out.text(&interrupt.node);
    out.uint(u64::from(outcome));
    out.text(&interrupt.id);
    codec::encode(&mut out.bytes, &interrupt.value)
        .map_err(|e| unstorable(format!("the interrupt of node `{}`", interrupt.node), e))?;
    Ok(out.bytes)
}

/// Encodes an answer to an interrupt.
pub(crate) fn encode_answer(answer: &Value) -> Result<Vec<u8>, GraphError> {
    let mut out = Out::with_capacity(32);
    out.uint(kind::ANSWER);
    codec::encode(&mut out.bytes, answer).map_err(|e| unstorable("the answer to an interrupt", e))?;
    Ok(out.bytes)
}

/// Encodes the result of a finished call (keyed by the call's id) of a task that is still running.
pub(crate) fn encode_result(key: &str, value: &Value) -> Result<Vec<u8>, GraphError> {
    let mut out = Out::with_capacity(64);
    out.uint(kind::RESULT);
    out.text(key);
    codec::encode(&mut out.bytes, value).map_err(|e| unstorable(format!("the result of call `{key}`"), e))?;
    Ok(out.bytes)
}

/// How a step that did not complete ended, as stored.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Tasks raised interrupts.
    Paused,
    /// A task failed.
    Failed,
    /// A breakpoint stopped the run before or after the step.
    Breakpoint,
}

/// The record of a step that paused or failed: every write stored for the step by then (so a
/// deleted or altered one is noticed), and the error of each task that failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Outcome {
    pub(crate) ending: Ending,
    pub(crate) writes: Vec<Folded>,
    pub(crate) errors: Vec<(u32, String)>,
}

/// Encodes an outcome record.
pub(crate) fn encode_outcome(outcome: &Outcome) -> Vec<u8> {
    let mut out = Out::with_capacity(32);
    out.uint(kind::OUTCOME);
    out.uint(match outcome.ending {
        Ending::Paused => 0,
        Ending::Failed => 1,
        Ending::Breakpoint => 2,
    });
    out.array(outcome.writes.len());
    for write in &outcome.writes {
        out.array(3);
        out.uint(u64::from(write.task));
        out.uint(u64::from(write.index));
        out.uint(u64::from(write.check));
    }
    out.array(outcome.errors.len());
    for (task, error) in &outcome.errors {
        out.array(2);
        out.uint(u64::from(*task));
        out.text(error);
    }
    out.bytes
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
            if index % 2 != 1 || place.node_of(graph, body) != Some(name) {
                return Err(place.wrong(&format!("an interrupt of node `{name}`")));
            }
            let outcome = input.u32("outcome").map_err(|e| place.fail(e))?;
            let id = input.text("id").map_err(|e| place.fail(e))?.to_owned();
            let value = codec::decode(input.rest()).map_err(|e| place.field("value", e))?;
            let interrupt = Interrupt { id, node: name.to_owned(), value, task, call: (index - 1) / 2 };
            Ok(Decoded::Interrupt { outcome, interrupt })
        }
        kind::ANSWER => {
            if index < 2 || index % 2 != 0 || place.node_of(graph, body).is_none() {
                return Err(place.wrong("an answer to an interrupt"));
            }
            Ok(Decoded::Answer(codec::decode(input.rest()).map_err(|e| place.field("answer", e))?))
        }
        kind::RESULT => {
            if index & RESULT_BASE == 0 || place.node_of(graph, body).is_none() {
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

/// Where a write being decoded sits, for its errors and checks.
struct Place<'a> {
    at: &'a At<'a>,
    slot: &'a str,
    task: u32,
    index: u32,
}

impl Place<'_> {
    fn fail(&self, error: DecodeError) -> CheckpointError {
        self.at.decoding(self.slot, error)
    }

    fn field(&self, name: &str, error: DecodeError) -> CheckpointError {
        self.at.decoding(&format!("{}.{name}", self.slot), error)
    }

    fn corrupt(&self, name: &str, reason: impl ToString) -> CheckpointError {
        self.at.corrupt(format!("{}.{name}", self.slot), reason)
    }

    fn wrong(&self, what: &str) -> CheckpointError {
        self.at.corrupt(self.slot, format!("{what} is stored under the wrong key"))
    }

    /// The node of the task the write is keyed to.
    fn node_of<'g, S: State, C>(&self, graph: &'g Inner<S, C>, body: &Body<S>) -> Option<&'g str> {
        body.next.get(self.task as usize).map(|t| &*graph.node_names[t.node as usize])
    }
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
    match place.node_of(graph, body) {
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

/// A step's outcome record.
fn decode_outcome(place: &Place<'_>, mut input: In<'_>) -> Result<Outcome, CheckpointError> {
    let fail = |e| place.fail(e);
    let ending = match input.uint("ending").map_err(fail)? {
        0 => Ending::Paused,
        1 => Ending::Failed,
        2 => Ending::Breakpoint,
        other => return Err(place.corrupt("ending", format!("unknown ending {other}"))),
    };
    let count = input.array("writes").map_err(fail)?;
    let mut writes = Vec::with_capacity(count);
    for _ in 0..count {
        if input.array("writes").map_err(fail)? != 3 {
            return Err(place.corrupt("writes", "an entry that is not (task, index, check)"));
        }
        writes.push(Folded {
            task: input.u32("writes").map_err(fail)?,
            index: input.u32("writes").map_err(fail)?,
            check: input.u32("writes").map_err(fail)?,
        });
    }
    let count = input.array("errors").map_err(fail)?;
    let mut errors = Vec::with_capacity(count);
    for _ in 0..count {
        if input.array("errors").map_err(fail)? != 2 {
            return Err(place.corrupt("errors", "an entry that is not (task, error)"));
        }
        errors.push((input.u32("errors").map_err(fail)?, input.text("errors").map_err(fail)?.to_owned()));
    }
    input.end("outcome").map_err(fail)?;
    Ok(Outcome { ending, writes, errors })
}

fn node_index<S: State, C>(graph: &Inner<S, C>, name: &str) -> Option<u32> {
    graph.node_names.iter().position(|n| &**n == name).map(|i| i as u32)
}

fn unknown(name: &str) -> String {
    format!("no node named `{name}` in this graph (was it renamed or removed?)")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::checkpoint::Source;
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
