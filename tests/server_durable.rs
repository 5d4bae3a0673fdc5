//! Runs a server process accepted and did not finish are taken up again when the server starts
//! again on its SQLite file: killed (SIGKILL) while a run is in a node, with another run queued
//! behind it on the same thread, a restarted process finishes both, in order, before a run sent
//! to it as it starts; the node that had finished before the kill does not run again (an
//! fsynced ledger of node executions says so), and `/metrics` counts the runs taken up. A run
//! whose node kills its process every time is given up after three attempts (`error`, its
//! outcome naming them; on PostgreSQL after the two a server is set to), and its thread takes
//! new runs. With authentication, owner isolation and encryption, a run taken up again runs as
//! its caller. Asked to stop (SIGTERM), a server lets its run in flight finish and leaves the
//! rest to the next process; on PostgreSQL, a run still in flight when the grace period ends is
//! taken over by another process.
use graphwright::encryption::Keys;
use graphwright::prelude::*;
use graphwright_server::authz::OwnerIsolation;
use graphwright_server::{ApiKeys, AuthUser, Server};
use serde_json::{Value, json};
use std::io::Write as _;
use std::time::Duration;

#[path = "support/server_process.rs"]
mod server_process;
use server_process::ServerProcess;

/// Where the server process started by these tests keeps its records and its ledger:
/// `{database}|{ledger}`, then `|secure` for a server with API keys, owner isolation and
/// encryption at rest, `|attempts=N` for a server that starts a run at most `N` times,
/// `|grace_ms=N` for a server that lets its runs finish for `N` ms once asked to stop.
const SERVE_ON: &str = "GRAPHWRIGHT_TEST_SERVE_DURABLE";

/// Two steps: `first` notes itself at once, `second` after a while (or kills the process when
/// the run's tag asks for it). Every execution of a node is written to the ledger, synced,
/// before the node returns.
#[graph]
mod ledger {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        /// Names the run in the ledger; `crash..` makes `second` kill its process.
        pub tag: String,
        #[reducer(append)]
        pub done: Vec<String>,
        /// Who each run of `second` ran as.
        #[reducer(append)]
        pub by: Vec<String>,
    }

    #[node(entry, next = second)]
    fn first(state: &State) -> StateUpdate {
        super::note(&format!("first {}", state.tag));
        StateUpdate::new().done(vec![format!("first {}", state.tag)])
    }

    #[node(next = END)]
    async fn second(state: &State, rt: &Runtime) -> StateUpdate {
        if state.tag.starts_with("crash") {
            // Once the checkpoint of `first` is stored (it is written while this node starts).
            tokio::time::sleep(super::SLOW).await;
            std::process::abort();
        }
        tokio::time::sleep(super::SLOW).await;
        super::note(&format!("second {}", state.tag));
        let by = rt.user().map_or_else(|| "nobody".to_owned(), |user| user.identity.clone());
        StateUpdate::new().done(vec![format!("second {}", state.tag)]).by(vec![by])
    }
}

/// How long `second` takes: long enough to kill its process in the middle.
const SLOW: Duration = Duration::from_millis(1500);

/// Appends `line` to the ledger named by [`SERVE_ON`], synced.
fn note(line: &str) {
    let value = std::env::var(SERVE_ON).expect("the ledger's place");
    let path = value.split('|').nth(1).expect("database|ledger");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(path).unwrap();
    // One write: a process killed while it notes leaves no half line.
    file.write_all(format!("{line}\n").as_bytes()).unwrap();
    file.sync_all().unwrap();
}

