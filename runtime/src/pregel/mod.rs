//! The executor: super-steps in the Pregel (bulk synchronous parallel) model.
//!
//! Each step runs its tasks concurrently against one shared, read-only snapshot of the state,
//! then folds their updates in task order (never completion order), then plans the next step
//! from edges, routes, routers, joins and Sends. Nothing on this path serializes, clones the
//! state, or spawns: sync nodes are called in place, async nodes of one step are polled
//! together on the calling task, and a step with one task awaits it directly. A run on a
//! thread adds persistence at the step boundaries (see `persist`), and nothing else.

mod begin;
mod boxed;
mod cached;
pub(crate) use cached::namespace as cache_namespace;
pub(crate) mod calls;
mod events;
mod hold;
mod load;
mod merge;
mod persist;
mod planner;
mod prune;
pub(crate) mod record;
pub(crate) mod span;
mod step;
mod task;
mod update;
mod write_span;
mod writer;

use crate::checkpoint::Source;
use crate::command::RunInput;
use crate::config::Durability;
use crate::error::GraphError;
use crate::graph::{Halt, Inner, RunFailure, RunOutput, complete};
use crate::interrupt::Interrupt;
use crate::node::NodeOutput;
use crate::runtime::RunShared;
use crate::state::{State, Update};
use crate::stream::{EventKind, Sink, StreamMode};
use crate::trace_value::in_span;
pub(crate) use begin::state_of;
use begin::{Begin, On, Prepared};
pub(crate) use boxed::boxed;
use hold::{Held, ThreadLock};
pub(crate) use load::Stored;
use persist::{Persist, StepEnding};
use planner::Planner;
pub(crate) use prune::prune_thread;
use std::sync::Arc;
pub(crate) use step::Task;
use step::{Slots, Tasks};
pub(crate) use update::{AsNode, update_thread};
pub use writer::MAX_STEPS_AHEAD;
pub(crate) use writer::room_ahead;

/// Runs a graph from `state` until no task is left, persisting nothing. `input_wrote` says
/// whether the input wrote anything (a `values` stream starts with the state only then). The
/// output's usage is left empty: the run's meter has it.
///
/// The first step is planned before the future is made, and the future is the run's loop and
/// little else: a subgraph node boxes it whole at every call (see `drive`).
pub(crate) fn execute<'a, S: State, C: Send + Sync + 'static>(
    graph: &'a Inner<S, C>,
    state: S,
    run: Arc<RunShared<C>>,
    limit: u64,
    sink: Option<&'a Sink<S>>,
    input_wrote: bool,
) -> impl Future<Output = Result<RunOutput<S>, Halt<S>>> + 'a {
    let mut planner = Planner::new(graph);
    let tasks = planner.start(graph, &state);
    let start =
        Start { state, tasks, saved: Slots::new(), planner, step: 0, resumed: false, initial_values: input_wrote };
    // The caller fills in the usage: wrapping the loop's future to do it here would move the
    // whole future once more for every subgraph run.
    drive(graph, start, run, limit, None, sink)
}

/// Runs a graph on a thread from `input` (new input, or a command that continues the thread,
/// from `from` on a new branch when given), checkpointing each step.
#[allow(clippy::too_many_arguments)]
pub(crate) async fn execute_on_thread<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    input: RunInput<S>,
    run: Arc<RunShared<C>>,
    limit: u64,
    thread: Arc<str>,
    durability: Durability,
    from: Option<&str>,
    sink: Option<&Sink<S>>,
) -> Result<RunOutput<S>, Halt<S>> {
    let _lock = ThreadLock::acquire(&graph.busy, &thread)?;
    let held = Held::take(&graph.saver, &thread).await?;
    let result = async {
        let ahead = run.storage.as_ref().and_then(|s| s.ahead.clone());
        let on = On { thread: &thread, claim: held.claim(), durability, ahead, trace: run.trace.as_ref() };
        let (begin, initial_values) = match input {
            RunInput::Update(update) => {
                let wrote = !update.is_empty();
                (begin::start(graph, on, update).await?, wrote)
            }
            RunInput::Command(command) => match begin::resume(graph, on, command, from).await? {
                Prepared::Done(state, id) => {
                    if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Values)) {
                        sink.send(0, EventKind::Values(state.clone())).await?;
                    }
                    return Ok(RunOutput::new(state, 0, Vec::new()).at(Some(&Arc::from(id))));
                }
                Prepared::Run(begin) => (*begin, true),
            },
        };
        let Begin { persist, state, tasks, saved, planner, resumed } = begin;
        let step = u64::try_from(persist.step()).unwrap_or(0);
        let start = Start { state, tasks, saved, planner, step, resumed, initial_values };
        let meter = Arc::clone(&run);
        let result = drive(graph, start, run, limit, Some(persist), sink).await;
        complete(result, |out| out.usage = meter.meter.usage())
    }
    .await;
    held.release().await;
    complete(result, |out| out.thread_id = Some(thread.to_string()))
}

