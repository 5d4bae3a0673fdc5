//! A compiled graph run as a node of another graph.
//!
//! The subgraph's state is made from the parent's when its node runs, and given back as an
//! update when the subgraph finishes. On a thread, the subgraph checkpoints in the parent's
//! checkpointer under a key of its own: the parent's key, then the node, the checkpoint its task
//! runs from and the task's position. A task that runs again (after an interrupt, a crash or a
//! failure) finds the subgraph's checkpoints there and continues it instead of starting over.
//!
//! A subgraph whose nodes are all sync (with no retry or timeout), in a run that neither stores
//! nor streams, is called in place like a sync node: nothing in its run can wait, so its loop
//! is polled once on the stack, with no task, box or future of the node's own. Everything else
//! runs it as an async node.

use super::compiled::CompiledGraph;
use super::inner::Inner;
use super::inspect::Inspect;
use super::node_spec::{NodeResult, NodeSpec, PayloadType, Shape, take_payload};
use super::parent_goto::ParentGotoError;
use super::snapshot::SubgraphSnapshot;
use crate::checkpoint::Checkpointer;
use crate::command::{RunCommand, RunInput};
use crate::config::RunConfig;
use crate::error::{BuildError, GraphError, NodeError};
use crate::interrupt::{Interrupt, Resume};
use crate::node::{NodeOutput, SendPayload};
use crate::pregel;
use crate::record::codec::to_json_shown;
use crate::runtime::{RunShared, Runtime, Storage};
use crate::state::State;
use crate::stream::{SharedWriter, Sink};
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

/// Separates the parent's key from a subgraph's namespace in the keys subgraph checkpoints are
/// stored under. A control character: no thread id a person chooses ends up containing it.
use crate::checkpoint::NAMESPACE_SEPARATOR;

/// How a subgraph's state is made from its parent's state, and what it gives back.
///
/// Implemented for a subgraph whose state is the parent's own (by `#[state]`: the subgraph starts
/// from the parent's state, and every field it ends with is written back), and for any pair of
/// types with `impl From<&Parent> for Child` and `impl From<Child> for ParentUpdate`:
///
/// ```
/// use graphwright::prelude::*;
///
/// #[state]
/// pub struct Parent {
///     pub question: String,
///     pub answer: String,
/// }
///
/// #[state]
/// pub struct Research {
///     pub topic: String,
///     pub notes: Vec<String>,
/// }
///
/// impl From<&Parent> for Research {
///     fn from(parent: &Parent) -> Self {
///         Research { topic: parent.question.clone(), notes: Vec::new() }
///     }
/// }
///
/// impl From<Research> for ParentUpdate {
///     fn from(research: Research) -> Self {
///         ParentUpdate::new().answer(research.notes.join("; "))
///     }
/// }
///
/// fn look_up(state: &Research) -> ResearchUpdate {
///     ResearchUpdate::new().notes(vec![format!("{} is well documented", state.topic)])
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Report> {
/// let research = StateGraph::<Research>::new().add_node("look_up", look_up).add_edge(START, "look_up");
/// let app = StateGraph::<Parent>::new()
///     .add_subgraph("research", research.add_edge("look_up", END))
///     .add_edge(START, "research")
///     .add_edge("research", END)
///     .compile()?;
/// let out = app.invoke(ParentUpdate::new().question("serde".to_owned()), &RunConfig::default()).await?;
/// assert_eq!(out.state.answer, "serde is well documented");
/// # Ok(())
/// # }
/// ```
#[diagnostic::on_unimplemented(
    message = "the state of this subgraph, `{Self}`, does not map to and from the state `{P}`",
    label = "a subgraph of this graph must start from its state and give back its update",
    note = "use the same `#[state]` type, or implement `From<&{P}> for {Self}` and `From<{Self}>` for the \
            update of `{P}`"
)]
pub trait SubgraphState<P: State>: State {
    /// The subgraph's state when its node starts, from the parent's.
    fn enter(parent: &P) -> Self;
    /// What the parent takes from the subgraph's final state.
    fn leave(self) -> P::Update;
}

impl<P: State, C: State> SubgraphState<P> for C
where
    C: for<'a> From<&'a P>,
    P::Update: From<C>,
{
    fn enter(parent: &P) -> Self {
        C::from(parent)
    }

    fn leave(self) -> P::Update {
        P::Update::from(self)
    }
}

