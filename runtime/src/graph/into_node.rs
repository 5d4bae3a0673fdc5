//! Turning plain Rust functions into nodes for the dynamic builder.
//!
//! `add_node` takes a sync closure or fn, or an `async fn`, whose parameters are `&State` and
//! optionally `&Runtime<Ctx>`; `add_payload_node` takes the same with `&P` (a Send payload)
//! in place of the state. What the function returns decides how it is wired: an update
//! follows static edges, `(update, route)` or `Command<route>` branches, `Vec<P>` sends.

use super::node_spec::{NodeFuture, NodeResult, NodeSpec, PayloadType, Shape};
use crate::node::{BranchReturn, Route, SendPayload, SendReturn, UpdateReturn};
use crate::runtime::Runtime;
use crate::state::State;
use std::future::Future;
use std::marker::PhantomData;

/// How a return type converts to a node output, and what it says about the node's shape.
/// Implemented for the marker types below; `M` is inferred.
pub trait OutputKind<S: State, O> {
    /// The node's shape.
    fn shape() -> Shape;
    /// Converts the return value.
    fn convert(output: O) -> NodeResult<S>;
}

/// Marker: the node returns an update.
pub struct UpdateKind;
/// Marker: the node returns a route of type `R`.
pub struct BranchKind<R>(PhantomData<R>);
/// Marker: the node returns payloads of type `P`.
pub struct SendKind<P>(PhantomData<P>);

impl<S: State, O: UpdateReturn<S>> OutputKind<S, O> for UpdateKind {
    fn shape() -> Shape {
        Shape::Update
    }
    fn convert(output: O) -> NodeResult<S> {
        output.into_output()
    }
}

impl<S: State, R: Route<State = S>, O: BranchReturn<R>> OutputKind<S, O> for BranchKind<R> {
    fn shape() -> Shape {
        Shape::branch::<R>()
    }
    fn convert(output: O) -> NodeResult<S> {
        output.into_output()
    }
}

impl<S: State, P: SendPayload, O: SendReturn<S, P>> OutputKind<S, O> for SendKind<P> {
    fn shape() -> Shape {
        Shape::send::<P>()
    }
    fn convert(output: O) -> NodeResult<S> {
        output.into_output()
    }
}

/// A function that can be a node reading the state. `M` is an inference marker.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a node of this graph",
    label = "expected a fn taking `&State` (and optionally `&Runtime<Ctx>`) that returns an update, \
             `(update, route)`, `Command<route>` or `Vec<payload>`",
    note = "async closures cannot be nodes yet: write an `async fn` and pass its name"
)]
pub trait IntoNode<S: State, C, M> {
    /// Erases the function.
    fn into_node(self) -> NodeSpec<S, C>;
}

/// A function that can be a node reading a Send payload of type `P`. `M` is an inference marker.
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be a payload node of this graph",
    label = "expected a fn taking `&Payload` (and optionally `&Runtime<Ctx>`)"
)]
pub trait IntoPayloadNode<S: State, C, P, M> {
    /// Erases the function.
    fn into_node(self) -> NodeSpec<S, C>;
}

/// `for<'a> Fn(&'a A) -> impl Future + 'a`, spelt so that `async fn` items satisfy it.
pub trait AsyncFn1<'a, A: 'a>: Fn(&'a A) -> Self::Fut {
    /// The returned future.
    type Fut: Future<Output = Self::Out> + Send + 'a;
    /// The future's output.
    type Out;
}

impl<'a, A: 'a, F, Fut> AsyncFn1<'a, A> for F
where
    F: Fn(&'a A) -> Fut,
    Fut: Future + Send + 'a,
{
    type Fut = Fut;
    type Out = Fut::Output;
}

/// `for<'a> Fn(&'a A, &'a B) -> impl Future + 'a`, spelt so that `async fn` items satisfy it.
pub trait AsyncFn2<'a, A: 'a, B: 'a>: Fn(&'a A, &'a B) -> Self::Fut {
    /// The returned future.
    type Fut: Future<Output = Self::Out> + Send + 'a;
    /// The future's output.
    type Out;
}

impl<'a, A: 'a, B: 'a, F, Fut> AsyncFn2<'a, A, B> for F
where
    F: Fn(&'a A, &'a B) -> Fut,
    Fut: Future + Send + 'a,
{
    type Fut = Fut;
    type Out = Fut::Output;
}

