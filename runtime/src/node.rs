//! What a node returns: an update, a route, a [`Command`], or Send payloads.

use crate::error::NodeError;
use crate::state::{State, Update};
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::any::Any;

/// The name of the virtual node a finished branch goes to, in route tables and builder calls.
pub const END: &str = graphwright_wiring::END;

/// The name of the virtual node every run starts from, in builder calls.
pub const START: &str = "START";

/// A branching node's choice of where the run goes next: the `{Node}Next` enum `#[node(next =
/// a | b)]` generates, or a type of your own for the dynamic builder.
///
/// ```
/// use graphwright::prelude::*;
///
/// #[state]
/// struct Turn {
///     done: bool,
/// }
///
/// /// Where the run goes after `agent`.
/// #[derive(Clone, Copy)]
/// enum AgentNext {
///     Tools,
///     End,
/// }
///
/// impl Route for AgentNext {
///     type State = Turn;
///     const TARGETS: &'static [&'static str] = &["tools", END];
///     fn index(&self) -> usize {
///         *self as usize
///     }
/// }
/// assert_eq!(AgentNext::TARGETS[AgentNext::End.index()], END);
/// ```
pub trait Route: Send + 'static {
    /// The state of the graph whose nodes the route names.
    type State: State;
    /// The target node names, one per variant in variant order; [`END`] for the end.
    const TARGETS: &'static [&'static str];
    /// This variant's position in [`Route::TARGETS`].
    fn index(&self) -> usize;
}

/// A node's state update together with where the run goes next (LangGraph's `Command`).
///
/// ```
/// use graphwright::prelude::*;
///
/// #[graph]
/// mod review {
///     use super::*;
///
///     #[state]
///     pub struct State {
///         pub approved: bool,
///     }
///
///     #[node(entry, next = publish | revise)]
///     fn judge(state: &State) -> Command<JudgeNext> {
///         Command::goto(JudgeNext::Publish).update(StateUpdate::new().approved(true))
///     }
///
///     #[node(next = END)]
///     fn publish(_state: &State) -> StateUpdate {
///         StateUpdate::new()
///     }
///
///     #[node(next = END)]
///     fn revise(_state: &State) -> StateUpdate {
///         StateUpdate::new()
///     }
/// }
/// # fn main() { let _ = review::graph(); }
/// ```
pub struct Command<R: Route> {
    pub(crate) update: <R::State as State>::Update,
    pub(crate) goto: Vec<R>,
}

impl<R: Route> Command<R> {
    /// Go to one target.
    pub fn goto(route: R) -> Self {
        Self { update: Default::default(), goto: vec![route] }
    }

    /// Go to several targets; they run together in the next super-step.
    pub fn goto_all(routes: impl IntoIterator<Item = R>) -> Self {
        Self { update: Default::default(), goto: routes.into_iter().collect() }
    }

    /// Apply `update` as well.
    #[must_use]
    pub fn update(mut self, update: <R::State as State>::Update) -> Self {
        self.update = update;
        self
    }
}

/// A Send payload on its way to the node that runs it.
pub struct Payload {
    /// Index of the target in the sending node's `send` list.
    pub(crate) target: u32,
    pub(crate) value: Box<dyn Any + Send + Sync>,
}

impl Payload {
    /// A payload for the sending node's `target`-th Send target.
    pub fn new<P: SendPayload>(target: u32, value: P) -> Self {
        Self { target, value: Box::new(value) }
    }
}

/// What a Send payload must be: owned, thread-safe and serializable (so a checkpoint can hold
/// the pending tasks of the next step).
#[diagnostic::on_unimplemented(
    message = "`{Self}` cannot be sent to a node",
    note = "a Send payload must be `Serialize + DeserializeOwned + Send + Sync + 'static`"
)]
pub trait SendPayload: Serialize + DeserializeOwned + Send + Sync + 'static {}

impl<T: Serialize + DeserializeOwned + Send + Sync + 'static> SendPayload for T {}

/// A value that carries payloads for several Send targets: the `{Node}Send` enum that
/// `#[node(send = a | b)]` generates.
pub trait SendRoute: Send + 'static {
    /// Turns the value into a payload addressed to its target.
    fn into_payload(self) -> Payload;
}

/// The result of one node run, as the executor sees it.
pub struct NodeOutput<S: State> {
    /// Held as it is: `#[state]`'s update keeps its writes on the heap and is one pointer wide,
    /// so it moves through the step without copying a large state's writes. (A hand-written
    /// [`Update`](crate::Update) of many fields should box its own.)
    pub(crate) update: S::Update,
    pub(crate) goto: Goto,
    pub(crate) sends: Vec<Payload>,
}

/// Where a finished task sends the run.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Goto {
    /// Follow the node's static edges, or evaluate its router.
    Edges,
    /// Indices into the node's route table.
    Routes(Vec<u32>),
}

impl<S: State> NodeOutput<S> {
    /// An output that applies `update` and follows the node's static edges.
    pub fn update(update: S::Update) -> Self {
        Self { update, goto: Goto::Edges, sends: Vec::new() }
    }

    /// An output that applies `update` and goes where `route` says.
    pub fn route<R: Route<State = S>>(update: S::Update, route: &R) -> Self {
        Self { update, goto: Goto::Routes(vec![route.index() as u32]), sends: Vec::new() }
    }

