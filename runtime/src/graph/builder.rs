//! The dynamic builder.

use super::compiled::CompiledGraph;
use super::inner::{Router, StartSendFn};
use super::into_node::{IntoNode, IntoPayloadNode};
use super::node_spec::{NodeSpec, PayloadType, Shape};
use super::subgraph::IntoSubgraph;
use crate::cache::Cache;
use crate::checkpoint::Checkpointer;
use crate::error::BuildError;
use crate::node::{Route, SendPayload};
use crate::policy::NodePolicy;
use crate::state::State;
use crate::store::Store;
use std::collections::HashMap;
use std::sync::Arc;

/// The default bound on super-steps per run. LangGraph's is 10 007 (since March 2026): a
/// long agent loop takes two steps per tool call, and a lower limit surprised its users. An
/// accidental loop in a graphwright graph reaches 10 000 steps in milliseconds, so the bound
/// costs nothing in the failure case and never trips a healthy agent.
pub const DEFAULT_RECURSION_LIMIT: u64 = 10_000;

/// Builds a graph at run time; `compile` checks it with the same rules `#[graph]` checks at
/// compile time. The `#[graph]` macro expands to calls of this builder.
///
/// ```
/// use graphwright::prelude::*;
///
/// #[state]
/// struct Count {
///     counter: i64,
/// }
///
/// fn bump(state: &Count) -> CountUpdate {
///     CountUpdate::new().counter(state.counter + 1)
/// }
///
/// # fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let mut graph = StateGraph::<Count>::new();
/// for i in 0..3 {
///     graph = graph.add_node(format!("node_{i}"), bump);
/// }
/// let app = graph
///     .add_edge(START, "node_0")
///     .add_edge("node_0", "node_1")
///     .add_edge("node_1", "node_2")
///     .add_edge("node_2", END)
///     .compile()?;
/// let rt = tokio::runtime::Builder::new_current_thread().build()?;
/// let out = rt.block_on(app.invoke(Count::default(), &RunConfig::default()))?;
/// assert_eq!(out.state.counter, 3);
///
/// let miswired = StateGraph::<Count>::new().add_node("a", bump).add_edge(START, "a").add_edge("a", "b");
/// assert_eq!(
///     miswired.compile().unwrap_err().to_string(),
///     "graph `graph` is miswired:\n  - no node named `b` in graph `graph`"
/// );
/// # Ok(()) }
/// ```
pub struct StateGraph<S: State, C = ()> {
    pub(super) name: String,
    pub(super) nodes: Vec<Entry<S, C>>,
    pub(super) edges: Vec<(String, String)>,
    pub(super) sends: Vec<(String, String)>,
    pub(super) routers: Vec<(String, Router<S>)>,
    /// Sends from START: target, payload type, and the function that makes the payloads.
    pub(super) start_sends: Vec<(String, PayloadType, StartSendFn<S>)>,
    pub(super) joins: Vec<(Vec<String>, String)>,
    pub(super) recursion_limit: u64,
    pub(super) default_context: Option<fn() -> C>,
    pub(super) saver: Option<Arc<dyn Checkpointer>>,
    pub(super) store: Option<Arc<dyn Store>>,
    pub(super) cache: Option<Arc<dyn Cache>>,
    pub(super) interrupt_before: Vec<String>,
    pub(super) interrupt_after: Vec<String>,
    /// Node policies by node name, applied when the graph is linked.
    pub(super) policies: HashMap<String, NodePolicy>,
    /// Problems found while the graph was put together (a subgraph that did not compile, a
    /// prebuilt agent's bad option), reported by `compile`.
    pub(super) early_errors: Vec<String>,
}

pub(super) struct Entry<S: State, C> {
    pub(super) name: Arc<str>,
    pub(super) spec: NodeSpec<S, C>,
}

impl<S: State> StateGraph<S, ()> {
    /// An empty graph named `graph` whose nodes need no context.
    #[must_use]
    pub fn new() -> Self {
        Self::with_default_context(Some(|| ()))
    }
}