/// An update that sets every field to a state's value, past the fields' reducers: how a
/// subgraph on a thread is given its first state, whatever its reducers do with a write.
/// `#[state]` implements it.
pub trait FullUpdate: State {
    /// The update that makes any state equal to `self`.
    fn full_update(self) -> Self::Update;
}

/// What [`StateGraph::add_subgraph`](crate::StateGraph::add_subgraph) takes: a compiled graph,
/// or a builder it compiles with the parent (its wiring errors are the parent's).
pub trait IntoSubgraph<S: State, C> {
    /// Compiles the graph if needed.
    ///
    /// # Errors
    /// The subgraph's own wiring errors.
    fn into_subgraph(self) -> Result<CompiledGraph<S, C>, BuildError>;
}

impl<S: State, C> IntoSubgraph<S, C> for CompiledGraph<S, C> {
    fn into_subgraph(self) -> Result<CompiledGraph<S, C>, BuildError> {
        Ok(self)
    }
}

/// A subgraph that failed, as the error of the node that ran it.
#[derive(Debug, thiserror::Error)]
#[error("subgraph `{graph}` failed: {source}")]
pub struct SubgraphError {
    /// The subgraph's name.
    pub graph: String,
    /// What went wrong inside it.
    #[source]
    pub source: GraphError,
}

/// The node that runs `child` from the state: it follows its edges (`Shape::Update`, no
/// targets), or goes to the one of `targets` the subgraph names with
/// [`Runtime::goto_parent`] (`Shape::Branch`).
pub(crate) fn node<P, CS, C>(
    child: CompiledGraph<CS, C>,
    shape: Shape,
    targets: Option<&'static [&'static str]>,
) -> NodeSpec<P, C>
where
    P: State,
    CS: SubgraphState<P> + FullUpdate,
    C: Send + Sync + 'static,
{
    let child = Arc::new(Child { graph: child, views: Mutex::default() });
    let inspect = Arc::clone(&child) as Arc<dyn Inspect>;
    let (runs_in_place, in_place) = (child.graph.inner().runs_in_place, Arc::clone(&child));
    let mut spec = NodeSpec::subgraph(
        shape,
        None,
        runs_in_place,
        move |parent: &P, rt: &Runtime<C>, _| {
            Box::pin(Arc::clone(&child).run(|| CS::enter(parent), CS::leave, targets, rt))
        },
        move |parent: &P, rt: &Runtime<C>, _| in_place.run_in_place(|| CS::enter(parent), CS::leave, targets, rt),
    );
    spec.subgraph = Some(inspect);
    spec
}

/// The node that runs `child` from each Send payload of type `T` it receives.
pub(crate) fn payload_node<P, T, CS, C>(child: CompiledGraph<CS, C>) -> NodeSpec<P, C>
where
    P: State,
    T: SendPayload,
    CS: FullUpdate + for<'a> From<&'a T>,
    P::Update: From<CS>,
    C: Send + Sync + 'static,
{
    let child = Arc::new(Child { graph: child, views: Mutex::default() });
    let inspect = Arc::clone(&child) as Arc<dyn Inspect>;
    let takes = Some(PayloadType::of::<T>());
    let (runs_in_place, in_place) = (child.graph.inner().runs_in_place, Arc::clone(&child));
    let mut spec = NodeSpec::subgraph(
        Shape::Update,
        takes,
        runs_in_place,
        move |_: &P, rt: &Runtime<C>, input| {
            let child = Arc::clone(&child);
            Box::pin(async move {
                let payload = take_payload::<T>(input, rt.node())?;
                child.run(|| CS::from(payload), P::Update::from, None, rt).await
            })
        },
        move |_: &P, rt: &Runtime<C>, input| {
            let payload = take_payload::<T>(input, rt.node())?;
            in_place.run_in_place(|| CS::from(payload), P::Update::from, None, rt)
        },
    );
    spec.subgraph = Some(inspect);
    spec
}

/// The key the subgraph at namespace segment `segment` stores under, inside the run whose key
/// is `parent`.
pub(crate) fn key(parent: &str, segment: &str) -> String {
    format!("{parent}{NAMESPACE_SEPARATOR}{segment}")
}

/// The namespace segment of the subgraph run by task `task` of `checkpoint`, running `node`.
pub(crate) fn segment(node: &str, checkpoint: &str, task: u32) -> String {
    format!("{node}:{checkpoint}:{task}")
}

