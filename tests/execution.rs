//! How a run proceeds: joins, deferred nodes, routers, `Command`, the recursion limit, node
//! failures, retries, timeouts, cancellation, and what a node learns from its `Runtime`.

// The graph modules are private to this test; their items are `pub` the way users write them.
#![allow(unreachable_pub)]

use graphwright::prelude::*;
use graphwright::{DEFAULT_RECURSION_LIMIT, TimeoutError};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::time::Instant;

/// Sets its flag when dropped: proof that a node's future was dropped mid-way.
struct DropFlag<'a>(&'a AtomicBool);

impl Drop for DropFlag<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::SeqCst);
    }
}

// ---------------------------------------------------------------------------------------------
// Joins and deferred nodes
// ---------------------------------------------------------------------------------------------

/// `a` and `b` both lead to `j` and run in the same step.
#[graph]
mod diamond {
    use super::*;

    pub static J_CALLS: AtomicUsize = AtomicUsize::new(0);

    #[state]
    pub struct State {
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    #[node(entry, next = [a, b])]
    fn fan(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = j)]
    fn a(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["a".to_owned()])
    }

    #[node(next = j)]
    async fn b(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().trail(vec!["b".to_owned()])
    }

    #[node(next = END)]
    fn j(_state: &State) -> StateUpdate {
        J_CALLS.fetch_add(1, Ordering::SeqCst);
        StateUpdate::new().trail(vec!["j".to_owned()])
    }
}

#[tokio::test]
async fn a_node_triggered_by_several_predecessors_in_one_step_runs_once() {
    let app = diamond::graph().compile().unwrap();
    let out = app.invoke(diamond::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(diamond::J_CALLS.load(Ordering::SeqCst), 1);
    assert_eq!(out.state.trail, ["a", "b", "j"]);
    assert_eq!(out.steps, 3);
}

/// Branches of unequal length into `j`: `short` (one step) and `long_one` → `long_two`.
/// Written three times: plain edges, `#[node(join)]`, and `#[node(defer)]`.
macro_rules! unequal_branches {
    ($name:ident, $($j:ident),*) => {
        #[graph]
        mod $name {
            #[state]
            pub struct State {
                #[reducer(append)]
                pub trail: Vec<String>,
                #[reducer(add)]
                pub j_calls: u32,
                pub j_saw: Vec<String>,
            }

            #[node(entry, next = [short, long_one])]
            fn fan(_state: &State) -> StateUpdate {
                StateUpdate::new()
            }

            #[node(next = j)]
            fn short(_state: &State) -> StateUpdate {
                StateUpdate::new().trail(vec!["short".to_owned()])
            }

            #[node(next = long_two)]
            fn long_one(_state: &State) -> StateUpdate {
                StateUpdate::new().trail(vec!["long_one".to_owned()])
            }

            #[node(next = j)]
            async fn long_two(_state: &State) -> StateUpdate {
                tokio::task::yield_now().await;
                StateUpdate::new().trail(vec!["long_two".to_owned()])
            }

            #[node($($j,)* next = END)]
            fn j(state: &State) -> StateUpdate {
                StateUpdate::new().j_calls(1).j_saw(state.trail.clone())
            }
        }
    };
}

unequal_branches!(plain_edges,);
unequal_branches!(joined, join);
unequal_branches!(deferred, defer);

#[tokio::test]
async fn without_a_join_a_node_runs_once_per_step_that_reaches_it() {
    let app = plain_edges::graph().compile().unwrap();
    let out = app.invoke(plain_edges::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.j_calls, 2, "after `short` in step 3, after `long_two` in step 4");
    assert_eq!(out.state.j_saw, ["short", "long_one", "long_two"]);
    assert_eq!(out.steps, 4);
}

#[tokio::test]
async fn a_join_runs_once_after_branches_of_unequal_length() {
    let app = joined::graph().compile().unwrap();
    let out = app.invoke(joined::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.j_calls, 1);
    assert_eq!(out.state.j_saw, ["short", "long_one", "long_two"], "it ran after both branches");
    assert_eq!(out.steps, 4);
}

#[tokio::test]
async fn a_deferred_node_runs_once_when_nothing_else_is_pending() {
    let app = deferred::graph().compile().unwrap();
    let out = app.invoke(deferred::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.j_calls, 1);
    assert_eq!(out.state.j_saw, ["short", "long_one", "long_two"]);
    assert_eq!(out.steps, 4);
}

// ---------------------------------------------------------------------------------------------
// Routers and Command
// ---------------------------------------------------------------------------------------------

/// `decide`'s router reads `flag`, which its sibling `helper` writes in the same step.
#[graph]
mod routed {
    #[state]
    pub struct State {
        pub flag: bool,
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    #[node(entry, next = [decide, helper])]
    fn fan(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = yes | no, route = pick)]
    fn decide(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["decide".to_owned()])
    }

    fn pick(state: &State) -> DecideNext {
        if state.flag { DecideNext::Yes } else { DecideNext::No }
    }

    #[node(next = END)]
    fn helper(_state: &State) -> StateUpdate {
        StateUpdate::new().flag(true)
    }

    #[node(next = END)]
    fn yes(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["yes".to_owned()])
    }

    #[node(next = END)]
    fn no(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["no".to_owned()])
    }
}

