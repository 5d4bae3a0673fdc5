//! The dynamic builder.

use super::compiled::CompiledGraph;
use super::inner::{CompiledNode, Inner, JoinSpec, LinkedRouter, Router, Start, StartSendFn, Target};
use super::into_node::{IntoNode, IntoPayloadNode};
use super::node_spec::{NodeSpec, PayloadType, Shape};
use super::subgraph::IntoSubgraph;
use crate::cache::Cache;
use crate::checkpoint::{Checkpointer, MemorySaver};
use crate::error::BuildError;
use crate::node::{END, Route, START, SendPayload};
use crate::policy::{CachePolicy, NodePolicy};
use crate::state::State;
use crate::store::Store;
use graphwright_wiring::{NodeDecl, Topology};
use std::any::TypeId;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

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
    name: String,
    nodes: Vec<Entry<S, C>>,
    edges: Vec<(String, String)>,
    sends: Vec<(String, String)>,
    routers: Vec<(String, Router<S>)>,
    /// Sends from START: target, payload type, and the function that makes the payloads.
    start_sends: Vec<(String, PayloadType, StartSendFn<S>)>,
    joins: Vec<(Vec<String>, String)>,
    recursion_limit: u64,
    default_context: Option<fn() -> C>,
    saver: Option<Arc<dyn Checkpointer>>,
    store: Option<Arc<dyn Store>>,
    cache: Option<Arc<dyn Cache>>,
    interrupt_before: Vec<String>,
    interrupt_after: Vec<String>,
    /// Node policies by node name, applied when the graph is linked.
    policies: HashMap<String, NodePolicy>,
    /// Problems found while the graph was put together (a subgraph that did not compile, a
    /// prebuilt agent's bad option), reported by `compile`.
    early_errors: Vec<String>,
}

struct Entry<S: State, C> {
    name: Arc<str>,
    spec: NodeSpec<S, C>,
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

    /// A static edge; `from` may be [`START`], `to` may be [`END`]. Several edges out of one
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
    /// where the run goes. `from` may be [`START`]: a conditional entry, whose router reads the
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

    /// Where runs on a thread keep their checkpoints; a [`MemorySaver`] when not set.
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

