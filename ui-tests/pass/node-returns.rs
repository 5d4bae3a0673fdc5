//! Every return shape of a node with static edges or a branch, plain and inside `Result` with
//! `NodeError` or an error type of the user's.

use graphwright::prelude::*;
use std::fmt;

/// An error type of the user's: anything `Into<NodeError>` works.
#[derive(Debug)]
pub struct LookupError(pub String);

impl fmt::Display for LookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "lookup failed: {}", self.0)
    }
}

impl std::error::Error for LookupError {}

#[graph]
mod returns {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub trail: Vec<String>,
        pub fail_at: Option<String>,
    }

    fn mark(name: &str) -> StateUpdate {
        StateUpdate::new().trail(vec![name.to_owned()])
    }

    fn fails(state: &State, name: &str) -> bool {
        state.fail_at.as_deref() == Some(name)
    }

    #[node(entry, next = update_node_error)]
    fn update(_state: &State) -> StateUpdate {
        mark("update")
    }

    #[node(next = update_custom_error)]
    async fn update_node_error(state: &State) -> Result<StateUpdate, NodeError> {
        if fails(state, "update_node_error") {
            return Err(NodeError::msg("asked to fail"));
        }
        Ok(mark("update_node_error"))
    }

    #[node(next = tuple)]
    fn update_custom_error(state: &State) -> Result<StateUpdate, LookupError> {
        if fails(state, "update_custom_error") {
            return Err(LookupError("asked to fail".into()));
        }
        Ok(mark("update_custom_error"))
    }

    #[node(next = tuple_node_error | END)]
    fn tuple(_state: &State) -> (StateUpdate, TupleNext) {
        (mark("tuple"), TupleNext::TupleNodeError)
    }

    #[node(next = tuple_custom_error | END)]
    async fn tuple_node_error(_state: &State) -> Result<(StateUpdate, TupleNodeErrorNext), NodeError> {
        Ok((mark("tuple_node_error"), TupleNodeErrorNext::TupleCustomError))
    }

    #[node(next = command | END)]
    fn tuple_custom_error(_state: &State) -> Result<(StateUpdate, TupleCustomErrorNext), LookupError> {
        Ok((mark("tuple_custom_error"), TupleCustomErrorNext::Command))
    }

    #[node(next = command_node_error | END)]
    async fn command(_state: &State) -> Command<CommandNext> {
        Command::goto(CommandNext::CommandNodeError).update(mark("command"))
    }

    #[node(next = command_custom_error | END)]
    fn command_node_error(_state: &State) -> Result<Command<CommandNodeErrorNext>, NodeError> {
        Ok(Command::goto(CommandNodeErrorNext::CommandCustomError).update(mark("command_node_error")))
    }

    #[node(next = update | END)]
    async fn command_custom_error(state: &State) -> Result<Command<CommandCustomErrorNext>, LookupError> {
        if fails(state, "command_custom_error") {
            return Err(LookupError("asked to fail".into()));
        }
        Ok(Command::goto(CommandCustomErrorNext::End).update(mark("command_custom_error")))
    }
}

fn main() {
    let app = returns::graph().compile().unwrap();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
    let out = rt.block_on(app.invoke(returns::State::default(), &RunConfig::default())).unwrap();
    assert_eq!(
        out.state.trail,
        [
            "update",
            "update_node_error",
            "update_custom_error",
            "tuple",
            "tuple_node_error",
            "tuple_custom_error",
            "command",
            "command_node_error",
            "command_custom_error",
        ]
    );

    for failing in ["update_node_error", "update_custom_error", "command_custom_error"] {
        let input = returns::StateUpdate::new().fail_at(Some(failing.to_owned()));
        let error = rt.block_on(app.invoke(input, &RunConfig::default())).unwrap_err();
        let text = error.to_string();
        assert!(text.contains(failing), "{text}");
        assert!(text.contains("asked to fail"), "{text}");
    }
}
