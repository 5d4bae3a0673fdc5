//! What a run starts from: new input for the graph, or a command that continues a thread
//! (LangGraph's `Command(resume=.., update=.., goto=..)`).

use crate::interrupt::Resume;
use crate::state::State;
use std::fmt;

/// Continues a thread: answers its pending interrupts, applies an update to its state first,
/// and adds nodes to the tasks that run next. LangGraph's `Command(resume=.., update=..,
/// goto=..)` as a run's input; pass it to [`CompiledGraph::resume`](crate::CompiledGraph::resume),
/// [`invoke`](crate::CompiledGraph::invoke) or [`stream`](crate::CompiledGraph::stream).
///
/// The update is folded into the thread's state with the reducers before the pending tasks run
/// (they see it), tasks that had finished keep their output, and the `goto` nodes run in the
/// same step as the pending tasks, or, on a thread whose run had finished, from its final state.
///
/// ```
/// use graphwright::prelude::*;
/// use serde_json::json;
///
/// #[graph]
/// mod desk {
///     use graphwright::prelude::*;
///
///     #[state]
///     pub struct State {
///         pub note: String,
///         #[reducer(append)]
///         pub trail: Vec<String>,
///     }
///
///     #[node(entry, next = audit)]
///     fn ask(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
///         let answer: String = rt.interrupt("ok?")?;
///         Ok(StateUpdate::new().trail(vec![format!("ask {answer} ({})", state.note)]))
///     }
///
///     #[node(next = END)]
///     fn audit(_state: &State) -> StateUpdate {
///         StateUpdate::new().trail(vec!["audit".into()])
///     }
/// }
///
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> Result<(), Box<dyn std::error::Error>> {
/// let app = desk::graph().compile()?;
/// let cfg = RunConfig::thread("desk-1");
/// app.invoke(desk::State::default(), &cfg).await?;
/// // Answer the pause, and edit the state the paused node sees when it runs again.
/// let command = RunCommand::resume(json!("yes")).update(desk::StateUpdate::new().note("edited".to_owned()));
/// let out = app.resume(&cfg, command).await?;
/// assert_eq!(out.state.trail, ["ask yes (edited)", "audit"]);
/// // A finished thread goes on from its final state where `goto` says.
/// let out = app.invoke(RunCommand::goto_nodes([desk::Node::Audit]), &cfg).await?;
/// assert_eq!(out.state.trail, ["ask yes (edited)", "audit", "audit"]);
/// # Ok(()) }
/// ```
pub struct RunCommand<S: State> {
    pub(crate) answer: Resume,
    pub(crate) update: Option<S::Update>,
    pub(crate) goto: Vec<String>,
}

impl<S: State> RunCommand<S> {
    /// A command that continues the thread and answers nothing.
    #[must_use]
    pub fn new() -> Self {
        Self { answer: Resume::Continue, update: None, goto: Vec::new() }
    }

    pub(crate) fn fill_ids(&mut self) {
        if let Some(update) = &mut self.update {
            crate::state::Update::fill_ids(update);
        }
    }

    /// Answers the pending interrupts (one value, or [`Resume::by_id`]).
    pub fn resume(answer: impl Into<Resume>) -> Self {
        Self { answer: answer.into(), ..Self::new() }
    }

    /// Goes to these nodes (names, or the `Node` values `#[graph]` generates).
    pub fn goto_nodes<N: AsRef<str>>(nodes: impl IntoIterator<Item = N>) -> Self {
        Self::new().goto(nodes)
    }

    /// Applies `update` to the thread's state before the tasks run.
    #[must_use]
    pub fn update(mut self, update: impl Into<S::Update>) -> Self {
        self.update = Some(update.into());
        self
    }

    /// Also runs these nodes next (names, or the `Node` values `#[graph]` generates).
    #[must_use]
    pub fn goto<N: AsRef<str>>(mut self, nodes: impl IntoIterator<Item = N>) -> Self {
        self.goto.extend(nodes.into_iter().map(|n| n.as_ref().to_owned()));
        self
    }

    /// Sets the answer to the pending interrupts.
    #[must_use]
    pub fn answer(mut self, answer: impl Into<Resume>) -> Self {
        self.answer = answer.into();
        self
    }
}

impl<S: State> Default for RunCommand<S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<S: State> fmt::Debug for RunCommand<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunCommand")
            .field("answer", &self.answer)
            .field("update", &self.update)
            .field("goto", &self.goto)
            .finish()
    }
}

impl<S: State, T: Into<Resume>> From<T> for RunCommand<S> {
    fn from(answer: T) -> Self {
        Self::resume(answer)
    }
}

/// A run's input: a state or update for a new run (folded into the thread's state with the
/// reducers), or a [`RunCommand`] that continues the thread.
pub enum RunInput<S: State> {
    /// New input.
    Update(S::Update),
    /// Continue the thread.
    Command(RunCommand<S>),
}

impl<S: State> fmt::Debug for RunInput<S> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Update(update) => f.debug_tuple("Update").field(update).finish(),
            Self::Command(command) => f.debug_tuple("Command").field(command).finish(),
        }
    }
}

/// What [`invoke`](crate::CompiledGraph::invoke) and [`stream`](crate::CompiledGraph::stream)
/// take: anything that converts into the state's update (the state itself, its update type), a
/// [`RunCommand`], or a [`RunInput`]. `M` tells the cases apart and is always inferred.
pub trait IntoRunInput<S: State, M> {
    /// The input as a [`RunInput`].
    fn into_run_input(self) -> RunInput<S>;
}

/// Marks inputs that are updates (see [`IntoRunInput`]).
#[doc(hidden)]
pub enum UpdateInput {}

/// Marks inputs that are commands (see [`IntoRunInput`]).
#[doc(hidden)]
pub enum CommandInput {}

/// Marks inputs that are already a [`RunInput`] (see [`IntoRunInput`]).
#[doc(hidden)]
pub enum ReadyInput {}

impl<S: State, T: Into<S::Update>> IntoRunInput<S, UpdateInput> for T {
    fn into_run_input(self) -> RunInput<S> {
        RunInput::Update(self.into())
    }
}

impl<S: State> IntoRunInput<S, CommandInput> for RunCommand<S> {
    fn into_run_input(self) -> RunInput<S> {
        RunInput::Command(self)
    }
}

impl<S: State> IntoRunInput<S, ReadyInput> for RunInput<S> {
    fn into_run_input(self) -> RunInput<S> {
        self
    }
}
