//! Reading a thread back: a checkpoint's state (its snapshot, or rebuilt from the writes it
//! folds), and what is stored against it (outputs of finished tasks, interrupts, answers,
//! outcomes), cross-checked so that a deleted or altered record is an error, never a quietly
//! different state.

use super::record::{self, At, Body, Decoded, Folded, Outcome};
use crate::checkpoint::{CheckpointError, CheckpointRecord, WriteRecord};
use crate::error::GraphError;
use crate::graph::Inner;
use crate::interrupt::Interrupt;
use crate::node::NodeOutput;
use crate::state::State;
use serde_json::Value;
use std::collections::{BTreeMap, HashMap};

/// A finished task's output, with the integrity check of its stored record.
pub(crate) struct SavedOutput<S: State> {
    pub(crate) output: NodeOutput<S>,
    pub(crate) check: u32,
}

/// What is stored against one checkpoint, task by task.
pub(crate) struct Stored<S: State> {
    pub(crate) outputs: Vec<Option<SavedOutput<S>>>,
    /// Per task: interrupts raised, by call index, with their checks.
    pub(crate) interrupts: Vec<BTreeMap<u32, (Interrupt, u32)>>,
    /// Per task: answers given, by call index.
    pub(crate) answers: Vec<BTreeMap<u32, Value>>,
    /// Per task: results of finished calls (durable tool calls), by slot, with their keys.
    pub(crate) results: Vec<BTreeMap<u32, (String, Value)>>,
    /// The run's input, on an input checkpoint, with its check.
    pub(crate) input: Option<(S::Update, u32)>,
    /// Outcomes of the attempts at the step, by number.
    pub(crate) outcomes: BTreeMap<u32, Outcome>,
    /// The integrity check of every stored write, by (task, index).
    checks: HashMap<(u32, u32), u32>,
}

impl<S: State> Stored<S> {
    /// Reads and cross-checks everything stored against `record`, whose body is `body`.
    pub(crate) async fn load<C>(
        graph: &Inner<S, C>,
        thread: &str,
        record: &CheckpointRecord,
        body: &Body<S>,
    ) -> Result<Self, GraphError> {
        let writes = graph.saver.writes(thread, &record.id).await?;
        Ok(Self::from_writes(graph, thread, &record.id, body, &writes)?)
    }

    fn from_writes<C>(
        graph: &Inner<S, C>,
        thread: &str,
        checkpoint: &str,
        body: &Body<S>,
        writes: &[WriteRecord],
    ) -> Result<Self, CheckpointError> {
        let tasks = body.next.len();
        let at = At { thread, checkpoint };
        let mut stored = Self {
            outputs: (0..tasks).map(|_| None).collect(),
            interrupts: vec![BTreeMap::new(); tasks],
            answers: vec![BTreeMap::new(); tasks],
            results: vec![BTreeMap::new(); tasks],
            input: None,
            outcomes: BTreeMap::new(),
            checks: HashMap::with_capacity(writes.len()),
        };
        let mut raised_in: Vec<(u32, u32, u32)> = Vec::new();
        for write in writes {
            let check = record::check_of(&write.body);
            let decoded = record::decode_write(graph, thread, write, body)?;
            stored.checks.insert((write.task, write.index), check);
            let task = write.task as usize;
            match decoded {
                Decoded::Input(update) => stored.input = Some((update, check)),
                Decoded::Output(output) => stored.outputs[task] = Some(SavedOutput { output, check }),
                Decoded::Interrupt { outcome, interrupt } => {
                    raised_in.push((outcome, write.task, write.index));
                    stored.interrupts[task].insert(interrupt.call, (interrupt, check));
                }
                Decoded::Answer(answer) => {
                    stored.answers[task].insert((write.index - 2) / 2, answer);
                }
                Decoded::Outcome(outcome) => {
                    stored.outcomes.insert(write.index, outcome);
                }
                Decoded::Result(key, value) => {
                    stored.results[task].insert(write.index & !record::result_index(0), (key, value));
                }
            }
        }
        for (number, outcome) in &stored.outcomes {
            for listed in &outcome.writes {
                if stored.checks.get(&(listed.task, listed.index)) != Some(&listed.check) {
                    return Err(at.corrupt(
                        format!("writes[{}.{}]", listed.task, listed.index),
                        format!("outcome {number} lists this write, but it is missing or was changed"),
                    ));
                }
            }
        }
        for (outcome, task, index) in raised_in {
            let listed = stored
                .outcomes
                .get(&outcome)
                .is_some_and(|o| o.writes.iter().any(|w| (w.task, w.index) == (task, index)));
            if !listed {
                return Err(at.corrupt(
                    format!("writes[{task}.{index}]"),
                    format!("this interrupt belongs to outcome {outcome}, which is missing or does not list it"),
                ));
            }
        }
        for (task, answers) in stored.answers.iter().enumerate() {
            for call in answers.keys() {
                if !stored.interrupts[task].contains_key(call) {
                    return Err(at.corrupt(
                        format!("writes[{task}.{}]", record::answer_index(*call)),
                        "an answer to an interrupt that is not stored",
                    ));
                }
            }
        }
        Ok(stored)
    }