#[tokio::test]
async fn a_router_reads_the_state_after_the_whole_step() {
    let app = routed::graph().compile().unwrap();
    let out = app.invoke(routed::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.trail, ["decide", "yes"], "the router saw the sibling's write");
}

/// A loop closed by a router that counts.
#[graph]
mod counting {
    #[state]
    pub struct State {
        #[reducer(add)]
        pub count: u32,
    }

    #[node(entry, next = work | END, route = again)]
    fn work(_state: &State) -> StateUpdate {
        StateUpdate::new().count(1)
    }

    fn again(state: &State) -> WorkNext {
        if state.count < 3 { WorkNext::Work } else { WorkNext::End }
    }
}

#[tokio::test]
async fn a_router_sees_the_update_of_the_step_its_node_ran_in() {
    let app = counting::graph().compile().unwrap();
    let out = app.invoke(counting::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.count, 3, "a router reading the state before the step would loop once more");
    assert_eq!(out.steps, 3);
}

/// `cmd` goes where `state.pick` says, with `Command::goto` or `Command::goto_all`.
#[graph]
mod commands {
    use super::*;

    #[state]
    pub struct State {
        pub pick: String,
        #[reducer(append)]
        pub trail: Vec<String>,
    }

    #[node(entry, next = a | b | c | END)]
    fn cmd(state: &State) -> Command<CmdNext> {
        let command = match state.pick.as_str() {
            "b" => Command::goto(CmdNext::B),
            "all" => Command::goto_all([CmdNext::C, CmdNext::A, CmdNext::C]),
            "end" => Command::goto(CmdNext::End),
            _ => Command::goto_all([]),
        };
        command.update(StateUpdate::new().trail(vec!["cmd".to_owned()]))
    }

    #[node(next = END)]
    fn a(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["a".to_owned()])
    }

    #[node(next = END)]
    fn b(_state: &State) -> StateUpdate {
        StateUpdate::new().trail(vec!["b".to_owned()])
    }

    #[node(next = END)]
    async fn c(_state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().trail(vec!["c".to_owned()])
    }
}

#[tokio::test]
async fn command_goto_and_goto_all_pick_the_next_step() {
    let app = commands::graph().compile().unwrap();
    let cfg = RunConfig::default();
    let run = |pick: &str| app.invoke(commands::StateUpdate::new().pick(pick.to_owned()), &cfg);

    let one = run("b").await.unwrap();
    assert_eq!(one.state.trail, ["cmd", "b"], "goto: the update applies and the target runs");

    let all = run("all").await.unwrap();
    assert_eq!(all.state.trail, ["cmd", "a", "c"], "goto_all: together, once each, in declaration order");
    assert_eq!(all.steps, 2);

    let end = run("end").await.unwrap();
    assert_eq!((end.state.trail.as_slice(), end.steps), (["cmd".to_owned()].as_slice(), 1));

    let nowhere = run("none").await.unwrap();
    assert_eq!((nowhere.state.trail.as_slice(), nowhere.steps), (["cmd".to_owned()].as_slice(), 1));
}

// ---------------------------------------------------------------------------------------------
// Recursion limit
// ---------------------------------------------------------------------------------------------

/// Needs exactly `target` steps: `tick` loops until it has run `target` times.
#[graph]
mod ticking {
    #[state]
    pub struct State {
        pub target: u64,
        #[reducer(add)]
        pub count: u64,
    }

    #[node(entry, next = tick | END)]
    fn tick(state: &State) -> (StateUpdate, TickNext) {
        let next = if state.count + 1 < state.target { TickNext::Tick } else { TickNext::End };
        (StateUpdate::new().count(1), next)
    }
}

