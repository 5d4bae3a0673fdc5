//! An entrypoint: the graph of one node that runs the `#[entrypoint]` fn, with a typed surface.

use super::scope::Flow;
use super::state::{FlowState, FlowStateUpdate};
use crate::cache::Cache;
use crate::checkpoint::Checkpointer;
use crate::command::RunCommand;
use crate::config::RunConfig;
use crate::error::{BuildError, GraphError, NodeError};
use crate::graph::{CompiledGraph, NodeSpec, RunOutput, Shape, StateGraph};
use crate::interrupt::Interrupt;
use crate::node::{END, NodeOutput, START};
use crate::runtime::Runtime;
use crate::store::Store;
use crate::stream::{RunStream, StreamModes};
use futures::future::BoxFuture;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;
use std::marker::PhantomData;
use std::sync::Arc;
use std::sync::atomic::AtomicU32;

/// What an entrypoint returns when the value it saves for the next run on the thread (its
/// `previous`) is not the value it returns (LangGraph's `entrypoint.final`).
///
/// ```
/// use graphwright::functional::Final;
///
/// // Return the total so far, remember it for the next run.
/// let done: Final<u64, u64> = Final::new(12, 12);
/// assert_eq!((done.value, done.save), (12, 12));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Final<O, P = O> {
    /// What the run returns.
    pub value: O,
    /// What the next run on the thread gets as `previous`.
    pub save: P,
}

impl<O, P> Final<O, P> {
    /// Returns `value`, saves `save`.
    pub fn new(value: O, save: P) -> Self {
        Self { value, save }
    }
}

/// An entrypoint's fn with its input and `previous` as JSON, giving what it returned and what
/// it saves as JSON: what `#[entrypoint]` writes around the user's fn.
#[doc(hidden)]
pub type EntrypointFn<C> =
    dyn for<'a> Fn(Value, Value, &'a Runtime<C>) -> BoxFuture<'a, Result<(Value, Value), NodeError>> + Send + Sync;

/// Builds an [`Entrypoint`]: where its runs keep their checkpoints, its store and cache. The
/// `#[entrypoint]` macro's `entrypoint()` returns one.
pub struct EntrypointBuilder<I, O, C = ()> {
    graph: StateGraph<FlowState, C>,
    types: PhantomData<fn(I) -> O>,
}

impl<I, O, C: Send + Sync + 'static> EntrypointBuilder<I, O, C> {
    /// The entrypoint `name` running `body`; runs without a context use `default_context`
    /// when given. What `#[entrypoint]` expands to.
    #[doc(hidden)]
    #[must_use]
    pub fn new(name: &str, body: Arc<EntrypointFn<C>>, default_context: Option<fn() -> C>) -> Self {
        let entrypoint: Arc<str> = Arc::from(name);
        let node = NodeSpec::asynchronous(Shape::Update, None, move |state: &FlowState, rt: &Runtime<C>, _| {
            let (body, entrypoint) = (Arc::clone(&body), Arc::clone(&entrypoint));
            Box::pin(async move {
                let flow = Arc::new(Flow::new(rt.share(), entrypoint));
                let runtime = Arc::clone(&flow.runtime)
                    .downcast::<Runtime<C>>()
                    .map_err(|_| NodeError::msg("an entrypoint's runtime is of its own context type"))?;
                let (input, previous) = (state.input.clone(), state.saved.clone());
                let (output, saved) = flow.scope(body(input, previous, &runtime)).await?;
                Ok(NodeOutput::update(FlowStateUpdate::new().output(output).saved(saved)))
            })
        });
        let graph = StateGraph::with_default_context(default_context)
            .name(name)
            .add_spec(name, node)
            .add_edge(START, name)
            .add_edge(name, END);
        Self { graph, types: PhantomData }
    }

    /// Where runs on a thread keep their checkpoints (and their finished task calls); a
    /// [`MemorySaver`](crate::MemorySaver) when not set.
    #[must_use]
    pub fn checkpointer(self, saver: impl Checkpointer) -> Self {
        self.map(|g| g.checkpointer(saver))
    }

    /// The same, for a checkpointer shared with other graphs or code.
    #[must_use]
    pub fn shared_checkpointer(self, saver: Arc<dyn Checkpointer>) -> Self {
        self.map(|g| g.shared_checkpointer(saver))
    }

    /// The long-term memory the entrypoint and its tasks reach with `rt.store()`.
    #[must_use]
    pub fn store(self, store: impl Store) -> Self {
        self.map(|g| g.store(store))
    }

    /// The same, for a store shared with other graphs or code.
    #[must_use]
    pub fn shared_store(self, store: Arc<dyn Store>) -> Self {
        self.map(|g| g.shared_store(store))
    }

    /// Where tasks with a cache policy keep their results.
    #[must_use]
    pub fn cache(self, cache: impl Cache) -> Self {
        self.map(|g| g.cache(cache))
    }

    /// The same, for a cache shared with other graphs or processes.
    #[must_use]
    pub fn shared_cache(self, cache: Arc<dyn Cache>) -> Self {
        self.map(|g| g.shared_cache(cache))
    }

    /// The runnable entrypoint.
    ///
    /// # Errors
    /// None in practice: the graph of one node is always well formed; the builder's checks run
    /// as for any graph.
    pub fn compile(self) -> Result<Entrypoint<I, O, C>, BuildError> {
        Ok(Entrypoint { graph: self.graph.compile()?, types: PhantomData })
    }

    /// The graph the entrypoint runs as, to be built further (breakpoints, a recursion limit)
    /// or nested in another graph as a subgraph.
    #[must_use]
    pub fn into_graph(self) -> StateGraph<FlowState, C> {
        self.graph
    }

    fn map(self, f: impl FnOnce(StateGraph<FlowState, C>) -> StateGraph<FlowState, C>) -> Self {
        Self { graph: f(self.graph), types: PhantomData }
    }
}

