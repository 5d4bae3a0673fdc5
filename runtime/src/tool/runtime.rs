//! What the runtime injects into a tool: the graph state, the run's context, the call's id,
//! a progress writer, and the graph's long-term memory store.

use super::error::ToolError;
use super::writer::ToolWriter;
use crate::store::{Store, StoreError};
use std::any::{Any, type_name};
use std::fmt;
use std::sync::Arc;

/// A value of any type: the state or context of a [`ToolRuntime`] that does not name them.
pub type Erased = dyn Any + Send + Sync;

/// A tool's handle on the run that called it, injected by the runtime into a parameter of this
/// type and absent from the tool's schema.
///
/// - Plain `ToolRuntime` works in any graph: [`ToolRuntime::state`] and
///   [`ToolRuntime::context`] give `&dyn Any` to downcast.
/// - `ToolRuntime<State, Ctx>` is typed access to one graph's state and context; the tool then
///   runs only under a tool node given that state and context (anywhere else the model gets a
///   [`ToolError::Injection`] message). `ToolRuntime<Erased, Ctx>` types the context alone.
///
/// The state is read-only: a tool returns its result, and the graph's nodes decide what to
/// write. Identifiers the model must never see (user ids, tenant keys, handles) reach a tool
/// only through the context, never through its arguments.
///
/// ```
/// use graphwright::prelude::*;
/// use graphwright::tool::Erased;
///
/// pub struct Ctx {
///     pub user_id: String,
/// }
///
/// /// List the user's open orders.
/// #[tool]
/// fn open_orders(
///     /// At most this many orders.
///     limit: u32,
///     rt: &ToolRuntime<Erased, Ctx>,
/// ) -> String {
///     rt.writer().write("looking up orders");
///     format!("{limit} orders of {} (call {})", rt.context().user_id, rt.tool_call_id())
/// }
///
/// let schema = OpenOrders.parameters();
/// assert!(schema["properties"].get("rt").is_none());
/// ```
pub struct ToolRuntime<S: ?Sized + 'static = Erased, C: ?Sized + 'static = Erased> {
    state: Arc<S>,
    context: Arc<C>,
    tool_call_id: Arc<str>,
    writer: ToolWriter,
    /// The graph's long-term memory store, when it has one.
    store: Option<Arc<dyn Store>>,
}

impl<S: ?Sized, C: ?Sized> ToolRuntime<S, C> {
    /// The graph's state as it was when the tool node ran.
    pub fn state(&self) -> &S {
        &self.state
    }

    /// The run's context (`RunConfig::context`).
    pub fn context(&self) -> &C {
        &self.context
    }

    /// The id of the call being answered.
    pub fn tool_call_id(&self) -> &str {
        &self.tool_call_id
    }

    /// Where to report progress; the tool node forwards writes as [`ToolEvent::Progress`](super::ToolEvent::Progress).
    pub fn writer(&self) -> &ToolWriter {
        &self.writer
    }

    /// The graph's long-term memory store (set with `StateGraph::store`).
    ///
    /// # Errors
    /// [`StoreError::NoStore`] when the graph (or the [`ToolEnv`]) has no store.
    pub fn store(&self) -> Result<&dyn Store, StoreError> {
        self.store.as_deref().ok_or(StoreError::NoStore)
    }
}

impl ToolRuntime {
    /// A runtime with no state (`()`), no context (`()`) and no event sink: for calling a
    /// tool by hand, in a test say.
    pub fn detached(tool_call_id: impl Into<Arc<str>>) -> Self {
        ToolEnv::new().runtime(tool_call_id.into(), ToolWriter::disconnected())
    }

    /// The typed view a tool with a `ToolRuntime<S, C>` parameter takes.
    ///
    /// # Errors
    /// [`ToolError::Injection`] when the state is not an `S` or the context not a `C`; `tool`
    /// names the tool in it.
    pub fn typed<S: Injectable + ?Sized, C: Injectable + ?Sized>(
        &self,
        tool: &str,
    ) -> Result<ToolRuntime<S, C>, ToolError> {
        let injection = |what, expected| ToolError::Injection { tool: tool.to_owned(), what, expected };
        let state = S::from_erased(Arc::clone(&self.state)).ok_or_else(|| injection("state", type_name::<S>()))?;
        let context =
            C::from_erased(Arc::clone(&self.context)).ok_or_else(|| injection("context", type_name::<C>()))?;
        Ok(ToolRuntime {
            state,
            context,
            tool_call_id: Arc::clone(&self.tool_call_id),
            writer: self.writer.clone(),
            store: self.store.clone(),
        })
    }
}

