//! A checked graph, ready to run.

use super::inner::{CompiledNode, Inner};
use super::{Halt, RunOutput, complete};
use crate::checkpoint::Checkpointer;
use crate::command::{IntoRunInput, RunCommand, RunInput};
use crate::config::RunConfig;
use crate::error::GraphError;
use crate::metrics::{RunOutcome, RunTimer};
use crate::pregel;
use crate::runtime::RunShared;
use crate::state::{State, Update};
use crate::store::Store;
use crate::stream::{self, EventKind, RunStream, SharedWriter, Sink, StreamModes};
use crate::telemetry::{Began, RunTrace, in_trace};
use crate::trace_value::in_span;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

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

    /// Runs the graph from `input` until no task is left.
    ///
    /// The input is a full state or an update, folded with the reducers into the thread's state
    /// (or the default state, without a thread), or a [`RunCommand`] that continues the
    /// thread, as [`resume`](Self::resume) does.
    ///
    /// Dropping the returned future cancels the run at once: every in-flight node is dropped.
    pub async fn invoke<M>(
        &self,
        input: impl IntoRunInput<S, M>,
        cfg: &RunConfig<C>,
    ) -> Result<RunOutput<S>, GraphError> {
        self.start(input.into_run_input(), cfg, None, None).await.map_err(Halt::into_error)
    }

    /// Runs the graph like [`invoke`](Self::invoke), and returns a run that failed in a step
    /// as an output too: [`RunStatus::Failed`](crate::RunStatus::Failed), its [`failure`](RunOutput::failure), the state
    /// before the failed step and, on a thread, the checkpoint `resume` retries from. `Err`
    /// only when there was nothing to run (a bad configuration, a busy or unreadable thread,
    /// a store that failed). This is how a run is reported to someone who is not awaiting it:
    /// a queue, a server, a log.
    ///
    /// ```
    /// use graphwright::prelude::*;
    ///
    /// #[graph]
    /// mod flaky {
    ///     use graphwright::prelude::*;
    ///
    ///     #[state]
    ///     pub struct State {
    ///         pub n: u32,
    ///     }
    ///
    ///     #[node(entry, next = END)]
    ///     fn call(state: &State) -> Result<StateUpdate, NodeError> {
    ///         Err(NodeError::msg(format!("the service said no to {}", state.n)))
    ///     }
    /// }
    ///
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> Result<(), Report> {
    /// let app = flaky::graph().checkpointer(MemorySaver::new()).compile()?;
    /// let out = app.run(flaky::StateUpdate::new().n(7), &RunConfig::thread("t1")).await?;
    /// assert_eq!(out.status(), RunStatus::Failed);
    /// let failure = out.failure.as_ref().unwrap();
    /// assert_eq!((failure.node.as_deref(), failure.step), (Some("call"), 1));
    /// assert!(failure.message.contains("the service said no to 7"));
    /// assert_eq!(out.thread_id.as_deref(), Some("t1"));
    /// assert!(out.checkpoint_id.is_some());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn run<M>(&self, input: impl IntoRunInput<S, M>, cfg: &RunConfig<C>) -> Result<RunOutput<S>, GraphError> {
        match self.start(input.into_run_input(), cfg, None, None).await {
            Ok(out) => Ok(out),
            Err(Halt::Failed(failed)) => Ok(failed.0),
            Err(Halt::Error(error)) => Err(error),
        }
    }

    /// Runs the graph like [`invoke`](Self::invoke) as its events for the `modes` asked:
    /// `app.stream(input, &cfg, StreamMode::Updates | StreamMode::Custom)`. A [`RunCommand`]
    /// input streams a resumed run the same way. The returned stream drives the run: nothing
    /// runs until it is polled, and the run advances as it is (like LangGraph's `stream`); to
    /// run it alongside other work, poll it on a task of its own. It must be polled inside a
    /// tokio runtime.
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
    pub fn stream<M>(
        &self,
        input: impl IntoRunInput<S, M>,
        cfg: &RunConfig<C>,
        modes: impl Into<StreamModes>,
    ) -> RunStream<S> {
        let (graph, cfg, input, modes) = (self.clone(), cfg.clone(), input.into_run_input(), modes.into());
        let run_id = RUN_IDS.fetch_add(1, Ordering::Relaxed);
        let queue = Arc::new(stream::Queue::new());
        let sink = Arc::new(Sink::new(modes, run_id, Arc::clone(&queue)));
        let run = Box::pin(async move {
            let result = graph.start(input, &cfg, Some(&sink), Some(run_id)).await.map_err(Halt::into_error);
            let (step, kind) = match result {
                Ok(out) if out.is_interrupted() => {
                    (out.steps, EventKind::Interrupted { state: out.state, interrupts: out.interrupts })
                }
                Ok(out) => (out.steps, EventKind::Finished { state: out.state, steps: out.steps }),
                Err(error) => (0, EventKind::Failed(error)),
            };
            sink.finish(step, kind);
        });
        RunStream::new(run_id, queue, run)
    }

    async fn start(
        &self,
        input: RunInput<S>,
        cfg: &RunConfig<C>,
        sink: Option<&Arc<Sink<S>>>,
        run_id: Option<u64>,
    ) -> Result<RunOutput<S>, Halt<S>> {
        let mut input = input;
        match &mut input {
            RunInput::Update(update) => update.fill_ids(),
            RunInput::Command(command) => command.fill_ids(),
        }
        let writer = sink.map(|s| Arc::clone(s) as SharedWriter);
        let (recorded, unsampled) = match RunTrace::begin(&self.inner.name) {
            Some(Began::Recorded(trace, open)) => (Some((trace, open)), None),
            Some(Began::Unsampled(current)) => (None, Some(current)),
            None => (None, None),
        };
        let shared = self.shared(cfg, writer, run_id, recorded.as_ref().map(|(trace, _)| trace.clone()))?;
        let timer = RunTimer::start(shared.metrics.as_ref(), &self.inner.name, shared.run_id, cfg.thread_id.as_deref());
        let run_id = shared.run_id;
        let span = crate::pregel::span::run(&self.inner.name, cfg.thread_id.as_deref(), run_id);
        let run = self.run_as_given(input, cfg, shared, sink.map(|s| &**s));
        let result = in_trace(unsampled, in_span(&span, run)).await;
        crate::pregel::span::record_run(&span, &result);
        if let Some((trace, open)) = recorded {
            crate::pregel::span::close_run(&trace, open, &self.inner.name, cfg.thread_id.as_deref(), run_id, &result);
            trace.finish();
        }
        if let Some(timer) = timer {
            timer.end(outcome(&result));
        }
        result
    }

    /// [`start`](Self::start)'s run, without a thread or on one.
    async fn run_as_given(
        &self,
        input: RunInput<S>,
        cfg: &RunConfig<C>,
        shared: Arc<RunShared<C>>,
        sink: Option<&Sink<S>>,
    ) -> Result<RunOutput<S>, Halt<S>> {
        let limit = cfg.recursion_limit.unwrap_or(self.inner.recursion_limit);
        match (&cfg.thread_id, input) {
            (None, RunInput::Update(input)) => {
                let wrote = !input.is_empty();
                let mut state = S::default();
                state.apply(input);
                let meter = Arc::clone(&shared.meter);
                let result = with_deadline(cfg, pregel::execute(&self.inner, state, shared, limit, sink, wrote)).await;
                complete(result, |out| out.usage = meter.usage())
            }
            (None, RunInput::Command(_)) => Err(GraphError::NoThread { graph: self.inner.name.clone() }.into()),
            (Some(thread), input) => {
                let from = match &input {
                    RunInput::Command(_) => cfg.checkpoint_id.as_deref(),
                    RunInput::Update(_) => None,
                };
                // Boxed, and made in the box's own frame: a run on a thread holds the persistence
                // machinery, which would make every `invoke` future (and its stack frame) large;
                // one allocation is nothing beside a checkpoint.
                let run = pregel::boxed(|| {
                    pregel::execute_on_thread(
                        &self.inner,
                        input,
                        shared,
                        limit,
                        Arc::clone(thread),
                        cfg.durability,
                        from,
                        sink,
                    )
                });
                with_deadline(cfg, run).await
            }
        }
    }

    /// Continues the thread of `cfg` from its last checkpoint: answers its pending interrupts
    /// (`()` to continue without answering, after a failure, a crash or a breakpoint), and,
    /// given a [`RunCommand`], applies an update first and adds `goto` nodes to the tasks.
    /// Tasks that had finished are not run again; paused ones run again from their start. A
    /// thread whose run had finished is left as it is, and its state returned. An answer given
    /// when no interrupt is pending (at a breakpoint) is ignored.
    ///
    /// With [`RunConfig::checkpoint`] set, continues from that older checkpoint on a new branch
    /// (replay: its tasks run again, and their interrupts fire again; or a fork after
    /// `update_state`); the old branch stays as it was.
    pub async fn resume(
        &self,
        cfg: &RunConfig<C>,
        input: impl Into<RunCommand<S>>,
    ) -> Result<RunOutput<S>, GraphError> {
        self.thread_of(cfg)?;
        self.start(RunInput::Command(input.into()), cfg, None, None).await.map_err(Halt::into_error)
    }

    pub(crate) fn thread_of(&self, cfg: &RunConfig<C>) -> Result<Arc<str>, GraphError> {
        cfg.thread_id.clone().ok_or_else(|| GraphError::NoThread { graph: self.inner.name.clone() })
    }

    pub(crate) fn inner(&self) -> &Inner<S, C> {
        &self.inner
    }

    /// Deletes the cached outputs of `nodes` from the graph's cache, or of every node with a
    /// [`CachePolicy`](crate::CachePolicy) when `nodes` is empty (this graph's nodes: a
    /// subgraph's are cleared through the subgraph). Their next tasks run again.
    ///
    /// # Errors
    /// [`GraphError::ClearCache`] when the graph has no cache or a name is not one of its
    /// nodes with a cache policy (nothing is cleared then); [`GraphError::Cache`] when the cache
    /// fails.
    pub async fn clear_cache(&self, nodes: &[&str]) -> Result<(), GraphError> {
        let inner = &self.inner;
        let refused = |reason: String| GraphError::ClearCache { graph: inner.name.clone(), reason };
        let Some(cache) = &inner.cache else {
            return Err(refused("it has no cache; give it one with `.cache(..)` on the builder".to_owned()));
        };
        let cached = |node: &&CompiledNode<S, C>| node.policy.cache.is_some();
        let mut namespaces = Vec::new();
        for &name in nodes {
            match inner.node_index.get(name).map(|&i| &inner.nodes[i as usize]) {
                Some(node) if cached(&node) => namespaces.push(crate::pregel::cache_namespace(&inner.name, name)),
                Some(_) => return Err(refused(format!("node `{name}` has no cache policy"))),
                None => return Err(refused(format!("it has no node named `{name}`"))),
            }
        }
        if nodes.is_empty() {
            namespaces = inner
                .nodes
                .iter()
                .filter(cached)
                .map(|n| crate::pregel::cache_namespace(&inner.name, &n.name))
                .collect();
        }
        cache.clear(Some(&namespaces)).await?;
        Ok(())
    }

    /// The same graph, keeping its threads' checkpoints in `saver` instead: for code that hosts
    /// graphs and owns their storage (an HTTP server keeps every graph it serves in one
    /// database). The original graph is unchanged.
    #[must_use]
    pub fn with_checkpointer(&self, saver: Arc<dyn Checkpointer>) -> Self {
        self.with_saver(saver)
    }

    /// The same graph, its nodes sharing `store` as long-term memory instead of the one it was
    /// built with. The original graph is unchanged.
    #[must_use]
    pub fn with_store(&self, store: Arc<dyn Store>) -> Self {
        self.rebuilt(Arc::clone(&self.inner.saver), Some(store))
    }

    /// The same graph storing its checkpoints in `saver` (a subgraph stores where its parent
    /// does).
    pub(crate) fn with_saver(&self, saver: Arc<dyn Checkpointer>) -> Self {
        self.rebuilt(saver, self.inner.store.clone())
    }

    fn rebuilt(&self, saver: Arc<dyn Checkpointer>, store: Option<Arc<dyn Store>>) -> Self {
        let inner = &self.inner;
        Self::new(Inner {
            name: inner.name.clone(),
            nodes: inner.nodes.clone(),
            node_names: Arc::clone(&inner.node_names),
            node_index: inner.node_index.clone(),
            start: inner.start.clone(),
            joins: inner.joins.clone(),
            recursion_limit: inner.recursion_limit,
            runs_in_place: inner.runs_in_place,
            default_context: inner.default_context,
            saver,
            store,
            cache: inner.cache.clone(),
            busy: Mutex::default(),
        })
    }

    fn shared(
        &self,
        cfg: &RunConfig<C>,
        writer: Option<SharedWriter>,
        run_id: Option<u64>,
        trace: Option<RunTrace>,
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
            cache: self.inner.cache.clone(),
            writer,
            log: cfg.log.clone(),
            capture: cfg.capture.clone().or_else(|| cfg.log.as_ref().map(|log| Arc::clone(&log.policy))),
            metrics: cfg.run_metrics(),
            meter: Arc::new(crate::model::Meter::new(
                cfg.budget,
                cfg.deadline.map(|after| tokio::time::Instant::now() + after),
            )),
            storage: cfg.thread_id.as_ref().map(|thread| crate::runtime::Storage {
                saver: Arc::clone(&self.inner.saver),
                key: Arc::clone(thread),
                durability: cfg.durability,
                ahead: pregel::room_ahead(cfg.durability, self.inner.saver.as_ref()),
            }),
            nested: false,
            user: cfg.user.clone(),
            parent_goto: std::sync::OnceLock::new(),
            breakpoints: match &cfg.breakpoints {
                Some(set) => Some(set.resolve(&self.inner.name, &self.inner.node_index)?),
                None => None,
            },
            trace,
        }))
    }
}

/// How a run that returned `result` ended, as its metrics say it.
fn outcome<S>(result: &Result<RunOutput<S>, Halt<S>>) -> RunOutcome {
    match result {
        Ok(out) if out.is_interrupted() => RunOutcome::Interrupted,
        Ok(_) => RunOutcome::Success,
        Err(_) => RunOutcome::Error,
    }
}

/// `run` under the config's deadline, if it has one. A plain fn: it builds the future to await
/// in place, so the caller's future holds `run` once (an `async fn` taking `run` would keep
/// room for the argument and for what it awaits).
fn with_deadline<S, C, F>(
    cfg: &RunConfig<C>,
    run: F,
) -> futures::future::Either<F, impl std::future::Future<Output = Result<RunOutput<S>, Halt<S>>>>
where
    F: std::future::Future<Output = Result<RunOutput<S>, Halt<S>>>,
{
    use futures::FutureExt;
    use futures::future::Either;
    match cfg.deadline {
        None => Either::Left(run),
        Some(after) => Either::Right(
            tokio::time::timeout(after, run)
                .map(move |r| r.unwrap_or(Err(GraphError::DeadlineExceeded { after }.into()))),
        ),
    }
}
