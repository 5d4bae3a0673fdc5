//! The dynamic builder runs the graphs the macro runs, and rejects the miswirings the macro
//! rejects with the same words.

// The graph modules are private to this test; their items are `pub` the way users write them.
#![allow(unreachable_pub)]

use graphwright::prelude::*;
use graphwright_wiring::{EdgeKind, Problem};
use serde::{Deserialize, Serialize};
use std::time::Duration;

#[state]
struct Count {
    counter: u64,
    #[reducer(append)]
    trail: Vec<String>,
}

fn bump(state: &Count) -> CountUpdate {
    CountUpdate::new().counter(state.counter + 1)
}

fn mark(name: &'static str) -> impl Fn(&Count) -> CountUpdate + Send + Sync + 'static {
    move |_: &Count| CountUpdate::new().trail(vec![name.to_owned()])
}

#[tokio::test]
async fn a_chain_of_a_thousand_nodes_runs_each_once() {
    let mut graph = StateGraph::<Count>::new().add_edge(START, "n0");
    for i in 0..1000 {
        graph = graph.add_node(format!("n{i}"), bump);
        let next = if i == 999 { END.to_owned() } else { format!("n{}", i + 1) };
        graph = graph.add_edge(format!("n{i}"), next);
    }
    let app = graph.compile().unwrap();
    assert_eq!(app.node_names().len(), 1000);
    let out = app.invoke(Count::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.counter, 1000);
    assert_eq!(out.steps, 1000);
}

// ---------------------------------------------------------------------------------------------
// The same graph, by macro and by builder
// ---------------------------------------------------------------------------------------------

/// The crate's front-page graph, written with the macro.
#[graph]
mod triage {
    #[state]
    pub struct State {
        pub question: String,
        #[reducer(append)]
        pub trail: Vec<String>,
        #[reducer(add)]
        pub attempts: u32,
    }

    #[node(entry, next = lookup | answer)]
    fn classify(state: &State) -> (StateUpdate, ClassifyNext) {
        let update = StateUpdate::new().trail(vec!["classify".into()]).attempts(1);
        if state.question.ends_with('?') { (update, ClassifyNext::Lookup) } else { (update, ClassifyNext::Answer) }
    }

    #[node(next = answer)]
    async fn lookup(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().trail(vec!["lookup".into()])
    }

    #[node(next = END)]
    fn answer(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["answer".into()])
    }
}

/// The same graph for the builder: its own state and a hand-written route type.
mod triage_by_hand {
    use super::*;

    #[state]
    pub struct State {
        pub question: String,
        #[reducer(append)]
        pub trail: Vec<String>,
        #[reducer(add)]
        pub attempts: u32,
    }

    #[derive(Clone, Copy)]
    pub enum ClassifyNext {
        Lookup,
        Answer,
    }

    impl Route for ClassifyNext {
        type State = State;
        const TARGETS: &'static [&'static str] = &["lookup", "answer"];
        fn index(&self) -> usize {
            *self as usize
        }
    }

    fn classify(state: &State) -> (StateUpdate, ClassifyNext) {
        let update = StateUpdate::new().trail(vec!["classify".into()]).attempts(1);
        if state.question.ends_with('?') { (update, ClassifyNext::Lookup) } else { (update, ClassifyNext::Answer) }
    }

    async fn lookup(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().trail(vec!["lookup".into()])
    }

    fn answer(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["answer".into()])
    }

    pub fn graph() -> StateGraph<State> {
        StateGraph::new()
            .name("triage")
            .add_node("classify", classify)
            .add_node("lookup", lookup)
            .add_node("answer", answer)
            .add_edge(START, "classify")
            .add_edge("lookup", "answer")
            .add_edge("answer", END)
    }
}