/// The server process: the ledger graph on the SQLite file [`SERVE_ON`] names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a server process that the tests of this file start"]
async fn server_process() {
    let value = std::env::var(SERVE_ON).expect("set by the test that starts this process");
    let mut parts = value.split('|');
    let database = parts.next().expect("database|ledger");
    let flags: Vec<&str> = parts.skip(1).collect();
    let server = Server::new().graph("ledger", ledger::graph().compile().unwrap());
    let server = server_process::on_database(server, database);
    let server = if flags.contains(&"secure") {
        let keys = ApiKeys::new().key(ADA_KEY, AuthUser::new("ada"));
        server.auth(keys).authorize(OwnerIsolation).encryption(Keys::new(&[7; 32]).unwrap())
    } else {
        server
    };
    let server = match flags.iter().find_map(|flag| flag.strip_prefix("attempts=")) {
        Some(n) => server.max_attempts(n.parse().expect("attempts=N")),
        None => server,
    };
    let server = match flags.iter().find_map(|flag| flag.strip_prefix("grace_ms=")) {
        Some(ms) => server.drain_grace(Duration::from_millis(ms.parse().expect("grace_ms=N"))),
        None => server,
    };
    let bound = server.bind("127.0.0.1:0").await.unwrap();
    println!("listening on {}", bound.local_addr().unwrap());
    if let Err(error) = bound.run().await {
        // As a deployment's `main` would: the process ends with the error.
        eprintln!("the server process stops: {error}");
        std::process::exit(1);
    }
}

struct Place {
    _dir: tempfile::TempDir,
    value: String,
    ledger: std::path::PathBuf,
}

fn place() -> Place {
    let dir = tempfile::tempdir().unwrap();
    let ledger = dir.path().join("ledger.txt");
    let value = format!("{}|{}", dir.path().join("records.db").display(), ledger.display());
    Place { _dir: dir, value, ledger }
}

/// A place for a server with API keys, owner isolation and encryption at rest.
fn secure_place() -> Place {
    let mut place = place();
    place.value.push_str("|secure");
    place
}

/// The API key of user `ada` on a secure server.
const ADA_KEY: &str = "key-of-ada-0123456789";

fn start(place: &Place) -> (ServerProcess, String) {
    let (process, addr) = ServerProcess::start("server_process", SERVE_ON, &place.value);
    (process, format!("http://{addr}"))
}

fn lines(place: &Place) -> Vec<String> {
    std::fs::read_to_string(&place.ledger).unwrap_or_default().lines().map(str::to_owned).collect()
}

async fn post(url: &str, body: Value) -> Value {
    let response = reqwest::Client::new().post(url).header("x-api-key", ADA_KEY).json(&body).send().await.unwrap();
    assert!(response.status().is_success(), "POST {url}: {}", response.status());
    response.json().await.unwrap()
}

async fn get(url: &str) -> Value {
    let response = reqwest::Client::new().get(url).header("x-api-key", ADA_KEY).send().await.unwrap();
    assert!(response.status().is_success(), "GET {url}: {}", response.status());
    response.json().await.unwrap()
}

