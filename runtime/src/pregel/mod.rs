//! The executor: super-steps in the Pregel (bulk synchronous parallel) model.
//!
//! Each step runs its tasks concurrently against one shared, read-only snapshot of the state,
//! then folds their updates in task order (never completion order), then plans the next step
//! from edges, routes, routers, joins and Sends. Nothing on this path serializes, clones the
//! state, or spawns: sync nodes are called in place, async nodes of one step are polled
//! together on the calling task, and a step with one task awaits it directly. A run on a
//! thread adds persistence at the step boundaries (see `persist`), and nothing else.

mod begin;
pub(crate) mod codec;
mod events;
mod load;
mod merge;
mod persist;
mod planner;
pub(crate) mod record;
mod task;
mod update;

use crate::checkpoint::Source;
use crate::command::RunInput;
use crate::config::Durability;
use crate::error::GraphError;
use crate::graph::{Inner, RunOutput};
use crate::interrupt::Interrupt;
use crate::node::NodeOutput;
use crate::runtime::RunShared;
use crate::state::{State, Update};
use crate::stream::{EventKind, Sink, StreamMode};
pub(crate) use begin::state_of;
use begin::{Begin, On, Prepared};
pub(crate) use load::Stored;
use persist::{Held, Persist, StepEnding, ThreadLock};
use planner::Planner;
use std::sync::Arc;
pub(crate) use task::Task;
pub(crate) use update::{AsNode, update_thread};

/// Runs a graph from `state` until no task is left, persisting nothing. `input_wrote` says
/// whether the input wrote anything (a `values` stream starts with the state only then).
pub(crate) async fn execute<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    state: S,
    run: Arc<RunShared<C>>,
    limit: u64,
    sink: Option<&Sink<S>>,
    input_wrote: bool,
) -> Result<RunOutput<S>, GraphError> {
    let mut planner = Planner::new(graph);
    let tasks = planner.start(graph, &state);
    let saved = tasks.iter().map(|_| None).collect();
    let start = Start { state, tasks, saved, planner, step: 0, resumed: false, initial_values: input_wrote };
    drive(graph, start, run, limit, None, sink).await
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
) -> Result<RunOutput<S>, GraphError> {
    let _lock = ThreadLock::acquire(&graph.busy, &thread)?;
    let held = Held::take(&graph.saver, &thread).await?;
    let result = async {
        let on = On { thread: &thread, claim: held.claim(), durability };
        let (begin, initial_values) = match input {
            RunInput::Update(update) => {
                let wrote = !update.is_empty();
                (begin::start(graph, on, update).await?, wrote)
            }
            RunInput::Command(command) => match begin::resume(graph, on, command, from).await? {
                Prepared::Done(state) => {
                    if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Values)) {
                        sink.send(0, EventKind::Values(state.clone())).await?;
                    }
                    return Ok(RunOutput { state, steps: 0, interrupts: Vec::new() });
                }
                Prepared::Run(begin) => (*begin, true),
            },
        };
        let Begin { persist, state, tasks, saved, planner, resumed } = begin;
        let step = u64::try_from(persist.step()).unwrap_or(0);
        let start = Start { state, tasks, saved, planner, step, resumed, initial_values };
        drive(graph, start, run, limit, Some(persist), sink).await
    }
    .await;
    held.release().await;
    result
}

/// Where a run starts: its state, first tasks (with any outputs already saved), and step.
struct Start<S: State> {
    state: S,
    tasks: Vec<Task>,
    saved: Vec<Option<NodeOutput<S>>>,
    planner: Planner,
    step: u64,
    /// The run continues a paused thread, so breakpoints before its first step do not fire again.
    resumed: bool,
    /// A `values` stream starts with the state as it is (after an input that wrote something,
    /// or on a resume).
    initial_values: bool,
}

