//! Semantics as LangGraph's: the behaviours LangGraph's own test suite pins down (pending
//! writes, replay, editing a paused thread, commands, streams, conditional entry, retries),
//! written afresh from its documented behaviour, in the macro and the builder where both can
//! express them.

use futures::StreamExt;
use graphwright::checkpoint::{ListFilter, Source};
use graphwright::prelude::*;
use graphwright::stream::{EventKind, StreamMode};
use graphwright::{Checkpointer, Durability, MemorySaver};
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

#[state]
#[derive(PartialEq)]
struct Trail {
    #[reducer(append)]
    log: Vec<String>,
    #[reducer(add)]
    value: i64,
    note: String,
}

/// A node that appends its name.
fn mark(name: &'static str) -> impl Fn(&Trail) -> TrailUpdate + Send + Sync + 'static {
    move |_state: &Trail| TrailUpdate::new().log(vec![name.to_owned()])
}

/// Where a router leads.
#[derive(Clone, Copy)]
enum Pick {
    C,
    D,
}

impl Route for Pick {
    type State = Trail;
    const TARGETS: &'static [&'static str] = &["c", "d"];
    fn index(&self) -> usize {
        *self as usize
    }
}

#[tokio::test]
async fn a_static_edge_a_returned_route_and_a_router_on_one_node_all_fire() {
    // `a` has a static edge to `b` and a router to `c`: both run in the next step.
    let app = StateGraph::<Trail>::new()
        .add_node("a", mark("a"))
        .add_node("b", mark("b"))
        .add_node("c", mark("c"))
        .add_node("d", mark("d"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_router("a", |_s: &Trail| Pick::C)
        .add_edge("b", END)
        .add_edge("c", END)
        .add_edge("d", END)
        .compile()
        .unwrap();
    let out = app.invoke(Trail::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.log, ["a", "b", "c"]);
    assert_eq!(out.steps, 2, "`b` and `c` ran together");

    // A node that returns its route, with a static edge too: the route and the edge both fire.
    let branching = |_s: &Trail| (TrailUpdate::new().log(vec!["a".into()]), Pick::D);
    let app = StateGraph::<Trail>::new()
        .add_node("a", branching)
        .add_node("b", mark("b"))
        .add_node("c", mark("c"))
        .add_node("d", mark("d"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .add_edge("c", END)
        .add_edge("d", END)
        .compile()
        .unwrap();
    let out = app.invoke(Trail::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.log, ["a", "b", "d"]);
}

#[test]
fn builder_calls_the_runtime_cannot_honour_are_build_errors() {
    let to_end = StateGraph::<Trail>::new()
        .add_node("a", mark("a"))
        .add_edge("a", END)
        .add_router(START, |_s: &Trail| Goal::End);
    let error = to_end.compile().unwrap_err().to_string();
    assert!(error.contains("a router from START must lead to nodes, not to END"), "{error}");

    let wrong_payload = StateGraph::<Trail>::new()
        .add_payload_node("w", |n: &u32| TrailUpdate::new().value(i64::from(*n)))
        .add_start_send("w", |_s: &Trail| vec!["text".to_owned()])
        .add_edge("w", END);
    let error = wrong_payload.compile().unwrap_err().to_string();
    assert!(error.contains("does not take it as its payload"), "{error}");

    let nowhere = StateGraph::<Trail>::new()
        .add_node("a", mark("a"))
        .add_edge("a", END)
        .add_start_send("b", |_s: &Trail| vec![1_u32]);
    let error = nowhere.compile().unwrap_err().to_string();
    assert!(error.contains("`add_start_send` sends to no node named `b`"), "{error}");
}

/// A route to END only, for the router-from-START error.
#[derive(Clone, Copy)]
enum Goal {
    End,
}

impl Route for Goal {
    type State = Trail;
    const TARGETS: &'static [&'static str] = &[END];
    fn index(&self) -> usize {
        0
    }
}

#[graph]
mod chain {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = b)]
    fn a(_state: &State, rt: &Runtime) -> StateUpdate {
        ran(rt, "a");
        StateUpdate::new().log(vec!["a".into()])
    }

    #[node(next = END)]
    fn b(_state: &State, rt: &Runtime) -> StateUpdate {
        ran(rt, "b");
        StateUpdate::new().log(vec!["b".into()])
    }
}

#[tokio::test]
async fn replay_from_a_finished_checkpoint_is_a_no_op_and_from_the_input_reruns_everything() {
    let app = chain::graph().compile().unwrap();
    let cfg = RunConfig::thread("replay");
    let first = app.invoke(chain::StateUpdate::new().log(vec!["in".into()]), &cfg).await.unwrap();
    assert_eq!(first.state.log, ["in", "a", "b"]);
    let history = app.state_history(&cfg).await.unwrap();
    let chain_runs = || runs_of("replay", "a") + runs_of("replay", "b");
    let runs = chain_runs();

    let last = history[0].checkpoint_id.clone();
    let replayed = app.resume(&cfg.clone().checkpoint(last), ()).await.unwrap();
    assert_eq!((replayed.state.log.clone(), replayed.steps), (first.state.log.clone(), 0));
    assert_eq!(chain_runs(), runs, "nothing ran");
    assert_eq!(app.state_history(&cfg).await.unwrap().len(), history.len(), "nothing was stored");
    let again = app.resume(&cfg, ()).await.unwrap();
    assert_eq!(again.state.log, first.state.log, "resuming a finished head is a no-op too");

    let input = history.last().unwrap();
    assert_eq!((input.source, input.step), (Source::Input, -1));
    assert_eq!(input.next, [START], "the input checkpoint does not look finished: its entry is pending");
    assert_eq!(
        input.tasks[0].result.as_ref().and_then(|u| u.log.clone()),
        Some(graphwright::Write::Reduce(vec!["in".into()]))
    );
    let rerun = app.resume(&cfg.clone().checkpoint(input.checkpoint_id.clone()), ()).await.unwrap();
    assert_eq!(rerun.state.log, first.state.log, "the input is applied again and every node re-runs");
    assert_eq!(chain_runs(), runs + 2);
    let forked = app.state_history(&cfg).await.unwrap();
    assert_eq!(forked.len(), history.len() + 4, "a new branch: its fork, step 0, and one per step");
    assert!(forked.iter().any(|s| s.checkpoint_id == history[0].checkpoint_id), "the old branch stays");
}

/// Runs of `ask` and `side`, by thread (tests run side by side).
static RUNS: std::sync::Mutex<Vec<(String, &'static str)>> = std::sync::Mutex::new(Vec::new());

fn ran(rt: &Runtime, node: &'static str) {
    RUNS.lock().unwrap().push((rt.thread_id().unwrap_or_default().to_owned(), node));
}

fn runs_of(thread: &str, node: &str) -> usize {
    RUNS.lock().unwrap().iter().filter(|(t, n)| t == thread && *n == node).count()
}

#[graph]
mod desk {
    use super::*;

    #[state]
    pub struct State {
        pub note: String,
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = [ask, side])]
    fn open(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["open".into()])
    }

    #[node(next = after)]
    fn ask(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        ran(rt, "ask");
        let answer: String = rt.interrupt(json!({"note": state.note}))?;
        Ok(StateUpdate::new().log(vec![format!("ask {answer} {}", state.note)]))
    }

    #[node(next = after)]
    fn side(_state: &State, rt: &Runtime) -> StateUpdate {
        ran(rt, "side");
        StateUpdate::new().log(vec!["side".into()])
    }

    /// Ends the run; `audit` is declared so that a command can go there.
    #[node(next = END | audit)]
    fn after(_state: &State) -> (StateUpdate, AfterNext) {
        (StateUpdate::new().log(vec!["after".into()]), AfterNext::End)
    }

    #[node(next = END)]
    fn audit(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["audit".into()])
    }
}

