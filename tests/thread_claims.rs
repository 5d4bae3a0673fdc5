//! One run per thread across processes. Two processes race to resume the same paused thread
//! (and to start runs on one thread) on one SQLite file, and on one PostgreSQL server: a ledger
//! on disk, one line per node run, shows that the loser ran no node at all, and the stored
//! answer and state are the winner's.

#![cfg(unix)]

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

use graphwright::Checkpointer;
use graphwright::checkpoint::SqliteSaver;
use graphwright::prelude::*;
use serde_json::json;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

const CHILD: &str = "GRAPHWRIGHT_CLAIMS_CHILD";
const THREAD: &str = "contested";
/// The exit status of a child whose run was refused with `ThreadBusy`.
const BUSY: i32 = 3;

/// Appends one line per node run, synced, to the ledger the child was given.
fn ledger(line: &str) {
    let path = std::env::var("GRAPHWRIGHT_CLAIMS_LEDGER").expect("the child knows its ledger");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).expect("ledger opens");
    // One write: the lines of processes noting at once never mix.
    file.write_all(format!("{} {line}\n", std::process::id()).as_bytes()).expect("ledger writes");
    file.sync_all().expect("ledger syncs");
}

#[graph]
mod approval {
    use super::*;

    #[state]
    pub struct State {
        #[reducer(append)]
        pub log: Vec<String>,
    }

    #[node(entry, next = decide)]
    async fn prepare(_state: &State) -> StateUpdate {
        super::ledger("prepare");
        tokio::time::sleep(Duration::from_millis(300)).await;
        StateUpdate::new().log(vec!["prepare".into()])
    }

    #[node(next = END)]
    async fn decide(_state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let answer: String = rt.interrupt("approve?")?;
        super::ledger(&format!("decide {answer}"));
        // Holds the thread long enough for the other process to try.
        tokio::time::sleep(Duration::from_millis(300)).await;
        Ok(StateUpdate::new().log(vec![format!("decided {answer}")]))
    }
}

/// Where a child's store is.
#[derive(Clone)]
enum Store {
    Sqlite(PathBuf),
    #[cfg(feature = "postgres")]
    Postgres(String),
}

impl Store {
    fn spec(&self) -> String {
        match self {
            Self::Sqlite(path) => format!("sqlite={}", path.display()),
            #[cfg(feature = "postgres")]
            Self::Postgres(url) => format!("postgres={url}"),
        }
    }

    #[cfg_attr(not(feature = "postgres"), allow(clippy::unused_async))] // awaits only with PostgreSQL
    async fn saver(spec: &str) -> Arc<dyn Checkpointer> {
        let (kind, place) = spec.split_once('=').expect("a store spec");
        match kind {
            "sqlite" => Arc::new(SqliteSaver::open(place).unwrap()),
            #[cfg(feature = "postgres")]
            "postgres" => Arc::new(graphwright::checkpoint::PostgresSaver::connect(place).await.unwrap()),
            other => panic!("no store `{other}`"),
        }
    }
}

/// The child's side: waits for the go file, then starts or resumes the thread.
#[test]
#[ignore = "the child processes' entry point: the claim tests start it"]
fn claims_child() {
    let Ok(spec) = std::env::var(CHILD) else { return };
    let mut parts = spec.splitn(4, '|');
    let (mode, answer, go, store) =
        (parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap(), parts.next().unwrap());
    let runtime = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
    let code = runtime.block_on(async {
        let app = approval::graph().shared_checkpointer(Store::saver(store).await).compile().unwrap();
        let cfg = RunConfig::thread(THREAD).durability(graphwright::Durability::Sync);
        while !Path::new(go).exists() {
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
        let result = match mode {
            "resume" => app.resume(&cfg, json!(answer)).await,
            _ => app.invoke(approval::State::default(), &cfg).await,
        };
        match result {
            Ok(_) => 0,
            Err(GraphError::ThreadBusy { .. }) => BUSY,
            Err(other) => {
                eprintln!("{other}");
                1
            }
        }
    });
    std::process::exit(code);
}

fn spawn(mode: &str, answer: &str, go: &Path, store: &Store, ledger: &Path) -> std::process::Child {
    Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "claims_child", "--ignored", "--nocapture", "--test-threads=1"])
        .env(CHILD, format!("{mode}|{answer}|{}|{}", go.display(), store.spec()))
        .env("GRAPHWRIGHT_CLAIMS_LEDGER", ledger)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}