impl<CS: State, C: Send + Sync + 'static> Inspect for Child<CS, C> {
    fn snapshot<'a>(
        &'a self,
        saver: &'a Arc<dyn Checkpointer>,
        key: String,
        namespace: Vec<String>,
    ) -> futures::future::BoxFuture<'a, Result<Option<SubgraphSnapshot>, GraphError>> {
        Box::pin(async move {
            let graph = self.bound_to(saver);
            let cfg = RunConfig::<C>::thread(key);
            let Some(snapshot) = graph.snapshot_nested(&cfg, &namespace).await? else { return Ok(None) };
            let tasks = snapshot
                .tasks
                .into_iter()
                .map(|task| crate::PendingTask {
                    node: task.node,
                    index: task.index,
                    result: task.result.as_ref().map(to_json_shown),
                    error: task.error,
                    interrupts: task.interrupts,
                    subgraph: task.subgraph,
                })
                .collect();
            Ok(Some(SubgraphSnapshot {
                namespace,
                state: to_json_shown(&snapshot.state),
                next: snapshot.next,
                tasks,
                checkpoint_id: snapshot.checkpoint_id,
                interrupts: snapshot.interrupts,
            }))
        })
    }

    fn describe(&self, node: &str) -> super::describe::Subgraph {
        super::describe::Subgraph::of::<CS>(node, self.graph.name(), self.graph.drawing(), self.graph.subgraphs())
    }
}

struct Child<CS: State, C> {
    graph: CompiledGraph<CS, C>,
    /// The graph bound to the checkpointers of the graphs that ran it (a subgraph keeps its
    /// checkpoints where its parent keeps its own).
    views: Mutex<Vec<CompiledGraph<CS, C>>>,
}

impl<CS: State, C: Send + Sync + 'static> Child<CS, C> {
    /// The graph storing in `saver`: itself, or a copy bound to `saver`, made once per saver.
    fn bound_to(&self, saver: &Arc<dyn Checkpointer>) -> CompiledGraph<CS, C> {
        let same =
            |graph: &CompiledGraph<CS, C>| std::ptr::addr_eq(Arc::as_ptr(&graph.inner().saver), Arc::as_ptr(saver));
        if same(&self.graph) {
            return self.graph.clone();
        }
        let mut views = self.views.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(view) = views.iter().find(|v| same(v)) {
            return view.clone();
        }
        let view = self.graph.with_saver(Arc::clone(saver));
        views.push(view.clone());
        view
    }
}