    /// An output that applies `update` and sends `payloads`.
    pub fn send(update: S::Update, payloads: Vec<Payload>) -> Self {
        Self { update, goto: Goto::Edges, sends: payloads }
    }
}

/// The return of a node with static edges: the update, or a `Result` of it.
#[diagnostic::on_unimplemented(
    message = "a node with a static edge returns the graph's update type, not `{Self}`",
    label = "expected the update type (or `Result` of it)",
    note = "a node with `next = a | b` returns `(Update, {{Node}}Next)` or `Command<{{Node}}Next>`; \
            a node with `send = ..` returns `Vec<Payload>` or `(Update, Vec<Payload>)`"
)]
pub trait UpdateReturn<S: State> {
    /// Converts the node's return value.
    fn into_output(self) -> Result<NodeOutput<S>, NodeError>;
}

impl<U: Update> UpdateReturn<U::State> for U {
    fn into_output(self) -> Result<NodeOutput<U::State>, NodeError> {
        Ok(NodeOutput::update(self))
    }
}

impl<S: State, T: UpdateReturn<S>, E: Into<NodeError>> UpdateReturn<S> for Result<T, E> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        self.map_err(Into::into)?.into_output()
    }
}

/// The return of a branching node: `(Update, {Node}Next)`, `Command<{Node}Next>`, or a
/// `Result` of either.
#[diagnostic::on_unimplemented(
    message = "a branching node returns `(Update, {R})` or `Command<{R}>`, not `{Self}`",
    label = "this node has `next = a | b ...`, so it must say where the run goes",
    note = "return the route with the update, e.g. `(StateUpdate::new(), {R}::..)`, or name a \
            router with `route = my_router`"
)]
pub trait BranchReturn<R: Route> {
    /// Converts the node's return value.
    fn into_output(self) -> Result<NodeOutput<R::State>, NodeError>;
}

impl<R: Route, U> BranchReturn<R> for (U, R)
where
    R::State: State<Update = U>,
{
    fn into_output(self) -> Result<NodeOutput<R::State>, NodeError> {
        Ok(NodeOutput::route(self.0, &self.1))
    }
}

impl<R: Route> BranchReturn<R> for Command<R> {
    fn into_output(self) -> Result<NodeOutput<R::State>, NodeError> {
        let goto = self.goto.iter().map(|r| r.index() as u32).collect();
        Ok(NodeOutput { update: self.update, goto: Goto::Routes(goto), sends: Vec::new() })
    }
}

impl<R: Route, T: BranchReturn<R>, E: Into<NodeError>> BranchReturn<R> for Result<T, E> {
    fn into_output(self) -> Result<NodeOutput<R::State>, NodeError> {
        self.map_err(Into::into)?.into_output()
    }
}

/// The return of a Send node whose payloads all go to one target: `Vec<P>`,
/// `(Update, Vec<P>)`, or a `Result` of either.
#[diagnostic::on_unimplemented(
    message = "a node with `send = ..` returns `Vec<{P}>` or `(Update, Vec<{P}>)`, not `{Self}`",
    label = "expected the payloads its Send target takes"
)]
pub trait SendReturn<S: State, P> {
    /// Converts the node's return value.
    fn into_output(self) -> Result<NodeOutput<S>, NodeError>;
}

fn payloads<P>(items: Vec<P>, into: impl Fn(P) -> Payload) -> Vec<Payload> {
    items.into_iter().map(into).collect()
}

impl<S: State, P: SendPayload> SendReturn<S, P> for Vec<P> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(NodeOutput::send(S::Update::default(), payloads(self, |p| Payload::new(0, p))))
    }
}

impl<S: State, P: SendPayload> SendReturn<S, P> for (S::Update, Vec<P>) {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(NodeOutput::send(self.0, payloads(self.1, |p| Payload::new(0, p))))
    }
}

impl<S: State, P, T: SendReturn<S, P>, E: Into<NodeError>> SendReturn<S, P> for Result<T, E> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        self.map_err(Into::into)?.into_output()
    }
}

/// The return of a Send node with several targets: `Vec<{Node}Send>`, `(Update,
/// Vec<{Node}Send>)`, or a `Result` of either.
#[diagnostic::on_unimplemented(
    message = "a node with `send = a | b` returns `Vec<{R}>` or `(Update, Vec<{R}>)`, not `{Self}`",
    label = "expected the generated Send enum"
)]
pub trait MultiSendReturn<S: State, R> {
    /// Converts the node's return value.
    fn into_output(self) -> Result<NodeOutput<S>, NodeError>;
}

impl<S: State, R: SendRoute> MultiSendReturn<S, R> for Vec<R> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(NodeOutput::send(S::Update::default(), payloads(self, SendRoute::into_payload)))
    }
}

impl<S: State, R: SendRoute> MultiSendReturn<S, R> for (S::Update, Vec<R>) {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        Ok(NodeOutput::send(self.0, payloads(self.1, SendRoute::into_payload)))
    }
}

impl<S: State, R, T: MultiSendReturn<S, R>, E: Into<NodeError>> MultiSendReturn<S, R> for Result<T, E> {
    fn into_output(self) -> Result<NodeOutput<S>, NodeError> {
        self.map_err(Into::into)?.into_output()
    }
}