async fn drive<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    start: Start<S>,
    run: Arc<RunShared<C>>,
    limit: u64,
    mut persist: Option<Persist>,
    sink: Option<&Sink<S>>,
) -> Result<RunOutput<S>, GraphError> {
    let Start { mut state, mut tasks, mut saved, mut planner, mut step, resumed, initial_values } = start;
    let mut slots: Vec<Option<NodeOutput<S>>> = Vec::new();
    let mut ran = 0;
    if let Some(sink) = sink.filter(|s| initial_values && s.modes.contains(StreamMode::Values)) {
        sink.send(step, EventKind::Values(state.clone())).await?;
    }
    while !tasks.is_empty() {
        if ran == limit {
            if let Some(persist) = persist {
                persist.abort(graph, &state, &tasks, &planner).await?;
            }
            return Err(GraphError::RecursionLimit { limit });
        }
        if !(resumed && ran == 0)
            && let Some(node) = breakpoint(&tasks, |n| graph.nodes[n].interrupt_before)
        {
            return pause_at_breakpoint(graph, state, &tasks, &planner, persist, node, "before", ran).await;
        }
        ran += 1;
        step += 1;
        slots.clear();
        if saved.is_empty() {
            slots.resize_with(tasks.len(), || None);
        } else {
            slots.append(&mut saved);
        }
        let checkpoint = persist.as_ref().map(|p| Arc::clone(p.current()));
        let at = task::At { step, checkpoint: checkpoint.as_ref() };
        if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Tasks)) {
            events::tasks_started(graph, sink, step, &tasks).await?;
        }
        if let Some(log) = &run.log {
            events::log_started(graph, &run, log, step, &state, &tasks);
        }
        let outcome = task::run_step(graph, &state, &run, at, &tasks, &mut slots, persist.as_mut(), sink).await;
        if let Some(log) = &run.log {
            events::log_finished(graph, &run, log, step, &tasks, &slots, &outcome);
        }
        let paused = match outcome {
            Ok(paused) => paused,
            Err(failure) => {
                if let Some(persist) = persist {
                    let errors = vec![(failure.task as u32, events::failure_text(&failure.error))];
                    persist.end_step(graph, &state, &tasks, &slots, &planner, StepEnding::Failed(errors)).await?;
                }
                return Err(failure.error);
            }
        };
        if !paused.is_empty() {
            let Some(persist) = persist else {
                return Err(GraphError::InterruptWithoutThread { node: paused[0].1.node.clone() });
            };
            persist.end_step(graph, &state, &tasks, &slots, &planner, StepEnding::Paused(&paused)).await?;
            let interrupts = paused.into_iter().map(|(_, interrupt)| interrupt).collect();
            return Ok(RunOutput { state, steps: ran, interrupts });
        }
        if let Err(error) = merge::apply(graph, &mut state, &tasks, &mut slots, step) {
            if let Some(persist) = persist {
                let (second, text) = match &error {
                    GraphError::InvalidUpdate { second, .. } => (second.clone(), error.to_string()),
                    other => (String::new(), other.to_string()),
                };
                let task = tasks.iter().rposition(|t| *graph.node_names[t.node as usize] == *second).unwrap_or(0);
                let errors = vec![(task as u32, text)];
                persist.end_step(graph, &state, &tasks, &slots, &planner, StepEnding::Failed(errors)).await?;
            }
            return Err(error);
        }
        if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Values)) {
            sink.send(step, EventKind::Values(state.clone())).await?;
        }
        if let Some(log) = run.log.as_ref().filter(|l| l.policy.state) {
            events::log_state(&run, log, step, &state);
        }
        let after = breakpoint(&tasks, |n| graph.nodes[n].interrupt_after);
        let count = tasks.len();
        tasks = planner.plan(graph, &tasks, &mut slots, &state, step);
        if let Some(persist) = &mut persist {
            persist.checkpoint(graph, &state, count, &tasks, &planner).await?;
            if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Checkpoints)) {
                let (id, step) = (persist.current().to_string(), persist.step());
                sink.send(u64::try_from(step).unwrap_or(0), EventKind::Checkpoint { id, step, source: Source::Loop })
                    .await?;
            }
        }
        if let (Some(node), false) = (after, tasks.is_empty()) {
            return pause_at_breakpoint(graph, state, &tasks, &planner, persist, node, "after", ran).await;
        }
    }
    if let Some(persist) = persist {
        persist.finish(graph, &state, &planner).await?;
    }
    Ok(RunOutput { state, steps: ran, interrupts: Vec::new() })
}

/// The first task whose node has the breakpoint `set`.
fn breakpoint(tasks: &[Task], set: impl Fn(usize) -> bool) -> Option<u32> {
    tasks.iter().map(|t| t.node).find(|&n| set(n as usize))
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
    persist: Option<Persist>,
    node: u32,
    when: &str,
    ran: u64,
) -> Result<RunOutput<S>, GraphError> {
    let name = &graph.node_names[node as usize];
    let Some(persist) = persist else {
        return Err(GraphError::InterruptWithoutThread { node: name.to_string() });
    };
    let current = Arc::clone(persist.current());
    let unrun: Vec<Option<NodeOutput<S>>> = tasks.iter().map(|_| None).collect();
    persist.end_step(graph, &state, tasks, &unrun, planner, StepEnding::Breakpoint).await?;
    let interrupt = Interrupt::breakpoint(&current, when, name);
    Ok(RunOutput { state, steps: ran, interrupts: vec![interrupt] })
}
