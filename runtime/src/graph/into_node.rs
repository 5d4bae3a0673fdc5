//! Turning plain Rust functions into nodes for the dynamic builder.
//!
//! `add_node` takes a sync closure or fn, or an `async fn`, whose parameters are `&State` and
//! optionally `&Runtime<Ctx>`; `add_payload_node` takes the same with `&P` (a Send payload)
//! in place of the state. What the function returns decides how it is wired: an update
//! follows static edges, `(update, route)` or `Command<route>` branches, `Vec<P>` sends.

use super::node_spec::{NodeFuture, NodeResult, NodeSpec, PayloadType, Shape};
use crate::error::NodeError;
use crate::node::{BranchReturn, Command, NodeOutput, Payload, Route, SendPayload, SendReturn};
use crate::runtime::Runtime;
use crate::state::{State, Update};
use std::future::Future;

/// What a builder node may return: an update, `(update, route)`, `Command<route>`, `Vec<P>`,
/// `(update, Vec<P>)`, or a `Result` of any of these. The type also says how the node is wired.
#[diagnostic::on_unimplemented(
    message = "a node cannot return `{Self}`",
    label = "expected an update, `(update, route)`, `Command<route>`, `Vec<payload>`, or a `Result` of one"
)]
pub trait IntoOutput<S: State> {
    /// The node's shape.
    fn shape() -> Shape;
    /// Converts the return value.
    fn convert(self) -> NodeResult<S>;
}

impl<U: Update> IntoOutput<U::State> for U {
    fn shape() -> Shape {
        Shape::Update
    }
    fn convert(self) -> NodeResult<U::State> {
        Ok(NodeOutput::update(self))
    }
}

impl<U, R> IntoOutput<R::State> for (U, R)
where
    R: Route,
    R::State: State<Update = U>,
{
    fn shape() -> Shape {
        Shape::branch::<R>()
    }
    fn convert(self) -> NodeResult<R::State> {
        BranchReturn::<R>::into_output(self)
    }
}

impl<R: Route> IntoOutput<R::State> for Command<R> {
    fn shape() -> Shape {
        Shape::branch::<R>()
    }
    fn convert(self) -> NodeResult<R::State> {
        BranchReturn::<R>::into_output(self)
    }
}

impl<S: State, P: SendPayload> IntoOutput<S> for Vec<P> {
    fn shape() -> Shape {
        Shape::send::<P>()
    }
    fn convert(self) -> NodeResult<S> {
        SendReturn::<S, P>::into_output(self)
    }
}

impl<S: State<Update = U>, U, P: SendPayload> IntoOutput<S> for (U, Vec<P>) {
    fn shape() -> Shape {
        Shape::send::<P>()
    }
    fn convert(self) -> NodeResult<S> {
        Ok(NodeOutput::send(self.0, self.1.into_iter().map(|p| Payload::new(0, p)).collect()))
    }
}

impl<S: State, T: IntoOutput<S>, E: Into<NodeError>> IntoOutput<S> for Result<T, E> {
    fn shape() -> Shape {
        T::shape()
    }
    fn convert(self) -> NodeResult<S> {
        self.map_err(Into::into)?.convert()
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
    pub struct SyncState<O>(PhantomData<O>);
    /// A sync fn of the state and the runtime.
    pub struct SyncStateRt<O>(PhantomData<O>);
    /// An async fn of the state.
    pub struct AsyncState<O>(PhantomData<O>);
    /// An async fn of the state and the runtime.
    pub struct AsyncStateRt<O>(PhantomData<O>);
}

impl<S, C, F, O> IntoNode<S, C, marker::SyncState<O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    F: Fn(&S) -> O + Send + Sync + 'static,
    O: IntoOutput<S>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::sync(O::shape(), None, move |s, _, _| self(s).convert())
    }
}

impl<S, C, F, O> IntoNode<S, C, marker::SyncStateRt<O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    F: Fn(&S, &Runtime<C>) -> O + Send + Sync + 'static,
    O: IntoOutput<S>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::sync(O::shape(), None, move |s, rt, _| self(s, rt).convert())
    }
}

impl<S, C, F, O> IntoNode<S, C, marker::AsyncState<O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    F: for<'a> AsyncFn1<'a, S, Out = O> + Send + Sync + 'static,
    O: IntoOutput<S>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::asynchronous(O::shape(), None, move |s, _, _| -> NodeFuture<'_, S> {
            let fut = self(s);
            Box::pin(async move { fut.await.convert() })
        })
    }
}

impl<S, C, F, O> IntoNode<S, C, marker::AsyncStateRt<O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    F: for<'a> AsyncFn2<'a, S, Runtime<C>, Out = O> + Send + Sync + 'static,
    O: IntoOutput<S>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::asynchronous(O::shape(), None, move |s, rt, _| -> NodeFuture<'_, S> {
            let fut = self(s, rt);
            Box::pin(async move { fut.await.convert() })
        })
    }
}

impl<S, C, P, F, O> IntoPayloadNode<S, C, P, marker::SyncState<O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    P: SendPayload,
    F: Fn(&P) -> O + Send + Sync + 'static,
    O: IntoOutput<S>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::sync(O::shape(), Some(PayloadType::of::<P>()), move |_, rt, input| {
            let payload = super::node_spec::take_payload::<P>(input, rt.node())?;
            self(payload).convert()
        })
    }
}

impl<S, C, P, F, O> IntoPayloadNode<S, C, P, marker::SyncStateRt<O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    P: SendPayload,
    F: Fn(&P, &Runtime<C>) -> O + Send + Sync + 'static,
    O: IntoOutput<S>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        NodeSpec::sync(O::shape(), Some(PayloadType::of::<P>()), move |_, rt, input| {
            let payload = super::node_spec::take_payload::<P>(input, rt.node())?;
            self(payload, rt).convert()
        })
    }
}

impl<S, C, P, F, O> IntoPayloadNode<S, C, P, marker::AsyncState<O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    P: SendPayload,
    F: for<'a> AsyncFn1<'a, P, Out = O> + Send + Sync + 'static,
    O: IntoOutput<S>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        let f = std::sync::Arc::new(self);
        NodeSpec::asynchronous(O::shape(), Some(PayloadType::of::<P>()), move |_, rt, input| -> NodeFuture<'_, S> {
            let f = std::sync::Arc::clone(&f);
            Box::pin(async move {
                let payload = super::node_spec::take_payload::<P>(input, rt.node())?;
                f(payload).await.convert()
            })
        })
    }
}

impl<S, C, P, F, O> IntoPayloadNode<S, C, P, marker::AsyncStateRt<O>> for F
where
    S: State,
    C: Send + Sync + 'static,
    P: SendPayload,
    F: for<'a> AsyncFn2<'a, P, Runtime<C>, Out = O> + Send + Sync + 'static,
    O: IntoOutput<S>,
{
    fn into_node(self) -> NodeSpec<S, C> {
        let f = std::sync::Arc::new(self);
        NodeSpec::asynchronous(O::shape(), Some(PayloadType::of::<P>()), move |_, rt, input| -> NodeFuture<'_, S> {
            let f = std::sync::Arc::clone(&f);
            Box::pin(async move {
                let payload = super::node_spec::take_payload::<P>(input, rt.node())?;
                f(payload, rt).await.convert()
            })
        })
    }
}