/// Where a run starts: its state, first tasks (with any outputs already saved), and step.
struct Start<S: State> {
    state: S,
    tasks: Tasks,
    /// Outputs already saved for some of `tasks` (empty when none is).
    saved: Slots<S>,
    planner: Planner,
    step: u64,
    /// The run continues a paused thread, so breakpoints before its first step do not fire again.
    resumed: bool,
    /// A `values` stream starts with the state as it is (after an input that wrote something,
    /// or on a resume).
    initial_values: bool,
}

/// On a failure to store the state, drops it where a deeply nested value cannot overflow the
/// stack (see `codec::drop_deep`), and passes the error on.
fn refused<S: State>(error: GraphError, state: S) -> GraphError {
    if matches!(error, GraphError::Unstorable { .. }) {
        crate::record::codec::drop_deep(state);
    }
    error
}

/// The run's loop: steps until no task is left, a task pauses, or the run fails.
///
/// Not an `async fn`: the start is taken apart before the future is made, so that the future
/// holds each of its parts once (an `async fn` keeps its arguments beside the locals made from
/// them), which keeps the future a subgraph node boxes small.
fn drive<'a, S: State, C: Send + Sync + 'static>(
    graph: &'a Inner<S, C>,
    start: Start<S>,
    run: Arc<RunShared<C>>,
    limit: u64,
    persist: Option<Persist>,
    sink: Option<&'a Sink<S>>,
) -> impl Future<Output = Result<RunOutput<S>, Halt<S>>> + 'a {
    let Start { mut state, mut tasks, mut saved, mut planner, mut step, resumed, initial_values } = start;
    let mut slots = Slots::<S>::new();
    let mut ran = 0;
    // Boxed: a run without a thread (every subgraph run of one) keeps a pointer, not room for them.
    let call_store = persist.as_ref().and_then(Persist::call_store).map(Box::new);
    let mut persist = persist.map(Box::new);
    Looping {
        run: async move {
            // Events go out through boxed futures: only streamed runs pay for room for them.
            if let Some(sink) = sink.filter(|s| initial_values && s.modes.contains(StreamMode::Values)) {
                boxed(|| sink.send(step, EventKind::Values(state.clone()))).await?;
            }
            // When the last step's recorded span ended: the next one begins then.
            let mut step_ended = None;
            while !tasks.is_empty() {
                if ran == limit {
                    let stop = Stop { graph, tasks: &tasks, slots: &slots, planner: &planner, step: step + 1, ran };
                    return Err(boxed(|| stop.at_limit(persist, state, limit)).await);
                }
                if !(resumed && ran == 0)
                    && let Some(at) = breakpoint(&tasks, |n| graph.nodes[n].interrupt_before || run.breaks_at(n, false))
                {
                    return boxed(|| pause_at_breakpoint(graph, state, &tasks, &planner, persist, at, "before", ran))
                        .await;
                }
                ran += 1;
                step += 1;
                fill_slots(&mut slots, &mut saved, tasks.len());
                let checkpoint = persist.as_ref().map(|p| Arc::clone(p.current()));
                let traced = span::StepSpan::open(&run, step, tasks.len(), &mut step_ended);
                let at = task::At::new((step, traced.id()), checkpoint.as_ref(), call_store.as_deref());
                if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Tasks)) {
                    boxed(|| events::tasks_started(graph, sink, step, &tasks)).await?;
                }
                if let Some(log) = &run.log {
                    events::log_started(graph, &run, log, step, &state, &tasks);
                }
                let step_span = span::step(step, tasks.len());
                let running = task::run_step(graph, &state, &run, at, &tasks, &mut slots, persist.as_deref_mut(), sink);
                let outcome = in_span(&step_span, running).await;
                if let Some(log) = &run.log {
                    events::log_finished(graph, &run, log, step, &tasks, &slots, &outcome);
                }
                let paused = match outcome {
                    Ok(paused) => paused,
                    Err(failure) => {
                        let text = events::failure_text(&failure.error);
                        let stop = Stop { graph, tasks: &tasks, slots: &slots, planner: &planner, step, ran };
                        return Err(boxed(|| stop.failed(persist, state, failure.task, text, failure.error)).await);
                    }
                };
                if !paused.is_empty() {
                    let stop = Stop { graph, tasks: &tasks, slots: &slots, planner: &planner, step, ran };
                    return boxed(|| stop.paused(persist, state, paused)).await;
                }
                if let Err(error) = merge::apply(graph, &mut state, &tasks, &mut slots, step) {
                    let task = conflicting_task(graph, &tasks, &error);
                    let stop = Stop { graph, tasks: &tasks, slots: &slots, planner: &planner, step, ran };
                    return Err(boxed(|| stop.failed(persist, state, task, error.to_string(), error)).await);
                }
                if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Values)) {
                    boxed(|| sink.send(step, EventKind::Values(state.clone()))).await?;
                }
                if let Some(log) = run.log.as_ref().filter(|l| l.policy.state) {
                    events::log_state(&run, log, step, &state);
                }
                let after = breakpoint(&tasks, |n| graph.nodes[n].interrupt_after || run.breaks_at(n, true));
                let count = tasks.len();
                planner.plan(graph, &mut tasks, &mut slots, &state);
                end_if_sent_to_parent(&run, &mut tasks);
                if let Some(persist) = &mut persist {
                    // Made in line: only the wait for the store is a future, the saver's own
                    // (already boxed) or, for the background writer, one boxed here. Not through
                    // `Persist::send`: its future in this frame cost 3 % more per step.
                    let stored = match persist.begin_checkpoint(graph, &state, count, &tasks, &planner) {
                        Ok(Some(op)) if persist.queues() => boxed(|| persist.queue(op, true)).await,
                        Ok(Some(op)) => persist.store(op).await.map_err(GraphError::from),
                        Ok(None) => Ok(()),
                        Err(error) => Err(error),
                    };
                    if let Err(error) = stored {
                        return Err(refused(error, state).into());
                    }
                    if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Checkpoints)) {
                        let (id, step) = (persist.current().to_string(), persist.step());
                        let event = EventKind::Checkpoint { id, step, source: Source::Loop };
                        boxed(|| sink.send(u64::try_from(step).unwrap_or(0), event)).await?;
                    }
                }
                if let (Some(at), false) = (after, tasks.is_empty()) {
                    return boxed(|| pause_at_breakpoint(graph, state, &tasks, &planner, persist, at, "after", ran))
                        .await;
                }
            }
            let checkpoint = persist.as_ref().map(|p| Arc::clone(p.current()));
            if let Some(persist) = persist
                && let Err(error) = boxed(|| persist.finish(graph, &state, &planner)).await
            {
                return Err(refused(error, state).into());
            }
            Ok(RunOutput::new(state, ran, Vec::new()).at(checkpoint.as_ref()))
        },
    }
}

