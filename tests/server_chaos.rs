//! Server processes killed (SIGKILL) and restarted at random moments under a steady load of
//! runs, for a minute: three processes on one PostgreSQL database, and one process on a SQLite
//! file. Every run a process accepted ends `success`, once; no thread is left `busy`; each
//! thread's final state is the one its runs give without faults (every run's steps, once, in
//! the order the runs were queued); and no step whose write was stored runs again (an fsynced
//! ledger of node executions says so: no step of a run ran after a later step of the same run
//! had run, and every step that ran twice ran first in a process that was then killed).
//!
//! The load: a run every 100 ms on one of eight threads (`multitask_strategy: enqueue`), sent
//! to a process that is up; each run is three steps of 150 ms. The faults: every 3 to 6 s a
//! process is killed, and started again 0.3 to 1.5 s later. `GRAPHWRIGHT_TEST_CHAOS_SECONDS`
//! sets how long faults go on (60 unless set); `GRAPHWRIGHT_TEST_CHAOS_SEED` replays a
//! schedule (each test prints the seed it used).

#![cfg(unix)]

use graphwright::prelude::*;
use graphwright_server::Server;
use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::io::Write as _;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[path = "support/server_process.rs"]
mod server_process;
use server_process::ServerProcess;

/// Where a server process started by these tests keeps its records and its ledger:
/// `{database}|{ledger}` (a database `postgres:{url}` or a SQLite file).
const SERVE_ON: &str = "GRAPHWRIGHT_TEST_SERVE_CHAOS";

/// How long one step takes.
const STEP: Duration = Duration::from_millis(150);

/// Three steps, each noting itself in the ledger (synced) before it returns.
#[graph]
mod chain {
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        /// Names the run.
        pub tag: String,
        /// `{tag} {step}` for every step of every run on the thread.
        #[reducer(append)]
        pub done: Vec<String>,
    }

    #[node(entry, next = two)]
    async fn one(state: &State) -> StateUpdate {
        super::step(state, 1).await
    }

    #[node(next = three)]
    async fn two(state: &State) -> StateUpdate {
        super::step(state, 2).await
    }

    #[node(next = END)]
    async fn three(state: &State) -> StateUpdate {
        super::step(state, 3).await
    }
}

async fn step(state: &chain::State, n: u32) -> chain::StateUpdate {
    tokio::time::sleep(STEP).await;
    let value = std::env::var(SERVE_ON).expect("the ledger's place");
    let (_, ledger) = value.split_once('|').expect("database|ledger");
    let mut file = std::fs::OpenOptions::new().create(true).append(true).open(ledger).unwrap();
    // One write: lines of steps running at once, in this process or another, never mix, and a
    // process killed mid-step leaves no half line.
    file.write_all(format!("{} {} {n}\n", std::process::id(), state.tag).as_bytes()).unwrap();
    file.sync_all().unwrap();
    chain::StateUpdate::new().done(vec![format!("{} {n}", state.tag)])
}

/// The server process: the chain graph on the database [`SERVE_ON`] names.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "a server process that the tests of this file start"]
async fn server_process() {
    let value = std::env::var(SERVE_ON).expect("set by the test that starts this process");
    let (database, _) = value.split_once('|').expect("database|ledger");
    let server = Server::new().graph("chain", chain::graph().compile().unwrap());
    let server = server_process::on_database(server, database);
    let bound = server.bind("127.0.0.1:0").await.unwrap();
    println!("listening on {}", bound.local_addr().unwrap());
    bound.run().await.unwrap();
}

/// The server processes of one test, by slot: each up (its process and URL) or down.
struct Cluster {
    value: String,
    slots: Mutex<Vec<Option<(ServerProcess, String)>>>,
    /// The ids of the processes killed.
    killed: Mutex<BTreeSet<u32>>,
}

impl Cluster {
    fn start(value: String, processes: usize) -> Arc<Self> {
        let slots = (0..processes).map(|_| Some(Self::spawn(&value))).collect();
        Arc::new(Self { value, slots: Mutex::new(slots), killed: Mutex::default() })
    }

    fn spawn(value: &str) -> (ServerProcess, String) {
        let (process, addr) = ServerProcess::start("server_process", SERVE_ON, value);
        (process, format!("http://{addr}"))
    }

    /// The URL of a process that is up, picked at random.
    fn any_url(&self, random: &mut fastrand::Rng) -> Option<String> {
        let slots = self.slots.lock().unwrap();
        let up: Vec<&String> = slots.iter().flatten().map(|(_, url)| url).collect();
        (!up.is_empty()).then(|| up[random.usize(..up.len())].clone())
    }

    /// Kills the process in `slot` (SIGKILL).
    fn kill(&self, slot: usize) {
        let taken = self.slots.lock().unwrap()[slot].take();
        if let Some((process, _)) = taken {
            self.killed.lock().unwrap().insert(process.id());
            drop(process);
        }
    }

