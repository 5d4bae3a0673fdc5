//! Human in the loop: interrupts from nodes, breakpoints, `update_state`, replay and forks.

use graphwright::prelude::*;
use graphwright::{Interrupt, Resume};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

#[derive(Default)]
struct Calls {
    draft: AtomicUsize,
    review_before_pause: AtomicUsize,
    publish: AtomicUsize,
}

#[graph(context = Arc<Calls>)]
mod review {
    use super::*;

    #[state]
    pub struct State {
        pub text: String,
        pub verdict: Option<String>,
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = review)]
    fn draft(state: &State, rt: &Runtime<Arc<Calls>>) -> StateUpdate {
        rt.context().draft.fetch_add(1, Ordering::SeqCst);
        StateUpdate::new().text(format!("{}!", state.text)).log(vec!["draft".into()])
    }

    #[node(next = publish)]
    fn review(state: &State, rt: &Runtime<Arc<Calls>>) -> Result<StateUpdate, NodeError> {
        rt.context().review_before_pause.fetch_add(1, Ordering::SeqCst);
        let verdict: String = rt.interrupt(json!({"please_review": state.text}))?;
        Ok(StateUpdate::new().verdict(Some(verdict)).log(vec!["review".into()]))
    }

    #[node(next = END)]
    fn publish(_state: &State, rt: &Runtime<Arc<Calls>>) -> StateUpdate {
        rt.context().publish.fetch_add(1, Ordering::SeqCst);
        StateUpdate::new().log(vec!["publish".into()])
    }
}

fn review_input() -> review::State {
    review::State { text: "hello".into(), ..review::State::default() }
}

#[tokio::test]
async fn an_interrupt_pauses_and_resume_reruns_only_the_paused_node() {
    let calls = Arc::new(Calls::default());
    let app = review::graph().compile().unwrap();
    let cfg = RunConfig::thread("doc-1").shared_context(Arc::new(calls.clone()));
    let paused = app.invoke(review_input(), &cfg).await.unwrap();
    assert!(paused.is_interrupted());
    let [interrupt] = paused.interrupts.as_slice() else { panic!("{:?}", paused.interrupts) };
    assert_eq!((interrupt.node.as_str(), &interrupt.value), ("review", &json!({"please_review": "hello!"})));
    assert_eq!(paused.state.log, ["draft"], "the state at the pause");

    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snapshot.next, ["review"]);
    assert_eq!(snapshot.interrupts, paused.interrupts, "the pause is visible in the stored state");

    let done = app.resume(&cfg, json!("approved")).await.unwrap();
    assert!(!done.is_interrupted());
    assert_eq!(done.state.verdict.as_deref(), Some("approved"));
    assert_eq!(done.state.log, ["draft", "review", "publish"]);
    assert_eq!(calls.draft.load(Ordering::SeqCst), 1, "nodes before the pause do not run again");
    assert_eq!(calls.review_before_pause.load(Ordering::SeqCst), 2, "the paused node runs again from its start");
    assert_eq!(calls.publish.load(Ordering::SeqCst), 1);
}

#[tokio::test]
async fn a_wrong_answer_type_fails_the_node_and_keeps_the_pause() {
    #[graph]
    mod typed {
        use super::*;

        #[state]
        pub struct State {
            pub count: u32,
        }

        #[node(entry, next = END)]
        fn ask(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
            let count: u32 = rt.interrupt("how many?")?;
            Ok(StateUpdate::new().count(count))
        }
    }
    let app = typed::graph().compile().unwrap();
    let cfg = RunConfig::thread("typed");
    app.invoke(typed::State::default(), &cfg).await.unwrap();
    let error = app.resume(&cfg, json!("seven")).await.unwrap_err();
    assert!(error.to_string().contains("does not fit the type the node expects"), "{error}");
    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(snapshot.next, ["ask"], "the task is still pending");
    assert!(snapshot.tasks[0].error.as_deref().is_some_and(|e| e.contains("does not fit")), "{:?}", snapshot.tasks);
    let error = app.resume(&cfg, json!(7)).await.unwrap_err();
    assert!(
        error.to_string().contains("does not fit the type the node expects"),
        "the first answer is kept (an answer with nothing pending is ignored), so the node fails again: {error}"
    );
}

