//! Pruning a thread's history (`CompiledGraph::prune_history`) on a SQLite file: the thread
//! keeps its newest checkpoint alone, reads exactly as before (state, next tasks, finished
//! outputs, interrupts, answers, results of finished tool calls), and continues as a twin thread
//! that was never pruned does; a subgraph paused at the head still resumes, storage shrinks,
//! pruning twice is harmless, and a thread with a run in progress is left alone.

use graphwright::checkpoint::{CheckpointError, Checkpointer, SqliteSaver};
use graphwright::prelude::*;
use graphwright::{Durability, StateSnapshot};
use std::path::Path;
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{LazyLock, Mutex};
use tokio::sync::Notify;

/// Threads whose `side` task ran, once per run: keyed by thread so tests can run side by side.
static SIDE_RUNS: Mutex<Vec<String>> = Mutex::new(Vec::new());

fn side_runs(thread: &str) -> usize {
    SIDE_RUNS.lock().unwrap().iter().filter(|t| *t == thread).count()
}

#[graph]
mod long {
    use super::*;

    #[state]
    #[derive(PartialEq)]
    pub struct State {
        pub count: u32,
        pub limit: u32,
        #[reducer(append)]
        pub log: Vec<String>,
    }

    /// One step of a long run, until `limit`; a line of the log each.
    #[node(entry, next = step | gate)]
    fn step(state: &State) -> (StateUpdate, StepNext) {
        let count = state.count + 1;
        let update = StateUpdate::new().count(count).log(vec![format!("step {count:03} {}", "x".repeat(40))]);
        (update, if count < state.limit { StepNext::Step } else { StepNext::Gate })
    }

    #[node(next = [ask, side])]
    fn gate(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["gate".into()])
    }

    /// Asks two questions, one pause each.
    #[node(next = finish)]
    fn ask(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let first: String = rt.interrupt("first?")?;
        let second: String = rt.interrupt("second?")?;
        Ok(StateUpdate::new().log(vec![format!("answers {first} {second}")]))
    }

    /// Finishes at once, beside `ask` (counted, so a second run of it is seen).
    #[node(next = finish)]
    fn side(_state: &State, rt: &Runtime) -> StateUpdate {
        SIDE_RUNS.lock().unwrap().push(rt.thread_id().unwrap_or_default().to_owned());
        StateUpdate::new().log(vec!["side".into()])
    }

    #[node(next = END)]
    fn finish(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["finished".into()])
    }
}

fn saver(dir: &Path) -> SqliteSaver {
    SqliteSaver::open(dir.join("threads.db")).unwrap()
}

/// How a snapshot reads, but for its parent (which pruning drops).
fn reading<S: State + std::fmt::Debug>(snapshot: &StateSnapshot<S>) -> String
where
    S::Update: std::fmt::Debug,
{
    let mut snapshot = snapshot.clone();
    snapshot.parent_id = None;
    format!("{snapshot:?}")
}

/// Rows of the SQLite file: (checkpoints, writes), the thread's and its subgraphs' alike.
fn rows(dir: &Path) -> (i64, i64) {
    let db = rusqlite::Connection::open(dir.join("threads.db")).unwrap();
    let count = |table: &str| db.query_row(&format!("SELECT count(*) FROM {table}"), [], |r| r.get(0)).unwrap();
    (count("checkpoints"), count("writes"))
}

/// A long run paused at `ask`'s second question (the first answered, `side` finished), on
/// `thread`.
async fn paused_twice(app: &CompiledGraph<long::State>, thread: &str) -> RunConfig {
    let cfg = RunConfig::thread(thread);
    let first = app.invoke(long::State { limit: 40, ..long::State::default() }, &cfg).await.unwrap();
    assert_eq!(first.interrupts[0].value, "first?");
    let second = app.resume(&cfg, "one").await.unwrap();
    assert_eq!(second.interrupts[0].value, "second?");
    cfg
}