impl<S: ?Sized, C: ?Sized> Clone for ToolRuntime<S, C> {
    fn clone(&self) -> Self {
        Self {
            state: Arc::clone(&self.state),
            context: Arc::clone(&self.context),
            tool_call_id: Arc::clone(&self.tool_call_id),
            writer: self.writer.clone(),
            store: self.store.clone(),
        }
    }
}

impl<S: ?Sized, C: ?Sized> fmt::Debug for ToolRuntime<S, C> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolRuntime")
            .field("state", &type_name::<S>())
            .field("context", &type_name::<C>())
            .field("tool_call_id", &self.tool_call_id)
            .field("writer", &self.writer)
            .field("store", &self.store.as_ref().map(|_| "store"))
            .finish()
    }
}

/// A type a [`ToolRuntime<S, C>`] can name as its state or context: any `Send + Sync + 'static`
/// type, or [`Erased`] for "any".
#[diagnostic::on_unimplemented(
    message = "`ToolRuntime` cannot hand a tool a `{Self}`",
    label = "not a state or context type",
    note = "name the graph's state and context types, `ToolRuntime<State, Ctx>`, or `Erased` for either"
)]
pub trait Injectable: 'static {
    /// The value as `Self`, if it is one.
    fn from_erased(value: Arc<Erased>) -> Option<Arc<Self>>;
}

impl<T: Send + Sync + 'static> Injectable for T {
    fn from_erased(value: Arc<Erased>) -> Option<Arc<Self>> {
        value.downcast::<T>().ok()
    }
}

impl Injectable for Erased {
    fn from_erased(value: Arc<Erased>) -> Option<Arc<Self>> {
        Some(value)
    }
}

/// What the tools of one tool-node run may see besides their arguments: the graph state and the
/// run's context. [`ToolNode::run`](super::ToolNode::run) builds it from a node's `&State` and
/// `&Runtime<Ctx>`; build it yourself to run a tool node outside a graph.
///
/// ```
/// use graphwright::tool::ToolEnv;
///
/// struct Ctx {
///     user_id: String,
/// }
/// let env = ToolEnv::new().context(Ctx { user_id: "u1".into() }).state(vec![1, 2, 3]);
/// # let _ = env;
/// ```
#[derive(Clone)]
pub struct ToolEnv {
    state: Arc<Erased>,
    context: Arc<Erased>,
    store: Option<Arc<dyn Store>>,
    /// The results of the task's finished calls, when the tools run inside a graph's task.
    pub(crate) results: Option<Arc<dyn super::finished_calls::FinishedCalls>>,
    /// The run's stream, when the tools run in a task of a run streamed with `custom`.
    pub(crate) stream: Option<super::writer::StreamTap>,
    /// What the calls' spans may carry beyond names and outcomes (arguments and results).
    pub(crate) capture: Option<Arc<crate::log::CapturePolicy>>,
    /// Where the run reports the calls, when the tools run in a task of a run with metrics.
    pub(crate) metrics: Option<Arc<dyn crate::metrics::RunMetrics>>,
    /// Where the run's spans are recorded, when the tools run in a task of an exported run.
    pub(crate) trace: Option<crate::telemetry::RunTrace>,
}

impl Default for ToolEnv {
    fn default() -> Self {
        Self::new()
    }
}

impl ToolEnv {
    /// State `()` and context `()`.
    #[must_use]
    pub fn new() -> Self {
        Self {
            state: Arc::new(()),
            context: Arc::new(()),
            store: None,
            results: None,
            stream: None,
            capture: None,
            metrics: None,
            trace: None,
        }
    }

    /// Sets the store tools reach through [`ToolRuntime::store`].
    #[must_use]
    pub fn store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Sets the state tools read.
    #[must_use]
    pub fn state<S: Send + Sync + 'static>(mut self, state: S) -> Self {
        self.state = Arc::new(state);
        self
    }

    /// Sets the context tools read.
    #[must_use]
    pub fn context<C: Send + Sync + 'static>(self, context: C) -> Self {
        self.shared_context(Arc::new(context))
    }

    /// Sets the context from one already shared.
    #[must_use]
    pub fn shared_context<C: Send + Sync + 'static>(mut self, context: Arc<C>) -> Self {
        self.context = context;
        self
    }

    /// The runtime one call sees.
    pub(crate) fn runtime(&self, tool_call_id: Arc<str>, writer: ToolWriter) -> ToolRuntime {
        ToolRuntime {
            state: Arc::clone(&self.state),
            context: Arc::clone(&self.context),
            tool_call_id,
            writer,
            store: self.store.clone(),
        }
    }
}

impl fmt::Debug for ToolEnv {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolEnv").finish_non_exhaustive()
    }
}
