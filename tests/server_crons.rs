//! Crons of the server, driven by LangGraph's Python client (`langgraph-sdk`,
//! `tests/server/cron_scenarios.py`) over a real socket on loopback: on a SQLite file, every
//! cron endpoint, schedules firing every second, disabling, deleting, stateless crons' threads,
//! bad input; a server process restarted on the same file keeps its crons; and with the
//! `postgres` feature, two server processes on one database fire every occurrence exactly once,
//! and the cron goes on when one of them is killed.
//!
//! `scripts/test` prepares the client: `GRAPHWRIGHT_TEST_PYTHON` names the interpreter of a
//! virtualenv holding `langgraph-sdk`.

use graphwright::prelude::*;
use graphwright_server::Server;
use std::process::Command;
use std::time::Duration;

#[path = "support/server_process.rs"]
mod server_process;
use server_process::ServerProcess;

/// Leaves a stamp in the store under its `tag` (the store outlives a stateless run's thread)
/// and counts the runs of its thread.
#[graph]
mod stamp {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        pub tag: String,
        #[reducer(add)]
        pub count: u32,
    }

    #[node(entry, next = END)]
    async fn stamp(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let key = uuid::Uuid::new_v4().to_string();
        rt.store()?.put(&["stamps", &state.tag], &key, json!({"count": state.count + 1}), None).await?;
        Ok(StateUpdate::new().count(1))
    }
}

/// Counts its runs: a second graph, for searching crons by assistant.
#[graph]
mod tick {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(add)]
        pub ticks: u32,
    }

    #[node(entry, next = END)]
    fn tick(_state: &State) -> StateUpdate {
        StateUpdate::new().ticks(1)
    }
}

/// The value of a variable `scripts/test` sets, or a panic saying how to get it.
fn prepared(variable: &str, what: &str) -> String {
    match std::env::var(variable) {
        Ok(value) if !value.is_empty() => value,
        _ => panic!("{variable} is not set: run the tests with scripts/test, which prepares {what}"),
    }
}

fn with_graphs(server: Server) -> Server {
    server.graph("stamp", stamp::graph().compile().unwrap()).graph("tick", tick::graph().compile().unwrap())
}

const SCRIPT: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../tests/server/cron_scenarios.py");

/// Runs the scenarios script with `args`; its output, once it printed `all scenarios passed`.
async fn run_script(args: Vec<String>) -> String {
    let python = prepared("GRAPHWRIGHT_TEST_PYTHON", "langgraph-sdk");
    let run = tokio::task::spawn_blocking(move || {
        Command::new(&python)
            .arg(SCRIPT)
            .args(args)
            .output()
            .unwrap_or_else(|error| panic!("{python} does not start: {error}"))
    });
    let output = tokio::time::timeout(Duration::from_mins(5), run).await.expect("the scenarios finish").unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    println!("{stdout}");
    assert!(output.status.success(), "scenarios failed:\n{stdout}\n{stderr}");
    assert!(stdout.contains("all scenarios passed"), "{stdout}");
    stdout
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn langgraph_python_client_cron_scenarios() {
    let dir = tempfile::tempdir().unwrap();
    let bound = with_graphs(Server::new()).sqlite(dir.path().join("server.db")).bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", bound.local_addr().unwrap());
    tokio::spawn(bound.run());
    run_script(vec!["scenarios".into(), url]).await;
}

/// Where a server process started by this file's tests finds its database: a SQLite path, or
/// with `postgres:` before it a PostgreSQL URL.
const SERVE_ON: &str = "GRAPHWRIGHT_TEST_SERVE_CRONS";

/// A server process of the tests below: this test binary run again with only this test, which
/// serves until it is killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a server process that the tests of this file start"]
async fn server_process() {
    let database = prepared(SERVE_ON, "a database (it is set by the test that starts this process)");
    let server = server_process::on_database(with_graphs(Server::new()), &database);
    let bound = server.bind("127.0.0.1:0").await.unwrap();
    println!("listening on {}", bound.local_addr().unwrap());
    bound.run().await.unwrap();
}

/// Starts a server process on `database` (see [`SERVE_ON`]); it and the URL it serves on.
fn start(database: &str) -> (ServerProcess, String) {
    let (process, addr) = ServerProcess::start("server_process", SERVE_ON, database);
    (process, format!("http://{addr}"))
}

/// A cron made by one server process on a SQLite file fires again in the next process on the
/// file, after the first was killed.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_sqlite_server_keeps_its_crons() {
    let dir = tempfile::tempdir().unwrap();
    let database = dir.path().join("server.db").display().to_string();
    let (first, url) = start(&database);
    let out = run_script(vec!["restart-before".into(), url]).await;
    let ids: serde_json::Value = out
        .lines()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no ids printed:\n{out}"));
    drop(first);
    // Long enough that firings are missed while no process runs.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (_second, url) = start(&database);
    let (thread, cron) = (ids["thread_id"].as_str().unwrap(), ids["cron_id"].as_str().unwrap());
    run_script(vec!["restart-after".into(), url, thread.into(), cron.into()]).await;
}

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

/// Two server processes on one PostgreSQL database, a cron firing every second on a thread:
/// every occurrence runs exactly once (counted by the time each run was scheduled for), and
/// when process A is killed, B goes on firing.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_processes_on_postgres_fire_each_occurrence_once() {
    let schema = postgres_server::TestSchema::new("server_crons");
    let database = format!("postgres:{}", schema.url());
    let (a, url_a) = start(&database);
    let (_b, url_b) = start(&database);
    let pid_a = a.id().to_string();
    run_script(vec!["cluster".into(), url_a, url_b, pid_a]).await;
    drop(a);
}
