//! Crash safety with real process deaths. A child process runs a graph on a SQLite file and
//! kills itself with SIGKILL at a named save point; a fresh process resumes the thread. The
//! run must reach the reference final state, and a ledger on disk (one line per node run)
//! proves that no task whose write was durable before the crash ran again. A child that dies
//! while it prunes the thread's history must leave the thread as it was.

#![cfg(unix)]

use futures::future::BoxFuture;
use graphwright::Durability;
use graphwright::checkpoint::{
    CheckpointError, CheckpointRecord, Checkpointer, Claim, ListFilter, SqliteSaver, WriteRecord,
};
use graphwright::prelude::*;
use std::collections::HashMap;
use std::io::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

const CHILD: &str = "GRAPHWRIGHT_CRASH_CHILD";
const THREAD: &str = "crash";

/// Where the child dies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Point {
    /// After the first task write of the parallel step is stored, its sibling still running.
    BetweenTaskWrites,
    /// After both task writes of the parallel step are stored, before its checkpoint.
    BetweenWritesAndCheckpoint,
    /// Inside the transaction that stores the checkpoint after step 1, before it commits.
    MidTransaction,
    /// After the checkpoint of the parallel step is stored.
    AfterCheckpoint,
    /// Never: the child runs to the end.
    None,
}

impl Point {
    fn name(self) -> &'static str {
        match self {
            Self::BetweenTaskWrites => "between-task-writes",
            Self::BetweenWritesAndCheckpoint => "between-writes-and-checkpoint",
            Self::MidTransaction => "mid-transaction",
            Self::AfterCheckpoint => "after-checkpoint",
            Self::None => "none",
        }
    }

    fn parse(name: &str) -> Self {
        [Self::BetweenTaskWrites, Self::BetweenWritesAndCheckpoint, Self::MidTransaction, Self::AfterCheckpoint]
            .into_iter()
            .find(|p| p.name() == name)
            .unwrap_or(Self::None)
    }
}

fn die() -> ! {
    let _ = Command::new("kill").args(["-KILL", &std::process::id().to_string()]).status();
    loop {
        std::thread::sleep(std::time::Duration::from_mins(1));
    }
}

/// Appends one line per finished node run, synced, so the count survives the crash.
fn ledger(node: &str) {
    let path = std::env::var("GRAPHWRIGHT_CRASH_LEDGER").expect("the child knows its ledger");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("ledger opens");
    // One write: a process killed while it notes leaves no half line.
    file.write_all(format!("{node}\n").as_bytes()).expect("ledger writes");
    file.sync_all().expect("ledger syncs");
}

#[graph]
mod pipeline {
    use super::ledger;
    use std::time::Duration;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub log: Vec<String>,
        #[reducer(add)]
        pub total: u64,
    }

    #[node(entry, next = [b, c])]
    fn a(_state: &State) -> StateUpdate {
        ledger("a");
        StateUpdate::new().log(vec!["a".into()]).total(1)
    }

    #[node(next = d)]
    fn b(_state: &State) -> StateUpdate {
        ledger("b");
        StateUpdate::new().log(vec!["b".into()]).total(10)
    }

    #[node(next = d)]
    async fn c(_state: &State) -> StateUpdate {
        tokio::time::sleep(Duration::from_millis(150)).await;
        ledger("c");
        StateUpdate::new().log(vec!["c".into()]).total(100)
    }

    #[node(next = END)]
    fn d(_state: &State) -> StateUpdate {
        ledger("d");
        StateUpdate::new().log(vec!["d".into()]).total(1000)
    }
}

/// Dies at once (a fail point's hook).
fn die_now() {
    die();
}

static PUTS: AtomicU32 = AtomicU32::new(0);

/// Dies inside the commit of the third `put` (the checkpoint after step 1).
fn die_in_third_put() {
    if PUTS.fetch_add(1, Ordering::SeqCst) == 2 {
        die();
    }
}

/// A SQLite saver that dies at a save point.
struct Crashing {
    inner: SqliteSaver,
    point: Point,
    writes: AtomicU32,
    puts: AtomicU32,
}

impl Checkpointer for Crashing {
    fn claim<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<Claim, CheckpointError>> {
        self.inner.claim(thread)
    }

