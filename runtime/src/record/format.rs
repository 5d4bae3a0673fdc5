//! The stored-record format of a thread, apart from the graph's own types: write indices,
//! integrity seals, interrupts, answers, call results and step outcomes, and moving records to
//! another thread. Every body is sealed with an integrity check over the body and the record's
//! columns (see `codec::checksum`); decoding is strict. The records that carry the graph's
//! state, updates and payloads are encoded and decoded in `record.rs`, above this file.

use super::codec::checksum::{self, CheckpointKey, WriteKey};
use super::codec::envelope::{In, Out};
use super::codec::{self, DecodeError, EncodeError};
use crate::checkpoint::{CheckpointError, CheckpointRecord, FORMAT_VERSION, WriteRecord};
use crate::interrupt::Interrupt;
use crate::state::State;
use serde_json::Value;

/// The write index of a task's output (or of the run's input).
pub(crate) const OUTPUT_INDEX: u32 = 0;
/// The task index under which a step's outcome records are stored (one per pause or failure).
pub(crate) const OUTCOME_TASK: u32 = u32::MAX;

/// The first write index of the results of a task's finished calls (durable tool calls): far
/// above the indices of interrupts and answers, which count up from 1.
pub(crate) const RESULT_BASE: u32 = 1 << 31;

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

pub(crate) mod kind {
    pub(crate) const OUTPUT: u64 = 0;
    pub(crate) const INPUT: u64 = 1;
    pub(crate) const INTERRUPT: u64 = 2;
    pub(crate) const ANSWER: u64 = 3;
    pub(crate) const OUTCOME: u64 = 4;
    pub(crate) const RESULT: u64 = 5;
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
    pub(crate) fn decoding(&self, field: &str, error: DecodeError) -> CheckpointError {
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

/// A value of a step that cannot be stored, naming what held it: the step fails with it, as
/// [`GraphError::Unstorable`](crate::GraphError::Unstorable).
#[derive(Debug)]
pub(crate) struct Unstorable {
    /// What held the value ("the update of node `x`", "the state", "the run's input"...).
    pub(crate) what: String,
    /// Where in it the value sits, and why it cannot be stored.
    pub(crate) error: EncodeError,
}

impl std::fmt::Display for Unstorable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} cannot be stored in a checkpoint", self.what)?;
        if !self.error.path.is_empty() {
            write!(f, " (at `{}`)", self.error.path)?;
        }
        write!(f, ": {}", self.error.reason)
    }
}

/// A value of a step that cannot be stored.
pub(crate) fn unstorable(what: impl Into<String>, error: EncodeError) -> Unstorable {
    Unstorable { what: what.into(), error }
}

/// A write of the step before a checkpoint that the checkpoint's state includes: its key and check.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Folded {
    pub(crate) task: u32,
    pub(crate) index: u32,
    pub(crate) check: u32,
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

pub(crate) fn key_of(record: &CheckpointRecord) -> CheckpointKey<'_> {
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

/// Encodes a run's input.
pub(crate) fn encode_input<S: State>(update: &S::Update) -> Result<Vec<u8>, Unstorable> {
    let mut out = Out::with_capacity(32);
    out.uint(kind::INPUT);
    codec::encode_update(&mut out.bytes, update).map_err(|e| unstorable("the run's input", e))?;
    Ok(out.bytes)
}

/// Encodes an interrupt a task raised during the pause numbered `outcome`.
pub(crate) fn encode_interrupt(interrupt: &Interrupt, outcome: u32) -> Result<Vec<u8>, Unstorable> {
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
pub(crate) fn encode_answer(answer: &Value) -> Result<Vec<u8>, Unstorable> {
    let mut out = Out::with_capacity(32);
    out.uint(kind::ANSWER);
    codec::encode(&mut out.bytes, answer).map_err(|e| unstorable("the answer to an interrupt", e))?;
    Ok(out.bytes)
}

/// Encodes the result of a finished call (keyed by the call's id) of a task that is still running.
pub(crate) fn encode_result(key: &str, value: &Value) -> Result<Vec<u8>, Unstorable> {
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

/// Where a write being decoded sits, for its errors and checks.
pub(crate) struct Place<'a> {
    pub(crate) at: &'a At<'a>,
    pub(crate) slot: &'a str,
    pub(crate) task: u32,
    pub(crate) index: u32,
}

impl Place<'_> {
    pub(crate) fn fail(&self, error: DecodeError) -> CheckpointError {
        self.at.decoding(self.slot, error)
    }

    pub(crate) fn field(&self, name: &str, error: DecodeError) -> CheckpointError {
        self.at.decoding(&format!("{}.{name}", self.slot), error)
    }

    pub(crate) fn corrupt(&self, name: &str, reason: impl ToString) -> CheckpointError {
        self.at.corrupt(format!("{}.{name}", self.slot), reason)
    }

    pub(crate) fn wrong(&self, what: &str) -> CheckpointError {
        self.at.corrupt(self.slot, format!("{what} is stored under the wrong key"))
    }
}

/// A step's outcome record.
pub(crate) fn decode_outcome(place: &Place<'_>, mut input: In<'_>) -> Result<Outcome, CheckpointError> {
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

pub(crate) fn unknown(name: &str) -> String {
    format!("no node named `{name}` in this graph (was it renamed or removed?)")
}