fn ticks(target: u64) -> ticking::StateUpdate {
    ticking::StateUpdate::new().target(target)
}

#[tokio::test]
async fn the_recursion_limit_allows_exactly_its_number_of_steps() {
    let app = ticking::graph().compile().unwrap();
    let out = app.invoke(ticks(7), &RunConfig::default().recursion_limit(7)).await.unwrap();
    assert_eq!((out.steps, out.state.count), (7, 7));

    let error = app.invoke(ticks(7), &RunConfig::default().recursion_limit(6)).await.unwrap_err();
    assert!(matches!(error, GraphError::RecursionLimit { limit: 6 }), "{error:?}");
    assert!(error.to_string().contains("recursion limit of 6 super-steps"), "{error}");
}

#[tokio::test]
async fn the_graph_limit_applies_unless_the_run_config_overrides_it() {
    let app = ticking::graph().recursion_limit(4).compile().unwrap();
    let error = app.invoke(ticks(5), &RunConfig::default()).await.unwrap_err();
    assert!(matches!(error, GraphError::RecursionLimit { limit: 4 }), "{error:?}");
    let out = app.invoke(ticks(5), &RunConfig::default().recursion_limit(5)).await.unwrap();
    assert_eq!(out.steps, 5);
}

#[tokio::test]
async fn the_default_recursion_limit_is_default_recursion_limit() {
    let app = ticking::graph().compile().unwrap();
    let out = app.invoke(ticks(DEFAULT_RECURSION_LIMIT), &RunConfig::default()).await.unwrap();
    assert_eq!(out.steps, DEFAULT_RECURSION_LIMIT);
    let error = app.invoke(ticks(DEFAULT_RECURSION_LIMIT + 1), &RunConfig::default()).await.unwrap_err();
    assert!(matches!(error, GraphError::RecursionLimit { limit } if limit == DEFAULT_RECURSION_LIMIT), "{error:?}");
}

// ---------------------------------------------------------------------------------------------
// Failures, retries, timeouts
// ---------------------------------------------------------------------------------------------

/// Records every value the `audit` field's reducer folds, to see what a step applied.
static AUDITED: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn audit(current: &mut Vec<String>, update: Vec<String>) {
    AUDITED.lock().unwrap().extend(update.iter().cloned());
    current.extend(update);
}

/// In step 2, `ok` succeeds at once, `bad` fails after a yield, `slow` is still running.
#[graph]
mod failing {
    use super::*;

    pub static SLOW_DROPPED: AtomicBool = AtomicBool::new(false);
    pub static SLOW_FINISHED: AtomicBool = AtomicBool::new(false);
    pub static AFTER_CALLS: AtomicUsize = AtomicUsize::new(0);

    #[state]
    pub struct State {
        #[reducer(with = audit)]
        pub audit: Vec<String>,
    }

    #[node(entry, next = [ok, bad, slow])]
    fn fan(_state: &State) -> StateUpdate {
        StateUpdate::new().audit(vec!["fan".to_owned()])
    }

    #[node(next = after)]
    fn ok(_state: &State) -> StateUpdate {
        StateUpdate::new().audit(vec!["ok".to_owned()])
    }

    #[node(next = after)]
    async fn bad(_state: &State) -> Result<StateUpdate, std::io::Error> {
        tokio::task::yield_now().await;
        Err(std::io::Error::other("disk on fire"))
    }

    #[node(next = after)]
    async fn slow(_state: &State) -> StateUpdate {
        let _guard = DropFlag(&SLOW_DROPPED);
        tokio::time::sleep(Duration::from_secs(100)).await;
        SLOW_FINISHED.store(true, Ordering::SeqCst);
        StateUpdate::new().audit(vec!["slow".to_owned()])
    }

    #[node(next = END)]
    fn after(_state: &State) -> StateUpdate {
        AFTER_CALLS.fetch_add(1, Ordering::SeqCst);
        StateUpdate::new()
    }
}