impl<CS: State + FullUpdate, C: Send + Sync + 'static> Child<CS, C> {
    /// Runs the subgraph for the task `rt` belongs to: from `enter()` the first time, from
    /// where it stopped when the task runs again; its final state goes back through `leave`,
    /// and the run goes to the one of `targets` (when the node has them) the subgraph named.
    async fn run<P: State>(
        self: Arc<Self>,
        enter: impl FnOnce() -> CS,
        leave: fn(CS) -> P::Update,
        targets: Option<&'static [&'static str]>,
        rt: &Runtime<C>,
    ) -> NodeResult<P> {
        // The segment names the run in stream events and storage keys: a run with neither
        // never builds it.
        let segment = (rt.run.writer.is_some() || rt.run.storage.is_some()).then(|| match &rt.checkpoint {
            Some(checkpoint) => segment(rt.node(), checkpoint, rt.task.index),
            None => segment(rt.node(), &format!("step{}", rt.step()), rt.task.index),
        });
        let sink = (rt.run.writer.as_ref().zip(segment.as_ref()))
            .map(|(up, segment)| Arc::new(Sink::<CS>::relay(Arc::clone(up), vec![segment.clone()])));
        let storage = rt.run.storage.as_ref().zip(segment.as_ref()).map(|(s, segment)| Storage {
            saver: Arc::clone(&s.saver),
            key: key(&s.key, segment).into(),
            durability: s.durability,
            ahead: s.ahead.clone(),
        });
        let graph = match &storage {
            Some(storage) => self.bound_to(&storage.saver),
            None => self.graph.clone(),
        };
        let inner = graph.inner();
        let writer = sink.clone().map(|s| s as SharedWriter);
        let shared = run_shared(inner, rt, writer, storage.clone());
        let asked = Arc::clone(&shared);
        let limit = inner.recursion_limit;
        let result = match storage {
            // The child's run in a box of its own, made in place: the node's future stays a few
            // hundred bytes, so boxing it and awaiting it copies little (measured: fewer
            // instructions and a third of the cache misses of carrying the run inline).
            None => pregel::boxed(|| pregel::execute(inner, enter(), shared, limit, sink.as_deref(), true)).await,
            Some(storage) => {
                let input = pregel::boxed(|| start_or_continue(&graph, &storage.key, enter, rt)).await?;
                pregel::boxed(|| {
                    pregel::execute_on_thread(
                        inner,
                        input,
                        shared,
                        limit,
                        storage.key,
                        storage.durability,
                        None,
                        sink.as_deref(),
                    )
                })
                .await
            }
        };
        finish(graph.name(), result, &asked, leave, targets, rt)
    }

    /// [`Child::run`] for a run that neither stores nor streams, of a subgraph whose nodes are
    /// all sync ([`Inner::runs_in_place`](super::inner::Inner)): nothing in its loop ever
    /// waits, so the loop is polled once, on the stack, with no box and no task of its own.
    fn run_in_place<P: State>(
        &self,
        enter: impl FnOnce() -> CS,
        leave: fn(CS) -> P::Update,
        targets: Option<&'static [&'static str]>,
        rt: &Runtime<C>,
    ) -> NodeResult<P> {
        let inner = self.graph.inner();
        let shared = run_shared(inner, rt, None, None);
        let asked = Arc::clone(&shared);
        let run = std::pin::pin!(pregel::execute(inner, enter(), shared, inner.recursion_limit, None, true));
        match run.poll(&mut Context::from_waker(Waker::noop())) {
            Poll::Ready(result) => finish(self.graph.name(), result, &asked, leave, targets, rt),
            // Only a node could wait, and none of these can: the graph's check says so.
            Poll::Pending => Err(NodeError::msg(format!(
                "subgraph `{}` waited while run in place, although all its nodes are sync; \
                 this is a graphwright defect: please report it",
                self.graph.name()
            ))),
        }
    }
}

/// The shared part of a subgraph's run inside the run `rt` belongs to.
fn run_shared<CS: State, C>(
    inner: &Inner<CS, C>,
    rt: &Runtime<C>,
    writer: Option<SharedWriter>,
    storage: Option<Storage>,
) -> Arc<RunShared<C>> {
    Arc::new(RunShared {
        context: Arc::clone(&rt.run.context),
        thread_id: rt.run.thread_id.clone(),
        run_id: rt.run.run_id,
        node_names: Arc::clone(&inner.node_names),
        store: inner.store.clone().or_else(|| rt.run.store.clone()),
        cache: inner.cache.clone().or_else(|| rt.run.cache.clone()),
        writer,
        log: rt.run.log.clone(),
        capture: rt.run.capture.clone(),
        metrics: rt.run.metrics.clone(),
        meter: Arc::clone(&rt.run.meter),
        storage,
        nested: true,
        parent_goto: std::sync::OnceLock::new(),
        breakpoints: None,
        user: rt.run.user.clone(),
        trace: rt.run.trace.as_ref().map(crate::telemetry::RunTrace::nested),
    })
}

/// What the subgraph node gives back once the subgraph's run `result` ended: its interrupt as
/// the node's, or the update `leave` makes of its final state, sent where the subgraph asked
/// (through `asked`, the run's shared part) when the node has `targets`.
fn finish<CS: State, P: State, C>(
    graph: &str,
    result: Result<crate::RunOutput<CS>, super::Halt<CS>>,
    asked: &RunShared<C>,
    leave: fn(CS) -> P::Update,
    targets: Option<&'static [&'static str]>,
    rt: &Runtime<C>,
) -> NodeResult<P> {
    let out = result.map_err(|halt| SubgraphError { graph: graph.to_owned(), source: halt.into_error() })?;
    if let Some(interrupt) = out.interrupts.into_iter().next() {
        // Reported as the parent node's, numbered after the answers the task already has,
        // so `resume`'s answer reaches this task when it runs again.
        let call = rt.answers.as_ref().map_or(0, |a| a.len() as u32);
        let Interrupt { id, value, .. } = interrupt;
        return Err(NodeError::interrupted(Interrupt {
            id,
            node: rt.node().to_owned(),
            value,
            task: rt.task.index,
            call,
        }));
    }
    let update = leave(out.state);
    let node = rt.node();
    let names = |targets: &[&str]| targets.iter().map(|t| (*t).to_owned()).collect::<Vec<_>>();
    match (asked.parent_goto.get(), targets) {
        (None, None) => Ok(NodeOutput::update(update)),
        (Some(target), None) => Err(ParentGotoError::Unrouted { node: node.to_owned(), target: target.clone() }.into()),
        (None, Some(targets)) => {
            Err(ParentGotoError::Missing { node: node.to_owned(), targets: names(targets) }.into())
        }
        (Some(target), Some(targets)) => match targets.iter().position(|t| t == target) {
            Some(at) => Ok(NodeOutput { update, goto: crate::node::Goto::Routes(vec![at as u32]), sends: Vec::new() }),
            None => Err(ParentGotoError::NotATarget {
                node: node.to_owned(),
                target: target.clone(),
                targets: names(targets),
            }
            .into()),
        },
    }
}

