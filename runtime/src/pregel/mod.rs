//! The executor: super-steps in the Pregel (bulk synchronous parallel) model.
//!
//! Each step runs its tasks concurrently against one shared, read-only snapshot of the state,
//! then folds their updates in task order (never completion order), then plans the next step
//! from edges, routes, routers, joins and Sends. Nothing on this path serializes, clones the
//! state, or spawns: sync nodes are called in place, async nodes of one step are polled
//! together on the calling task, and a step with one task awaits it directly. A run on a
//! thread adds persistence at the step boundaries (see `persist`), and nothing else.

mod events;
mod merge;
mod persist;
mod planner;
pub(crate) mod record;
mod task;

use crate::checkpoint::Source;
use crate::config::Durability;
use crate::error::GraphError;
use crate::graph::{Inner, RunOutput};
use crate::interrupt::{Interrupt, Resume};
use crate::node::NodeOutput;
use crate::runtime::RunShared;
use crate::state::State;
use crate::stream::{EventKind, Sink, StreamMode};
use persist::{Persist, ThreadLock};
pub(crate) use persist::{load_state, pending_interrupts};
use planner::Planner;
use std::sync::Arc;
pub(crate) use task::Task;

/// Runs a graph from `state` until no task is left, persisting nothing.
pub(crate) async fn execute<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    state: S,
    run: Arc<RunShared<C>>,
    limit: u64,
    sink: Option<&Sink<S>>,
) -> Result<RunOutput<S>, GraphError> {
    let tasks = graph.entries.iter().map(|&node| Task::pull(node)).collect();
    let start = Start { state, tasks, saved: Vec::new(), planner: Planner::new(graph), step: 0, resumed: false };
    drive(graph, start, run, limit, None, sink).await
}

/// Runs a graph on a thread from `input`, checkpointing each step.
pub(crate) async fn execute_on_thread<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    input: S::Update,
    run: Arc<RunShared<C>>,
    limit: u64,
    thread: Arc<str>,
    durability: Durability,
    sink: Option<&Sink<S>>,
) -> Result<RunOutput<S>, GraphError> {
    let _lock = ThreadLock::acquire(&graph.busy, &thread)?;
    let (persist, state) = Persist::start(graph, thread, durability, input).await?;
    let tasks = graph.entries.iter().map(|&node| Task::pull(node)).collect();
    let step = step_of(&persist);
    let start = Start { state, tasks, saved: Vec::new(), planner: Planner::new(graph), step, resumed: false };
    drive(graph, start, run, limit, Some(persist), sink).await
}

/// Continues a thread's pending tasks (from its head, or on a new branch from `from`),
/// reusing the outputs of tasks that had finished and answering pending interrupts.
pub(crate) async fn resume_thread<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    run: Arc<RunShared<C>>,
    limit: u64,
    thread: Arc<str>,
    durability: Durability,
    answer: Resume,
    from: Option<&str>,
) -> Result<RunOutput<S>, GraphError> {
    let _lock = ThreadLock::acquire(&graph.busy, &thread)?;
    let resumed = Persist::resume(graph, thread, durability, answer, from).await?;
    let step = step_of(&resumed.persist);
    let start = Start {
        state: resumed.state,
        tasks: resumed.tasks,
        saved: resumed.saved,
        planner: resumed.planner,
        step,
        resumed: true,
    };
    drive(graph, start, run, limit, Some(resumed.persist), None).await
}

/// Writes `update` to the thread as a new checkpoint, as if `as_node` had run (its edges and
/// router decide the next tasks), or keeping the pending tasks when `as_node` is `None`.
pub(crate) async fn update_thread<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    thread: Arc<str>,
    from: Option<&str>,
    update: S::Update,
    as_node: Option<u32>,
) -> Result<String, GraphError> {
    let _lock = ThreadLock::acquire(&graph.busy, &thread)?;
    persist::update_state(graph, thread, from, update, as_node).await
}

fn step_of(persist: &Persist) -> u64 {
    u64::try_from(persist.step()).unwrap_or(0)
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
}

async fn drive<S: State, C: Send + Sync + 'static>(
    graph: &Inner<S, C>,
    start: Start<S>,
    run: Arc<RunShared<C>>,
    limit: u64,
    mut persist: Option<Persist>,
    sink: Option<&Sink<S>>,
) -> Result<RunOutput<S>, GraphError> {
    let Start { mut state, mut tasks, mut saved, mut planner, mut step, resumed } = start;
    let mut slots: Vec<Option<NodeOutput<S>>> = Vec::new();
    let mut ran = 0;
    if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Values)) {
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
        let outcome = task::run_step(graph, &state, &run, at, &tasks, &mut slots, persist.as_mut()).await;
        if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Tasks)) {
            events::tasks_finished(graph, sink, step, &tasks, &slots, &outcome).await?;
        }
        if let Some(log) = &run.log {
            events::log_finished(graph, &run, log, step, &tasks, &slots, &outcome);
        }
        let paused = match outcome {
            Ok(paused) => paused,
            Err(error) => {
                if let Some(persist) = persist {
                    persist.fail(graph, &state, &tasks, &slots, &planner).await?;
                }
                return Err(error);
            }
        };
        if !paused.is_empty() {
            let Some(persist) = persist else {
                return Err(GraphError::InterruptWithoutThread { node: paused[0].1.node.clone() });
            };
            persist.pause(graph, &state, &tasks, &slots, &paused, &planner).await?;
            let interrupts = paused.into_iter().map(|(_, interrupt)| interrupt).collect();
            return Ok(RunOutput { state, steps: ran, interrupts });
        }
        if let Some(persist) = &mut persist {
            persist.save_outputs(graph, &tasks, &slots).await?;
        }
        if let Some(sink) = sink.filter(|s| s.modes.contains(StreamMode::Updates)) {
            events::updates(graph, sink, step, &tasks, &slots).await?;
        }
        if let Err(error) = merge::apply(graph, &mut state, &tasks, &mut slots, step) {
            if let Some(persist) = persist {
                persist.abort(graph, &state, &tasks, &planner).await?;
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
        tasks = planner.plan(graph, &tasks, &mut slots, &state, step);
        if let Some(persist) = &mut persist {
            persist.checkpoint(graph, &state, &tasks, &planner, Source::Loop).await?;
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
/// holds the pending tasks, and `resume` continues from there.
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
    let interrupt = Interrupt::breakpoint(persist.current(), when, name);
    persist.abort(graph, &state, tasks, planner).await?;
    Ok(RunOutput { state, steps: ran, interrupts: vec![interrupt] })
}
