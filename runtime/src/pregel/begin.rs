//! Where a run on a thread begins: new input, or a command that continues the thread (a resume
//! with answers, an update, `goto`), from its head or, on a new branch, from an older checkpoint.

use super::Task;
use super::load::{Stored, load_state};
use super::persist::{Branch, Persist, saved_outputs};
use super::planner::Planner;
use super::record::{self, Body, OUTPUT_INDEX};
use super::step::{Slots, Tasks};
use crate::checkpoint::{CheckpointRecord, Claim, Source};
use crate::command::RunCommand;
use crate::config::Durability;
use crate::error::GraphError;
use crate::graph::Inner;
use crate::interrupt::Resume;
use crate::state::State;
use crate::telemetry::RunTrace;
use serde_json::Value;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// A run ready to go: its state, its first tasks (with outputs already saved for some), and
/// the planner's progress.
pub(crate) struct Begin<S: State> {
    pub(crate) persist: Persist,
    pub(crate) state: S,
    pub(crate) tasks: Tasks,
    /// Outputs already saved for some of `tasks`, by task index (empty when none is).
    pub(crate) saved: Slots<S>,
    pub(crate) planner: Planner,
    /// The run continues a paused thread, so breakpoints before its first step do not fire again.
    pub(crate) resumed: bool,
}

/// What a command found to do.
pub(crate) enum Prepared<S: State> {
    /// Nothing: the thread's run had finished at that checkpoint (replaying a finished run is
    /// a no-op returning its state), whose id comes with it.
    Done(S, String),
    /// Tasks to run.
    Run(Box<Begin<S>>),
}

/// The thread's settings for one run.
pub(crate) struct On<'a> {
    pub(crate) thread: &'a Arc<str>,
    pub(crate) claim: &'a Claim,
    pub(crate) durability: Durability,
    /// The room for checkpoints waiting for the store that the run shares with the runs of its
    /// subgraphs (see [`Persist::new`]).
    pub(crate) ahead: Option<Arc<Semaphore>>,
    /// Where the run's spans are recorded, when they are exported.
    pub(crate) trace: Option<&'a RunTrace>,
}

/// Starts a run from new input: the thread's state (if it has one) with `input` folded in,
/// running the graph's entry. Unfinished tasks of the thread are dropped, as LangGraph does.
pub(crate) async fn start<S: State, C>(
    graph: &Inner<S, C>,
    on: On<'_>,
    input: S::Update,
) -> Result<Begin<S>, GraphError> {
    let head = graph.saver.get(on.thread, None).await?;
    let mut state = match &head {
        Some(head) => load_state(graph, on.thread, head, None).await?,
        None => S::default(),
    };
    let mut persist = Persist::new(
        Arc::clone(&graph.saver),
        on.claim.clone(),
        Arc::clone(on.thread),
        on.durability,
        head.as_ref(),
        on.ahead,
        on.trace,
    );
    let mut planner = Planner::new(graph);
    if let Err(error) = persist.start(graph, &state, &input).await {
        if matches!(error, GraphError::Unstorable { .. }) {
            crate::record::codec::drop_deep(input);
        }
        return Err(error);
    }
    state.apply(input);
    let tasks = planner.start(graph, &state);
    persist.checkpoint(graph, &state, 1, &tasks, &planner).await?;
    let saved = Slots::new();
    Ok(Begin { persist, state, tasks, saved, planner, resumed: false })
}