#[tokio::test(start_paused = true)]
async fn a_failing_node_fails_the_run_naming_node_and_step_and_nothing_of_its_step_applies() {
    let app = failing::graph().compile().unwrap();
    let started = Instant::now();
    let error = app.invoke(failing::State::default(), &RunConfig::default()).await.unwrap_err();
    assert!(started.elapsed() < Duration::from_secs(1), "the failure did not wait for `slow`");
    match &error {
        GraphError::Node { node, step, attempts, source } => {
            assert_eq!((node.as_str(), *step, *attempts), ("bad", 2, 1));
            let io = source.downcast_ref::<std::io::Error>().expect("the node's own error is the source");
            assert_eq!(io.to_string(), "disk on fire");
        }
        other => panic!("expected GraphError::Node, got {other:?}"),
    }
    assert_eq!(error.to_string(), "node `bad` failed in step 2 (attempt 1): disk on fire");
    assert_eq!(*AUDITED.lock().unwrap(), ["fan"], "`ok` finished, but nothing of step 2 was applied");
    assert!(failing::SLOW_DROPPED.load(Ordering::SeqCst), "the sibling still running was dropped");
    assert!(!failing::SLOW_FINISHED.load(Ordering::SeqCst));
    assert_eq!(failing::AFTER_CALLS.load(Ordering::SeqCst), 0);
}

/// Nodes under retry policies; `fail_times` says how many attempts of `flaky` fail.
#[graph]
mod retrying {
    use super::*;

    #[state]
    pub struct State {
        pub fail_times: u32,
        #[reducer(append)]
        pub attempts: Vec<u32>,
    }

    #[node(entry, next = [flaky, steady])]
    fn fan(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    /// A sync node retried with the default backoff (100 ms, then 200 ms).
    #[node(next = END, retry = RetryPolicy::new(3))]
    fn flaky(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        if rt.attempt() <= state.fail_times {
            return Err(NodeError::msg(format!("attempt {} failed", rt.attempt())));
        }
        Ok(StateUpdate::new().attempts(vec![rt.attempt()]))
    }

    #[node(next = END)]
    fn steady(_state: &State) -> StateUpdate {
        StateUpdate::new().attempts(vec![0])
    }
}

#[tokio::test(start_paused = true)]
async fn a_node_that_fails_twice_succeeds_on_its_third_attempt() {
    let app = retrying::graph().compile().unwrap();
    let started = Instant::now();
    let out = app.invoke(retrying::StateUpdate::new().fail_times(2), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.attempts, [3, 0], "one update, from the third attempt, merged in declaration order");
    assert_eq!(started.elapsed(), Duration::from_millis(300), "backoff 100 ms then 200 ms");
}

#[tokio::test(start_paused = true)]
async fn exhausted_retries_report_the_attempts() {
    let app = retrying::graph().compile().unwrap();
    let error = app.invoke(retrying::StateUpdate::new().fail_times(3), &RunConfig::default()).await.unwrap_err();
    assert!(
        matches!(&error, GraphError::Node { node, step: 2, attempts: 3, source } if node == "flaky" && source.to_string() == "attempt 3 failed"),
        "{error:?}"
    );
}

/// `retry_on` decides which errors get another attempt.
#[graph]
mod picky {
    use super::*;

    fn transient(error: &NodeError) -> bool {
        error.to_string().starts_with("transient")
    }

    #[state]
    pub struct State {
        pub done: bool,
    }

    #[node(entry, next = END, retry = RetryPolicy::new(5).initial_backoff(Duration::from_millis(1)).retry_on(transient))]
    async fn call(rt: &Runtime) -> Result<StateUpdate, NodeError> {
        tokio::task::yield_now().await;
        match rt.attempt() {
            1 => Err(NodeError::msg("transient: try again")),
            _ => Err(NodeError::msg("fatal: bad request")),
        }
    }
}

#[tokio::test(start_paused = true)]
async fn retry_on_stops_retrying_an_error_it_rejects() {
    let app = picky::graph().compile().unwrap();
    let error = app.invoke(picky::State::default(), &RunConfig::default()).await.unwrap_err();
    assert!(
        matches!(&error, GraphError::Node { attempts: 2, source, .. } if source.to_string() == "fatal: bad request"),
        "{error:?}"
    );
}

/// Async nodes with a timeout.
#[graph]
mod timing {
    use super::*;

    #[state]
    pub struct State {
        pub slow_first: bool,
        #[reducer(append)]
        pub attempts: Vec<u32>,
    }

