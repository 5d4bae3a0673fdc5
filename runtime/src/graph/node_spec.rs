//! A node with its function erased to one of the shapes the executor can call.

use crate::error::{GraphError, NodeError};
use crate::node::{NodeOutput, Route, SendPayload};
use crate::record::codec::{self, DecodeError, EncodeError};
use crate::runtime::Runtime;
use crate::state::State;
use std::any::{Any, TypeId, type_name};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

/// What one run of a node produces.
pub type NodeResult<S> = Result<NodeOutput<S>, NodeError>;

/// The future an async node returns, boxed so nodes of different types fit in one graph.
pub type NodeFuture<'a, S> = Pin<Box<dyn Future<Output = NodeResult<S>> + Send + 'a>>;

/// A task's input besides the state: its Send payload, if it was started by a Send.
pub type Input<'a> = Option<&'a (dyn Any + Send + Sync)>;

pub(crate) type SyncFn<S, C> = dyn for<'a> Fn(&'a S, &'a Runtime<C>, Input<'a>) -> NodeResult<S> + Send + Sync;
type AsyncFn<S, C> = dyn for<'a> Fn(&'a S, &'a Runtime<C>, Input<'a>) -> NodeFuture<'a, S> + Send + Sync;

/// The node's function: sync nodes are called in place, async ones are polled together.
pub(crate) enum Action<S: State, C> {
    Sync(Arc<SyncFn<S, C>>),
    Async(Arc<AsyncFn<S, C>>),
    /// A subgraph whose nodes are all sync: run as an async node (`run`) when its run stores or
    /// streams, and called in place (`in_place`), with no future of its own, when it does
    /// neither, since then nothing in it ever waits.
    Subgraph {
        run: Arc<AsyncFn<S, C>>,
        in_place: Arc<SyncFn<S, C>>,
    },
}

impl<S: State, C> Clone for Action<S, C> {
    fn clone(&self) -> Self {
        match self {
            Self::Sync(f) => Self::Sync(Arc::clone(f)),
            Self::Async(f) => Self::Async(Arc::clone(f)),
            Self::Subgraph { run, in_place } => Self::Subgraph { run: Arc::clone(run), in_place: Arc::clone(in_place) },
        }
    }
}

impl<S: State, C> Action<S, C> {
    /// Whether the node never waits in a run that neither stores nor streams, given no retry or
    /// timeout: a sync node, or a subgraph of sync nodes.
    pub(crate) fn never_waits(&self) -> bool {
        matches!(self, Self::Sync(_) | Self::Subgraph { .. })
    }
}

/// How a node says where the run goes, learnt from its return type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Shape {
    /// It returns an update and follows static edges (or a router).
    Update,
    /// It returns a route among these targets.
    Branch {
        /// The route type's name, for messages.
        route: &'static str,
        /// The targets, in route-index order.
        targets: &'static [&'static str],
    },
    /// It returns Send payloads for its `send` targets.
    Send {
        /// The payload type each target must take, in target order (one entry when every
        /// payload goes to the one target).
        payloads: Vec<PayloadType>,
    },
}

impl Shape {
    /// The shape of a node returning routes of type `R`.
    pub fn branch<R: Route>() -> Self {
        Self::Branch { route: type_name::<R>(), targets: R::TARGETS }
    }

    /// The shape of a node sending payloads of type `P` to its one target.
    pub fn send<P: SendPayload>() -> Self {
        Self::Send { payloads: vec![PayloadType::of::<P>()] }
    }
}

/// Reads a Send payload back from its stored form.
type DecodePayload = fn(&[u8]) -> Result<Box<dyn Any + Send + Sync>, DecodeError>;

/// A payload type, known by id so the builder can check a Send edge fits its target, with the
/// functions a checkpoint uses to store and restore payloads of that type.
#[derive(Clone, Copy, Debug)]
pub struct PayloadType {
    pub(crate) id: TypeId,
    pub(crate) name: &'static str,
    /// Appends the stored form of a payload.
    pub(crate) encode: fn(&(dyn Any + Send + Sync), &mut Vec<u8>) -> Result<(), EncodeError>,
    /// Reads a payload back from its stored form.
    pub(crate) decode: DecodePayload,
    /// A payload as JSON, for the run's event log.
    pub(crate) to_json: fn(&(dyn Any + Send + Sync)) -> Result<serde_json::Value, String>,
}

