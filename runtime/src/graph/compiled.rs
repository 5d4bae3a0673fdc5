//! A checked graph, ready to run.

use super::node_spec::{Action, PayloadType};
use crate::checkpoint::Checkpointer;
use crate::config::RunConfig;
use crate::error::GraphError;
use crate::interrupt::{Interrupt, Resume};
use crate::policy::NodePolicy;
use crate::pregel;
use crate::runtime::RunShared;
use crate::state::State;
use crate::store::Store;
use crate::stream::{self, EventKind, RunStream, SharedWriter, Sink, StreamModes};
use std::collections::HashSet;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// A node index, or END.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target(pub(crate) u32);

impl Target {
    pub(crate) const END: Self = Self(u32::MAX);
}

pub(crate) type RouterFn<S> = Arc<dyn Fn(&S) -> usize + Send + Sync>;

pub(crate) struct Router<S> {
    pub(crate) targets: &'static [&'static str],
    pub(crate) pick: RouterFn<S>,
}

/// A join: its target runs once all `sources` have finished since it last ran.
pub(crate) struct JoinSpec {
    pub(crate) target: Target,
    pub(crate) sources: u32,
}

/// A node with its edges resolved to indices.
pub(crate) struct CompiledNode<S: State, C> {
    pub(crate) name: Arc<str>,
    pub(crate) action: Action<S, C>,
    /// Static edges.
    pub(crate) edges: Box<[Target]>,
    /// Targets by route index (branching nodes and routers).
    pub(crate) routes: Box<[Target]>,
    pub(crate) router: Option<RouterFn<S>>,
    /// Send targets by payload target index.
    pub(crate) sends: Box<[u32]>,
    /// (join, slot) pairs this node fills when it finishes.
    pub(crate) joins: Box<[(u32, u32)]>,
    pub(crate) policy: NodePolicy,
    /// The Send payload type the node takes, if it is a Send target.
    pub(crate) takes: Option<PayloadType>,
    /// Runs on a thread pause before a step that runs this node.
    pub(crate) interrupt_before: bool,
    /// Runs on a thread pause after a step that ran this node.
    pub(crate) interrupt_after: bool,
}

pub(crate) struct Inner<S: State, C> {
    pub(crate) name: String,
    pub(crate) nodes: Vec<CompiledNode<S, C>>,
    pub(crate) node_names: Arc<[Arc<str>]>,
    pub(crate) entries: Vec<u32>,
    pub(crate) joins: Vec<JoinSpec>,
    pub(crate) recursion_limit: u64,
    pub(crate) default_context: Option<fn() -> C>,
    /// Where runs with a thread keep their checkpoints.
    pub(crate) saver: Arc<dyn Checkpointer>,
    /// The long-term memory every run's nodes share, if any.
    pub(crate) store: Option<Arc<dyn Store>>,
    /// Threads with a run in progress in this process.
    pub(crate) busy: Mutex<HashSet<Arc<str>>>,
}

/// A checked, runnable graph. Cheap to clone; every clone runs the same graph.
pub struct CompiledGraph<S: State, C = ()> {
    inner: Arc<Inner<S, C>>,
}

impl<S: State, C> Clone for CompiledGraph<S, C> {
    fn clone(&self) -> Self {
        Self { inner: Arc::clone(&self.inner) }
    }
}

impl<S: State, C> fmt::Debug for CompiledGraph<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CompiledGraph")
            .field("name", &self.inner.name)
            .field("nodes", &self.inner.node_names)
            .finish_non_exhaustive()
    }
}

/// What a run returns.
#[derive(Clone, Debug, PartialEq)]
#[non_exhaustive]
pub struct RunOutput<S> {
    /// The final state, or the state at the pause when the run was interrupted.
    pub state: S,
    /// How many super-steps ran.
    pub steps: u64,
    /// Why the run paused; empty when it finished.
    pub interrupts: Vec<Interrupt>,
}