#[tokio::test]
async fn a_pruned_thread_reads_and_continues_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let saver = saver(dir.path());
    let app = long::graph().checkpointer(saver.clone()).compile().unwrap();
    let cfg = paused_twice(&app, "pruned").await;
    let twin = paused_twice(&app, "twin").await;

    let before = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(before.next, ["ask"], "`side` finished; `ask` waits for its second answer");
    assert_eq!(before.interrupts.len(), 1);
    let history = app.state_history(&cfg).await.unwrap().len();
    assert!(history > 40, "{history} checkpoints");
    let head = saver.get("pruned", None).await.unwrap().unwrap();
    let (checkpoints, writes) = rows(dir.path());

    assert_eq!(app.prune_history(&cfg).await.unwrap(), history - 1);

    let after = app.get_state(&cfg).await.unwrap().unwrap();
    assert_eq!(reading(&after), reading(&before), "the same state, next tasks, outputs and interrupts");
    assert_eq!((after.checkpoint_id.as_str(), after.parent_id.as_deref()), (head.id.as_str(), None));
    let history = app.state_history(&cfg).await.unwrap();
    assert_eq!(history.len(), 1);
    let rewritten = saver.get("pruned", None).await.unwrap().unwrap();
    assert!(
        rewritten.body.len() > head.body.len() + 40 * 40,
        "the head was a delta and now holds the state: {} bytes, then {}",
        head.body.len(),
        rewritten.body.len()
    );
    let (checkpoints_after, writes_after) = rows(dir.path());
    assert_eq!(checkpoints_after, checkpoints / 2 + 1, "the twin's checkpoints stay");
    assert!(writes_after < writes, "writes: {writes} before, {writes_after} after");

    // Pruning twice changes nothing.
    assert_eq!(app.prune_history(&cfg).await.unwrap(), 0);
    assert_eq!(reading(&app.get_state(&cfg).await.unwrap().unwrap()), reading(&before));
    assert_eq!(rows(dir.path()), (checkpoints_after, writes_after));

    // Both threads take the second answer alike: the first answer was kept (the first question
    // is not asked again), and `side` did not run again.
    let out = app.resume(&cfg, "two").await.unwrap();
    let twin_out = app.resume(&twin, "two").await.unwrap();
    assert!(!out.is_interrupted(), "{:?}", out.interrupts);
    assert_eq!(out.state, twin_out.state);
    assert_eq!(out.state.log[out.state.log.len() - 3..], ["answers one two", "side", "finished"]);
    assert_eq!((side_runs("pruned"), side_runs("twin")), (1, 1));

    // A new run on the pruned thread goes on as on the twin.
    let input = long::StateUpdate::new().limit(43);
    let (again, twin_again) = (app.invoke(input.clone(), &cfg).await.unwrap(), app.invoke(input, &twin).await.unwrap());
    assert_eq!((again.state, again.interrupts.len()), (twin_again.state, twin_again.interrupts.len()));
    let pruned_history = app.state_history(&cfg).await.unwrap().len();
    assert!(pruned_history > 1 && pruned_history < app.state_history(&twin).await.unwrap().len());
}

/// Signals between a test and the node of `held` it holds up.
static ENTERED: LazyLock<Notify> = LazyLock::new(Notify::new);
static RELEASE: LazyLock<Notify> = LazyLock::new(Notify::new);

#[graph]
mod held {
    use super::*;

    #[state]
    pub struct State {
        pub done: bool,
    }

    /// Waits until the test lets it go.
    #[node(entry, next = END)]
    async fn wait(_state: &State) -> StateUpdate {
        ENTERED.notify_one();
        RELEASE.notified().await;
        StateUpdate::new().done(true)
    }
}