/// The input of a subgraph's run under `key`: `enter()`, the parent's state mapped, when the task runs it
/// for the first time; otherwise a command continuing it, with the answer the task was given
/// for the subgraph's interrupt.
async fn start_or_continue<CS, C>(
    graph: &CompiledGraph<CS, C>,
    key: &Arc<str>,
    enter: impl FnOnce() -> CS,
    rt: &Runtime<C>,
) -> Result<RunInput<CS>, NodeError>
where
    CS: FullUpdate,
    C: Send + Sync + 'static,
{
    let saver = &graph.inner().saver;
    if saver.get(key, None).await.map_err(GraphError::from)?.is_none() {
        return Ok(RunInput::Update(enter().full_update()));
    }
    let answer = match rt.answers.as_deref().and_then(|a| a.values().next_back()) {
        None => Resume::Continue,
        Some(answer) => {
            let cfg = RunConfig::<C>::thread(Arc::clone(key));
            let pending = graph.get_state(&cfg).await?.and_then(|s| s.interrupts.into_iter().next());
            match pending {
                Some(interrupt) => Resume::by_id([(interrupt.id, answer.clone())]),
                None => Resume::Continue,
            }
        }
    };
    Ok(RunInput::Command(RunCommand::resume(answer)))
}

#[cfg(test)]
mod tests {
    use crate::prelude::*;
    use crate::{NodePolicy, RetryPolicy};
    use std::time::Duration;

    #[crate::state]
    struct Tally {
        n: u32,
    }

    fn bump(state: &Tally) -> TallyUpdate {
        TallyUpdate::new().n(state.n + 1)
    }

    async fn bump_later(state: &Tally) -> TallyUpdate {
        TallyUpdate::new().n(state.n + 1)
    }

    /// `START → node → END`, `node` made by `add`.
    fn one(add: impl FnOnce(StateGraph<Tally>) -> StateGraph<Tally>) -> StateGraph<Tally> {
        add(StateGraph::new()).add_edge(START, "node").add_edge("node", END)
    }

    fn in_place(graph: StateGraph<Tally>) -> bool {
        graph.compile().unwrap().inner().runs_in_place
    }

    #[test]
    fn only_graphs_whose_nodes_never_wait_run_in_place() {
        let sync = || one(|g| g.add_node("node", bump));
        assert!(in_place(sync()), "sync nodes");
        assert!(in_place(one(|g| g.add_subgraph("node", sync()))), "a subgraph of sync nodes");
        let nested = one(|g| g.add_subgraph("node", one(|g| g.add_subgraph("node", sync()))));
        assert!(in_place(nested), "two levels of them");

        let waits = || one(|g| g.add_node("node", bump_later));
        assert!(!in_place(waits()), "an async node");
        assert!(!in_place(one(|g| g.add_subgraph("node", waits()))), "a subgraph with an async node");
        let retried = NodePolicy::new().retry(RetryPolicy::new(2));
        assert!(!in_place(sync().policy("node", retried.clone())), "a retry sleeps between attempts");
        assert!(!in_place(one(|g| g.add_subgraph("node", sync())).policy("node", retried)));
        let timed = NodePolicy::new().timeout(Duration::from_secs(1));
        assert!(!in_place(one(|g| g.add_subgraph("node", sync())).policy("node", timed)), "a timed subgraph node");
    }
}