#[tokio::test]
async fn an_edit_keeps_the_pending_interrupt_and_the_next_resume_answers_it() {
    let app = desk::graph().compile().unwrap();
    let cfg = RunConfig::thread("edit");
    let paused = app.invoke(desk::State::default(), &cfg).await.unwrap();
    let pending = paused.interrupts.clone();
    app.update_state(&cfg, desk::StateUpdate::new().note("edited".to_owned()), None).await.unwrap();
    let edited = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(edited.interrupts, pending, "the interrupt is still pending after the edit");
    assert_eq!(edited.next, ["ask", "side"], "finished tasks run again after an edit, as in LangGraph");
    let done = app.resume(&cfg, json!("yes")).await.unwrap();
    assert_eq!(
        done.state.log,
        ["open", "ask yes edited", "side", "after"],
        "the answer reached the node, which saw the edit"
    );
}

#[tokio::test]
async fn a_command_answers_updates_and_goes_to_nodes_in_one_input() {
    let app = desk::graph().compile().unwrap();
    let cfg = RunConfig::thread("command");
    app.invoke(desk::State::default(), &cfg).await.unwrap();
    let command =
        RunCommand::resume(json!("ok")).update(desk::StateUpdate::new().note("n".to_owned())).goto([desk::Node::Audit]);
    let out = app.invoke(command, &cfg).await.unwrap();
    assert_eq!(
        out.state.log,
        ["open", "ask ok n", "side", "audit", "after"],
        "`audit` ran beside `ask`; the step merged in task order"
    );
    assert_eq!(runs_of("command", "ask"), 2, "asked, then answered");
    assert_eq!(runs_of("command", "side"), 1, "`side` had finished and kept its output");

    // On a finished thread, `goto` goes on from the final state; with `resume` as well.
    let more = app.resume(&cfg, RunCommand::goto_nodes(["audit"])).await.unwrap();
    assert_eq!(more.state.log.last().map(String::as_str), Some("audit"));
    let error = app.resume(&cfg, RunCommand::goto_nodes(["audt"])).await.unwrap_err();
    assert!(error.to_string().contains("did you mean `audit`?"), "{error}");
    let error = app.invoke(RunCommand::<desk::State>::resume(json!(1)), &RunConfig::default()).await.unwrap_err();
    assert!(matches!(error, GraphError::NoThread { .. }), "{error}");
}