    fn release<'a>(&'a self, claim: &'a Claim) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.release(claim)
    }

    fn put<'a>(
        &'a self,
        claim: &'a Claim,
        record: CheckpointRecord,
        expected: Option<String>,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            self.inner.put(claim, record, expected, writes).await?;
            if self.puts.fetch_add(1, Ordering::SeqCst) == 3 && self.point == Point::AfterCheckpoint {
                die();
            }
            Ok(())
        })
    }

    fn put_writes<'a>(
        &'a self,
        claim: &'a Claim,
        writes: Vec<WriteRecord>,
    ) -> BoxFuture<'a, Result<(), CheckpointError>> {
        Box::pin(async move {
            self.inner.put_writes(claim, writes).await?;
            let n = self.writes.fetch_add(1, Ordering::SeqCst);
            match (self.point, n) {
                (Point::BetweenTaskWrites, 0) | (Point::BetweenWritesAndCheckpoint, 1) => die(),
                _ => Ok(()),
            }
        })
    }

    fn get<'a>(
        &'a self,
        thread: &'a str,
        id: Option<&'a str>,
    ) -> BoxFuture<'a, Result<Option<CheckpointRecord>, CheckpointError>> {
        self.inner.get(thread, id)
    }

    fn list<'a>(
        &'a self,
        thread: &'a str,
        filter: &'a ListFilter,
    ) -> BoxFuture<'a, Result<Vec<CheckpointRecord>, CheckpointError>> {
        self.inner.list(thread, filter)
    }

    fn writes<'a>(
        &'a self,
        thread: &'a str,
        checkpoint: &'a str,
    ) -> BoxFuture<'a, Result<Vec<WriteRecord>, CheckpointError>> {
        self.inner.writes(thread, checkpoint)
    }

    fn delete_thread<'a>(&'a self, thread: &'a str) -> BoxFuture<'a, Result<(), CheckpointError>> {
        self.inner.delete_thread(thread)
    }
}

/// The child's side: run (or resume) the thread, dying where told. Ignored, so that it is
/// not counted as a test of the parent run; the children ask for it with `--ignored`.
#[test]
#[ignore = "the child processes' entry point: the crash tests start it"]
fn crash_child() {
    let Ok(spec) = std::env::var(CHILD) else { return };
    let (mode, point, db) = {
        let mut parts = spec.splitn(3, '|');
        (parts.next().unwrap().to_owned(), Point::parse(parts.next().unwrap()), PathBuf::from(parts.next().unwrap()))
    };
    let mut sqlite = SqliteSaver::open(&db).unwrap();
    if mode == "prune" {
        let app = pipeline::graph().checkpointer(sqlite.before_commit(die_now)).compile().unwrap();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        runtime.block_on(app.prune_history(&RunConfig::thread(THREAD))).unwrap();
        return;
    }
    if point == Point::MidTransaction {
        sqlite = sqlite.before_commit(die_in_third_put);
    }
    // The input is stored with its checkpoint, so the first separate writes are the parallel
    // step's.
    let saver = Crashing { inner: sqlite, point, writes: AtomicU32::new(0), puts: AtomicU32::new(0) };
    let app = pipeline::graph().checkpointer(saver).compile().unwrap();
    let cfg = RunConfig::thread(THREAD).durability(Durability::Sync);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let out =
            if mode == "run" { app.invoke(pipeline::State::default(), &cfg).await } else { app.resume(&cfg, ()).await };
        out.unwrap();
    });
}

/// Runs the child and waits for it. Its output (the test harness's own lines, and a panic's
/// message if it failed) is captured rather than inherited, so that it does not mix into this
/// run's report as tests of its own; it is shown when the child ended otherwise than expected.
fn child(mode: &str, point: Point, db: &Path, ledger: &Path) -> Child {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "crash_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{mode}|{}|{}", point.name(), db.display()))
        .env("GRAPHWRIGHT_CRASH_LEDGER", ledger)
        .output()
        .unwrap();
    Child {
        status: output.status,
        output: String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into_owned(),
    }
}

/// How a child process ended, and what it printed.
struct Child {
    status: std::process::ExitStatus,
    output: String,
}

fn runs(ledger: &Path) -> HashMap<String, usize> {
    let text = std::fs::read_to_string(ledger).unwrap_or_default();
    let mut counts = HashMap::new();
    for line in text.lines() {
        *counts.entry(line.to_owned()).or_default() += 1;
    }
    counts
}

/// The nodes whose writes were durable at the thread's head when the process died.
async fn durable_tasks(db: &Path) -> Vec<String> {
    let saver = SqliteSaver::open(db).unwrap();
    let Some(head) = saver.get(THREAD, None).await.unwrap() else { return Vec::new() };
    let app = pipeline::graph().checkpointer(saver.clone()).compile().unwrap();
    let tasks = app.get_state(&RunConfig::thread(THREAD)).await.unwrap().unwrap().tasks;
    saver
        .writes(THREAD, &head.id)
        .await
        .unwrap()
        .into_iter()
        .filter(|w| w.index == 0 && w.task != u32::MAX)
        .map(|w| tasks[w.task as usize].node.clone())
        .collect()
}

