//! Run results: how a run ended (`status`), where it left its thread (thread and checkpoint
//! ids), which task raised each interrupt, and failed runs reported by `run` and kept on the
//! thread.

use graphwright::prelude::*;
use graphwright::{GraphError, RunFailure};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

#[derive(Default)]
struct Switches {
    fail_check: AtomicBool,
    check_calls: AtomicUsize,
}

#[graph(context = Arc<Switches>)]
mod order {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub log: Vec<String>,
        pub approved: Option<bool>,
    }

    #[node(entry, next = [check, approve])]
    fn receive(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["receive".into()])
    }

    #[node(next = ship)]
    fn check(_state: &State, rt: &Runtime<Arc<Switches>>) -> Result<StateUpdate, NodeError> {
        rt.context().check_calls.fetch_add(1, Ordering::SeqCst);
        if rt.context().fail_check.load(Ordering::SeqCst) {
            return Err(NodeError::msg("the stock service is down"));
        }
        Ok(StateUpdate::new().log(vec!["check".into()]))
    }

    #[node(next = ship)]
    fn approve(_state: &State, rt: &Runtime<Arc<Switches>>) -> Result<StateUpdate, NodeError> {
        let approved: bool = rt.interrupt(json!("approve the order?"))?;
        Ok(StateUpdate::new().approved(Some(approved)).log(vec!["approve".into()]))
    }

    #[node(next = END)]
    fn ship(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["ship".into()])
    }
}

type Order = CompiledGraph<order::State, Arc<Switches>>;

fn setup(thread: &str) -> (Order, RunConfig<Arc<Switches>>, Arc<Switches>) {
    let switches = Arc::new(Switches::default());
    let app = order::graph().compile().unwrap();
    let cfg = RunConfig::thread(thread).shared_context(Arc::new(switches.clone()));
    (app, cfg, switches)
}

#[tokio::test]
async fn an_interrupted_run_names_its_thread_checkpoint_and_the_task_that_paused() {
    let (app, cfg, _) = setup("order-1");
    let paused = app.invoke(order::State::default(), &cfg).await.unwrap();
    assert_eq!(paused.status(), RunStatus::Interrupted);
    assert!(paused.is_interrupted());
    let [interrupt] = paused.interrupts.as_slice() else { panic!("{:?}", paused.interrupts) };
    assert_eq!((interrupt.node.as_str(), interrupt.task), ("approve", 1), "approve is the step's second task");
    assert_eq!(paused.thread_id.as_deref(), Some("order-1"));

    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(paused.checkpoint_id.as_deref(), Some(snapshot.checkpoint_id.as_str()));
    let waiting = snapshot.tasks.iter().find(|t| !t.interrupts.is_empty()).unwrap();
    assert_eq!(waiting.index, interrupt.task, "the task index matches the stored task's");

    let done = app.resume(&cfg, json!(true)).await.unwrap();
    assert_eq!(done.status(), RunStatus::Finished);
    assert_eq!(done.state.log, ["receive", "check", "approve", "ship"]);
    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(done.checkpoint_id.as_deref(), Some(snapshot.checkpoint_id.as_str()));
    assert_ne!(done.checkpoint_id, paused.checkpoint_id);
}