#[tokio::test]
async fn an_answer_given_at_a_breakpoint_is_accepted_and_ignored() {
    let app = chain::graph().interrupt_before([chain::Node::B]).compile().unwrap();
    let cfg = RunConfig::thread("breakpoint");
    assert!(app.invoke(chain::State::default(), &cfg).await.unwrap().is_interrupted());
    let out = app.resume(&cfg, json!("an answer nobody asked for")).await.unwrap();
    assert_eq!(out.state.log, ["a", "b"]);
}

#[tokio::test]
async fn update_state_as_end_applies_finished_writes_and_clears_what_was_pending() {
    let app = desk::graph().compile().unwrap();
    let cfg = RunConfig::thread("end");
    app.invoke(desk::State::default(), &cfg).await.unwrap();
    app.update_state(&cfg, desk::StateUpdate::new().note("closed".to_owned()), Some(END)).await.unwrap();
    let closed = app.get_state(&cfg).await.unwrap().unwrap();
    assert!(closed.next.is_empty() && closed.interrupts.is_empty(), "{:?} {:?}", closed.next, closed.interrupts);
    assert_eq!(
        (closed.state.log, closed.state.note),
        (vec!["open".to_owned(), "side".to_owned()], "closed".to_owned())
    );
    let out = app.resume(&cfg, json!("late")).await.unwrap();
    assert_eq!(out.steps, 0, "nothing is left to run");

    let error = app
        .bulk_update_state(
            &cfg,
            vec![vec![(desk::StateUpdate::new(), Some(END)), (desk::StateUpdate::new(), Some("side"))]],
        )
        .await
        .unwrap_err();
    assert!(error.to_string().contains("END clears a thread's tasks on its own"), "{error}");
}

static ONE_CALLS: AtomicU32 = AtomicU32::new(0);
static TWO_CALLS: AtomicU32 = AtomicU32::new(0);
static TWO_FAILS: AtomicU32 = AtomicU32::new(u32::MAX);

#[graph]
mod pending {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(add)]
        pub value: i64,
    }

    #[node(entry, next = END)]
    async fn one(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        ONE_CALLS.fetch_add(1, Ordering::SeqCst);
        StateUpdate::new().value(2)
    }

    #[node(entry, next = END, retry = RetryPolicy::new(2).initial_backoff(std::time::Duration::ZERO))]
    async fn two(_state: &State) -> Result<StateUpdate, NodeError> {
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        TWO_CALLS.fetch_add(1, Ordering::SeqCst);
        if TWO_FAILS.load(Ordering::SeqCst) > 0 {
            return Err(NodeError::msg("I'm not good"));
        }
        Ok(StateUpdate::new().value(3))
    }
}