impl<S: State> Default for StateGraph<S, ()> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: State, C: Send + Sync + 'static> StateGraph<S, C> {
    /// An empty graph whose runs need a context of type `C`, passed with
    /// [`RunConfig::context`](crate::RunConfig::context).
    #[must_use]
    pub fn with_context() -> Self {
        Self::with_default_context(None)
    }

    /// An empty graph whose runs use `default` when the run config has no context.
    #[doc(hidden)]
    #[must_use]
    pub fn with_default_context(default: Option<fn() -> C>) -> Self {
        Self {
            name: "graph".to_owned(),
            nodes: Vec::new(),
            edges: Vec::new(),
            sends: Vec::new(),
            routers: Vec::new(),
            start_sends: Vec::new(),
            joins: Vec::new(),
            recursion_limit: DEFAULT_RECURSION_LIMIT,
            default_context: default,
            saver: None,
            store: None,
            cache: None,
            interrupt_before: Vec::new(),
            interrupt_after: Vec::new(),
            policies: HashMap::new(),
            early_errors: Vec::new(),
        }
    }

    /// Names the graph (used in messages and diagrams).
    #[must_use]
    pub fn name(mut self, name: impl Into<String>) -> Self {
        self.name = name.into();
        self
    }

    /// Adds a node reading the state. What `node` returns decides its edges: an update follows
    /// `add_edge` edges (or a router), `(update, route)` and `Command<route>` go where the
    /// route says, `Vec<P>` sends payloads along `add_send` edges.
    #[must_use]
    pub fn add_node<M>(self, name: impl Into<String>, node: impl IntoNode<S, C, M>) -> Self {
        self.add_spec(name, node.into_node())
    }

    /// Adds a node that runs once per Send payload of type `P` it receives.
    #[must_use]
    pub fn add_payload_node<P, M>(self, name: impl Into<String>, node: impl IntoPayloadNode<S, C, P, M>) -> Self {
        self.add_spec(name, node.into_node())
    }

    /// Adds a graph as a node: `child` (compiled, or a builder compiled with this graph) runs
    /// from this graph's state mapped by [`SubgraphState`](crate::SubgraphState), and its
    /// final state comes back as this node's update. Its checkpoints live under the run's
    /// thread, in a namespace of their own; an interrupt inside it pauses the whole run, and
    /// `resume` continues it where it paused. Its stream events carry the namespace (see
    /// [`StreamMode::Subgraphs`](crate::stream::StreamMode::Subgraphs)). The node follows
    /// `add_edge` edges or a router, like a node that returns an update.
    #[must_use]
    pub fn add_subgraph<CS, G>(self, name: impl Into<String>, child: G) -> Self
    where
        CS: crate::SubgraphState<S> + crate::FullUpdate,
        G: crate::IntoSubgraph<CS, C>,
    {
        self.add_child(name, child, |child| super::subgraph::node(child, Shape::Update, None))
    }

    /// Adds a graph as a node that goes where the subgraph says: a node inside it calls
    /// [`Runtime::goto_parent`](crate::Runtime::goto_parent) with one of the targets of route
    /// type `R` (the `{Node}Next` enum `#[graph]` generates for `next = a | b`, or one of your
    /// own); the subgraph's run ends after that step and this graph runs that target next. A
    /// subgraph that ends without naming one fails the node
    /// ([`ParentGotoError::Missing`](crate::ParentGotoError::Missing)).
    #[must_use]
    pub fn add_routed_subgraph<R, CS, G>(self, name: impl Into<String>, child: G) -> Self
    where
        R: Route<State = S>,
        CS: crate::SubgraphState<S> + crate::FullUpdate,
        G: crate::IntoSubgraph<CS, C>,
    {
        self.add_child(name, child, |child| super::subgraph::node(child, Shape::branch::<R>(), Some(R::TARGETS)))
    }

    /// Adds a graph as a node that runs once per Send payload of type `P` it receives (each run
    /// a subgraph of its own, in its own namespace): the subgraph starts from `From<&P>` and its
    /// final state comes back through `From<Child>` for this graph's update.
    #[must_use]
    pub fn add_payload_subgraph<P, CS, G>(self, name: impl Into<String>, child: G) -> Self
    where
        P: SendPayload,
        CS: crate::FullUpdate + for<'a> From<&'a P>,
        S::Update: From<CS>,
        G: crate::IntoSubgraph<CS, C>,
    {
        self.add_child(name, child, super::subgraph::payload_node::<S, P, CS, C>)
    }

    /// Adds the node `spec` makes of `child`, compiled; a child that does not compile is
    /// reported by `compile`.
    fn add_child<CS: State, G: crate::IntoSubgraph<CS, C>>(
        mut self,
        name: impl Into<String>,
        child: G,
        spec: impl FnOnce(CompiledGraph<CS, C>) -> NodeSpec<S, C>,
    ) -> Self {
        let name = name.into();
        match child.into_subgraph() {
            Ok(child) => self.add_spec(name, spec(child)),
            Err(error) => {
                self.early_errors.push(format!("subgraph `{name}` does not compile: {error}"));
                self
            }
        }
    }

    /// Adds an already erased node (what generated code uses).
    #[must_use]
    pub fn add_spec(mut self, name: impl Into<String>, spec: NodeSpec<S, C>) -> Self {
        let name: String = name.into();
        self.nodes.push(Entry { name: name.into(), spec });
        self
    }

    /// A static edge; `from` may be [`START`](crate::START), `to` may be [`END`](crate::END). Several edges out of one
    /// node run their targets together in the next step.
    #[must_use]
    pub fn add_edge(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.edges.push((from.into(), to.into()));
        self
    }

    /// A Send edge: the payloads `from` returns run `to`, once each, in the next step.
    #[must_use]
    pub fn add_send(mut self, from: impl Into<String>, to: impl Into<String>) -> Self {
        self.sends.push((from.into(), to.into()));
        self
    }

    /// A router: after each step in which `from` ran, `router` reads the new state and picks
    /// where the run goes. `from` may be [`START`](crate::START): a conditional entry, whose router reads the
    /// state after the run's input. A node's static edges, its routers and the routes it returns
    /// all lead somewhere: every one of them is followed.
    #[must_use]
    pub fn add_router<R, F>(mut self, from: impl Into<String>, router: F) -> Self
    where
        R: Route<State = S>,
        F: Fn(&S) -> R + Send + Sync + 'static,
    {
        let targets = R::TARGETS.iter().map(|t| std::borrow::Cow::Borrowed(*t)).collect();
        let router = Router { targets, pick: Arc::new(move |state: &S| router(state).index()) };
        self.routers.push((from.into(), router));
        self
    }

    /// Records a problem that `compile` reports.
    pub(crate) fn invalid(mut self, problem: String) -> Self {
        self.early_errors.push(problem);
        self
    }

    /// A router whose targets are known only when the graph is built (the prebuilt agents'
    /// hand-offs): `pick` returns an index into `targets`, and must stay below its length.
    pub(crate) fn add_router_among(
        mut self,
        from: impl Into<String>,
        targets: Vec<String>,
        pick: super::inner::RouterFn<S>,
    ) -> Self {
        let targets = targets.into_iter().map(std::borrow::Cow::Owned).collect();
        self.routers.push((from.into(), Router { targets, pick }));
        self
    }

    /// Sends from START (LangGraph's conditional entry returning `Send`s): `sends` reads the
    /// state after the run's input, and each payload it returns runs `to` once, in the first
    /// step, beside the graph's other entries.
    ///
    /// ```
    /// use graphwright::prelude::*;
    ///
    /// #[state]
    /// struct Batch {
    ///     items: Vec<u32>,
    ///     #[reducer(add)]
    ///     total: u32,
    /// }
    ///
    /// fn square(item: &u32) -> BatchUpdate {
    ///     BatchUpdate::new().total(item * item)
    /// }
    ///
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// let app = StateGraph::<Batch>::new()
    ///     .add_payload_node("square", square)
    ///     .add_start_send("square", |batch: &Batch| batch.items.clone())
    ///     .add_edge("square", END)
    ///     .compile()?;
    /// let rt = tokio::runtime::Builder::new_current_thread().build()?;
    /// let out = rt.block_on(app.invoke(Batch { items: vec![1, 2, 3], total: 0 }, &RunConfig::default()))?;
    /// assert_eq!(out.state.total, 14);
    /// # Ok(()) }
    /// ```
    #[must_use]
    pub fn add_start_send<P, F>(mut self, to: impl Into<String>, sends: F) -> Self
    where
        P: SendPayload,
        F: Fn(&S) -> Vec<P> + Send + Sync + 'static,
    {
        let make: StartSendFn<S> = Arc::new(move |state: &S| {
            sends(state).into_iter().map(|p| Box::new(p) as Box<dyn std::any::Any + Send + Sync>).collect()
        });
        self.start_sends.push((to.into(), PayloadType::of::<P>(), make));
        self
    }

    /// A join: `target` runs once every node of `sources` has finished since it last ran, even
    /// when they finish in different steps.
    #[must_use]
    pub fn add_join<I, N>(mut self, sources: I, target: impl Into<String>) -> Self
    where
        I: IntoIterator<Item = N>,
        N: Into<String>,
    {
        self.joins.push((sources.into_iter().map(Into::into).collect(), target.into()));
        self
    }

    /// Sets the policies of node `name` (retry, timeout, defer), before or after the node is
    /// added; `compile` reports a name that names no node.
    #[must_use]
    pub fn policy(mut self, name: &str, policy: NodePolicy) -> Self {
        self.policies.insert(name.to_owned(), policy);
        self
    }

    /// Where runs on a thread keep their checkpoints; a [`MemorySaver`](crate::MemorySaver) when not set.
    #[must_use]
    pub fn checkpointer(mut self, saver: impl Checkpointer) -> Self {
        self.saver = Some(Arc::new(saver));
        self
    }

    /// The same, for a checkpointer shared with other graphs or code.
    #[must_use]
    pub fn shared_checkpointer(mut self, saver: Arc<dyn Checkpointer>) -> Self {
        self.saver = Some(saver);
        self
    }

    /// The long-term memory nodes reach with [`Runtime::store`](crate::Runtime::store), shared
    /// by every thread; none when not set.
    #[must_use]
    pub fn store(mut self, store: impl Store) -> Self {
        self.store = Some(Arc::new(store));
        self
    }

    /// The same, for a store shared with other graphs or code.
    #[must_use]
    pub fn shared_store(mut self, store: Arc<dyn Store>) -> Self {
        self.store = Some(store);
        self
    }

    /// Where the nodes with a [`CachePolicy`](crate::CachePolicy) keep their outputs; a graph
    /// whose nodes have cache policies must be given one.
    #[must_use]
    pub fn cache(mut self, cache: impl Cache) -> Self {
        self.cache = Some(Arc::new(cache));
        self
    }

    /// The same, for a cache shared with other graphs, or with other processes' graphs.
    #[must_use]
    pub fn shared_cache(mut self, cache: Arc<dyn Cache>) -> Self {
        self.cache = Some(cache);
        self
    }

    /// Pauses runs on a thread before any step that would run one of `nodes` (a static
    /// breakpoint); `resume(&cfg, ())` continues. Takes node names or the `Node` enum `#[graph]`
    /// generates.
    #[must_use]
    pub fn interrupt_before<N: AsRef<str>>(mut self, nodes: impl IntoIterator<Item = N>) -> Self {
        self.interrupt_before.extend(nodes.into_iter().map(|n| n.as_ref().to_owned()));
        self
    }

    /// Pauses runs on a thread after any step that ran one of `nodes`.
    #[must_use]
    pub fn interrupt_after<N: AsRef<str>>(mut self, nodes: impl IntoIterator<Item = N>) -> Self {
        self.interrupt_after.extend(nodes.into_iter().map(|n| n.as_ref().to_owned()));
        self
    }

    /// The default bound on super-steps per run (see [`DEFAULT_RECURSION_LIMIT`]).
    #[must_use]
    pub fn recursion_limit(mut self, limit: u64) -> Self {
        self.recursion_limit = limit;
        self
    }

    /// Checks the wiring and builds the runnable graph.
    pub fn compile(mut self) -> Result<CompiledGraph<S, C>, BuildError> {
        let index: HashMap<String, usize> =
            self.nodes.iter().enumerate().rev().map(|(i, e)| (e.name.to_string(), i)).collect();
        let mut invalid = std::mem::take(&mut self.early_errors);
        self.check_endpoints(&index, &mut invalid);
        self.check_shapes(&index, &mut invalid);
        if !invalid.is_empty() {
            return Err(BuildError::Invalid { graph: self.name, message: invalid.join("; ") });
        }
        let problems = graphwright_wiring::check(&self.topology());
        if !problems.is_empty() {
            return Err(BuildError::Wiring { graph: self.name, problems });
        }
        Ok(self.link(&index))
    }
}

/// A builder given as a subgraph compiles with its parent (its wiring errors are the parent's).
impl<S: State, C: Send + Sync + 'static> IntoSubgraph<S, C> for StateGraph<S, C> {
    fn into_subgraph(self) -> Result<CompiledGraph<S, C>, BuildError> {
        self.compile()
    }
}