    #[node(entry, next = END, timeout = Duration::from_millis(50))]
    async fn slow(_state: &State) -> StateUpdate {
        tokio::time::sleep(Duration::from_secs(100)).await;
        StateUpdate::new()
    }
}

#[tokio::test(start_paused = true)]
async fn a_node_past_its_timeout_fails_with_a_timeout_error() {
    let app = timing::graph().compile().unwrap();
    let started = Instant::now();
    let error = app.invoke(timing::State::default(), &RunConfig::default()).await.unwrap_err();
    assert_eq!(started.elapsed(), Duration::from_millis(50));
    match &error {
        GraphError::Node { node, attempts: 1, source, .. } => {
            assert_eq!(node, "slow");
            assert_eq!(source.downcast_ref::<TimeoutError>(), Some(&TimeoutError(Duration::from_millis(50))));
        }
        other => panic!("expected a timed-out node, got {other:?}"),
    }
    assert!(error.to_string().ends_with("the node ran past its timeout of 50ms"), "{error}");
}

/// A timeout that a retry policy retries: only timeouts are worth another attempt.
#[graph]
mod timing_retried {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub attempts: Vec<u32>,
    }

    #[node(
        entry,
        next = END,
        timeout = Duration::from_millis(50),
        retry = RetryPolicy::new(3).initial_backoff(Duration::from_millis(10)).retry_on(NodeError::is_timeout)
    )]
    async fn sometimes_slow(rt: &Runtime) -> StateUpdate {
        if rt.attempt() == 1 {
            tokio::time::sleep(Duration::from_secs(100)).await;
        }
        StateUpdate::new().attempts(vec![rt.attempt()])
    }
}

#[tokio::test(start_paused = true)]
async fn a_timed_out_attempt_is_an_error_that_is_timeout() {
    let app = timing_retried::graph().compile().unwrap();
    let started = Instant::now();
    let out = app.invoke(timing_retried::State::default(), &RunConfig::default()).await.unwrap();
    assert_eq!(out.state.attempts, [2], "`retry_on(NodeError::is_timeout)` retried the timeout");
    assert_eq!(started.elapsed(), Duration::from_millis(60), "50 ms timeout, then 10 ms backoff");
}

// ---------------------------------------------------------------------------------------------
// Cancellation
// ---------------------------------------------------------------------------------------------

/// What the hanging nodes report, shared with the test through the run's context.
#[derive(Default)]
pub struct Probe {
    started: AtomicUsize,
    dropped: [AtomicBool; 2],
}

/// Two nodes of one step that never finish.
#[graph(context = Probe)]
mod hanging {
    use super::*;

    #[state]
    pub struct State {
        pub done: bool,
    }

    #[node(entry, next = [hang_a, hang_b])]
    fn fan(_state: &State) -> StateUpdate {
        StateUpdate::new()
    }

    #[node(next = END)]
    async fn hang_a(rt: &Runtime<Probe>) -> StateUpdate {
        let _guard = DropFlag(&rt.context().dropped[0]);
        rt.context().started.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<()>().await;
        StateUpdate::new().done(true)
    }

    #[node(next = END)]
    async fn hang_b(rt: &Runtime<Probe>, _state: &State) -> StateUpdate {
        let _guard = DropFlag(&rt.context().dropped[1]);
        rt.context().started.fetch_add(1, Ordering::SeqCst);
        std::future::pending::<()>().await;
        StateUpdate::new().done(true)
    }
}

fn probed() -> (Arc<Probe>, RunConfig<Probe>) {
    let probe = Arc::new(Probe::default());
    let cfg = RunConfig::default().shared_context(Arc::clone(&probe));
    (probe, cfg)
}

fn assert_all_dropped(probe: &Probe) {
    assert_eq!(probe.started.load(Ordering::SeqCst), 2, "both nodes were running");
    assert!(probe.dropped.iter().all(|d| d.load(Ordering::SeqCst)), "both in-flight nodes were dropped");
}

#[tokio::test(start_paused = true)]
async fn dropping_the_invoke_future_drops_the_running_nodes() {
    let app = hanging::graph().compile().unwrap();
    let (probe, cfg) = probed();
    let result = tokio::time::timeout(Duration::from_millis(10), app.invoke(hanging::State::default(), &cfg)).await;
    assert!(result.is_err(), "the run never finishes");
    assert_all_dropped(&probe);
}

#[tokio::test(start_paused = true)]
async fn losing_a_select_drops_the_running_nodes() {
    let app = hanging::graph().compile().unwrap();
    let (probe, cfg) = probed();
    tokio::select! {
        result = app.invoke(hanging::State::default(), &cfg) => panic!("the run finished: {result:?}"),
        () = tokio::time::sleep(Duration::from_millis(10)) => {}
    }
    assert_all_dropped(&probe);
}