#[tokio::test]
async fn builder_and_macro_build_and_run_the_same_graph() {
    let by_macro = triage::graph().compile().unwrap();
    let by_hand = triage_by_hand::graph().compile().unwrap();
    assert_eq!(by_macro.name(), by_hand.name());
    assert!(by_macro.node_names().eq(by_hand.node_names()));
    for question in ["what is a super-step?", "hello"] {
        let cfg = RunConfig::default();
        let a = by_macro.invoke(triage::StateUpdate::new().question(question.to_owned()), &cfg).await.unwrap();
        let b = by_hand.invoke(triage_by_hand::StateUpdate::new().question(question.to_owned()), &cfg).await.unwrap();
        assert_eq!(a.state.trail, b.state.trail, "{question}");
        assert_eq!((a.state.attempts, a.steps), (b.state.attempts, b.steps), "{question}");
    }
    let out =
        by_hand.invoke(triage_by_hand::StateUpdate::new().question("why?".to_owned()), &RunConfig::default()).await;
    assert_eq!(out.unwrap().state.trail, ["classify", "lookup", "answer"]);
}

// ---------------------------------------------------------------------------------------------
// Routers, Send, joins, async nodes, context and policies
// ---------------------------------------------------------------------------------------------

/// Where the run goes after `work`.
#[derive(Clone, Copy)]
enum Again {
    Work,
    Done,
}

impl Route for Again {
    type State = Count;
    const TARGETS: &'static [&'static str] = &["work", END];
    fn index(&self) -> usize {
        *self as usize
    }
}

#[tokio::test]
async fn add_router_picks_the_next_node_from_the_new_state() {
    let app = StateGraph::<Count>::new()
        .add_node("work", bump)
        .add_edge(START, "work")
        .add_router("work", |state: &Count| if state.counter < 5 { Again::Work } else { Again::Done })
        .compile()
        .unwrap();
    let out = app.invoke(Count::default(), &RunConfig::default()).await.unwrap();
    assert_eq!((out.state.counter, out.steps), (5, 5));
}

/// A Send payload for builder graphs.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Item {
    /// What the worker adds.
    pub n: u64,
}

fn split(state: &Count) -> Vec<Item> {
    (1..=state.counter).map(|n| Item { n }).collect()
}

fn work_item(item: &Item) -> CountUpdate {
    CountUpdate::new().trail(vec![format!("item {}", item.n)])
}

async fn work_item_later(item: &Item, rt: &Runtime) -> CountUpdate {
    tokio::time::sleep(Duration::from_millis(10 - item.n)).await;
    CountUpdate::new().trail(vec![format!("item {} in step {}", item.n, rt.step())])
}

fn report(state: &Count) -> CountUpdate {
    CountUpdate::new().trail(vec![format!("report after {}", state.trail.len())])
}

#[tokio::test]
async fn add_send_and_add_join_fan_out_and_join_once() {
    // `split` sends to `worker` (step 2); `side` → `side_two` → `side_three` (step 3);
    // `report` joins `worker` and `side_three`, so it runs once, in step 4.
    let app = StateGraph::<Count>::new()
        .add_node("split", split)
        .add_payload_node("worker", work_item)
        .add_node("side", mark("side"))
        .add_node("side_two", mark("side_two"))
        .add_node("side_three", mark("side_three"))
        .add_node("report", report)
        .add_edge(START, "split")
        .add_edge(START, "side")
        .add_send("split", "worker")
        .add_edge("side", "side_two")
        .add_edge("side_two", "side_three")
        .add_join(["worker", "side_three"], "report")
        .add_edge("report", END)
        .compile()
        .unwrap();
    let out = app.invoke(CountUpdate::new().counter(3), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.trail, ["side", "side_two", "item 1", "item 2", "item 3", "side_three", "report after 6"]);
    assert_eq!(out.steps, 4);
}

async fn fetch(state: &Count) -> CountUpdate {
    tokio::task::yield_now().await;
    CountUpdate::new().counter(state.counter * 10)
}

async fn fetch_with_runtime(state: &Count, rt: &Runtime) -> Result<CountUpdate, NodeError> {
    tokio::task::yield_now().await;
    Ok(CountUpdate::new().trail(vec![format!("{} saw {} in step {}", rt.node(), state.counter, rt.step())]))
}