pin_project_lite::pin_project! {
    /// A run's loop, polled through one function that is never inlined: the loop's code then
    /// exists once, not once inside every future that awaits a run (`invoke`, a stream, each
    /// subgraph node), so a graph nested in a graph runs the same instructions, warm in the
    /// instruction cache, at every level.
    struct Looping<F> {
        #[pin]
        run: F,
    }
}

impl<F: Future> Future for Looping<F> {
    type Output = F::Output;

    #[inline(never)]
    fn poll(self: std::pin::Pin<&mut Self>, cx: &mut std::task::Context<'_>) -> std::task::Poll<F::Output> {
        self.project().run.poll(cx)
    }
}

/// When a node of this (subgraph) run sent the parent elsewhere with `goto_parent`, the run ends
/// with the step: its checkpoint says so (no next tasks), so running the parent's task again
/// does not continue it.
fn end_if_sent_to_parent<C>(run: &RunShared<C>, tasks: &mut Tasks) {
    if run.parent_goto.get().is_some() {
        tasks.clear();
    }
}

/// Readies the slots of a step of `tasks` tasks: the outputs saved for them, or empty ones.
fn fill_slots<S: State>(slots: &mut Slots<S>, saved: &mut Slots<S>, tasks: usize) {
    slots.clear();
    if saved.is_empty() {
        for _ in 0..tasks {
            slots.push(None);
        }
    } else {
        slots.append(saved);
    }
}

/// The task a failed merge is reported on: for a conflict, the second of the two tasks that
/// wrote the field.
fn conflicting_task<S: State, C>(graph: &Inner<S, C>, tasks: &[Task], error: &GraphError) -> usize {
    let second = match error {
        GraphError::InvalidUpdate { second, .. } => second.as_str(),
        _ => "",
    };
    tasks.iter().rposition(|t| *graph.node_names[t.node as usize] == *second).unwrap_or(0)
}

/// A run that stopped on a failed step, with what it leaves.
fn failed<S>(mut out: RunOutput<S>, failure: RunFailure, error: GraphError) -> Halt<S> {
    out.failure = Some(failure);
    Halt::Failed(Box::new((out, error)))
}