#[tokio::test(start_paused = true)]
async fn a_deadline_stops_the_run_with_deadline_exceeded() {
    let app = hanging::graph().compile().unwrap();
    let (probe, cfg) = probed();
    let started = Instant::now();
    let error = app.invoke(hanging::State::default(), &cfg.deadline(Duration::from_millis(25))).await.unwrap_err();
    assert!(matches!(error, GraphError::DeadlineExceeded { after } if after == Duration::from_millis(25)), "{error:?}");
    assert_eq!(started.elapsed(), Duration::from_millis(25));
    assert_all_dropped(&probe);
}

// ---------------------------------------------------------------------------------------------
// Context and the Runtime
// ---------------------------------------------------------------------------------------------

/// What the run knows and the model never sees.
pub struct Ctx {
    user_id: String,
    bonus: u32,
}

#[graph(context = Ctx)]
mod with_context {
    use super::*;

    #[state]
    pub struct State {
        pub greeting: String,
        #[reducer(add)]
        pub points: u32,
    }

    #[node(entry, next = award)]
    fn greet(rt: &Runtime<Ctx>) -> StateUpdate {
        StateUpdate::new().greeting(format!("hello {}", rt.context().user_id))
    }

    #[node(next = END)]
    async fn award(state: &State, rt: &Runtime<Ctx>) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().points(rt.context().bonus + state.points)
    }
}

#[tokio::test]
async fn nodes_read_the_typed_context() {
    let app = with_context::graph().compile().unwrap();
    let cfg = RunConfig::default().context(Ctx { user_id: "u1".to_owned(), bonus: 5 });
    let out = app.invoke(with_context::StateUpdate::new().points(1), &cfg).await.unwrap();
    assert_eq!(out.state.greeting, "hello u1");
    assert_eq!(out.state.points, 7);
}

#[tokio::test]
async fn a_graph_with_a_context_rejects_a_run_without_one() {
    let app = with_context::graph().compile().unwrap();
    let error = app.invoke(with_context::State::default(), &RunConfig::default()).await.unwrap_err();
    match &error {
        GraphError::MissingContext { graph, context } => {
            assert_eq!(graph, "with_context");
            assert!(context.ends_with("Ctx"), "{context}");
        }
        other => panic!("expected MissingContext, got {other:?}"),
    }
    assert!(error.to_string().contains("RunConfig::context"), "{error}");
}

/// Each node writes what its `Runtime` says about it.
#[graph]
mod introspect {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub seen: Vec<String>,
        #[reducer(append)]
        pub runs: Vec<u64>,
    }

    fn describe(rt: &Runtime) -> String {
        let thread = rt.thread_id().unwrap_or("-");
        format!("{} step {} attempt {} task {} thread {thread}", rt.node(), rt.step(), rt.attempt(), rt.task_index())
    }

    #[node(entry, next = [second, third])]
    fn first(rt: &Runtime) -> StateUpdate {
        StateUpdate::new().seen(vec![describe(rt)]).runs(vec![rt.run_id()])
    }

    #[node(next = END)]
    async fn second(rt: &Runtime, _state: &State) -> StateUpdate {
        tokio::task::yield_now().await;
        StateUpdate::new().seen(vec![describe(rt)]).runs(vec![rt.run_id()])
    }

    #[node(next = END)]
    fn third(_state: &State, rt: &Runtime) -> StateUpdate {
        StateUpdate::new().seen(vec![describe(rt)]).runs(vec![rt.run_id()])
    }
}

#[tokio::test]
async fn the_runtime_tells_a_node_its_step_name_attempt_and_place() {
    let app = introspect::graph().compile().unwrap();
    let out = app.invoke(introspect::State::default(), &RunConfig::thread("t-1")).await.unwrap();
    assert_eq!(
        out.state.seen,
        [
            "first step 1 attempt 1 task 0 thread t-1",
            "second step 2 attempt 1 task 0 thread t-1",
            "third step 2 attempt 1 task 1 thread t-1",
        ]
    );
    let run = out.state.runs[0];
    assert!(out.state.runs.iter().all(|&r| r == run), "one run id per run: {:?}", out.state.runs);
    let again = app.invoke(introspect::State::default(), &RunConfig::default()).await.unwrap();
    assert_ne!(again.state.runs[0], run, "each run has its own id");
    assert!(again.state.seen[0].ends_with("thread -"));
}
