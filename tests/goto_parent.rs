//! `Runtime::goto_parent`: a node inside a subgraph ends the subgraph's run after its step and
//! sends the parent to one of the subgraph node's declared targets (LangGraph's
//! `Command(goto=.., graph=Command.PARENT)`), at any depth, on a thread or not; and each way it
//! can be misused is a typed error.

use graphwright::prelude::*;
use graphwright::{ParentGotoError, SubgraphError};

#[graph]
mod screen {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub amount: u32,
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    /// Sends large amounts to review in the parent, straight away.
    #[node(entry, next = record)]
    fn check(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        if state.amount > 100 {
            rt.goto_parent("review")?;
        } else if state.amount == 0 {
            rt.goto_parent(END)?;
        } else if state.amount == 13 {
            rt.goto_parent("nowhere")?;
        }
        Ok(StateUpdate::new().trail(vec!["check".into()]))
    }

    /// Runs only when `check` did not leave.
    #[node(next = END)]
    fn record(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        rt.goto_parent("pay")?;
        Ok(StateUpdate::new().trail(vec!["record".into()]))
    }
}

#[graph(state = super::screen::State)]
mod payments {
    use super::screen::{State, StateUpdate};
    use graphwright::prelude::*;

    #[node(entry, subgraph, next = pay | review | END)]
    fn screen() -> StateGraph<State> {
        super::screen::graph()
    }

    #[node(next = END)]
    fn pay(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["pay".into()])
    }

    #[node(next = END)]
    fn review(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["review".into()])
    }
}

fn payment(amount: u32) -> screen::State {
    screen::State { amount, trail: Vec::new() }
}

#[tokio::test]
async fn the_subgraph_picks_the_parents_next_node_and_stops_there() {
    let app = payments::graph().compile().unwrap();
    let out = app.invoke(payment(500), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.trail, ["check", "review"], "`record` did not run: the subgraph stopped after `check`");
    let out = app.invoke(payment(20), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.trail, ["check", "record", "pay"]);
    let out = app.invoke(payment(0), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.trail, ["check"], "END ends the parent's branch");
}

#[tokio::test]
async fn on_a_thread_the_stopped_subgraph_is_finished_and_is_not_continued() {
    let app = payments::graph().compile().unwrap();
    let cfg = RunConfig::thread("payment-1");
    let out = app.invoke(payment(500), &cfg).await.unwrap();
    assert_eq!(out.state.trail, ["check", "review"]);
    let state = app.get_state_with_subgraphs(&cfg).await.unwrap().unwrap();
    assert!(state.next.is_empty(), "the parent finished: {:?}", state.next);
    // Running the thread on goes from the final state: nothing of the subgraph is left to run.
    let again = app.invoke(RunCommand::goto_nodes(["pay"]), &cfg).await.unwrap();
    assert_eq!(again.state.trail, ["check", "review", "pay"]);
}

#[tokio::test]
async fn a_target_the_node_does_not_declare_fails_it() {
    let app = payments::graph().compile().unwrap();
    let error = app.invoke(payment(13), &RunConfig::default()).await.unwrap_err();
    let GraphError::Node { node, source, .. } = &error else { panic!("{error}") };
    assert_eq!(node, "screen");
    let expected = ParentGotoError::NotATarget {
        node: "screen".into(),
        target: "nowhere".into(),
        targets: vec!["pay".into(), "review".into(), END.into()],
    };
    assert_eq!(source.downcast_ref::<ParentGotoError>(), Some(&expected));
    assert!(error.to_string().contains("not one of its targets (pay, review"), "{error}");
}

#[tokio::test]
async fn a_graph_run_on_its_own_has_no_parent() {
    let error = screen::graph().compile().unwrap().invoke(payment(500), &RunConfig::default()).await.unwrap_err();
    let GraphError::Node { source, .. } = &error else { panic!("{error}") };
    assert!(matches!(source.downcast_ref::<ParentGotoError>(), Some(ParentGotoError::NoParent { .. })), "{error}");
}

/// A subgraph that never names a target.
fn quiet() -> StateGraph<screen::State> {
    StateGraph::<screen::State>::new()
        .add_node("noop", |_: &screen::State| screen::StateUpdate::new())
        .add_edge(START, "noop")
        .add_edge("noop", END)
}

#[tokio::test]
async fn a_routed_node_whose_subgraph_names_nothing_fails_and_an_unrouted_one_cannot_be_sent() {
    let routed = StateGraph::<screen::State>::new()
        .add_routed_subgraph::<payments::ScreenNext, _, _>("screen", quiet())
        .add_node("pay", |_: &screen::State| screen::StateUpdate::new())
        .add_node("review", |_: &screen::State| screen::StateUpdate::new())
        .add_edge(START, "screen")
        .add_edge("pay", END)
        .add_edge("review", END)
        .compile()
        .unwrap();
    let error = routed.invoke(payment(1), &RunConfig::default()).await.unwrap_err();
    let GraphError::Node { source, .. } = &error else { panic!("{error}") };
    assert!(matches!(source.downcast_ref::<ParentGotoError>(), Some(ParentGotoError::Missing { .. })), "{error}");

    let unrouted = StateGraph::<screen::State>::new()
        .add_subgraph("screen", screen::graph())
        .add_edge(START, "screen")
        .add_edge("screen", END)
        .compile()
        .unwrap();
    let error = unrouted.invoke(payment(500), &RunConfig::default()).await.unwrap_err();
    let GraphError::Node { source, .. } = &error else { panic!("{error}") };
    let expected = ParentGotoError::Unrouted { node: "screen".into(), target: "review".into() };
    assert_eq!(source.downcast_ref::<ParentGotoError>(), Some(&expected), "{error}");
}

#[tokio::test]
async fn two_levels_down_the_goto_reaches_the_immediate_parent() {
    // The screen runs inside a middle graph, which runs inside the top one: the screen's goto
    // picks the middle graph's next node; the top graph sees the middle one finish.
    let middle = StateGraph::<screen::State>::new()
        .name("middle")
        .add_routed_subgraph::<payments::ScreenNext, _, _>("screen", screen::graph())
        .add_node("pay", |_: &screen::State| screen::StateUpdate::new().trail(vec!["middle pay".into()]))
        .add_node("review", |_: &screen::State| screen::StateUpdate::new().trail(vec!["middle review".into()]))
        .add_edge(START, "screen")
        .add_edge("pay", END)
        .add_edge("review", END);
    let top = StateGraph::<screen::State>::new()
        .add_subgraph("middle", middle)
        .add_node("done", |_: &screen::State| screen::StateUpdate::new().trail(vec!["top done".into()]))
        .add_edge(START, "middle")
        .add_edge("middle", "done")
        .add_edge("done", END)
        .compile()
        .unwrap();
    let out = top.invoke(payment(500), &RunConfig::thread("nested-goto")).await.unwrap();
    assert_eq!(out.state.trail, ["check", "middle review", "top done"]);
    let error = top.invoke(payment(13), &RunConfig::default()).await.unwrap_err();
    let GraphError::Node { node, source, .. } = &error else { panic!("{error}") };
    assert_eq!(node, "middle");
    assert!(source.downcast_ref::<SubgraphError>().is_some(), "the middle graph failed: {error}");
}