#[tokio::test(start_paused = true)]
async fn async_fn_nodes_and_async_payload_nodes() {
    let app = StateGraph::<Count>::new()
        .add_node("fetch", fetch)
        .add_node("fetch_with_runtime", fetch_with_runtime)
        .add_node("split", split)
        .add_payload_node("worker", work_item_later)
        .add_edge(START, "fetch")
        .add_edge("fetch", "fetch_with_runtime")
        .add_edge("fetch_with_runtime", "split")
        .add_send("split", "worker")
        .add_edge("worker", END)
        .compile()
        .unwrap();
    let out = app.invoke(CountUpdate::new().counter(0), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.trail, ["fetch_with_runtime saw 0 in step 2"]);
    let out = app.invoke(CountUpdate::new().counter(1), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.counter, 10);
    let items: Vec<String> = (1..=10).map(|n| format!("item {n} in step 4")).collect();
    assert_eq!(out.state.trail[1..], items, "async payload tasks finish in reverse, merge in send order");
}

/// What a builder graph's runs carry.
struct Ctx {
    step_size: u64,
}

fn step_by_context(state: &Count, rt: &Runtime<Ctx>) -> CountUpdate {
    CountUpdate::new().counter(state.counter + rt.context().step_size)
}

#[tokio::test]
async fn a_builder_graph_with_a_context_needs_one_per_run() {
    let app = StateGraph::<Count, Ctx>::with_context()
        .name("stepper")
        .add_node("step", step_by_context)
        .add_edge(START, "step")
        .add_edge("step", END)
        .compile()
        .unwrap();
    let out = app.invoke(Count::default(), &RunConfig::default().context(Ctx { step_size: 7 })).await.unwrap();
    assert_eq!(out.state.counter, 7);
    let error = app.invoke(Count::default(), &RunConfig::default()).await.unwrap_err();
    assert!(matches!(&error, GraphError::MissingContext { graph, .. } if graph == "stepper"), "{error:?}");
}

async fn flaky(state: &Count, rt: &Runtime) -> Result<CountUpdate, NodeError> {
    if rt.attempt() < 3 {
        return Err(NodeError::msg("not yet"));
    }
    tokio::time::sleep(Duration::from_millis(5)).await;
    Ok(CountUpdate::new().counter(state.counter + u64::from(rt.attempt())))
}

#[tokio::test(start_paused = true)]
async fn builder_policies_retry_and_time_out() {
    let graph = || StateGraph::<Count>::new().add_node("flaky", flaky).add_edge(START, "flaky").add_edge("flaky", END);
    let retried = graph().policy("flaky", NodePolicy::new().retry(RetryPolicy::new(3))).compile().unwrap();
    let out = retried.invoke(Count::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.counter, 3);

    let policy = NodePolicy::new().retry(RetryPolicy::new(3)).timeout(Duration::from_millis(1));
    let timed_out = graph().policy("flaky", policy).compile().unwrap();
    let error = timed_out.invoke(Count::default(), &RunConfig::default()).await.unwrap_err();
    assert!(
        matches!(&error, GraphError::Node { attempts: 3, source, .. } if source.is::<graphwright::TimeoutError>()),
        "{error:?}"
    );
}

// ---------------------------------------------------------------------------------------------
// The builder rejects what the macro rejects, in the macro's words
// ---------------------------------------------------------------------------------------------

/// The message the macro gives for a ui-tests/fail case: the first line of its `.stderr`.
fn macro_message(case: &str) -> String {
    let path = format!("{}/../ui-tests/fail/{case}.stderr", env!("CARGO_MANIFEST_DIR"));
    let stderr = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let first = stderr.lines().next().unwrap_or_default();
    first.strip_prefix("error: ").unwrap_or(first).to_owned()
}

/// The one wiring problem `graph` has.
fn the_problem<C: Send + Sync + 'static>(graph: StateGraph<Count, C>) -> Problem {
    match graph.compile() {
        Err(BuildError::Wiring { graph, mut problems }) => {
            assert_eq!(graph, "support");
            assert_eq!(problems.len(), 1, "{problems:?}");
            problems.remove(0)
        }
        Err(other) => panic!("expected a wiring error, got {other}"),
        Ok(_) => panic!("the miswired graph compiled"),
    }
}

fn nothing(_: &Count) -> CountUpdate {
    CountUpdate::new()
}