#[tokio::test]
async fn a_thread_with_a_run_in_progress_is_busy() {
    let dir = tempfile::tempdir().unwrap();
    let app = held::graph().checkpointer(saver(dir.path())).compile().unwrap();
    // Each checkpoint stored before the run goes on, so the history can be counted meanwhile.
    let cfg = RunConfig::thread("busy").durability(Durability::Sync);
    let run = {
        let (app, cfg) = (app.clone(), cfg.clone());
        tokio::spawn(async move { app.invoke(held::State::default(), &cfg).await })
    };
    ENTERED.notified().await;
    let stored = app.state_history(&cfg).await.unwrap().len();
    let busy = app.prune_history(&cfg).await.unwrap_err();
    assert!(matches!(&busy, GraphError::ThreadBusy { thread } if thread == "busy"), "{busy}");
    assert_eq!(app.state_history(&cfg).await.unwrap().len(), stored, "nothing was deleted");
    RELEASE.notify_one();
    assert!(run.await.unwrap().unwrap().state.done, "the run was not disturbed");
    let stored = app.state_history(&cfg).await.unwrap().len();
    assert_eq!(app.prune_history(&cfg).await.unwrap(), stored - 1, "once it ended, the thread is pruned");
    assert!(app.get_state(&cfg).await.unwrap().unwrap().state.done);
}

#[graph]
mod inner {
    use graphwright::prelude::*;

    #[state]
    #[derive(PartialEq)]
    pub struct State {
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = ask)]
    fn prepare(_state: &State) -> StateUpdate {
        StateUpdate::new().log(vec!["prepared".into()])
    }

    #[node(next = END)]
    fn ask(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let answer: String = rt.interrupt("inner?")?;
        Ok(StateUpdate::new().log(vec![format!("inner answer {answer}")]))
    }
}

#[graph(state = super::inner::State)]
mod outer {
    use graphwright::prelude::*;

    #[node(entry, next = interview)]
    fn warm(_state: &super::inner::State) -> super::inner::StateUpdate {
        super::inner::StateUpdate::new().log(vec!["warm".into()])
    }

    #[node(subgraph, next = END)]
    fn interview() -> StateGraph<super::inner::State> {
        super::inner::graph()
    }
}

fn count(log: &[String], line: &str) -> usize {
    log.iter().filter(|l| *l == line).count()
}

#[tokio::test]
async fn a_run_paused_inside_a_subgraph_still_resumes() {
    let dir = tempfile::tempdir().unwrap();
    let saver = saver(dir.path());
    let app = outer::graph().checkpointer(saver.clone()).compile().unwrap();
    let cfg = RunConfig::thread("nested");
    // A first run goes through the subgraph; the second pauses inside it.
    app.invoke(inner::State::default(), &cfg).await.unwrap();
    app.resume(&cfg, "a").await.unwrap();
    let paused = app.invoke(inner::StateUpdate::new(), &cfg).await.unwrap();
    assert_eq!(paused.interrupts[0].value, "inner?");
    assert_eq!(saver.thread_keys("nested").await.unwrap().len(), 3, "the thread and two runs of the subgraph");
    let before = app.get_state_with_subgraphs(&cfg).await.unwrap().unwrap();
    let inside = before.tasks[0].subgraph.as_ref().expect("the paused subgraph is shown");
    assert_eq!(
        (inside.next.as_slice(), inside.state["log"].as_array().map(Vec::len)),
        (&["ask".to_owned()][..], Some(5))
    );

    assert!(app.prune_history(&cfg).await.unwrap() > 0);
    let after = app.get_state_with_subgraphs(&cfg).await.unwrap().unwrap();
    assert_eq!(reading(&after), reading(&before), "the paused subgraph reads as before");
    let mut keys = saver.thread_keys("nested").await.unwrap();
    keys.sort();
    assert_eq!(keys.len(), 2, "the finished run's subgraph checkpoints went: {keys:?}");
    assert!(keys[1].contains(&format!(":{}:", after.checkpoint_id)), "the paused one stayed: {keys:?}");

    let out = app.resume(&cfg, "b").await.unwrap();
    assert!(!out.is_interrupted());
    assert_eq!(count(&out.state.log, "inner answer b"), 1);
    assert_eq!(count(&out.state.log, "prepared"), 2, "the subgraph continued where it paused, not from its start");
    assert_eq!(count(&out.state.log, "warm"), 2);

    // Finished, the thread keeps no subgraph checkpoints at all.
    app.prune_history(&cfg).await.unwrap();
    assert_eq!(saver.thread_keys("nested").await.unwrap(), ["nested"]);
    assert_eq!(app.get_state(&cfg).await.unwrap().unwrap().state, out.state);
    let (checkpoints, _) = rows(dir.path());
    assert_eq!(checkpoints, 1, "one checkpoint left in the file");
}