    /// Fails when this is a thread's newest checkpoint and yet holds the output of its step's
    /// only task with no outcome record: such an output is stored in the same transaction as
    /// the checkpoint after it, so that checkpoint was lost.
    pub(crate) fn check_head(&self, thread: &str, checkpoint: &str) -> Result<(), CheckpointError> {
        if let [Some(_)] = self.outputs.as_slice()
            && self.outcomes.is_empty()
        {
            return Err(At { thread, checkpoint }.corrupt(
                "writes[0.0]",
                "the output of the step's only task is stored, but the checkpoint stored with it is missing",
            ));
        }
        Ok(())
    }

    /// The integrity check of the stored write `(task, index)`, if it is stored.
    pub(crate) fn check_of(&self, task: u32, index: u32) -> Option<u32> {
        self.checks.get(&(task, index)).copied()
    }

    /// The interrupts still waiting for an answer, by task.
    pub(crate) fn pending(&self) -> Vec<(usize, Interrupt)> {
        let mut pending = Vec::new();
        for (task, raised) in self.interrupts.iter().enumerate() {
            if self.outputs[task].is_some() {
                continue;
            }
            if let Some((call, (interrupt, _))) = raised.iter().next_back()
                && !self.answers[task].contains_key(call)
            {
                pending.push((task, interrupt.clone()));
            }
        }
        pending
    }

    /// The most recent outcome, if the step was attempted and did not complete.
    pub(crate) fn last_outcome(&self) -> Option<(u32, &Outcome)> {
        self.outcomes.iter().next_back().map(|(n, o)| (*n, o))
    }

    /// The number the next outcome record takes.
    pub(crate) fn next_outcome(&self) -> u32 {
        self.outcomes.keys().next_back().map_or(0, |n| n + 1)
    }

    /// The error each task failed with in the latest attempt, if it failed.
    pub(crate) fn errors(&self) -> Vec<Option<String>> {
        let mut errors = vec![None; self.outputs.len()];
        if let Some((_, outcome)) = self.last_outcome() {
            for (task, error) in &outcome.errors {
                if let Some(slot) = errors.get_mut(*task as usize) {
                    *slot = Some(error.clone());
                }
            }
        }
        errors
    }
}

/// The state at `record`: its snapshot, or the nearest snapshot before it with the writes each
/// checkpoint since folds in applied step by step. Every folded write must be present and
/// unchanged.
pub(crate) async fn load_state<S: State, C>(
    graph: &Inner<S, C>,
    thread: &str,
    record: &CheckpointRecord,
    body: Option<Body<S>>,
) -> Result<S, GraphError> {
    let body = match body {
        Some(body) => body,
        None => record::decode_body(graph, thread, record)?,
    };
    // From `record` back to the nearest snapshot; then forward again, each checkpoint folding
    // in the writes of its parent that it lists.
    let mut chain: Vec<(CheckpointRecord, Body<S>)> = vec![(record.clone(), body)];
    let mut state = loop {
        let length = chain.len();
        let (current, body) = chain.last_mut().expect("the chain starts with `record`");
        if let Some(state) = body.state.take() {
            break state;
        }
        let at = At { thread, checkpoint: &current.id };
        let parent_id =
            current.parent_id.clone().ok_or_else(|| at.corrupt("parent", "no snapshot before this checkpoint"))?;
        if length > MAX_CHAIN {
            return Err(at.corrupt("parent", "no snapshot in the chain of parents").into());
        }
        let parent = graph
            .saver
            .get(thread, Some(&parent_id))
            .await?
            .ok_or_else(|| at.corrupt("parent", format!("its parent {parent_id} is missing")))?;
        let parent_body = record::decode_body(graph, thread, &parent)?;
        chain.push((parent, parent_body));
    };
    for pair in chain.windows(2).rev() {
        let [(child, child_body), (parent, parent_body)] = pair else { continue };
        fold(graph, thread, parent, parent_body, &child.id, &child_body.folded, &mut state).await?;
    }
    Ok(state)
}

/// Snapshots are stored at least every 256 checkpoints; a longer chain without one is damage.
const MAX_CHAIN: usize = 4096;

/// Applies to `state` the writes of `parent` that checkpoint `child` lists in `folded`.
async fn fold<S: State, C>(
    graph: &Inner<S, C>,
    thread: &str,
    parent: &CheckpointRecord,
    parent_body: &Body<S>,
    child: &str,
    folded: &[Folded],
    state: &mut S,
) -> Result<(), GraphError> {
    let writes = graph.saver.writes(thread, &parent.id).await?;
    let at = At { thread, checkpoint: child };
    let mut updates: Vec<S::Update> = Vec::with_capacity(folded.len());
    for entry in folded {
        let write = writes.iter().find(|w| w.task == entry.task && w.index == entry.index).ok_or_else(|| {
            at.corrupt("folded", format!("write {}.{} of checkpoint {} is missing", entry.task, entry.index, parent.id))
        })?;
        if record::check_of(&write.body) != entry.check {
            return Err(at
                .corrupt(
                    "folded",
                    format!("write {}.{} of checkpoint {} was changed", entry.task, entry.index, parent.id),
                )
                .into());
        }
        match record::decode_write(graph, thread, write, parent_body)? {
            Decoded::Input(update) => updates.push(update),
            Decoded::Output(output) => updates.push(output.update),
            Decoded::Interrupt { .. } | Decoded::Answer(_) | Decoded::Outcome(_) | Decoded::Result(..) => {
                return Err(at
                    .corrupt("folded", format!("write {}.{} holds no update", entry.task, entry.index))
                    .into());
            }
        }
    }
    let mut refs: Vec<&mut S::Update> = updates.iter_mut().collect();
    state.apply_step(&mut refs);
    Ok(())
}