    /// The graph as the wiring rules see it.
    fn topology(&self) -> Topology<'_> {
        let mut nodes: Vec<NodeDecl<'_>> = self.nodes.iter().map(|e| NodeDecl::new(&e.name)).collect();
        let index: HashMap<&str, usize> = self.nodes.iter().enumerate().rev().map(|(i, e)| (&*e.name, i)).collect();
        let position = |name: &str| index.get(name).copied();
        for (from, to) in &self.edges {
            if from == START {
                if let Some(i) = position(to) {
                    nodes[i].entry = true;
                }
            } else if let Some(i) = position(from) {
                nodes[i].next.push(to);
            }
        }
        for (i, entry) in self.nodes.iter().enumerate() {
            if let Shape::Branch { targets, .. } = entry.spec.shape {
                nodes[i].next.extend(targets.iter().copied());
            }
        }
        for (from, router) in &self.routers {
            if from == START {
                for target in &router.targets {
                    if let Some(i) = position(target) {
                        nodes[i].entry = true;
                    }
                }
            } else if let Some(i) = position(from) {
                nodes[i].next.extend(router.targets.iter().map(|t| &**t));
            }
        }
        for (to, _, _) in &self.start_sends {
            if let Some(i) = position(to) {
                nodes[i].entry = true;
            }
        }
        for (from, to) in &self.sends {
            if let Some(i) = position(from) {
                nodes[i].send.push(to);
            }
        }
        for (sources, target) in &self.joins {
            for source in sources {
                if let Some(i) = position(source) {
                    nodes[i].next.push(target);
                }
            }
        }
        Topology { graph: &self.name, nodes }
    }

    /// Builder-only rules about edge endpoints: names the wiring rules cannot see.
    fn check_endpoints(&self, index: &HashMap<String, usize>, invalid: &mut Vec<String>) {
        for (from, to) in &self.edges {
            if from == END {
                invalid.push(format!("an edge cannot start at END (edge END -> `{to}`)"));
            } else if to == START {
                invalid.push(format!("an edge cannot lead to START (edge `{from}` -> START)"));
            } else if from == START && to == END {
                invalid.push("an edge from START must lead to a node, not to END".to_owned());
            } else if from == START && !index.contains_key(to.as_str()) {
                // An entry edge belongs to no node, so the wiring rules cannot report it.
                let near = graphwright_wiring::closest(to, self.nodes.iter().map(|e| &*e.name));
                let hint = near.map(|n| format!("; did you mean `{n}`?")).unwrap_or_default();
                invalid.push(format!("edge START -> `{to}` leads to no node named `{to}`{hint}"));
            } else if from != START && !index.contains_key(from.as_str()) {
                invalid.push(format!("edge `{from}` -> `{to}` starts at no node named `{from}`"));
            }
        }
        for name in self.policies.keys().filter(|name| !index.contains_key(name.as_str())) {
            invalid.push(format!("`policy` names no node `{name}`"));
        }
        for name in self.interrupt_before.iter().chain(&self.interrupt_after) {
            if !index.contains_key(name.as_str()) {
                invalid.push(format!("a breakpoint names no node `{name}`"));
            }
        }
        let routers = self.routers.iter().map(|(f, _)| f).filter(|f| *f != START);
        let sources = self.sends.iter().map(|(f, _)| f).chain(routers);
        for from in sources.chain(self.joins.iter().flat_map(|(s, _)| s)) {
            if !index.contains_key(from.as_str()) {
                invalid.push(format!("no node named `{from}` to start an edge from"));
            }
        }
        for (_, router) in self.routers.iter().filter(|(f, _)| f == START) {
            if router.targets.iter().any(|t| t == END) {
                invalid.push("a router from START must lead to nodes, not to END".to_owned());
            }
            for target in router.targets.iter().filter(|t| *t != END && !index.contains_key(&***t)) {
                let near = graphwright_wiring::closest(target, self.nodes.iter().map(|e| &*e.name));
                let hint = near.map(|n| format!("; did you mean `{n}`?")).unwrap_or_default();
                invalid.push(format!("the router from START leads to no node named `{target}`{hint}"));
            }
        }
        for (to, payload, _) in &self.start_sends {
            match index.get(to.as_str()).map(|&i| self.nodes[i].spec.takes) {
                None => invalid.push(format!("`add_start_send` sends to no node named `{to}`")),
                Some(takes) if takes != Some(*payload) => invalid.push(format!(
                    "START sends `{}` to `{to}`, which does not take it as its payload \
                     (add `{to}` with `add_payload_node` and a `&{}` parameter)",
                    payload.name, payload.name
                )),
                Some(_) => {}
            }
        }
    }

    /// Builder-only rules that the macro leaves to rustc's type checks.
    fn check_shapes(&self, index: &HashMap<String, usize>, invalid: &mut Vec<String>) {
        // Every list indexed by node once, so the checks stay linear in the graph's size.
        let mut pulled: HashSet<&str> = HashSet::new();
        for (_, to) in &self.edges {
            pulled.insert(to);
        }
        pulled.extend(self.joins.iter().map(|(_, t)| t.as_str()));
        for entry in &self.nodes {
            if let Shape::Branch { targets, .. } = entry.spec.shape {
                pulled.extend(targets.iter().copied());
            }
        }
        for (_, router) in &self.routers {
            pulled.extend(router.targets.iter().map(|t| &**t));
        }
        let mut sends: HashMap<&str, Vec<&str>> = HashMap::new();
        for (from, to) in &self.sends {
            sends.entry(from).or_default().push(to);
        }
        for entry in &self.nodes {
            let name = &*entry.name;
            let sends = sends.get(name).map_or(&[][..], Vec::as_slice);
            match &entry.spec.shape {
                Shape::Send { payloads } => {
                    if sends.len() != payloads.len() {
                        invalid.push(format!(
                            "node `{name}` returns Send payloads for {} target(s) but has {} `add_send` edge(s)",
                            payloads.len(),
                            sends.len()
                        ));
                    }
                    for (target, payload) in sends.iter().zip(payloads) {
                        let takes = index.get(*target).and_then(|&t| self.nodes[t].spec.takes);
                        if takes.is_some_and(|t| t != *payload) || (index.contains_key(*target) && takes.is_none()) {
                            invalid.push(format!(
                                "node `{name}` sends `{}` to `{target}`, which does not take it as its payload \
                                 (add `{target}` with `add_payload_node` and a `&{}` parameter)",
                                payload.name, payload.name
                            ));
                        }
                    }
                }
                _ if !sends.is_empty() => invalid
                    .push(format!("node `{name}` has a Send edge but returns no payloads: make it return `Vec<P>`")),
                _ => {}
            }
            if self.policies.get(name).is_some_and(|p| p.timeout.is_some()) && !entry.spec.is_async() {
                invalid.push(format!(
                    "node `{name}` is sync, so a timeout could not stop it: make it `async` or drop the timeout"
                ));
            }
            if let Some(policy) = self.policies.get(name).and_then(|p| p.cache.as_ref()) {
                self.check_cache(name, entry.spec.takes.as_ref(), policy, invalid);
            }
            if entry.spec.takes.is_some() && pulled.contains(name) {
                invalid.push(format!("node `{name}` takes a Send payload, so only `add_send` edges may lead to it"));
            }
        }
    }

    /// A cache policy needs the graph's cache, and a key function of the node's input type.
    fn check_cache(&self, name: &str, takes: Option<&PayloadType>, policy: &CachePolicy, invalid: &mut Vec<String>) {
        if self.cache.is_none() {
            invalid.push(format!(
                "node `{name}` has a cache policy but the graph has no cache: give it one with \
                 `.cache(InMemoryCache::new())` (or a `SqliteCache` or `PostgresCache`) on the builder"
            ));
        }
        let Some(key) = &policy.key else { return };
        let (input, input_name) = takes.map_or((TypeId::of::<S>(), std::any::type_name::<S>()), |t| (t.id, t.name));
        if key.input != input {
            invalid.push(format!(
                "the cache key of node `{name}` reads `&{}`, but the node's input is `{input_name}`: \
                 make the key function take `&{input_name}`",
                key.input_name
            ));
        }
    }

    /// Resolves names to indices. Runs only on a graph that passed every check.
    fn link(self, index: &HashMap<String, usize>) -> CompiledGraph<S, C> {
        let target = |name: &str| if name == END { Target::END } else { Target(index[name] as u32) };
        let mut joins: Vec<JoinSpec> = Vec::new();
        let mut join_inputs: Vec<Vec<(u32, u32)>> = vec![Vec::new(); self.nodes.len()];
        for (sources, to) in &self.joins {
            let join = joins.len() as u32;
            joins.push(JoinSpec { target: target(to), sources: sources.len() as u32 });
            for (slot, source) in sources.iter().enumerate() {
                join_inputs[index[source.as_str()]].push((join, slot as u32));
            }
        }
        let entries: Vec<u32> = {
            let mut e: Vec<u32> =
                self.edges.iter().filter(|(f, _)| f == START).map(|(_, t)| index[t.as_str()] as u32).collect();
            e.sort_unstable();
            e.dedup();
            e
        };
        let link_router = |router: Router<S>| LinkedRouter {
            pick: router.pick,
            targets: router.targets.iter().map(|t| target(t)).collect(),
        };
        let mut routers_by_node: HashMap<String, Vec<LinkedRouter<S>>> = HashMap::new();
        for (from, router) in self.routers {
            routers_by_node.entry(from).or_default().push(link_router(router));
        }
        let start = Start {
            entries,
            routers: routers_by_node.remove(START).unwrap_or_default().into(),
            sends: self.start_sends.into_iter().map(|(to, _, make)| (make, index[to.as_str()] as u32)).collect(),
        };
        let mut policies = self.policies;
        let mut edges_by_node: HashMap<&str, Vec<Target>> = HashMap::new();
        for (from, to) in &self.edges {
            edges_by_node.entry(from.as_str()).or_default().push(target(to));
        }
        let mut sends_by_node: HashMap<&str, Vec<u32>> = HashMap::new();
        for (from, to) in &self.sends {
            sends_by_node.entry(from.as_str()).or_default().push(index[to.as_str()] as u32);
        }
        let nodes: Vec<CompiledNode<S, C>> = self
            .nodes
            .into_iter()
            .enumerate()
            .map(|(i, entry)| {
                let name = &*entry.name;
                let routes = match &entry.spec.shape {
                    Shape::Branch { targets, .. } => targets.iter().map(|t| target(t)).collect(),
                    _ => Box::default(),
                };
                CompiledNode {
                    name: entry.name.clone(),
                    action: entry.spec.action,
                    edges: edges_by_node.remove(name).unwrap_or_default().into(),
                    routes,
                    routers: routers_by_node.remove(name).unwrap_or_default().into(),
                    sends: sends_by_node.remove(name).unwrap_or_default().into(),
                    joins: std::mem::take(&mut join_inputs[i]).into(),
                    policy: policies.remove(name).unwrap_or_default(),
                    takes: entry.spec.takes,
                    interrupt_before: self.interrupt_before.iter().any(|n| n == name),
                    interrupt_after: self.interrupt_after.iter().any(|n| n == name),
                    subgraph: entry.spec.subgraph,
                }
            })
            .collect();
        let node_names: Arc<[Arc<str>]> = nodes.iter().map(|n| n.name.clone()).collect();
        let runs_in_place = nodes.iter().all(|n| {
            n.action.never_waits()
                && n.policy.retry.is_empty()
                && n.policy.timeout.is_none()
                && n.policy.cache.is_none()
        });
        CompiledGraph::new(Inner {
            name: self.name,
            node_index: node_names.iter().enumerate().map(|(i, n)| (Arc::clone(n), i as u32)).collect(),
            node_names,
            nodes,
            start,
            joins,
            recursion_limit: self.recursion_limit,
            runs_in_place,
            default_context: self.default_context,
            saver: self.saver.unwrap_or_else(|| Arc::new(MemorySaver::new())),
            store: self.store,
            cache: self.cache,
            busy: Mutex::default(),
        })
    }
}

/// A builder given as a subgraph compiles with its parent (its wiring errors are the parent's).
impl<S: State, C: Send + Sync + 'static> IntoSubgraph<S, C> for StateGraph<S, C> {
    fn into_subgraph(self) -> Result<CompiledGraph<S, C>, BuildError> {
        self.compile()
    }
}
