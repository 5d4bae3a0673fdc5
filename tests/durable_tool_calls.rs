//! Durable tool calls: each finished call of a `ToolNode` is stored as a write of its task as it
//! finishes, so a task that runs again (after the process is killed between two calls of one
//! message, after an interrupt later in the node, or on a retry) never runs a finished call
//! again. A ledger on disk (one line per call run) is the proof.

#![cfg(unix)]

use graphwright::checkpoint::{Checkpointer, SqliteSaver};
use graphwright::model::ScriptedModel;
use graphwright::prebuilt::{MessagesState, react_agent};
use graphwright::prelude::*;
use std::io::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

const CHILD: &str = "GRAPHWRIGHT_DURABLE_CALLS_CHILD";
const THREAD: &str = "order-17";

/// The database this process works on: the child is told by its environment, the parent sets it.
static DB: std::sync::Mutex<Option<PathBuf>> = std::sync::Mutex::new(None);

fn db_path() -> PathBuf {
    DB.lock().unwrap().clone().unwrap_or_else(|| PathBuf::from(std::env::var(CHILD).expect("the database's path")))
}

fn ledger_path() -> PathBuf {
    db_path().with_extension("ledger")
}

fn record(entry: &str) {
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(ledger_path()).unwrap();
    writeln!(file, "{entry}").unwrap();
}

fn ledger(db: &Path) -> Vec<String> {
    std::fs::read_to_string(db.with_extension("ledger")).unwrap_or_default().lines().map(str::to_owned).collect()
}

/// Charge the card (a side effect that must happen once).
#[tool]
fn charge(amount: u32) -> String {
    record("charge");
    format!("charged {amount}")
}

/// Ship the order. In the child process it waits until the charge's result is stored, then the
/// process is killed: a crash between the two calls of one message.
#[tool]
async fn ship(order: String) -> String {
    if std::env::var("GRAPHWRIGHT_DURABLE_CALLS_DIE").is_ok() {
        let db = db_path();
        let saver = SqliteSaver::open(&db).unwrap();
        // The charge's result is the only write against the newest checkpoint (the step has
        // one task, whose output is stored with the checkpoint after it).
        loop {
            if let Some(head) = saver.get(THREAD, None).await.unwrap()
                && !saver.writes(THREAD, &head.id).await.unwrap().is_empty()
            {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        let _ = Command::new("kill").args(["-KILL", &std::process::id().to_string()]).status();
        std::future::pending::<()>().await;
    }
    record("ship");
    format!("shipped {order}")
}

fn shop(db: &Path, replies: Vec<Message>) -> CompiledGraph<MessagesState> {
    react_agent(ScriptedModel::new(replies), tools![Charge, Ship])
        .graph()
        .checkpointer(SqliteSaver::open(db).unwrap())
        .compile()
        .unwrap()
}

fn order() -> Message {
    Message::assistant("").with_tool_calls(vec![
        ToolCall::new("c1", "charge", json!({"amount": 40})),
        ToolCall::new("c2", "ship", json!({"order": "A-17"})),
    ])
}

/// The child's side: start the order and be killed inside `ship`. Ignored, so that it runs only
/// when the test below starts it.
#[tokio::test]
#[ignore = "run by killed_between_two_calls_of_one_message as its child process"]
async fn child_places_the_order() {
    let db = PathBuf::from(std::env::var(CHILD).expect("started by the parent test"));
    let app = shop(&db, vec![order()]);
    let _ = app.invoke(MessagesState::new([Message::user("buy A-17")]), &RunConfig::thread(THREAD)).await;
    unreachable!("the process is killed inside `ship`");
}

#[tokio::test]
async fn killed_between_two_calls_of_one_message() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("shop.sqlite");
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "child_places_the_order", "--ignored", "--nocapture"])
        .env(CHILD, &db)
        .env("GRAPHWRIGHT_DURABLE_CALLS_DIE", "1")
        .output()
        .unwrap();
    assert_eq!(output.status.signal(), Some(9), "the child was killed: {}", String::from_utf8_lossy(&output.stderr));
    assert_eq!(ledger(&db), ["charge"], "the child charged, then died before shipping");

    // A fresh process (this one) continues the thread: the charge is answered from its stored
    // result, the shipment runs.
    *DB.lock().unwrap() = Some(db.clone());
    let app = shop(&db, vec![Message::assistant("Charged and shipped.")]);
    let out = app.resume(&RunConfig::thread(THREAD), ()).await.unwrap();
    assert_eq!(ledger(&db), ["charge", "ship"], "the card was charged once");
    let answers: Vec<_> = out.state.messages[2..4].iter().map(|m| m.content.as_str()).collect();
    assert_eq!(answers, ["charged 40", "shipped A-17"]);
    assert_eq!(out.state.last_reply(), Some("Charged and shipped."));
}

static RUNS: AtomicU32 = AtomicU32::new(0);

/// Counts its runs.
#[tool]
fn tally(tag: String) -> String {
    RUNS.fetch_add(1, Ordering::SeqCst);
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
async fn a_node_paused_after_its_calls_does_not_run_them_again_on_resume() {
    let app = reviewed::graph().compile().unwrap();
    let cfg = RunConfig::thread("reviewed");
    let ask = Message::assistant("").with_tool_calls(vec![
        ToolCall::new("t1", "tally", json!({"tag": "one"})),
        ToolCall::new("t2", "tally", json!({"tag": "two"})),
    ]);
    let before = RUNS.load(Ordering::SeqCst);
    let paused = app.invoke(reviewed::StateUpdate::new().messages(vec![ask]), &cfg).await.unwrap();
    assert!(paused.is_interrupted());
    assert_eq!(RUNS.load(Ordering::SeqCst), before + 2);
    let out = app.resume(&cfg, json!("yes")).await.unwrap();
    assert_eq!(RUNS.load(Ordering::SeqCst), before + 2, "the resumed node reused both results");
    let answers: Vec<_> = out.state.messages[1..].iter().map(|m| m.content.as_str()).collect();
    assert_eq!((answers.as_slice(), out.state.verdict.as_str()), (&["one", "two"][..], "yes"));
}

static FLAKY: AtomicU32 = AtomicU32::new(0);
static SENDS: AtomicU32 = AtomicU32::new(0);

/// Sends a notice (counted).
#[tool]
fn notify(tag: String) -> String {
    SENDS.fetch_add(1, Ordering::SeqCst);
    tag
}

#[graph]
mod retried {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    /// Runs the calls, then fails once after them.
    #[node(entry, next = END, retry = RetryPolicy::new(2).initial_backoff(std::time::Duration::ZERO))]
    async fn tools(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let answers = ToolNode::new(tools![Notify]).run(&state.messages, state, rt).await;
        if FLAKY.fetch_add(1, Ordering::SeqCst) == 0 {
            return Err(NodeError::msg("the connection dropped after the calls"));
        }
        Ok(StateUpdate::new().messages(answers))
    }
}

#[tokio::test]
async fn a_retried_node_does_not_run_its_finished_calls_again() {
    let app = retried::graph().compile().unwrap();
    let ask = Message::assistant("").with_tool_calls(vec![ToolCall::new("r1", "notify", json!({"tag": "once"}))]);
    let out = app.invoke(retried::StateUpdate::new().messages(vec![ask]), &RunConfig::default()).await.unwrap();
    assert_eq!(FLAKY.load(Ordering::SeqCst), 2, "the node ran twice");
    assert_eq!(SENDS.load(Ordering::SeqCst), 1, "the call ran once");
    assert_eq!(out.state.messages[1].content, "once");
}