    /// Starts a process in `slot` again.
    async fn restart(self: &Arc<Self>, slot: usize) {
        let cluster = Arc::clone(self);
        let started = tokio::task::spawn_blocking(move || Self::spawn(&cluster.value)).await.unwrap();
        self.slots.lock().unwrap()[slot] = Some(started);
    }
}

/// The runs sent: the ones a process answered for (accepted), and the ones whose answer was
/// lost (the process died meanwhile: it may have accepted them).
#[derive(Default)]
struct Sent {
    /// `(thread, tag, run id)`.
    accepted: Vec<(String, String, String)>,
    /// `(thread, tag)`.
    unanswered: Vec<(String, String)>,
}

async fn post(client: &reqwest::Client, url: &str, body: Value) -> Result<Value, String> {
    let response = client.post(url).json(&body).timeout(Duration::from_secs(10)).send().await;
    let response = response.map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("POST {url}: {}", response.status()));
    }
    response.json().await.map_err(|e| e.to_string())
}

async fn get(client: &reqwest::Client, url: &str) -> Result<Value, String> {
    let response = client.get(url).timeout(Duration::from_secs(10)).send().await.map_err(|e| e.to_string())?;
    if !response.status().is_success() {
        return Err(format!("GET {url}: {}", response.status()));
    }
    response.json().await.map_err(|e| e.to_string())
}

fn seed() -> u64 {
    let seed = std::env::var("GRAPHWRIGHT_TEST_CHAOS_SEED").ok().and_then(|s| s.parse().ok());
    let seed = seed.unwrap_or_else(|| fastrand::u64(..));
    println!("GRAPHWRIGHT_TEST_CHAOS_SEED={seed}");
    seed
}

fn chaos_time() -> Duration {
    let seconds = std::env::var("GRAPHWRIGHT_TEST_CHAOS_SECONDS").ok().and_then(|s| s.parse().ok());
    Duration::from_secs(seconds.unwrap_or(60))
}

/// Sends a run every 100 ms until `until`, each to a thread of `threads` and a process that is
/// up, both at random.
async fn load(cluster: Arc<Cluster>, threads: Vec<String>, until: Instant, seed: u64) -> Sent {
    let mut random = fastrand::Rng::with_seed(seed);
    let client = reqwest::Client::new();
    let mut sent = Sent::default();
    let mut n = 0;
    while Instant::now() < until {
        tokio::time::sleep(Duration::from_millis(100)).await;
        let Some(url) = cluster.any_url(&mut random) else { continue };
        let thread = threads[random.usize(..threads.len())].clone();
        n += 1;
        let tag = format!("r{n}");
        let body = json!({"assistant_id": "chain", "input": {"tag": tag}, "multitask_strategy": "enqueue"});
        match post(&client, &format!("{url}/threads/{thread}/runs"), body).await {
            Ok(run) => {
                let id = run["run_id"].as_str().expect("an accepted run has an id").to_owned();
                sent.accepted.push((thread, tag, id));
            }
            Err(_) => sent.unanswered.push((thread, tag)),
        }
    }
    sent
}

/// Kills a process every 3 to 6 s and starts it again 0.3 to 1.5 s later, until `until`.
async fn faults(cluster: Arc<Cluster>, processes: usize, until: Instant, seed: u64) -> usize {
    let mut random = fastrand::Rng::with_seed(seed.wrapping_add(1));
    let mut kills = 0;
    loop {
        let pause = Duration::from_millis(random.u64(3000..6000));
        if Instant::now() + pause >= until {
            return kills;
        }
        tokio::time::sleep(pause).await;
        let slot = random.usize(..processes);
        cluster.kill(slot);
        kills += 1;
        tokio::time::sleep(Duration::from_millis(random.u64(300..1500))).await;
        cluster.restart(slot).await;
    }
}

/// One ledger line: the process that ran the step, the run's tag, the step.
struct Execution {
    pid: u32,
    tag: String,
    step: u32,
}

fn ledger(path: &std::path::Path) -> Vec<Execution> {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    text.lines()
        .map(|line| {
            let mut words = line.split(' ');
            let (pid, tag, step) = (words.next(), words.next(), words.next());
            Execution {
                pid: pid.and_then(|p| p.parse().ok()).expect("a pid"),
                tag: tag.expect("a tag").to_owned(),
                step: step.and_then(|s| s.parse().ok()).expect("a step"),
            }
        })
        .collect()
}

