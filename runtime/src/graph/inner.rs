//! A compiled graph's parts as the executor reads them: nodes with their edges resolved to
//! indices, routers, joins, and where runs keep what they store.

use super::inspect::Inspect;
use super::node_spec::{Action, PayloadType};
use crate::checkpoint::Checkpointer;
use crate::policy::NodePolicy;
use crate::state::State;
use crate::store::Store;
use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// A node index, or END.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Target(pub(crate) u32);

impl Target {
    pub(crate) const END: Self = Self(u32::MAX);
}

pub(crate) type RouterFn<S> = Arc<dyn Fn(&S) -> usize + Send + Sync>;

/// Payloads sent from START, for the entry's Send tasks.
pub(crate) type StartSendFn<S> = Arc<dyn Fn(&S) -> Vec<Box<dyn std::any::Any + Send + Sync>> + Send + Sync>;

/// How a run begins: static entries, a router reading the input state, Sends from START.
#[derive(Clone)]
pub(crate) struct Start<S> {
    /// Nodes with an edge from START, in declaration order.
    pub(crate) entries: Vec<u32>,
    /// Routers from START.
    pub(crate) routers: Box<[LinkedRouter<S>]>,
    /// Send functions from START and the node each sends to.
    pub(crate) sends: Vec<(StartSendFn<S>, u32)>,
}

/// A router as the builder holds it: its targets by name.
pub(crate) struct Router<S> {
    pub(crate) targets: Vec<std::borrow::Cow<'static, str>>,
    pub(crate) pick: RouterFn<S>,
}

/// A router with its targets resolved.
#[derive(Clone)]
pub(crate) struct LinkedRouter<S> {
    pub(crate) pick: RouterFn<S>,
    pub(crate) targets: Box<[Target]>,
}

/// A join: its target runs once all `sources` have finished since it last ran.
#[derive(Clone)]
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
    /// Targets by route index, for the routes the node returns (a branching node).
    pub(crate) routes: Box<[Target]>,
    /// Routers evaluated after a step in which the node ran.
    pub(crate) routers: Box<[LinkedRouter<S>]>,
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
    /// The graph the node runs, for a subgraph node.
    pub(crate) subgraph: Option<Arc<dyn Inspect>>,
}

impl<S: State, C> Clone for CompiledNode<S, C> {
    fn clone(&self) -> Self {
        Self {
            name: Arc::clone(&self.name),
            action: self.action.clone(),
            edges: self.edges.clone(),
            routes: self.routes.clone(),
            routers: self.routers.clone(),
            sends: self.sends.clone(),
            joins: self.joins.clone(),
            policy: self.policy.clone(),
            takes: self.takes,
            interrupt_before: self.interrupt_before,
            interrupt_after: self.interrupt_after,
            subgraph: self.subgraph.clone(),
        }
    }
}

pub(crate) struct Inner<S: State, C> {
    pub(crate) name: String,
    pub(crate) nodes: Vec<CompiledNode<S, C>>,
    pub(crate) node_names: Arc<[Arc<str>]>,
    /// Node indices by name.
    pub(crate) node_index: std::collections::HashMap<Arc<str>, u32>,
    pub(crate) start: Start<S>,
    pub(crate) joins: Vec<JoinSpec>,
    pub(crate) recursion_limit: u64,
    /// Every node is sync (or a subgraph of sync nodes) with no retry or timeout: a run that
    /// neither stores nor streams never waits, so a parent may run it in place.
    pub(crate) runs_in_place: bool,
    pub(crate) default_context: Option<fn() -> C>,
    /// Where runs with a thread keep their checkpoints.
    pub(crate) saver: Arc<dyn Checkpointer>,
    /// The long-term memory every run's nodes share, if any.
    pub(crate) store: Option<Arc<dyn Store>>,
    /// Where nodes with a cache policy keep their outputs (set whenever one has a policy).
    pub(crate) cache: Option<Arc<dyn crate::cache::Cache>>,
    /// Threads with a run in progress in this process.
    pub(crate) busy: Mutex<HashSet<Arc<str>>>,
}