static TALLIES: AtomicU32 = AtomicU32::new(0);

/// Counts its runs.
#[tool]
fn tally(tag: String) -> String {
    TALLIES.fetch_add(1, Ordering::SeqCst);
    tag
}

#[graph]
mod reviewed {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
        pub verdict: String,
    }

    /// Runs the calls, then asks whether their results may go out.
    #[node(entry, next = END)]
    async fn tools(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let answers = ToolNode::new(tools![Tally]).run(&state.messages, state, rt).await;
        let verdict: String = rt.interrupt("publish these results?")?;
        Ok(StateUpdate::new().messages(answers).verdict(verdict))
    }
}

#[tokio::test]
async fn finished_tool_calls_are_kept() {
    let dir = tempfile::tempdir().unwrap();
    let app = reviewed::graph().checkpointer(saver(dir.path())).compile().unwrap();
    let cfg = RunConfig::thread("reviewed");
    let ask = Message::assistant("").with_tool_calls(vec![
        ToolCall::new("t1", "tally", json!({"tag": "one"})),
        ToolCall::new("t2", "tally", json!({"tag": "two"})),
    ]);
    let paused = app.invoke(reviewed::StateUpdate::new().messages(vec![ask]), &cfg).await.unwrap();
    assert!(paused.is_interrupted());
    assert_eq!(TALLIES.load(Ordering::SeqCst), 2);
    let before = app.get_state(&cfg).await.unwrap().unwrap();
    assert!(app.prune_history(&cfg).await.unwrap() > 0);
    assert_eq!(reading(&app.get_state(&cfg).await.unwrap().unwrap()), reading(&before));
    let out = app.resume(&cfg, "yes").await.unwrap();
    assert_eq!(TALLIES.load(Ordering::SeqCst), 2, "the resumed node reused both stored results");
    let answers: Vec<_> = out.state.messages[1..].iter().map(|m| m.content.as_str()).collect();
    assert_eq!((answers.as_slice(), out.state.verdict.as_str()), (&["one", "two"][..], "yes"));
}

#[tokio::test]
async fn what_cannot_be_pruned_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let app = long::graph().checkpointer(saver(dir.path())).compile().unwrap();
    let error = app.prune_history(&RunConfig::default()).await.unwrap_err();
    assert!(matches!(error, GraphError::NoThread { .. }), "{error}");
    assert_eq!(app.prune_history(&RunConfig::thread("empty")).await.unwrap(), 0, "a thread with no checkpoint");

    let cfg = paused_twice(&app, "pinned").await;
    let oldest = app.state_history(&cfg).await.unwrap().pop().unwrap().checkpoint_id;
    let stored = app.state_history(&cfg).await.unwrap().len();
    let moved = app.prune_history(&cfg.clone().checkpoint(oldest.clone())).await.unwrap_err();
    assert!(
        matches!(&moved, GraphError::Checkpoint(CheckpointError::Conflict { expected, .. }) if expected.as_deref() == Some(oldest.as_str())),
        "a pinned checkpoint that is not the newest: {moved}"
    );
    assert_eq!(app.state_history(&cfg).await.unwrap().len(), stored, "nothing was deleted");
    let head = app.get_state(&cfg).await.unwrap().unwrap().checkpoint_id;
    assert_eq!(app.prune_history(&cfg.clone().checkpoint(head)).await.unwrap(), stored - 1, "the newest, pinned");
}