/// A compiled entrypoint: typed `invoke`, `resume` and `stream` over the graph of one node it
/// runs as, whose whole surface (`get_state`, `state_history`, `update_state`, `clear_cache`,
/// `run`) it also derefs to. The thread's state is a [`FlowState`].
pub struct Entrypoint<I, O, C = ()> {
    graph: CompiledGraph<FlowState, C>,
    types: PhantomData<fn(I) -> O>,
}

impl<I, O, C> Clone for Entrypoint<I, O, C> {
    fn clone(&self) -> Self {
        Self { graph: self.graph.clone(), types: PhantomData }
    }
}

impl<I, O, C: Send + Sync + 'static> std::fmt::Debug for Entrypoint<I, O, C> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Entrypoint").field("name", &self.graph.name()).finish_non_exhaustive()
    }
}

impl<I, O, C> std::ops::Deref for Entrypoint<I, O, C> {
    type Target = CompiledGraph<FlowState, C>;

    fn deref(&self) -> &Self::Target {
        &self.graph
    }
}

impl<I, O, C> From<Entrypoint<I, O, C>> for CompiledGraph<FlowState, C> {
    fn from(entrypoint: Entrypoint<I, O, C>) -> Self {
        entrypoint.graph
    }
}

/// What a run of an entrypoint came to.
#[derive(Debug)]
pub struct Returned<O> {
    /// What the entrypoint returned; `None` when the run paused.
    pub value: Option<O>,
    /// The run as a graph's run reports it: why it paused, its thread and checkpoint, usage.
    pub run: RunOutput<FlowState>,
}

impl<O> Returned<O> {
    /// Why the run paused; empty when it returned.
    pub fn interrupts(&self) -> &[Interrupt] {
        &self.run.interrupts
    }
}

impl<I: Serialize, O: DeserializeOwned, C: Send + Sync + 'static> Entrypoint<I, O, C> {
    /// Runs the entrypoint on `input` (on `cfg`'s thread, if it names one: the fn then gets
    /// what the thread's last run saved as `previous`).
    ///
    /// # Errors
    /// What the entrypoint (or a task it awaited) failed with, and the graph's errors.
    pub async fn invoke(&self, input: I, cfg: &RunConfig<C>) -> Result<Returned<O>, GraphError> {
        let input = self.input(&input)?;
        self.returned(self.graph.invoke(input, cfg).await?)
    }

    /// Continues the thread of `cfg`: the entrypoint runs again from its start with `answer`
    /// for its pending interrupt (`()` after a crash or a failure); the task calls that had
    /// finished return their stored results without running.
    ///
    /// # Errors
    /// As [`invoke`](Self::invoke); [`GraphError::NoThread`] without a thread.
    pub async fn resume(
        &self,
        cfg: &RunConfig<C>,
        answer: impl Into<RunCommand<FlowState>>,
    ) -> Result<Returned<O>, GraphError> {
        self.returned(self.graph.resume(cfg, answer).await?)
    }

    /// Runs the entrypoint on `input`, streaming its events: in `updates` mode each task's
    /// result under the task's name as it finishes, then the entrypoint's own update.
    ///
    /// # Errors
    /// When `input` cannot be turned into JSON.
    pub fn stream(
        &self,
        input: I,
        cfg: &RunConfig<C>,
        modes: impl Into<StreamModes>,
    ) -> Result<RunStream<FlowState>, GraphError> {
        Ok(self.graph.stream(self.input(&input)?, cfg, modes))
    }

    /// The update that starts a run on `input`, for the graph's own calls (`run`, `stream`).
    ///
    /// # Errors
    /// When `input` cannot be turned into JSON.
    pub fn input(&self, input: &I) -> Result<FlowStateUpdate, GraphError> {
        let input =
            serde_json::to_value(input).map_err(|e| self.refused(format!("its input cannot be stored: {e}")))?;
        Ok(FlowStateUpdate::new().input(input).output(Value::Null))
    }

    /// The value a finished run's state holds.
    ///
    /// # Errors
    /// When the state does not hold an `O` (a thread of another entrypoint).
    pub fn value(&self, state: &FlowState) -> Result<O, GraphError> {
        O::deserialize(&state.output)
            .map_err(|e| self.refused(format!("the thread's output is not a `{}`: {e}", std::any::type_name::<O>())))
    }

    /// The graph the entrypoint runs as.
    pub fn graph(&self) -> &CompiledGraph<FlowState, C> {
        &self.graph
    }

    fn returned(&self, run: RunOutput<FlowState>) -> Result<Returned<O>, GraphError> {
        let value = if run.interrupts.is_empty() { Some(self.value(&run.state)?) } else { None };
        Ok(Returned { value, run })
    }

    fn refused(&self, reason: String) -> GraphError {
        GraphError::Entrypoint { entrypoint: self.graph.name().to_owned(), reason }
    }
}

/// An entrypoint's run as its task calls see it, made from the node's handle on the run.
impl Flow {
    /// The run of the task `rt` belongs to (the entrypoint's node), for entrypoint `entrypoint`.
    pub(crate) fn new<C: Send + Sync + 'static>(rt: crate::Runtime<C>, entrypoint: Arc<str>) -> Self {
        Self {
            context: std::any::type_name::<C>(),
            entrypoint,
            results: rt.results.clone(),
            cache: rt.run.cache.clone(),
            user: rt.run.user.clone(),
            writer: rt.run.writer.clone(),
            step: rt.step(),
            runtime: Arc::new(rt),
            next_call: AtomicU32::new(0),
            inside_task: false,
            task: None,
            interrupts: None,
        }
    }
}