/// Starts two children with `mode`, lets them go at once, and returns each one's answer and
/// output.
fn race(mode: &str, store: &Store, dir: &Path, ledger: &Path) -> Vec<(String, Output)> {
    let go = dir.join(format!("go-{mode}"));
    let children: Vec<_> =
        ["left", "right"].iter().map(|a| (a.to_string(), spawn(mode, a, &go, store, ledger))).collect();
    std::thread::sleep(Duration::from_millis(300));
    std::fs::write(&go, b"go").unwrap();
    children.into_iter().map(|(answer, child)| (answer, child.wait_with_output().unwrap())).collect()
}

/// The ledger's lines, without the process ids.
fn lines(ledger: &Path) -> Vec<(String, String)> {
    std::fs::read_to_string(ledger)
        .unwrap_or_default()
        .lines()
        .filter_map(|l| l.split_once(' ').map(|(pid, what)| (pid.to_owned(), what.to_owned())))
        .collect()
}

/// The winner's answer, after checking that exactly one child won and the other was refused.
fn one_winner(results: &[(String, Output)]) -> String {
    let codes: Vec<Option<i32>> = results.iter().map(|(_, o)| o.status.code()).collect();
    let winners: Vec<&String> = results.iter().filter(|(_, o)| o.status.success()).map(|(a, _)| a).collect();
    let details: Vec<String> =
        results.iter().map(|(a, o)| format!("{a}: {}", String::from_utf8_lossy(&o.stderr))).collect();
    assert_eq!(winners.len(), 1, "exactly one process ran; exit codes {codes:?}: {details:?}");
    assert!(codes.contains(&Some(BUSY)), "the other was refused with ThreadBusy; exit codes {codes:?}: {details:?}");
    winners[0].clone()
}

async fn races(store: Store, dir: &Path) {
    // Two processes start runs on one new thread: one runs, the other runs nothing.
    let ledger = dir.join("ledger");
    one_winner(&race("invoke", &store, dir, &ledger));
    let started: Vec<_> = lines(&ledger).into_iter().filter(|(_, what)| what == "prepare").collect();
    assert_eq!(started.len(), 1, "the losing process ran no node: {started:?}");

    // Both resume the paused thread with different answers.
    let results = race("resume", &store, dir, &ledger);
    let winner = one_winner(&results);
    let decided: Vec<_> = lines(&ledger).into_iter().filter(|(_, what)| what.starts_with("decide")).collect();
    assert_eq!(decided.len(), 1, "the losing process ran no node: {decided:?}");
    assert_eq!(decided[0].1, format!("decide {winner}"));

    let app = approval::graph().shared_checkpointer(Store::saver(&store.spec()).await).compile().unwrap();
    let state = app.get_state(&RunConfig::thread(THREAD)).await.unwrap().unwrap();
    assert_eq!(
        state.state.log,
        ["prepare".to_owned(), format!("decided {winner}")],
        "the stored state is the winner's"
    );
    let answered = app.state_history(&RunConfig::thread(THREAD)).await.unwrap();
    assert!(
        answered.iter().all(|s| s.interrupts.is_empty()),
        "the stored answer is the winner's, and nothing is pending"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_sqlite_file() {
    let dir = tempfile::tempdir().unwrap();
    races(Store::Sqlite(dir.path().join("claims.db")), dir.path()).await;
}

#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_one_postgres_server() {
    let dir = tempfile::tempdir().unwrap();
    let schema = postgres_server::TestSchema::new("graphwright_claims");
    races(Store::Postgres(schema.url()), dir.path()).await;
}