#[tokio::test]
async fn a_failed_parallel_step_shows_the_finished_write_and_only_the_unfinished_task() {
    for (durability, checkpoints) in [(Durability::Sync, 3), (Durability::Async, 3), (Durability::Exit, 2)] {
        ONE_CALLS.store(0, Ordering::SeqCst);
        TWO_CALLS.store(0, Ordering::SeqCst);
        TWO_FAILS.store(1, Ordering::SeqCst);
        let saver = Arc::new(MemorySaver::new());
        let app = pending::graph().shared_checkpointer(saver.clone()).compile().unwrap();
        let cfg = RunConfig::thread("pending").durability(durability);
        let error = app.invoke(pending::StateUpdate::new().value(1), &cfg).await.unwrap_err();
        assert!(error.to_string().contains("I'm not good"), "{error}");
        assert_eq!((ONE_CALLS.load(Ordering::SeqCst), TWO_CALLS.load(Ordering::SeqCst)), (1, 2), "two attempts");

        let state = app.get_state(&cfg).await.unwrap().unwrap();
        assert_eq!((state.state.value, state.next.clone()), (3, vec!["two".to_owned()]), "{durability:?}");
        assert_eq!(state.tasks.len(), 2);
        assert_eq!(
            (state.tasks[0].node.as_str(), state.tasks[0].result.as_ref().and_then(|u| u.value.clone())),
            ("one", Some(graphwright::Write::Reduce(2)))
        );
        assert!(state.tasks[0].error.is_none());
        assert!(
            state.tasks[1].result.is_none()
                && state.tasks[1].error.as_deref().is_some_and(|e| e.contains("I'm not good"))
        );
        let pinned = app.get_state(&cfg.clone().checkpoint(state.checkpoint_id.clone())).await.unwrap().unwrap();
        assert_eq!(
            (pinned.state.value, pinned.next),
            (1, vec!["one".to_owned(), "two".to_owned()]),
            "a pinned checkpoint applies nothing"
        );

        let stored = saver.list("pending", &ListFilter::default()).await.unwrap().len();
        app.resume(&cfg, ()).await.unwrap_err();
        assert_eq!((ONE_CALLS.load(Ordering::SeqCst), TWO_CALLS.load(Ordering::SeqCst)), (1, 4), "{durability:?}");
        assert_eq!(
            saver.list("pending", &ListFilter::default()).await.unwrap().len(),
            stored,
            "a failed resume stores no checkpoint"
        );

        TWO_FAILS.store(0, Ordering::SeqCst);
        let out = app.resume(&cfg, ()).await.unwrap();
        assert_eq!(out.state.value, 6, "{durability:?}: 1 + 2 + 3, the pending write applied once");
        assert_eq!(saver.list("pending", &ListFilter::default()).await.unwrap().len(), checkpoints, "{durability:?}");
    }
}

#[graph]
mod racing {
    use super::*;
    use std::time::Duration;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = END)]
    async fn slow(_state: &State) -> StateUpdate {
        tokio::time::sleep(Duration::from_millis(60)).await;
        StateUpdate::new().log(vec!["slow".into()])
    }

    #[node(entry, next = END)]
    async fn quick(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().log(vec!["quick".into()])
    }
}

/// The kinds of a stream's events, shortened.
async fn kinds<S: State>(mut events: graphwright::RunStream<S>) -> Vec<String> {
    let mut seen = Vec::new();
    while let Some(event) = events.next().await {
        seen.push(match event.kind {
            EventKind::Values(_) => "values".to_owned(),
            EventKind::Update { node, .. } => format!("update {node}"),
            EventKind::TaskStarted { node, .. } => format!("start {node}"),
            EventKind::TaskFinished { node, result, error, interrupted, .. } => {
                format!("finish {node} result={} error={} interrupted={interrupted}", result.is_some(), error.is_some())
            }
            EventKind::Finished { .. } => "finished".to_owned(),
            EventKind::Interrupted { .. } => "interrupted".to_owned(),
            other => format!("{other:?}"),
        });
    }
    seen
}