/// The run's status once it is no longer pending or running (at most 30 s).
async fn ended(url: &str, thread: &str, run: &str) -> String {
    for _ in 0..300 {
        let record = get(&format!("{url}/threads/{thread}/runs/{run}")).await;
        let status = record["status"].as_str().unwrap_or_default().to_owned();
        if status != "pending" && status != "running" {
            return status;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("run {run} did not end within 30 s");
}

/// Waits until the ledger holds `line`.
async fn noted(place: &Place, line: &str) {
    for _ in 0..200 {
        if lines(place).iter().any(|l| l == line) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("the ledger never got {line:?}: {:?}", lines(place));
}

/// A thread on `url` with run `a` sent, then run `b` queued behind it; once `first` of run a
/// has noted itself (run a is in `second`).
async fn a_then_b(url: &str, place: &Place) -> (String, String, String) {
    let thread = thread(url).await;
    let (a, b) = (run(url, &thread, "a").await, run(url, &thread, "b").await);
    noted(place, "first a").await;
    (thread, a, b)
}

/// Runs `a` and `b` of `thread` ended `success` (as `url` says), each node having run once, in
/// order.
async fn both_succeeded(url: &str, place: &Place, thread: &str, [a, b]: [&str; 2]) {
    assert_eq!(ended(url, thread, a).await, "success");
    assert_eq!(ended(url, thread, b).await, "success");
    assert_eq!(lines(place), ["first a", "second a", "first b", "second b"]);
}

async fn thread(url: &str) -> String {
    post(&format!("{url}/threads"), json!({})).await["thread_id"].as_str().unwrap().to_owned()
}

async fn run(url: &str, thread: &str, tag: &str) -> String {
    let body = json!({"assistant_id": "ledger", "input": {"tag": tag}, "multitask_strategy": "enqueue"});
    post(&format!("{url}/threads/{thread}/runs"), body).await["run_id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_process_takes_up_the_runs_it_accepted() {
    let place = place();
    let (killed, url) = start(&place);
    let (thread, a, b) = a_then_b(&url, &place).await;
    // In the middle of `second`, once the checkpoint of `first` is stored (it is written while
    // `second` starts): run a is in flight, run b waits behind it.
    tokio::time::sleep(SLOW * 2 / 3).await;
    drop(killed);
    assert_eq!(lines(&place), ["first a"], "the process was killed before `second` of run a noted itself");

    let (_process, url) = start(&place);
    // A run sent as soon as the process listens goes after the runs it takes up.
    let c = run(&url, &thread, "c").await;
    assert_eq!(ended(&url, &thread, &a).await, "success");
    assert_eq!(ended(&url, &thread, &b).await, "success");
    assert_eq!(ended(&url, &thread, &c).await, "success");
    // `first` of run a had finished and its write was kept: it did not run again.
    let all = ["first a", "second a", "first b", "second b", "first c", "second c"];
    assert_eq!(lines(&place), all);
    let state = get(&format!("{url}/threads/{thread}/state")).await;
    assert_eq!(state["values"]["done"], json!(all));
    assert_eq!(get(&format!("{url}/threads/{thread}")).await["status"], "idle");
    let metrics = get(&format!("{url}/metrics?format=json")).await;
    assert_eq!(metrics["runs"]["ledger"]["resumed"], 2, "{metrics}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_kills_its_process_every_time_is_given_up_after_three_attempts() {
    given_up_after(3, &place()).await;
}

/// A run whose node kills its process: each process that takes it up dies too, until the
/// one after the last attempt marks it `error`; its thread then runs a new run.
async fn given_up_after(attempts: u32, place: &Place) {
    let (mut process, url) = start(place);
    let thread = thread(&url).await;
    let crash = run(&url, &thread, "crash").await;
    assert!(process.ended_within(Duration::from_secs(20)), "the first attempt did not kill its process");
    for attempt in 2..=attempts {
        // Taken up as the process starts, the run kills it again (before it may even listen).
        let mut process = ServerProcess::spawn("server_process", SERVE_ON, &place.value);
        assert!(process.ended_within(Duration::from_secs(20)), "attempt {attempt} did not kill its process");
    }
    // The next process gives the run up instead of starting it once more.
    let (_process, url) = start(place);
    assert_eq!(ended(&url, &thread, &crash).await, "error");
    // A client joining the run is told why it ended: the attempts.
    let joined = get(&format!("{url}/threads/{thread}/runs/{crash}/join")).await;
    let message = joined["__error__"]["message"].as_str().unwrap_or_default().to_owned();
    assert!(message.contains(&format!("started {attempts} times")), "{joined}");
    // `first` ran once: every attempt continued after it.
    assert_eq!(lines(place), ["first crash"]);
    let fine = run(&url, &thread, "fine").await;
    assert_eq!(ended(&url, &thread, &fine).await, "success");
    assert_eq!(lines(place), ["first crash", "first fine", "second fine"]);
}

/// Asked to stop (SIGTERM), a server lets the run in flight finish, leaves the run queued behind
/// it recorded instead of starting it, and exits; the next process runs it. No run fails.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_lets_the_run_in_flight_finish_and_hands_back_the_rest() {
    let place = place();
    let (mut stopped, url) = start(&place);
    let (thread, a, b) = a_then_b(&url, &place).await;
    let sent = std::process::Command::new("kill").args(["-TERM", &stopped.id().to_string()]).status().unwrap();
    assert!(sent.success(), "kill -TERM failed");
    assert!(stopped.ended_within(Duration::from_secs(20)), "the process did not stop once its run finished");
    assert_eq!(lines(&place), ["first a", "second a"], "run a finished and run b did not start");

    let (_process, url) = start(&place);
    both_succeeded(&url, &place, &thread, [&a, &b]).await;
    let metrics = get(&format!("{url}/metrics?format=json")).await;
    assert_eq!(metrics["runs"]["ledger"]["resumed"], 1, "{metrics}");
}

/// On a server with authentication, owner isolation and encryption, a run taken up again runs as
/// the user who started it (its caller is kept, sealed, with its request) and stays theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_taken_up_again_runs_as_its_caller() {
    let place = secure_place();
    let (killed, url) = start(&place);
    let thread = thread(&url).await;
    let a = run(&url, &thread, "a").await;
    noted(&place, "first a").await;
    tokio::time::sleep(SLOW * 2 / 3).await;
    drop(killed);

    let (_process, url) = start(&place);
    assert_eq!(ended(&url, &thread, &a).await, "success");
    let state = get(&format!("{url}/threads/{thread}/state")).await;
    assert_eq!(state["values"]["by"], json!(["ada"]), "{state}");
    assert_eq!(get(&format!("{url}/threads/{thread}")).await["metadata"]["owner"], "ada");
}

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

/// A place whose records are in a schema of their own on the test's PostgreSQL server (dropped
/// with the schema handle).
#[cfg(feature = "postgres")]
fn postgres_place() -> (postgres_server::TestSchema, Place) {
    let schema = postgres_server::TestSchema::new("server_durable");
    let mut place = place();
    let (_, ledger) = place.value.split_once('|').unwrap();
    place.value = format!("postgres:{}|{ledger}", schema.url());
    (schema, place)
}

/// Two server processes on one PostgreSQL database: when the one executing a run dies, the other
/// takes it over, with the run queued behind it, and a client joined through the survivor gets
/// the run's result.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_surviving_process_takes_over_the_runs_of_one_that_died() {
    let (_schema, place) = postgres_place();
    let (killed, url_a) = start(&place);
    let (_survivor, url_b) = start(&place);
    let (thread, a, b) = a_then_b(&url_a, &place).await;
    let joined = tokio::spawn({
        let url = format!("{url_b}/threads/{thread}/runs/{a}/join");
        async move { get(&url).await }
    });
    tokio::time::sleep(SLOW * 2 / 3).await;
    drop(killed);
    let killed_at = std::time::Instant::now();

    noted(&place, "second a").await;
    // `second` notes itself SLOW after it starts: what is left is the time the take-over took
    // (printed, not asserted: a measurement, for BENCHMARKS.md).
    let taken_over = killed_at.elapsed().saturating_sub(SLOW);
    println!("run a started again on the survivor {} ms after its process was killed", taken_over.as_millis());
    both_succeeded(&url_b, &place, &thread, [&a, &b]).await;
    assert_eq!(joined.await.unwrap()["done"], json!(["first a", "second a"]));
    assert_eq!(get(&format!("{url_b}/threads/{thread}")).await["status"], "idle");
    let metrics = get(&format!("{url_b}/metrics?format=json")).await;
    assert_eq!(metrics["runs"]["ledger"]["resumed"], 2, "{metrics}");
}

/// A client of the test's own on the schema's database, for what no route does.
#[cfg(feature = "postgres")]
async fn sql(
    schema: &postgres_server::TestSchema,
) -> graphwright::checkpoint::deadpool_postgres::tokio_postgres::Client {
    use graphwright::checkpoint::deadpool_postgres::tokio_postgres;
    let (client, connection) = tokio_postgres::connect(&schema.url(), tokio_postgres::NoTls).await.unwrap();
    tokio::spawn(connection);
    client
}

/// The same on PostgreSQL, with the limit set to two attempts: each process started alone on
/// the database takes the run over from the one that died, until the third gives it up.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_run_that_kills_every_process_is_given_up_after_its_attempts() {
    let (_schema, mut place) = postgres_place();
    place.value.push_str("|attempts=2");
    given_up_after(2, &place).await;
}

/// Asked to stop with a grace period shorter than its run, a process on PostgreSQL leaves the
/// run in flight and the run queued behind it as they are recorded, and exits; the other process
/// takes both over. Neither fails, and the step that had finished does not run again.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_sigterm_hands_the_runs_left_after_the_grace_to_another_process() {
    let (_schema, mut place) = postgres_place();
    let (_survivor, url_b) = start(&place);
    place.value.push_str("|grace_ms=200");
    let (mut stopped, url_a) = start(&place);
    let (thread, a, b) = a_then_b(&url_a, &place).await;
    let sent = std::process::Command::new("kill").args(["-TERM", &stopped.id().to_string()]).status().unwrap();
    assert!(sent.success(), "kill -TERM failed");
    assert!(stopped.ended_within(Duration::from_secs(20)), "the process did not stop after its grace period");

    both_succeeded(&url_b, &place, &thread, [&a, &b]).await;
    assert_eq!(get(&format!("{url_b}/threads/{thread}")).await["status"], "idle");
}