#[graph]
mod parallel {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub answers: Vec<String>,
    }

    #[node(entry, next = [left, right, quiet])]
    fn fan(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = END)]
    fn left(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let answer: String = rt.interrupt("left?")?;
        let again: String = rt.interrupt("left again?")?;
        Ok(StateUpdate::new().answers(vec![format!("left {answer} {again}")]))
    }

    #[node(next = END)]
    async fn right(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        tokio::task::yield_now().await;
        let answer: String = rt.interrupt("right?")?;
        Ok(StateUpdate::new().answers(vec![format!("right {answer}")]))
    }

    #[node(next = END)]
    fn quiet(_state: &State) -> StateUpdate {
        StateUpdate::new().answers(vec!["quiet".into()])
    }
}

#[tokio::test]
async fn parallel_interrupts_are_answered_by_id_and_a_node_may_ask_twice() {
    let app = parallel::graph().compile().unwrap();
    let cfg = RunConfig::thread("par");
    let paused = app.invoke(parallel::State::default(), &cfg).await.unwrap();
    let nodes: Vec<&str> = paused.interrupts.iter().map(|i| i.node.as_str()).collect();
    assert_eq!(nodes, ["left", "right"], "in task order");
    let ids: Vec<String> = paused.interrupts.iter().map(|i| i.id.clone()).collect();

    let error = app.resume(&cfg, json!("yes")).await.unwrap_err();
    let GraphError::Resume { pending, .. } = &error else { panic!("{error:?}") };
    assert_eq!(pending, &ids, "a single answer is ambiguous; the error lists the ids");
    let error = app.resume(&cfg, Resume::by_id([("nope", json!(1))])).await.unwrap_err();
    assert!(error.to_string().contains("no pending interrupt has the id `nope`"), "{error}");

    let paused =
        app.resume(&cfg, Resume::by_id([(ids[0].clone(), json!("a")), (ids[1].clone(), json!("b"))])).await.unwrap();
    let [second]: &[Interrupt] = paused.interrupts.as_slice() else { panic!("{:?}", paused.interrupts) };
    assert_eq!((second.node.as_str(), &second.value), ("left", &json!("left again?")));
    let done = app.resume(&cfg, json!("c")).await.unwrap();
    assert_eq!(done.state.answers, ["left a c", "right b", "quiet"], "merged in task order, once each");
}

#[tokio::test]
async fn an_interrupt_needs_a_thread() {
    let app = parallel::graph().compile().unwrap();
    let error = app.invoke(parallel::State::default(), &RunConfig::default()).await.unwrap_err();
    assert!(matches!(&error, GraphError::InterruptWithoutThread { node } if node == "left"), "{error}");
}

#[graph]
mod agent {

    #[state]
    pub struct State {
        pub request: String,
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    #[node(entry, next = tools)]
    fn plan(state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec![format!("plan {}", state.request)])
    }

    #[node(next = answer)]
    fn tools(state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec![format!("tools {}", state.request)])
    }

    #[node(next = END)]
    fn answer(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["answer".into()])
    }
}

#[tokio::test]
async fn breakpoints_pause_and_an_edit_is_seen_after_resume() {
    let app = agent::graph().interrupt_before([agent::Node::Tools]).interrupt_after(["tools"]).compile().unwrap();
    let cfg = RunConfig::thread("bp");
    let paused = app.invoke(agent::State { request: "rm -rf".into(), ..agent::State::default() }, &cfg).await.unwrap();
    assert_eq!(paused.interrupts[0].node, "tools");
    assert_eq!(paused.state.trail, ["plan rm -rf"]);
    app.update_state(&cfg, agent::StateUpdate::new().request("ls".to_owned()), None).await.unwrap();
    let after = app.resume(&cfg, ()).await.unwrap();
    assert!(after.is_interrupted(), "interrupt_after pauses once tools has run");
    assert_eq!(after.state.trail, ["plan rm -rf", "tools ls"], "tools saw the edit");
    let done = app.resume(&cfg, ()).await.unwrap();
    assert_eq!(done.state.trail, ["plan rm -rf", "tools ls", "answer"]);

    let unknown = agent::graph().interrupt_before(["tolls"]).compile().unwrap_err();
    assert!(unknown.to_string().contains("a breakpoint names no node `tolls`"), "{unknown}");
    let without_thread = app.invoke(agent::State::default(), &RunConfig::default()).await.unwrap_err();
    assert!(matches!(without_thread, GraphError::InterruptWithoutThread { .. }));
}