/// Continues the thread with `command`: from its head, or from `from` on a new branch.
pub(crate) async fn resume<S: State, C>(
    graph: &Inner<S, C>,
    on: On<'_>,
    mut command: RunCommand<S>,
    from: Option<&str>,
) -> Result<Prepared<S>, GraphError> {
    let nothing = |reason: &'static str| GraphError::NothingToResume { thread: on.thread.to_string(), reason };
    let head = graph.saver.get(on.thread, None).await?.ok_or_else(|| nothing("it has no checkpoint"))?;
    let goto = resolve_goto(graph, &command.goto)?;
    let mut persist = Persist::new(
        Arc::clone(&graph.saver),
        on.claim.clone(),
        Arc::clone(on.thread),
        on.durability,
        Some(&head),
        on.ahead,
        on.trace,
    );
    let (mut base, mut body) = match from.filter(|id| *id != head.id) {
        None => {
            let body = record::decode_body(graph, on.thread, &head)?;
            (head, body)
        }
        Some(id) => {
            let base = graph
                .saver
                .get(on.thread, Some(id))
                .await?
                .ok_or_else(|| nothing("it has no checkpoint with that id"))?;
            let body = record::decode_body(graph, on.thread, &base)?;
            if finished(&body) && goto.is_empty() && command.update.is_none() {
                let id = base.id.clone();
                return Ok(Prepared::Done(state_of(graph, on.thread, &base, body).await?, id));
            }
            // A new branch: a copy of the old checkpoint becomes the head, so this run's writes
            // never mix with the old branch's. Its tasks run again (interrupts fire again),
            // unless the command answers interrupts pending there.
            let stored = Stored::load(graph, on.thread, &base, &body).await?;
            let carry = Carry { outputs: false, interrupts: !matches!(command.answer, Resume::Continue) };
            let fork =
                branch(graph, &mut persist, &base, body, stored, command.update.take(), &goto, carry, Source::Fork)
                    .await?;
            let body = record::decode_body(graph, on.thread, &fork)?;
            (fork, body)
        }
    };
    if body.input_pending {
        return Ok(Prepared::Run(Box::new(apply_input(graph, persist, &base, body, command, &goto).await?)));
    }
    let mut stored = Stored::load(graph, on.thread, &base, &body).await?;
    stored.check_head(on.thread, &base.id)?;
    if finished(&body) && goto.is_empty() && command.update.is_none() {
        let id = base.id.clone();
        return Ok(Prepared::Done(state_of(graph, on.thread, &base, body).await?, id));
    }
    if command.update.is_some() || !goto.is_empty() {
        // The update and the new tasks need a checkpoint of their own; the finished tasks keep
        // their outputs and the paused ones their interrupts, re-keyed to it.
        let carry = Carry { outputs: true, interrupts: true };
        base = branch(graph, &mut persist, &base, body, stored, command.update.take(), &goto, carry, Source::Update)
            .await?;
        body = record::decode_body(graph, on.thread, &base)?;
        stored = Stored::load(graph, on.thread, &base, &body).await?;
    }
    let state = match body.state.take() {
        Some(state) => state,
        None => load_state(graph, on.thread, &base, None).await?,
    };
    let new_answers = assign_answers(on.thread, &stored, command.answer)?;
    let mut answers = Vec::with_capacity(new_answers.len());
    for (task, call, value) in new_answers {
        answers.push((task as u32, call, record::encode_answer(&value)?));
        stored.answers[task].insert(call, value);
    }
    persist.continue_at(&base.id, base.step, Some(&stored));
    persist.store_answers(answers).await?;
    let mut planner = Planner::new(graph);
    planner.restore(&body.deferred, std::mem::take(&mut body.joins));
    let mut tasks = Tasks::from_vec(body.next);
    for ((task, answers), results) in tasks.iter_mut().zip(&stored.answers).zip(&mut stored.results) {
        if !answers.is_empty() {
            task.answers = Some(Arc::new(answers.clone()));
        }
        if !results.is_empty() {
            task.results = Some(Arc::new(std::mem::take(results)));
        }
    }
    Ok(Prepared::Run(Box::new(Begin {
        persist,
        state,
        tasks,
        saved: saved_outputs(stored.outputs),
        planner,
        resumed: true,
    })))
}

/// Whether a checkpoint has nothing left to run.
fn finished<S>(body: &Body<S>) -> bool {
    body.next.is_empty() && !body.input_pending
}