#[tokio::test]
async fn updates_stream_as_tasks_finish_and_tasks_carry_their_results() {
    let app = racing::graph().compile().unwrap();
    let cfg = RunConfig::default();
    let seen = kinds(app.stream(racing::StateUpdate::new(), &cfg, StreamMode::Updates | StreamMode::Values)).await;
    assert_eq!(
        seen,
        ["update quick", "update slow", "values", "finished"],
        "live, in finishing order; no initial values for an input that writes nothing"
    );
    let mut events = app.stream(racing::State::default(), &cfg, StreamMode::Values);
    let mut last = None;
    while let Some(event) = events.next().await {
        if let EventKind::Values(state) = event.kind {
            last = Some(state.log);
        }
    }
    assert_eq!(last.unwrap(), ["slow", "quick"], "merged in task order whatever the finishing order");

    let seen = kinds(app.stream(
        racing::StateUpdate::new().log(vec!["in".into()]),
        &cfg,
        StreamMode::Values | StreamMode::Tasks,
    ))
    .await;
    assert_eq!(
        seen,
        [
            "values",
            "start slow",
            "start quick",
            "finish quick result=true error=false interrupted=false",
            "finish slow result=true error=false interrupted=false",
            "values",
            "finished"
        ],
        "an input that writes something is the first values event"
    );
}

#[tokio::test]
async fn a_resumed_run_and_a_command_stream_like_a_new_one() {
    let app = desk::graph().compile().unwrap();
    let cfg = RunConfig::thread("streamed");
    let seen = kinds(app.stream(desk::State::default(), &cfg, StreamMode::Updates)).await;
    assert_eq!(seen, ["update open", "update side", "interrupted"]);
    let seen = kinds(app.stream(RunCommand::resume(json!("go")), &cfg, StreamMode::Updates | StreamMode::Values)).await;
    assert_eq!(seen, ["values", "update ask", "values", "update after", "values", "finished"]);
}

/// Where a run starts, read from its input.
#[derive(Clone, Copy)]
enum Entry {
    Small,
    Large,
}

impl Route for Entry {
    type State = Trail;
    const TARGETS: &'static [&'static str] = &["small", "large"];
    fn index(&self) -> usize {
        *self as usize
    }
}

fn entry_graph() -> StateGraph<Trail> {
    StateGraph::<Trail>::new()
        .add_node("small", mark("small"))
        .add_node("large", mark("large"))
        .add_payload_node("item", |n: &i64| TrailUpdate::new().value(*n))
        .add_router(START, |s: &Trail| if s.value > 10 { Entry::Large } else { Entry::Small })
        .add_start_send("item", |s: &Trail| (1..=s.value.min(3)).collect::<Vec<i64>>())
        .add_edge("small", END)
        .add_edge("large", END)
        .add_edge("item", END)
}

#[tokio::test]
async fn a_conditional_entry_routes_and_sends_from_start() {
    let app = entry_graph().compile().unwrap();
    let small = app.invoke(TrailUpdate::new().value(2), &RunConfig::default()).await.unwrap();
    assert_eq!((small.state.log, small.state.value, small.steps), (vec!["small".to_owned()], 2 + 1 + 2, 1));
    let large = app.invoke(TrailUpdate::new().value(20), &RunConfig::default()).await.unwrap();
    assert_eq!((large.state.log, large.state.value), (vec!["large".to_owned()], 20 + 1 + 2 + 3));

    let cfg = RunConfig::thread("entry");
    app.invoke(TrailUpdate::new().value(20), &cfg).await.unwrap();
    let history = app.state_history(&cfg).await.unwrap();
    let first = &history[history.len() - 2];
    assert_eq!(first.next, ["large", "item", "item", "item"], "the first step's tasks are stored with their payloads");
    let replayed =
        app.resume(&cfg.clone().checkpoint(history.last().unwrap().checkpoint_id.clone()), ()).await.unwrap();
    assert_eq!(replayed.state.value, 26);
}

static FLAKY: AtomicU32 = AtomicU32::new(0);