#[tokio::test]
async fn breakpoints_given_for_one_run_pause_that_run_only() {
    let app = agent::graph().compile().unwrap();
    let input = || agent::State { request: "ls".into(), ..agent::State::default() };

    let cfg = RunConfig::thread("run-bp").interrupt_before(["tools"]);
    let paused = app.invoke(input(), &cfg).await.unwrap();
    let [stop] = paused.interrupts.as_slice() else { panic!("{:?}", paused.interrupts) };
    assert!(stop.is_breakpoint() && stop.node == "tools", "{stop:?}");
    assert_eq!(paused.state.trail, ["plan ls"]);
    assert_eq!(app.get_state(&cfg).await.unwrap().unwrap().next, ["tools"]);
    // The resume is a run of its own: it passes the node it stopped before, and stops again
    // only at breakpoints it is given.
    let done = app.resume(&RunConfig::thread("run-bp"), ()).await.unwrap();
    assert_eq!(done.state.trail, ["plan ls", "tools ls", "answer"]);

    let after = RunConfig::thread("run-bp-after").interrupt_after(["*"]);
    let first = app.invoke(input(), &after).await.unwrap();
    assert_eq!((first.interrupts[0].node.as_str(), first.state.trail.len()), ("plan", 1));
    let second = app.resume(&after, ()).await.unwrap();
    assert_eq!((second.interrupts[0].node.as_str(), second.state.trail.len()), ("tools", 2));

    let plain = app.invoke(input(), &RunConfig::thread("no-bp")).await.unwrap();
    assert!(!plain.is_interrupted(), "the graph itself has no breakpoint");

    let wrong = app.invoke(input(), &RunConfig::thread("bad-bp").interrupt_before(["tolls"])).await.unwrap_err();
    assert!(matches!(&wrong, GraphError::Breakpoint { node, .. } if node == "tolls"), "{wrong:?}");
    assert!(wrong.to_string().contains("its nodes are: answer, plan, tools"), "{wrong}");
    assert!(app.get_state(&RunConfig::thread("bad-bp")).await.unwrap().is_none(), "nothing ran or was stored");
}

#[tokio::test]
async fn a_node_interrupt_is_not_a_breakpoint() {
    let app = review::graph().compile().unwrap();
    let cfg = RunConfig::thread("not-bp").shared_context(Arc::new(Arc::new(Calls::default())));
    let paused = app.invoke(review_input(), &cfg).await.unwrap();
    assert!(!paused.interrupts[0].is_breakpoint());
}

#[tokio::test]
async fn replay_and_forks_start_new_branches_and_leave_the_old_one_alone() {
    let app = agent::graph().compile().unwrap();
    let cfg = RunConfig::thread("tt");
    let original = app.invoke(agent::State { request: "a".into(), ..agent::State::default() }, &cfg).await.unwrap();
    let history = app.state_history(&cfg).await.unwrap();
    let final_id = history[0].checkpoint_id.clone();
    let before_tools = history.iter().find(|s| s.next == ["tools"]).unwrap().checkpoint_id.clone();

    let replayed = app.resume(&cfg.clone().checkpoint(before_tools.clone()), ()).await.unwrap();
    assert_eq!(replayed.state.trail, original.state.trail, "replay re-runs tools and answer");

    let fork_cfg = cfg.clone().checkpoint(before_tools.clone());
    let fork =
        app.update_state(&fork_cfg, agent::StateUpdate::new().request("b".to_owned()), Some("plan")).await.unwrap();
    let forked = app.resume(&cfg.clone().checkpoint(fork), ()).await.unwrap();
    assert_eq!(forked.state.trail, ["plan a", "tools b", "answer"]);

    let old = app.state_history(&cfg).await.unwrap().into_iter().find(|s| s.checkpoint_id == final_id).unwrap();
    assert_eq!(old.state.trail, original.state.trail, "the old branch's checkpoints are untouched");
    assert_eq!(
        app.get_state(&cfg).await.unwrap().unwrap().state.trail,
        forked.state.trail,
        "the newest branch is the head"
    );

    let error = app.update_state(&cfg, agent::StateUpdate::new(), Some("nobody")).await.unwrap_err();
    assert!(error.to_string().contains("`as_node` names no node `nobody`"), "{error}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_hundred_threads_run_at_once_without_mixing() {
    let app = agent::graph().compile().unwrap();
    let runs = (0..200).map(|i| {
        let app = app.clone();
        tokio::spawn(async move {
            let cfg = RunConfig::thread(format!("user-{i}"));
            app.invoke(agent::State { request: format!("r{i}"), ..agent::State::default() }, &cfg).await.unwrap();
            (i, app.state_history(&cfg).await.unwrap())
        })
    });
    for run in futures::future::join_all(runs).await {
        let (i, history) = run.unwrap();
        assert_eq!(history.len(), 5);
        assert_eq!(history[0].state.trail, [format!("plan r{i}"), format!("tools r{i}"), "answer".to_owned()]);
        assert!(history.iter().all(|s| s.state.request.is_empty() || s.state.request == format!("r{i}")));
    }
}