/// The state at `record`, whose decoded body is `body`.
pub(crate) async fn state_of<S: State, C>(
    graph: &Inner<S, C>,
    thread: &str,
    record: &CheckpointRecord,
    mut body: Body<S>,
) -> Result<S, GraphError> {
    match body.state.take() {
        Some(state) => Ok(state),
        None => load_state(graph, thread, record, Some(body)).await,
    }
}

/// An input checkpoint whose input was stored but never applied (a crash right after it, or a
/// replay from it): folds the input in and stores the step-0 checkpoint, then runs the entry.
async fn apply_input<S: State, C>(
    graph: &Inner<S, C>,
    mut persist: Persist,
    base: &CheckpointRecord,
    body: Body<S>,
    command: RunCommand<S>,
    goto: &[u32],
) -> Result<Begin<S>, GraphError> {
    let thread = persist_thread(base);
    let at = record::At { thread, checkpoint: &base.id };
    let mut stored = Stored::load(graph, thread, base, &body).await?;
    let (input, check) = stored.input.take().ok_or_else(|| at.corrupt("writes[0.0]", "the run's input is missing"))?;
    let mut state = state_of(graph, thread, base, body).await?;
    state.apply(input);
    if let Some(update) = command.update {
        state.apply(update);
    }
    persist.continue_at::<S>(&base.id, base.step, None);
    persist.mark_saved(0, check);
    let mut planner = Planner::new(graph);
    let mut tasks = planner.start(graph, &state);
    Planner::add_pulled(&mut tasks, goto);
    persist.checkpoint(graph, &state, 1, &tasks, &planner).await?;
    let saved = Slots::new();
    Ok(Begin { persist, state, tasks, saved, planner, resumed: false })
}

fn persist_thread(record: &CheckpointRecord) -> &str {
    &record.thread_id
}

/// What a new branch takes over from the checkpoint it starts from.
#[derive(Clone, Copy)]
pub(crate) struct Carry {
    /// Outputs of finished tasks (so they do not run again).
    pub(crate) outputs: bool,
    /// Pending interrupts and the answers already given (so the next resume answers them).
    pub(crate) interrupts: bool,
}

/// Stores a new branch from `base`: its state with `update` folded in, its tasks plus `goto`,
/// and what `carry` says re-keyed to the new checkpoint. Returns the new checkpoint.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn branch<S: State, C>(
    graph: &Inner<S, C>,
    persist: &mut Persist,
    base: &CheckpointRecord,
    mut body: Body<S>,
    stored: Stored<S>,
    update: Option<S::Update>,
    goto: &[u32],
    carry: Carry,
    source: Source,
) -> Result<CheckpointRecord, GraphError> {
    let thread = persist_thread(base).to_owned();
    let input_pending = body.input_pending;
    let old_next = std::mem::take(&mut body.next);
    let mut planner = Planner::new(graph);
    planner.restore(&body.deferred, std::mem::take(&mut body.joins));
    let mut state = state_of(graph, &thread, base, body).await?;
    if let Some(update) = update {
        state.apply(update);
    }
    // The old tasks keep their order; `goto` nodes join them as pulled tasks. `moved[i]` is
    // the new index of old task `i`.
    let mut next = old_next;
    let count = next.len();
    for task in &mut next {
        task.answers = None;
        task.results = None;
    }
    let markers: Vec<u32> = (0..count as u32).collect();
    let mut tagged: Vec<(Task, Option<u32>)> = next.into_iter().zip(markers.into_iter().map(Some)).collect();
    for &node in goto {
        if tagged.iter().any(|(t, _)| t.node == node && t.payload.is_none()) {
            continue;
        }
        let at = tagged.iter().position(|(t, _)| t.payload.is_some() || t.node > node).unwrap_or(tagged.len());
        tagged.insert(at, (Task::pull(node), None));
    }
    let mut moved = vec![0u32; count];
    for (new, (_, old)) in tagged.iter().enumerate() {
        if let Some(old) = old {
            moved[*old as usize] = new as u32;
        }
    }
    let next: Vec<Task> = tagged.into_iter().map(|(t, _)| t).collect();
    let mut carried = Vec::new();
    if carry.outputs {
        for (old, output) in stored.outputs.iter().enumerate() {
            if let Some(saved) = output {
                let task = moved[old];
                let payload = record::encode_output(graph, &next[task as usize], &saved.output)?;
                carried.push((task, OUTPUT_INDEX, payload));
            }
        }
    }
    if input_pending && let Some((input, _)) = &stored.input {
        carried.push((0, OUTPUT_INDEX, record::encode_input::<S>(input)?));
    }
    let mut carried_interrupts = false;
    if carry.interrupts {
        for (old, raised) in stored.interrupts.iter().enumerate() {
            if stored.outputs[old].is_some() {
                continue;
            }
            let task = moved[old];
            for (call, (interrupt, _)) in raised {
                carried.push((task, record::interrupt_index(*call), record::encode_interrupt(interrupt, 0)?));
                carried_interrupts = true;
            }
            for (call, answer) in &stored.answers[old] {
                carried.push((task, record::answer_index(*call), record::encode_answer(answer)?));
            }
            for (slot, (key, result)) in &stored.results[old] {
                carried.push((task, record::result_index(*slot), record::encode_result(key, result)?));
            }
        }
    }
    let step = if source == Source::Fork { base.step } else { base.step + 1 };
    // Carried writes are listed in an outcome record, as they were where they came from.
    let outcome = carried_interrupts || carried.iter().any(|(_, index, _)| *index == OUTPUT_INDEX) && !input_pending;
    let branch = Branch { parent: &base.id, step, next: &next, input_pending, source, carried, outcome };
    persist.put_branch(graph, &state, &planner, branch).await
}