fn dispatch(_: &Count) -> Vec<u32> {
    vec![1, 2, 3]
}

// A payload node takes its payload by reference, whatever its size.
#[allow(clippy::trivially_copy_pass_by_ref)]
fn worker(item: &u32) -> CountUpdate {
    CountUpdate::new().counter(u64::from(*item))
}

fn support() -> StateGraph<Count> {
    StateGraph::new().name("support")
}

#[test]
fn an_unknown_target_is_named_with_a_suggestion() {
    let problem = the_problem(
        support()
            .add_node("ingress", nothing)
            .add_node("planner", nothing)
            .add_edge(START, "ingress")
            .add_edge("ingress", "planer")
            .add_edge("planner", END),
    );
    assert!(
        matches!(&problem, Problem::UnknownTarget { node: 0, target: 0, kind: EdgeKind::Next, name, suggestion: Some(s), .. }
            if name == "planer" && s == "planner"),
        "{problem:?}"
    );
    assert_eq!(problem.to_string(), "no node named `planer` in graph `support`; did you mean `planner`?");
    assert_eq!(problem.to_string(), macro_message("edge-unknown-target"));
}

#[test]
fn a_graph_without_an_entry_is_rejected() {
    let problem = the_problem(
        support()
            .add_node("ingress", nothing)
            .add_node("planner", nothing)
            .add_edge("ingress", "planner")
            .add_edge("planner", END),
    );
    assert_eq!(problem, Problem::NoEntry { graph: "support".to_owned() });
    assert_eq!(problem.to_string(), macro_message("graph-no-entry"));
}

#[test]
fn an_orphan_node_is_rejected() {
    let problem = the_problem(
        support()
            .add_node("ingress", nothing)
            .add_node("orphan", nothing)
            .add_edge(START, "ingress")
            .add_edge("ingress", END)
            .add_edge("orphan", END),
    );
    assert_eq!(problem, Problem::Unreachable { node: 1, name: "orphan".to_owned() });
    assert_eq!(problem.to_string(), macro_message("node-unreachable"));
}

/// Where `ingress` goes: into the trap, or to the end.
#[derive(Clone, Copy)]
enum IngressNext {
    A,
    End,
}

impl Route for IngressNext {
    type State = Count;
    const TARGETS: &'static [&'static str] = &["a", END];
    fn index(&self) -> usize {
        *self as usize
    }
}

#[test]
fn a_loop_with_no_way_to_end_is_rejected() {
    let problem = the_problem(
        support()
            .add_node("ingress", |_: &Count| (CountUpdate::new(), IngressNext::A))
            .add_node("a", nothing)
            .add_node("b", nothing)
            .add_edge(START, "ingress")
            .add_edge("a", "b")
            .add_edge("b", "a"),
    );
    assert!(matches!(&problem, Problem::NeverEnds { node: 1, trapped, .. } if trapped == &["a", "b"]), "{problem:?}");
    assert_eq!(problem.to_string(), macro_message("graph-never-ends"));
    // Used only to name the variant the trap starts from.
    let _ = IngressNext::End;
}

#[test]
fn a_node_without_an_outgoing_edge_is_rejected() {
    let problem = the_problem(
        support()
            .add_node("ingress", nothing)
            .add_node("x", nothing)
            .add_edge(START, "ingress")
            .add_edge("ingress", "x"),
    );
    assert_eq!(problem, Problem::NoOutgoingEdge { node: 1, name: "x".to_owned() });
    assert_eq!(problem.to_string(), macro_message("node-no-outgoing-edge"));
}

#[test]
fn an_unknown_send_target_is_named_with_a_suggestion() {
    let problem = the_problem(
        support()
            .add_node("dispatch", dispatch)
            .add_payload_node("worker", worker)
            .add_edge(START, "dispatch")
            .add_send("dispatch", "wrker")
            .add_edge("worker", END),
    );
    assert!(
        matches!(&problem, Problem::UnknownTarget { node: 0, kind: EdgeKind::Send, name, suggestion: Some(s), .. }
            if name == "wrker" && s == "worker"),
        "{problem:?}"
    );
    assert_eq!(problem.to_string(), macro_message("send-unknown-target"));
}