/// A cancel whose notification never reached the process executing the run (notifications are
/// lost with the connection they were sent to) still stops the run: the process finds it stored
/// with the run.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_cancel_whose_notification_was_lost_still_stops_the_run() {
    let (schema, place) = postgres_place();
    let (_process, url) = start(&place);
    let thread = thread(&url).await;
    let a = run(&url, &thread, "a").await;
    noted(&place, "first a").await;
    let client = sql(&schema).await;
    // Stored as `POST .../cancel` stores it, without the notification.
    let asked = client.execute("UPDATE gw_runs SET cancel = 'interrupt' WHERE run_id = $1", &[&a]).await.unwrap();
    assert_eq!(asked, 1);
    assert_eq!(ended(&url, &thread, &a).await, "interrupted");
    assert_eq!(lines(&place), ["first a"], "the run stopped before `second` finished");
}

/// A process that loses the connection holding its liveness lock stops serving at once
/// (`ServerError::LeaseLost`), rather than running beside the process taking its runs over; the
/// other process finishes its run in flight and the run queued behind it, and the step that had
/// finished does not run again.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_process_that_loses_its_lease_stops_and_its_runs_are_taken_over() {
    let (schema, place) = postgres_place();
    let (mut cut_off, url_a) = start(&place);
    let (_survivor, url_b) = start(&place);
    let (thread, a, b) = a_then_b(&url_a, &place).await;
    // Once the checkpoint of `first` is stored, so that the step that finished is kept.
    tokio::time::sleep(SLOW * 2 / 3).await;
    let client = sql(&schema).await;
    let lease = format!("graphwright-server lease {}", cut_off.id());
    let cut = client
        .execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1", &[&lease])
        .await
        .unwrap();
    assert_eq!(cut, 1, "the process's lease is one session");
    assert!(cut_off.ended_within(Duration::from_secs(10)), "the process went on serving without its lease");

    both_succeeded(&url_b, &place, &thread, [&a, &b]).await;
    assert_eq!(get(&format!("{url_b}/threads/{thread}")).await["status"], "idle");
}

