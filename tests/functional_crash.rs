//! An entrypoint of 50 tasks on a SQLite file, killed with SIGKILL at random points and
//! resumed by a new process: a ledger on disk (one line per task that finished its work) shows
//! that no task whose result was stored ran again, and the resumed run returns what an
//! uninterrupted run returns. The points are drawn from `GRAPHWRIGHT_TEST_FUNCTIONAL_SEED` (a
//! new seed each run when unset; a failure prints it).

#![cfg(unix)]

use graphwright::Durability;
use graphwright::SqliteSaver;
use graphwright::prelude::*;
use std::collections::HashMap;
use std::io::Write as _;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::Command;

const CHILD: &str = "GRAPHWRIGHT_FUNCTIONAL_CRASH_CHILD";
const THREAD: &str = "fifty";
const TASKS: u32 = 50;

/// Where a child dies: in task `task`, before it does anything (`Start`) or after its work is
/// done and noted but before its result is stored (`Finish`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Point {
    task: u32,
    finish: bool,
}

impl Point {
    fn encode(point: Option<Self>) -> String {
        point.map_or_else(|| "none".to_owned(), |p| format!("{}:{}", p.task, if p.finish { "finish" } else { "start" }))
    }

    fn decode(text: &str) -> Option<Self> {
        let (task, phase) = text.split_once(':')?;
        Some(Self { task: task.parse().ok()?, finish: phase == "finish" })
    }
}

/// Kills this process where the child was told to die.
fn maybe_die(task: u32, finish: bool) {
    let point = std::env::var(CHILD).ok().and_then(|spec| Point::decode(spec.split('|').nth(1)?));
    if point == Some(Point { task, finish }) {
        let _ = Command::new("kill").args(["-KILL", &std::process::id().to_string()]).status();
        std::thread::sleep(std::time::Duration::from_secs(10));
    }
}

/// Appends one synced line to the ledger the child was given.
fn ledger(line: &str) {
    let path = std::env::var("GRAPHWRIGHT_FUNCTIONAL_LEDGER").expect("the child knows its ledger");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("ledger opens");
    file.write_all(format!("{line}\n").as_bytes()).expect("ledger writes");
    file.sync_all().expect("ledger syncs");
}

#[task]
async fn square(n: u32) -> u64 {
    maybe_die(n, false);
    tokio::task::yield_now().await;
    ledger(&format!("square {n}"));
    maybe_die(n, true);
    u64::from(n) * u64::from(n)
}

/// Fifty tasks, one after the other, each result feeding the sum.
#[entrypoint]
async fn fifty(count: u32) -> Result<u64, NodeError> {
    let mut sum = 0;
    for n in 0..count {
        sum += square(n).await?;
    }
    Ok(sum)
}

/// The child's side: run or resume the thread, dying where told. Ignored, so that it is not
/// counted as a test of the parent run; the children ask for it with `--ignored`.
#[test]
#[ignore = "the child processes' entry point: the crash test starts it"]
fn functional_crash_child() {
    let Ok(spec) = std::env::var(CHILD) else { return };
    let mut parts = spec.splitn(3, '|');
    let (mode, _point, db) = (parts.next().unwrap(), parts.next(), PathBuf::from(parts.next().unwrap()));
    let app = fifty::entrypoint().checkpointer(SqliteSaver::open(&db).unwrap()).compile().unwrap();
    let cfg = RunConfig::thread(THREAD).durability(Durability::Sync);
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    runtime.block_on(async {
        let out = if mode == "run" { app.invoke(TASKS, &cfg).await } else { app.resume(&cfg, ()).await };
        assert_eq!(out.unwrap().value, Some(expected()));
    });
}

fn expected() -> u64 {
    (0..u64::from(TASKS)).map(|n| n * n).sum()
}

/// Runs a child and waits for it: its exit status and what it printed.
fn child(mode: &str, point: Option<Point>, db: &Path, ledger: &Path) -> (std::process::ExitStatus, String) {
    let output = Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "functional_crash_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{mode}|{}|{}", Point::encode(point), db.display()))
        .env("GRAPHWRIGHT_FUNCTIONAL_LEDGER", ledger)
        .output()
        .unwrap();
    (output.status, String::from_utf8_lossy(&[output.stdout, output.stderr].concat()).into_owned())
}

/// How many times each task finished its work.
fn runs(ledger: &Path) -> HashMap<u32, usize> {
    let text = std::fs::read_to_string(ledger).unwrap_or_default();
    let mut counts = HashMap::new();
    for line in text.lines() {
        let n = line.trim_start_matches("square ").parse().unwrap();
        *counts.entry(n).or_default() += 1;
    }
    counts
}

/// A small generator for the kill points (no dependency needed for a handful of draws).
fn next(seed: &mut u64) -> u64 {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    *seed
}

#[test]
fn killed_at_random_points_and_resumed_by_a_new_process_no_finished_task_runs_again() {
    let seed =
        std::env::var("GRAPHWRIGHT_TEST_FUNCTIONAL_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
        }) | 1;
    let mut draw = seed;
    // Each round: a fresh thread, killed once at a drawn point, then killed again at a later
    // point while resuming, then resumed to the end.
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let (db, ledger) = (dir.path().join("flow.db"), dir.path().join("ledger"));
        let first =
            Point { task: (next(&mut draw) % u64::from(TASKS - 10)) as u32, finish: next(&mut draw).is_multiple_of(2) };
        let second =
            Point { task: first.task + 1 + (next(&mut draw) % 9) as u32, finish: next(&mut draw).is_multiple_of(2) };
        let context = format!("seed {seed}, round {round}, kills at {first:?} then {second:?}");
        let (status, output) = child("run", Some(first), &db, &ledger);
        assert_eq!(status.signal(), Some(9), "{context}: the first child died by SIGKILL; it printed:\n{output}");
        let (status, output) = child("resume", Some(second), &db, &ledger);
        assert_eq!(status.signal(), Some(9), "{context}: the second child died by SIGKILL; it printed:\n{output}");
        let (status, output) = child("resume", None, &db, &ledger);
        assert!(status.success(), "{context}: the last child finished; it printed:\n{output}");

        let runs = runs(&ledger);
        for n in 0..TASKS {
            let killed_after_its_work = [first, second].contains(&Point { task: n, finish: true });
            let allowed = if killed_after_its_work { 2 } else { 1 };
            assert_eq!(runs.get(&n).copied().unwrap_or(0), allowed, "{context}: task {n}'s runs");
        }
    }
}