impl<S> RunOutput<S> {
    /// Whether the run paused for an interrupt instead of finishing.
    pub fn is_interrupted(&self) -> bool {
        !self.interrupts.is_empty()
    }
}

static RUN_IDS: AtomicU64 = AtomicU64::new(1);

impl<S: State, C: Send + Sync + 'static> CompiledGraph<S, C> {
    pub(crate) fn new(inner: Inner<S, C>) -> Self {
        Self { inner: Arc::new(inner) }
    }

    /// The graph's name.
    pub fn name(&self) -> &str {
        &self.inner.name
    }

    /// The node names, in declaration order.
    pub fn node_names(&self) -> impl ExactSizeIterator<Item = &str> {
        self.inner.node_names.iter().map(|n| &**n)
    }

    /// Runs the graph from `input` (a full state or an update, folded into the default state
    /// with the reducers) until no task is left.
    ///
    /// Dropping the returned future cancels the run at once: every in-flight node is dropped.
    pub async fn invoke(&self, input: impl Into<S::Update>, cfg: &RunConfig<C>) -> Result<RunOutput<S>, GraphError> {
        self.run(input.into(), cfg, None, None).await
    }

    /// Runs the graph like [`invoke`](Self::invoke) on a new tokio task, and returns its
    /// events for the `modes` asked: `app.stream(input, &cfg, StreamMode::Updates |
    /// StreamMode::Custom)`. Must be called inside a tokio runtime.
    ///
    /// ```
    /// use futures::StreamExt;
    /// use graphwright::prelude::*;
    /// use graphwright::stream::{EventKind, StreamMode};
    ///
    /// #[graph]
    /// mod count {
    ///     use graphwright::prelude::*;
    ///
    ///     #[state]
    ///     pub struct State {
    ///         #[reducer(add)]
    ///         pub n: u32,
    ///     }
    ///
    ///     #[node(entry, next = two)]
    ///     fn one(_state: &State, rt: &Runtime) -> StateUpdate {
    ///         rt.write("halfway");
    ///         StateUpdate::new().n(1)
    ///     }
    ///
    ///     #[node(next = END)]
    ///     fn two(_state: &State) -> StateUpdate {
    ///         StateUpdate::new().n(1)
    ///     }
    /// }
    ///
    /// #[tokio::main(flavor = "current_thread")]
    /// async fn main() -> Result<(), Report> {
    ///     let app = count::graph().compile()?;
    ///     let mut events = app.stream(count::State::default(), &RunConfig::default(), StreamMode::Updates | StreamMode::Custom);
    ///     let mut seen = Vec::new();
    ///     while let Some(event) = events.next().await {
    ///         seen.push(match event.kind {
    ///             EventKind::Update { node, .. } => format!("update {node}"),
    ///             EventKind::Custom { value, .. } => format!("custom {value}"),
    ///             EventKind::Finished { state, .. } => format!("finished n={}", state.n),
    ///             other => format!("{other:?}"),
    ///         });
    ///     }
    ///     assert_eq!(seen, ["custom \"halfway\"", "update one", "update two", "finished n=2"]);
    ///     Ok(())
    /// }
    /// ```
    pub fn stream(
        &self,
        input: impl Into<S::Update>,
        cfg: &RunConfig<C>,
        modes: impl Into<StreamModes>,
    ) -> RunStream<S> {
        let (graph, cfg, input, modes) = (self.clone(), cfg.clone(), input.into(), modes.into());
        let run_id = RUN_IDS.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = tokio::sync::mpsc::channel(stream::CHANNEL);
        let task = tokio::spawn(async move {
            let sink = Arc::new(Sink::new(modes, run_id, tx));
            let result = graph.run(input, &cfg, Some(&sink), Some(run_id)).await;
            let (step, kind) = match result {
                Ok(out) if out.is_interrupted() => {
                    (out.steps, EventKind::Interrupted { state: out.state, interrupts: out.interrupts })
                }
                Ok(out) => (out.steps, EventKind::Finished { state: out.state, steps: out.steps }),
                Err(error) => (0, EventKind::Failed(error)),
            };
            sink.finish(step, kind).await;
        });
        RunStream { rx, task, run_id, done: false }
    }

    async fn run(
        &self,
        input: S::Update,
        cfg: &RunConfig<C>,
        sink: Option<&Arc<Sink<S>>>,
        run_id: Option<u64>,
    ) -> Result<RunOutput<S>, GraphError> {
        let writer = sink.map(|s| Arc::clone(s) as SharedWriter);
        let shared = self.shared(cfg, writer, run_id)?;
        let limit = cfg.recursion_limit.unwrap_or(self.inner.recursion_limit);
        let sink = sink.map(|s| &**s);
        match &cfg.thread_id {
            None => {
                let mut state = S::default();
                state.apply(input);
                with_deadline(cfg, pregel::execute(&self.inner, state, shared, limit, sink)).await
            }
            Some(thread) => {
                let run = pregel::execute_on_thread(
                    &self.inner,
                    input,
                    shared,
                    limit,
                    Arc::clone(thread),
                    cfg.durability,
                    sink,
                );
                with_deadline(cfg, run).await
            }
        }
    }

    /// Continues the thread of `cfg` from its last checkpoint, giving `answer` to its pending
    /// interrupts (`()` to continue without answering, after a failure or a crash). Tasks that
    /// had finished are not run again; paused ones run again from their start.
    ///
    /// With [`RunConfig::checkpoint`] set, continues from that older checkpoint on a new branch
    /// (replay, or a fork after `update_state`); the old branch stays as it was.
    pub async fn resume(&self, cfg: &RunConfig<C>, answer: impl Into<Resume>) -> Result<RunOutput<S>, GraphError> {
        let thread = self.thread_of(cfg)?;
        let shared = self.shared(cfg, None, None)?;
        let limit = cfg.recursion_limit.unwrap_or(self.inner.recursion_limit);
        let run = pregel::resume_thread(
            &self.inner,
            shared,
            limit,
            thread,
            cfg.durability,
            answer.into(),
            cfg.checkpoint_id.as_deref(),
        );
        with_deadline(cfg, run).await
    }

    pub(crate) fn thread_of(&self, cfg: &RunConfig<C>) -> Result<Arc<str>, GraphError> {
        cfg.thread_id.clone().ok_or_else(|| GraphError::NoThread { graph: self.inner.name.clone() })
    }

    pub(crate) fn inner(&self) -> &Inner<S, C> {
        &self.inner
    }

    fn shared(
        &self,
        cfg: &RunConfig<C>,
        writer: Option<SharedWriter>,
        run_id: Option<u64>,
    ) -> Result<Arc<RunShared<C>>, GraphError> {
        let context = match (&cfg.context, self.inner.default_context) {
            (Some(context), _) => Arc::clone(context),
            (None, Some(default)) => Arc::new(default()),
            (None, None) => {
                return Err(GraphError::MissingContext {
                    graph: self.inner.name.clone(),
                    context: std::any::type_name::<C>(),
                });
            }
        };
        Ok(Arc::new(RunShared {
            context,
            thread_id: cfg.thread_id.clone(),
            run_id: run_id.unwrap_or_else(|| RUN_IDS.fetch_add(1, Ordering::Relaxed)),
            node_names: Arc::clone(&self.inner.node_names),
            store: self.inner.store.clone(),
            writer,
            log: cfg.log.clone(),
        }))
    }
}

/// Runs `run` under the config's deadline, if it has one.
async fn with_deadline<S, C>(
    cfg: &RunConfig<C>,
    run: impl std::future::Future<Output = Result<RunOutput<S>, GraphError>>,
) -> Result<RunOutput<S>, GraphError> {
    match cfg.deadline {
        None => run.await,
        Some(after) => tokio::time::timeout(after, run).await.unwrap_or(Err(GraphError::DeadlineExceeded { after })),
    }
}