#[tokio::test]
async fn the_first_retry_policy_that_accepts_an_error_applies() {
    let flaky = |_s: &Trail| -> Result<TrailUpdate, NodeError> {
        match FLAKY.fetch_add(1, Ordering::SeqCst) {
            0 | 1 => Err(NodeError::msg("rate limited")),
            2 => Err(NodeError::msg("connection reset")),
            _ => Ok(TrailUpdate::new().log(vec!["done".into()])),
        }
    };
    let policy = NodePolicy::new()
        .retry(
            RetryPolicy::new(5).initial_backoff(std::time::Duration::ZERO).retry_on(|e| e.to_string().contains("rate")),
        )
        .retry(RetryPolicy::new(4).initial_backoff(std::time::Duration::ZERO));
    let app = StateGraph::<Trail>::new()
        .add_node("flaky", flaky)
        .add_edge(START, "flaky")
        .add_edge("flaky", END)
        .policy("flaky", policy.clone())
        .compile()
        .unwrap();
    let out = app.invoke(Trail::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(
        (out.state.log, FLAKY.load(Ordering::SeqCst)),
        (vec!["done".to_owned()], 4),
        "rate limits under the first, the reset under the second"
    );

    FLAKY.store(0, Ordering::SeqCst);
    let strict = NodePolicy::new()
        .retry(
            RetryPolicy::new(5).initial_backoff(std::time::Duration::ZERO).retry_on(|e| e.to_string().contains("rate")),
        )
        .retry(RetryPolicy::new(3).initial_backoff(std::time::Duration::ZERO));
    let app = StateGraph::<Trail>::new()
        .add_node("flaky", flaky)
        .add_edge(START, "flaky")
        .add_edge("flaky", END)
        .policy("flaky", strict)
        .compile()
        .unwrap();
    let error = app.invoke(Trail::default(), &RunConfig::default()).await.unwrap_err();
    assert!(matches!(&error, GraphError::Node { attempts: 3, .. }), "attempts count across policies: {error}");
}

#[tokio::test]
async fn bulk_update_state_applies_super_steps_as_a_run_would() {
    let saver = Arc::new(MemorySaver::new());
    let app = StateGraph::<Trail>::new()
        .add_node("a", mark("a"))
        .add_node("b", mark("b"))
        .add_edge(START, "a")
        .add_edge("a", "b")
        .add_edge("b", END)
        .shared_checkpointer(saver.clone())
        .compile()
        .unwrap();
    let cfg = RunConfig::thread("bulk");
    app.bulk_update_state(&cfg, vec![vec![(TrailUpdate::new().note("one".to_owned()), Some("a"))]]).await.unwrap();
    assert_eq!(app.get_state(&cfg).await.unwrap().unwrap().next, ["b"], "a fresh thread, as if `a` had run");
    app.bulk_update_state(
        &cfg,
        vec![
            vec![(TrailUpdate::new().value(1), Some("a"))],
            vec![(TrailUpdate::new().note("two".to_owned()), Some("a")), (TrailUpdate::new().value(10), Some("b"))],
        ],
    )
    .await
    .unwrap();
    let state = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!((state.state.note, state.state.value), ("two".to_owned(), 11));
    assert_eq!(state.next, ["b"], "`a`'s edge leads to `b`; `b`'s to END");
    assert_eq!(saver.list("bulk", &ListFilter::default()).await.unwrap().len(), 3, "one checkpoint per super-step");

    let conflict = app
        .bulk_update_state(
            &cfg,
            vec![vec![
                (TrailUpdate::new().note("x".to_owned()), Some("a")),
                (TrailUpdate::new().note("y".to_owned()), Some("b")),
            ]],
        )
        .await
        .unwrap_err();
    assert!(matches!(conflict, GraphError::InvalidUpdate { field: "note", .. }), "{conflict}");
    let unnamed = app
        .bulk_update_state(&cfg, vec![vec![(TrailUpdate::new(), None), (TrailUpdate::new(), None)]])
        .await
        .unwrap_err();
    assert!(unnamed.to_string().contains("needs the node it acts as"), "{unnamed}");
    let empty = app.bulk_update_state(&cfg, vec![]).await.unwrap_err();
    assert!(empty.to_string().contains("no update was given"), "{empty}");
    assert_eq!(saver.list("bulk", &ListFilter::default()).await.unwrap().len(), 3, "refused updates store nothing");
}

#[tokio::test]
async fn a_fork_from_before_an_interrupt_asks_again_and_the_old_branch_keeps_its_answer() {
    let app = desk::graph().compile().unwrap();
    let cfg = RunConfig::thread("fork");
    app.invoke(desk::State::default(), &cfg).await.unwrap();
    let done = app.resume(&cfg, json!("first")).await.unwrap();
    let before = app.state_history(&cfg).await.unwrap().into_iter().find(|s| s.next == ["ask", "side"]).unwrap();
    let replay = app.resume(&cfg.clone().checkpoint(before.checkpoint_id.clone()), ()).await.unwrap();
    assert!(replay.is_interrupted(), "the interrupt fires again on the new branch");
    let answered = app.resume(&cfg, json!("second")).await.unwrap();
    assert!(answered.state.log.contains(&"ask second ".to_owned()), "{:?}", answered.state.log);
    assert!(done.state.log.contains(&"ask first ".to_owned()));
}