/// Marker types that keep the `IntoNode` impls apart.
pub mod marker {
    use std::marker::PhantomData;
    /// A sync fn of the state.
    pub struct SyncState<K, O>(PhantomData<(K, O)>);
    /// A sync fn of the state and the runtime.
    pub struct SyncStateRt<K, O>(PhantomData<(K, O)>);
    /// An async fn of the state.
    pub struct AsyncState<K, O>(PhantomData<(K, O)>);
    /// An async fn of the state and the runtime.
    pub struct AsyncStateRt<K, O>(PhantomData<(K, O)>);
}

impl<S, C, F, O, K> IntoNode<S, C, marker::SyncState<K, O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    F: Fn(&S) -> O + Send + Sync + 'static,
    K: OutputKind<S, O>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::sync(K::shape(), None, move |s, _, _| K::convert(self(s)))
    }
}

impl<S, C, F, O, K> IntoNode<S, C, marker::SyncStateRt<K, O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    F: Fn(&S, &Runtime<C>) -> O + Send + Sync + 'static,
    K: OutputKind<S, O>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::sync(K::shape(), None, move |s, rt, _| K::convert(self(s, rt)))
    }
}

impl<S, C, F, O, K> IntoNode<S, C, marker::AsyncState<K, O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    F: for<'a> AsyncFn1<'a, S, Out = O> + Send + Sync + 'static,
    K: OutputKind<S, O>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::asynchronous(K::shape(), None, move |s, _, _| -> NodeFuture<'_, S> {
            let fut = self(s);
            Box::pin(async move { K::convert(fut.await) })
        })
    }
}

impl<S, C, F, O, K> IntoNode<S, C, marker::AsyncStateRt<K, O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    F: for<'a> AsyncFn2<'a, S, Runtime<C>, Out = O> + Send + Sync + 'static,
    K: OutputKind<S, O>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::asynchronous(K::shape(), None, move |s, rt, _| -> NodeFuture<'_, S> {
            let fut = self(s, rt);
            Box::pin(async move { K::convert(fut.await) })
        })
    }
}

impl<S, C, P, F, O, K> IntoPayloadNode<S, C, P, marker::SyncState<K, O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    P: SendPayload,
    F: Fn(&P) -> O + Send + Sync + 'static,
    K: OutputKind<S, O>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::sync(K::shape(), Some(PayloadType::of::<P>()), move |_, rt, input| {
            let payload = super::node_spec::take_payload::<P>(input, rt.node())?;
            K::convert(self(payload))
        })
    }
}

impl<S, C, P, F, O, K> IntoPayloadNode<S, C, P, marker::SyncStateRt<K, O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    P: SendPayload,
    F: Fn(&P, &Runtime<C>) -> O + Send + Sync + 'static,
    K: OutputKind<S, O>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::sync(K::shape(), Some(PayloadType::of::<P>()), move |_, rt, input| {
            let payload = super::node_spec::take_payload::<P>(input, rt.node())?;
            K::convert(self(payload, rt))
        })
    }
}

impl<S, C, P, F, O, K> IntoPayloadNode<S, C, P, marker::AsyncState<K, O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    P: SendPayload,
    F: for<'a> AsyncFn1<'a, P, Out = O> + Send + Sync + 'static,
    K: OutputKind<S, O>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        let f = std::sync::Arc::new(self);
        NodeSpec::asynchronous(K::shape(), Some(PayloadType::of::<P>()), move |_, rt, input| -> NodeFuture<'_, S> {
            let f = std::sync::Arc::clone(&f);
            Box::pin(async move {
                let payload = super::node_spec::take_payload::<P>(input, rt.node())?;
                K::convert(f(payload).await)
            })
        })
    }
}

impl<S, C, P, F, O, K> IntoPayloadNode<S, C, P, marker::AsyncStateRt<K, O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    P: SendPayload,
    F: for<'a> AsyncFn2<'a, P, Runtime<C>, Out = O> + Send + Sync + 'static,
    K: OutputKind<S, O>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        let f = std::sync::Arc::new(self);
        NodeSpec::asynchronous(K::shape(), Some(PayloadType::of::<P>()), move |_, rt, input| -> NodeFuture<'_, S> {
            let f = std::sync::Arc::clone(&f);
            Box::pin(async move {
                let payload = super::node_spec::take_payload::<P>(input, rt.node())?;
                K::convert(f(payload, rt).await)
            })
        })
    }
}