/// A step that cannot complete, and what it leaves to store.
struct Stop<'a, S: State, C> {
    graph: &'a Inner<S, C>,
    tasks: &'a [Task],
    slots: &'a [Option<NodeOutput<S>>],
    planner: &'a Planner,
    step: u64,
    ran: u64,
}

impl<S: State, C> Stop<'_, S, C> {
    /// Stores what the failed step left (the finished tasks' outputs, the failure of task
    /// `task`) and returns the failed run.
    async fn failed(
        self,
        persist: Option<Box<Persist>>,
        state: S,
        task: usize,
        text: String,
        error: GraphError,
    ) -> Halt<S> {
        let checkpoint = persist.as_ref().map(|p| Arc::clone(p.current()));
        if let Some(persist) = persist {
            let ending = StepEnding::Failed(vec![(task as u32, text.clone())]);
            if let Err(stored) =
                persist.end_step(self.graph, &state, self.tasks, self.slots, self.planner, ending).await
            {
                return refused(stored, state).into();
            }
        }
        let node = self.tasks.get(task).map(|t| self.graph.node_names[t.node as usize].to_string());
        let failure = RunFailure { step: self.step, node, task: Some(task as u32), message: text };
        failed(RunOutput::new(state, self.ran, Vec::new()).at(checkpoint.as_ref()), failure, error)
    }
}

impl<S: State, C> Stop<'_, S, C> {
    /// Pauses the run on the interrupts its step raised (by task index): stores the step's
    /// finished outputs and the interrupts with the checkpoint, for `resume`. Only a run on a
    /// thread can pause.
    async fn paused(
        self,
        persist: Option<Box<Persist>>,
        state: S,
        paused: Vec<(u32, Interrupt)>,
    ) -> Result<RunOutput<S>, Halt<S>> {
        let Some(persist) = persist else {
            return Err(GraphError::InterruptWithoutThread { node: paused[0].1.node.clone() }.into());
        };
        let checkpoint = Arc::clone(persist.current());
        let ending = StepEnding::Paused(&paused);
        if let Err(error) = persist.end_step(self.graph, &state, self.tasks, self.slots, self.planner, ending).await {
            return Err(refused(error, state).into());
        }
        let interrupts = paused.into_iter().map(|(_, interrupt)| interrupt).collect();
        Ok(RunOutput::new(state, self.ran, interrupts).at(Some(&checkpoint)))
    }

    /// Ends a run at the recursion limit, before step `step` runs: its tasks stay in the
    /// stored checkpoint for a later `resume`.
    async fn at_limit(self, persist: Option<Box<Persist>>, state: S, limit: u64) -> Halt<S> {
        let checkpoint = persist.as_ref().map(|p| Arc::clone(p.current()));
        if let Some(persist) = persist
            && let Err(error) = persist.abort(self.graph, &state, self.tasks, self.planner).await
        {
            return refused(error, state).into();
        }
        let error = GraphError::RecursionLimit { limit };
        let failure = RunFailure { step: self.step, node: None, task: None, message: error.to_string() };
        failed(RunOutput::new(state, self.ran, Vec::new()).at(checkpoint.as_ref()), failure, error)
    }
}

/// The first task whose node has the breakpoint `set`: its position in the step, and its node.
fn breakpoint(tasks: &[Task], set: impl Fn(usize) -> bool) -> Option<(u32, u32)> {
    tasks.iter().enumerate().find(|(_, t)| set(t.node as usize)).map(|(i, t)| (i as u32, t.node))
}

/// Stops the run at an `interrupt_before`/`interrupt_after` breakpoint: the stored checkpoint
/// holds the pending tasks, an outcome record says the run stopped at a breakpoint, and
/// `resume` continues from there.
#[allow(clippy::too_many_arguments)]
async fn pause_at_breakpoint<S: State, C>(
    graph: &Inner<S, C>,
    state: S,
    tasks: &[Task],
    planner: &Planner,
    persist: Option<Box<Persist>>,
    (task, node): (u32, u32),
    when: &str,
    ran: u64,
) -> Result<RunOutput<S>, Halt<S>> {
    let name = &graph.node_names[node as usize];
    let Some(persist) = persist else {
        return Err(GraphError::InterruptWithoutThread { node: name.to_string() }.into());
    };
    let current = Arc::clone(persist.current());
    let unrun: Vec<Option<NodeOutput<S>>> = tasks.iter().map(|_| None).collect();
    if let Err(error) = persist.end_step(graph, &state, tasks, &unrun, planner, StepEnding::Breakpoint).await {
        return Err(refused(error, state).into());
    }
    let interrupt = Interrupt::breakpoint(&current, when, name, task);
    Ok(RunOutput::new(state, ran, vec![interrupt]).at(Some(&current)))
}