/// Resolves `goto` node names.
fn resolve_goto<S: State, C>(graph: &Inner<S, C>, names: &[String]) -> Result<Vec<u32>, GraphError> {
    names
        .iter()
        .map(|name| {
            let node = graph.node_index.get(name.as_str()).copied().ok_or_else(|| GraphError::Goto {
                graph: graph.name.clone(),
                node: name.clone(),
                reason: match graphwright_wiring::closest(name, graph.node_names.iter().map(|n| &**n)) {
                    Some(near) => format!("no node has that name; did you mean `{near}`?"),
                    None => "no node has that name".to_owned(),
                },
            })?;
            if graph.nodes[node as usize].takes.is_some() {
                return Err(GraphError::Goto {
                    graph: graph.name.clone(),
                    node: name.clone(),
                    reason: "it takes a Send payload, so only a Send can run it".to_owned(),
                });
            }
            Ok(node)
        })
        .collect()
}

/// Matches a resume answer to the pending interrupts: `(task, call, answer)` per match. An
/// answer given when no interrupt is pending (at a breakpoint, say) is accepted and ignored,
/// as LangGraph does; answers by id must each name a pending interrupt.
fn assign_answers<S: State>(
    thread: &str,
    stored: &Stored<S>,
    answer: Resume,
) -> Result<Vec<(usize, u32, Value)>, GraphError> {
    let pending = stored.pending();
    let ids = || pending.iter().map(|(_, i)| i.id.clone()).collect::<Vec<_>>();
    let fail = |reason: String| GraphError::Resume { thread: thread.to_owned(), reason, pending: ids() };
    match answer {
        Resume::Continue => Ok(Vec::new()),
        Resume::Value(value) => match pending.as_slice() {
            [(task, interrupt)] => Ok(vec![(*task, interrupt.call, value)]),
            [] => Ok(Vec::new()),
            _ => Err(fail(format!(
                "{} interrupts are pending, so answer each by id with `Resume::by_id`",
                pending.len()
            ))),
        },
        Resume::ById(mut answers) => {
            let mut matched = Vec::new();
            for (task, interrupt) in &pending {
                if let Some(value) = answers.remove(&interrupt.id) {
                    matched.push((*task, interrupt.call, value));
                }
            }
            match answers.keys().next() {
                Some(unknown) => Err(fail(format!("no pending interrupt has the id `{unknown}`"))),
                None => Ok(matched),
            }
        }
    }
}