/// A run taken over whose thread is still claimed for a moment (here by this test, as a dying
/// process's checkpointer session would) waits for the claim instead of failing.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_a_run_taken_over_waits_for_its_threads_claim() {
    use graphwright::Checkpointer as _;
    let (schema, place) = postgres_place();
    let (killed, url_a) = start(&place);
    let (_survivor, url_b) = start(&place);
    let thread = thread(&url_a).await;
    let a = run(&url_a, &thread, "a").await;
    noted(&place, "first a").await;
    // Once the checkpoint of `first` is stored (it is written while `second` starts): killed
    // before it, the run would rightly run `first` again when taken over.
    tokio::time::sleep(SLOW * 2 / 3).await;
    drop(killed);
    // The thread's claim, taken over from the dead process before the survivor's sweep comes.
    let saver = graphwright::PostgresSaver::connect(&schema.url()).await.unwrap();
    let mut claimed = false;
    for _ in 0..200 {
        if saver.claim(&thread).await.is_ok() {
            claimed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert!(claimed, "the dead process's claim was never free");
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(lines(&place), ["first a"], "the run went on while its thread was claimed");
    drop(saver);

    assert_eq!(ended(&url_b, &thread, &a).await, "success");
    assert_eq!(lines(&place), ["first a", "second a"]);
}