impl PayloadType {
    /// The payload type `P`.
    pub fn of<P: SendPayload>() -> Self {
        Self {
            id: TypeId::of::<P>(),
            name: type_name::<P>(),
            encode: |payload, out| match payload.downcast_ref::<P>() {
                Some(payload) => codec::encode(out, payload),
                None => Err(EncodeError {
                    path: String::new(),
                    reason: format!("the payload is not a `{}`", type_name::<P>()),
                }),
            },
            decode: |bytes| codec::decode::<P>(bytes).map(|p| Box::new(p) as Box<dyn Any + Send + Sync>),
            to_json: |payload| match payload.downcast_ref::<P>() {
                Some(payload) => serde_json::to_value(payload).map_err(|e| e.to_string()),
                None => Err(format!("the payload is not a `{}`", type_name::<P>())),
            },
        }
    }
}

impl PartialEq for PayloadType {
    fn eq(&self, other: &Self) -> bool {
        self.id == other.id
    }
}

impl Eq for PayloadType {}

/// A node ready to be added to a [`StateGraph`](crate::StateGraph): its function, erased, with
/// what its return type says about its edges and what payload it takes.
pub struct NodeSpec<S: State, C> {
    pub(crate) action: Action<S, C>,
    pub(crate) shape: Shape,
    pub(crate) takes: Option<PayloadType>,
    /// The graph the node runs, for a subgraph node: how to read its checkpoints.
    pub(crate) subgraph: Option<Arc<dyn super::inspect::Inspect>>,
}

impl<S: State, C: Send + Sync + 'static> NodeSpec<S, C> {
    /// A sync node from its erased form. Generated code uses this; prefer `add_node`.
    pub fn sync<F>(shape: Shape, takes: Option<PayloadType>, f: F) -> Self
    where
        F: for<'a> Fn(&'a S, &'a Runtime<C>, Input<'a>) -> NodeResult<S> + Send + Sync + 'static,
    {
        Self { action: Action::Sync(Arc::new(f)), shape, takes, subgraph: None }
    }

    /// An async node from its erased form. Generated code uses this; prefer `add_node`.
    pub fn asynchronous<F>(shape: Shape, takes: Option<PayloadType>, f: F) -> Self
    where
        F: for<'a> Fn(&'a S, &'a Runtime<C>, Input<'a>) -> NodeFuture<'a, S> + Send + Sync + 'static,
    {
        Self { action: Action::Async(Arc::new(f)), shape, takes, subgraph: None }
    }

    /// A subgraph's node: `run` in general, and `in_place` for a run that neither stores nor
    /// streams when the subgraph `runs_in_place` (see [`Action::Subgraph`]); an async node
    /// otherwise.
    pub(crate) fn subgraph<R, I>(
        shape: Shape,
        takes: Option<PayloadType>,
        runs_in_place: bool,
        run: R,
        in_place: I,
    ) -> Self
    where
        R: for<'a> Fn(&'a S, &'a Runtime<C>, Input<'a>) -> NodeFuture<'a, S> + Send + Sync + 'static,
        I: for<'a> Fn(&'a S, &'a Runtime<C>, Input<'a>) -> NodeResult<S> + Send + Sync + 'static,
    {
        let action = if runs_in_place {
            Action::Subgraph { run: Arc::new(run), in_place: Arc::new(in_place) }
        } else {
            Action::Async(Arc::new(run))
        };
        Self { action, shape, takes, subgraph: None }
    }

    /// Whether the node is async.
    pub(crate) fn is_async(&self) -> bool {
        matches!(self.action, Action::Async(_) | Action::Subgraph { .. })
    }
}

/// Borrows a task's payload as the type its node expects.
///
/// # Errors
/// [`GraphError::PayloadType`] when the payload is missing or of another type; the builder's
/// checks make that unreachable for graphs that compiled.
pub fn take_payload<'a, P: SendPayload>(input: Input<'a>, node: &str) -> Result<&'a P, GraphError> {
    input
        .and_then(|p| p.downcast_ref::<P>())
        .ok_or_else(|| GraphError::PayloadType { node: node.to_owned(), expected: type_name::<P>() })
}