#[tokio::test]
async fn a_run_without_a_thread_has_no_thread_or_checkpoint() {
    #[graph]
    mod plain {
        use graphwright::prelude::*;

        #[state]
        pub struct State {
            pub n: u32,
        }

        #[node(entry, next = END)]
        fn bump(state: &State) -> StateUpdate {
            StateUpdate::new().n(state.n + 1)
        }
    }
    let out = plain::graph().compile().unwrap().invoke(plain::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!((out.status(), out.state.n), (RunStatus::Finished, 1));
    assert_eq!((out.thread_id, out.checkpoint_id, out.failure), (None, None, None));
}

#[tokio::test]
async fn a_failed_step_is_a_failed_run_whose_error_the_thread_keeps() {
    let (app, cfg, switches) = setup("order-2");
    switches.fail_check.store(true, Ordering::SeqCst);
    let failed = app.run(order::State::default(), &cfg).await.unwrap();
    assert_eq!(failed.status(), RunStatus::Failed);
    let Some(RunFailure { step, node, task, message, .. }) = &failed.failure else { panic!("{failed:?}") };
    assert_eq!((*step, node.as_deref(), *task), (2, Some("check"), Some(0)));
    assert!(message.contains("the stock service is down"), "{message}");
    assert_eq!(failed.state.log, ["receive"], "the state before the failed step");
    assert!(failed.interrupts.is_empty());
    assert_eq!(failed.thread_id.as_deref(), Some("order-2"));

    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(failed.checkpoint_id.as_deref(), Some(snapshot.checkpoint_id.as_str()));
    let kept = snapshot.tasks.iter().find(|t| t.node == "check").unwrap();
    assert!(kept.error.as_deref().is_some_and(|e| e.contains("the stock service is down")), "{kept:?}");
    let sibling = snapshot.tasks.iter().find(|t| t.node == "approve").unwrap();
    assert_eq!((sibling.index, sibling.result.is_none()), (1, true), "the paused sibling runs again on resume");

    // `invoke` reports the same failure as its error.
    let (app, cfg, switches) = setup("order-3");
    switches.fail_check.store(true, Ordering::SeqCst);
    let error = app.invoke(order::State::default(), &cfg).await.unwrap_err();
    assert!(matches!(&error, GraphError::Node { node, step: 2, .. } if node == "check"), "{error:?}");

    // Once the service is back, resuming runs the failed task again and the run goes on.
    switches.fail_check.store(false, Ordering::SeqCst);
    let paused = app.resume(&cfg, ()).await.unwrap();
    assert_eq!(paused.status(), RunStatus::Interrupted, "approve still waits for its answer");
    assert_eq!(switches.check_calls.load(Ordering::SeqCst), 2);
    let done = app.resume(&cfg, json!(false)).await.unwrap();
    assert_eq!((done.status(), done.state.approved), (RunStatus::Finished, Some(false)));
}

#[tokio::test]
async fn the_recursion_limit_is_a_failed_run_with_no_task_to_blame() {
    let (app, cfg, _) = setup("order-4");
    let out = app.run(order::State::default(), &cfg.clone().recursion_limit(1)).await.unwrap();
    assert_eq!(out.status(), RunStatus::Failed);
    let failure = out.failure.as_ref().unwrap();
    assert_eq!((failure.step, failure.node.as_deref(), failure.task), (2, None, None));
    assert!(failure.message.contains("recursion limit"), "{}", failure.message);
    assert_eq!(out.state.log, ["receive"]);
    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(out.checkpoint_id.as_deref(), Some(snapshot.checkpoint_id.as_str()));
    assert_eq!(snapshot.next, ["check", "approve"], "the pending tasks stay for a later resume");
}

#[tokio::test]
async fn a_breakpoint_names_the_task_it_stopped_before() {
    let switches = Arc::new(Switches::default());
    let app = order::graph().interrupt_before([order::Node::Approve]).compile().unwrap();
    let cfg = RunConfig::thread("order-5").shared_context(Arc::new(switches));
    let out = app.invoke(order::State::default(), &cfg).await.unwrap();
    assert_eq!(out.status(), RunStatus::Interrupted);
    let [interrupt] = out.interrupts.as_slice() else { panic!("{:?}", out.interrupts) };
    assert_eq!((interrupt.node.as_str(), interrupt.task), ("approve", 1));
    let snapshot = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(out.checkpoint_id.as_deref(), Some(snapshot.checkpoint_id.as_str()));
}

#[tokio::test]
async fn run_is_an_error_when_there_was_nothing_to_run() {
    let (app, _, switches) = setup("unused");
    let no_thread = RunConfig::default().shared_context(Arc::new(switches));
    let error = app.run(RunCommand::resume(json!(true)), &no_thread).await.unwrap_err();
    assert!(matches!(error, GraphError::NoThread { .. }), "{error:?}");
}