#[test]
fn a_send_to_end_is_rejected() {
    let problem =
        the_problem(support().add_node("dispatch", dispatch).add_edge(START, "dispatch").add_send("dispatch", END));
    assert_eq!(problem, Problem::SendToEnd { node: 0, target: 0 });
    assert_eq!(problem.to_string(), macro_message("send-to-end"));
}

#[test]
fn the_build_error_lists_every_problem_under_the_graph_name() {
    let error = support().add_node("a", nothing).add_node("b", nothing).add_edge("a", "c").compile().unwrap_err();
    assert_eq!(
        error.to_string(),
        "graph `support` is miswired:\n  \
         - no node named `c` in graph `support`\n  \
         - node `b` has no outgoing edge: add `next = ...` or `next = END`\n  \
         - graph `support` has no entry node: mark one with `#[node(entry)]`"
    );
}

// ---------------------------------------------------------------------------------------------
// Mistakes only the builder can make (the macro's types rule them out)
// ---------------------------------------------------------------------------------------------

/// The message of a `BuildError::Invalid`.
fn invalid<C: Send + Sync + 'static>(graph: StateGraph<Count, C>) -> String {
    match graph.compile() {
        Err(BuildError::Invalid { graph, message }) => {
            assert_eq!(graph, "support");
            message
        }
        Err(other) => panic!("expected BuildError::Invalid, got {other}"),
        Ok(_) => panic!("the graph compiled"),
    }
}

#[test]
fn an_edge_from_an_unknown_node_is_rejected() {
    let message =
        invalid(support().add_node("a", nothing).add_edge(START, "a").add_edge("a", END).add_edge("ghost", "a"));
    assert_eq!(message, "edge `ghost` -> `a` starts at no node named `ghost`");
}

#[test]
fn an_edge_from_start_to_an_unknown_node_is_rejected() {
    let message = invalid(
        support()
            .add_node("planner", nothing)
            .add_edge(START, "planner")
            .add_edge(START, "planer")
            .add_edge("planner", END),
    );
    assert_eq!(message, "edge START -> `planer` leads to no node named `planer`; did you mean `planner`?");
    let message =
        invalid(support().add_node("a", nothing).add_edge(START, "a").add_edge(START, END).add_edge("a", END));
    assert_eq!(message, "an edge from START must lead to a node, not to END");
}

#[test]
fn a_timeout_on_a_sync_node_is_rejected() {
    let message = invalid(
        support()
            .add_node("a", nothing)
            .add_edge(START, "a")
            .add_edge("a", END)
            .policy("a", NodePolicy::new().timeout(Duration::from_secs(1))),
    );
    assert!(message.starts_with("node `a` is sync, so a timeout could not stop it"), "{message}");
}

#[test]
fn a_payload_node_reached_by_an_edge_is_rejected() {
    let message = invalid(
        support()
            .add_node("dispatch", dispatch)
            .add_node("other", nothing)
            .add_payload_node("worker", worker)
            .add_edge(START, "dispatch")
            .add_edge(START, "other")
            .add_send("dispatch", "worker")
            .add_edge("other", "worker")
            .add_edge("worker", END),
    );
    assert_eq!(message, "node `worker` takes a Send payload, so only `add_send` edges may lead to it");
}

fn worker_of_items(item: &Item) -> CountUpdate {
    CountUpdate::new().counter(item.n)
}

#[test]
fn a_send_payload_of_the_wrong_type_is_rejected() {
    let message = invalid(
        support()
            .add_node("dispatch", dispatch)
            .add_payload_node("worker", worker_of_items)
            .add_edge(START, "dispatch")
            .add_send("dispatch", "worker")
            .add_edge("worker", END),
    );
    assert!(
        message.starts_with("node `dispatch` sends `u32` to `worker`, which does not take it as its payload"),
        "{message}"
    );
}

#[test]
fn a_policy_for_an_unknown_node_is_rejected() {
    let message = invalid(
        support().add_node("a", nothing).add_edge(START, "a").add_edge("a", END).policy("b", NodePolicy::new()),
    );
    assert_eq!(message, "`policy` names no node `b`");
}