/// Runs `processes` server processes on `database` under load and faults, then checks what
/// the introduction of this file says.
async fn under_faults(database: &str, processes: usize) {
    let dir = tempfile::tempdir().unwrap();
    let ledger_path = dir.path().join("ledger.txt");
    let database = database.replace("{dir}", &dir.path().display().to_string());
    let cluster = Cluster::start(format!("{database}|{}", ledger_path.display()), processes);
    let client = reqwest::Client::new();
    let url = cluster.any_url(&mut fastrand::Rng::new()).unwrap();
    let mut threads = Vec::new();
    for _ in 0..8 {
        let thread = post(&client, &format!("{url}/threads"), json!({})).await.unwrap();
        threads.push(thread["thread_id"].as_str().unwrap().to_owned());
    }

    let seed = seed();
    let until = Instant::now() + chaos_time();
    let sending = tokio::spawn(load(Arc::clone(&cluster), threads.clone(), until, seed));
    let kills = faults(Arc::clone(&cluster), processes, until, seed).await;
    let sent = sending.await.unwrap();
    println!("{} runs accepted, {} unanswered, {kills} processes killed", sent.accepted.len(), sent.unanswered.len());
    assert!(kills >= 1 && sent.accepted.len() >= 10, "too little happened to say anything");

    // Every accepted run ends, `success`.
    let url = cluster.any_url(&mut fastrand::Rng::new()).unwrap();
    let deadline = Instant::now() + Duration::from_mins(3);
    for (thread, tag, run) in &sent.accepted {
        let status = loop {
            let record = get(&client, &format!("{url}/threads/{thread}/runs/{run}")).await.unwrap();
            let status = record["status"].as_str().unwrap_or_default().to_owned();
            if (status != "pending" && status != "running") || Instant::now() > deadline {
                break status;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        };
        if status != "success" {
            let joined = get(&client, &format!("{url}/threads/{thread}/runs/{run}/join")).await;
            panic!("run {run} ({tag}) on thread {thread} ended {status}: {joined:?}");
        }
    }

    let may_have_run: BTreeSet<&str> = sent.unanswered.iter().map(|(_, tag)| tag.as_str()).collect();
    let executions = ledger(&ledger_path);
    for thread in &threads {
        let record = get(&client, &format!("{url}/threads/{thread}")).await.unwrap();
        assert_eq!(record["status"], "idle", "thread {thread} is left {}", record["status"]);
        // The thread's runs in the order they were queued (the list is newest first).
        let runs = get(&client, &format!("{url}/threads/{thread}/runs?limit=10000")).await.unwrap();
        let runs = runs.as_array().unwrap();
        let tags: Vec<String> =
            runs.iter().rev().map(|run| run["kwargs"]["input"]["tag"].as_str().unwrap().to_owned()).collect();
        for run in runs {
            assert_eq!(run["status"], "success", "{run}");
        }
        let accepted: BTreeSet<&str> =
            sent.accepted.iter().filter(|(t, ..)| t == thread).map(|(_, tag, _)| tag.as_str()).collect();
        for tag in &tags {
            assert!(
                accepted.contains(tag.as_str()) || may_have_run.contains(tag.as_str()),
                "run {tag} on thread {thread} was never sent there"
            );
        }
        assert!(accepted.iter().all(|tag| tags.iter().any(|t| t == tag)), "an accepted run of {thread} is not listed");
        // The state without faults: each run's three steps, once, in the runs' order.
        let expected: Vec<String> = tags.iter().flat_map(|tag| (1..=3).map(move |n| format!("{tag} {n}"))).collect();
        let state = get(&client, &format!("{url}/threads/{thread}/state")).await.unwrap();
        assert_eq!(state["values"]["done"], json!(expected), "thread {thread}'s final state");
    }

    // No step ran after a later step of its run had run: a step whose write was stored (the
    // next step had started) never ran again. Every step that ran twice ran first in a process
    // that was killed.
    let killed = cluster.killed.lock().unwrap().clone();
    let mut furthest: HashMap<&str, u32> = HashMap::new();
    let mut runs_of: BTreeMap<(&str, u32), Vec<u32>> = BTreeMap::new();
    for execution in &executions {
        let furthest = furthest.entry(&execution.tag).or_default();
        assert!(
            execution.step >= *furthest,
            "step {} of {} ran again after step {furthest} had run",
            execution.step,
            execution.tag
        );
        *furthest = execution.step;
        runs_of.entry((&execution.tag, execution.step)).or_default().push(execution.pid);
    }
    let again = runs_of.values().filter(|pids| pids.len() > 1).count();
    for ((tag, step), pids) in &runs_of {
        for pid in &pids[..pids.len() - 1] {
            assert!(killed.contains(pid), "step {step} of {tag} ran in process {pid}, which lived, and then again");
        }
    }
    println!("{} step executions, {again} steps ran again after their process was killed", executions.len());
}

#[cfg(feature = "postgres")]
#[path = "support/postgres.rs"]
mod postgres_server;

/// Three processes on one PostgreSQL database.
#[cfg(feature = "postgres")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn three_processes_on_postgres_lose_no_run_when_killed_at_random() {
    let schema = postgres_server::TestSchema::new("server_chaos");
    under_faults(&format!("postgres:{}", schema.url()), 3).await;
}

/// One process on a SQLite file.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_process_on_sqlite_loses_no_run_when_killed_at_random() {
    under_faults("{dir}/records.db", 1).await;
}