async fn crash_and_resume(point: Point, durable_at_crash: &[&str], ran_before_crash: &[(&str, usize)]) {
    let dir = tempfile::tempdir().unwrap();
    let (db, ledger) = (dir.path().join("crash.db"), dir.path().join("ledger"));
    let run = child("run", point, &db, &ledger);
    assert_eq!(run.status.signal(), Some(9), "{point:?}: the child died by SIGKILL; it printed:\n{}", run.output);

    let durable = durable_tasks(&db).await;
    assert_eq!(durable, durable_at_crash, "{point:?}: the task writes that were durable at the crash");
    let before = runs(&ledger);
    for (node, count) in ran_before_crash {
        assert_eq!(before.get(*node).copied().unwrap_or(0), *count, "{point:?}: runs of `{node}` before the crash");
    }

    let resume = child("resume", Point::None, &db, &ledger);
    assert!(resume.status.success(), "{point:?}: the resuming process finished; it printed:\n{}", resume.output);
    let after = runs(&ledger);
    for node in &durable {
        assert_eq!(after[node], before[node], "{point:?}: `{node}` had a durable write and did not run again");
    }
    for node in ["a", "b", "c", "d"] {
        let count = after.get(node).copied().unwrap_or(0);
        assert!((1..=2).contains(&count), "{point:?}: `{node}` ran {count} times");
    }

    let app = pipeline::graph().checkpointer(SqliteSaver::open(&db).unwrap()).compile().unwrap();
    let end = app.get_state(&RunConfig::thread(THREAD)).await.unwrap().unwrap();
    assert_eq!(end.state.log, ["a", "b", "c", "d"], "{point:?}: the reference final state");
    assert_eq!(end.state.total, 1111, "{point:?}");
    assert!(end.next.is_empty());
}

#[tokio::test]
async fn killed_between_task_writes() {
    crash_and_resume(Point::BetweenTaskWrites, &["b"], &[("a", 1), ("b", 1), ("c", 0)]).await;
}

#[tokio::test]
async fn killed_between_writes_and_checkpoint() {
    crash_and_resume(Point::BetweenWritesAndCheckpoint, &["b", "c"], &[("a", 1), ("b", 1), ("c", 1), ("d", 0)]).await;
}

#[tokio::test]
async fn killed_mid_transaction() {
    // The checkpoint after `a` never committed, and `a`'s write was in that transaction: `a`
    // finished in memory but not on disk, so it runs again; nothing durable is repeated.
    crash_and_resume(Point::MidTransaction, &[], &[("a", 1), ("b", 0)]).await;
}

#[tokio::test]
async fn killed_after_a_checkpoint() {
    crash_and_resume(Point::AfterCheckpoint, &[], &[("a", 1), ("b", 1), ("c", 1), ("d", 0)]).await;
}

/// A process killed inside the transaction that prunes a thread's history leaves the thread as
/// it was; pruning again (the dead process's claim taken over) then keeps the latest state.
#[tokio::test]
async fn killed_mid_prune() {
    let dir = tempfile::tempdir().unwrap();
    let (db, ledger) = (dir.path().join("crash.db"), dir.path().join("ledger"));
    let run = child("run", Point::None, &db, &ledger);
    assert!(run.status.success(), "the run finished; it printed:\n{}", run.output);
    let app = pipeline::graph().checkpointer(SqliteSaver::open(&db).unwrap()).compile().unwrap();
    let cfg = RunConfig::thread(THREAD);
    let ids = |history: Vec<graphwright::StateSnapshot<pipeline::State>>| {
        history.into_iter().map(|s| (s.checkpoint_id, s.parent_id)).collect::<Vec<_>>()
    };
    let before = ids(app.state_history(&cfg).await.unwrap());

    let prune = child("prune", Point::None, &db, &ledger);
    assert_eq!(prune.status.signal(), Some(9), "the child died by SIGKILL; it printed:\n{}", prune.output);
    assert_eq!(ids(app.state_history(&cfg).await.unwrap()), before, "the thread is as it was");

    assert_eq!(app.prune_history(&cfg).await.unwrap(), before.len() - 1);
    let history = app.state_history(&cfg).await.unwrap();
    assert_eq!(history.len(), 1);
    assert_eq!(
        (history[0].state.log.clone(), history[0].state.total),
        (vec!["a", "b", "c", "d"].into_iter().map(String::from).collect(), 1111)
    );
}
