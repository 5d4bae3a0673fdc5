//! The workloads of the LangGraph baseline harness (each described where it is defined below),
//! run the way the baseline runs them, printing one JSON line per workload on stdout.
//!
//! ```text
//! cargo bench -p graphwright --bench workloads -- [--only NAME,NAME] [--list]
//! ```
//!
//! `--only` keeps the workloads whose names contain one of the comma-separated substrings.
//! Each workload runs in a child process of its own (this binary again, with
//! `GRAPHWRIGHT_BENCH_WORKLOAD` naming it), so its peak RSS is its own: 1 warm-up run, then
//! 5 timed runs, median reported; the final state (and the checkpoint count) is checked after
//! every run, untimed, and `ok` is false if any run did not match. Graph construction is not
//! timed (it is reported once, cold, as `compile_s`, and warm by the `compile_*` workloads).
//!
//! Sync workloads run on a current-thread tokio runtime (the baseline's sync `invoke`), the
//! `_async` ones on a multi-thread runtime; each line's `params` says which.

#![forbid(unsafe_code)]
// Benchmark arithmetic turns counts and durations into floats and back; none comes near 2^52.
#![allow(clippy::cast_precision_loss, clippy::cast_possible_wrap, clippy::cast_sign_loss)]

#[path = "workloads/graphs.rs"]
mod graphs;
#[path = "workloads/harness.rs"]
mod harness;
#[path = "workloads/react.rs"]
mod react;
#[path = "workloads/wide.rs"]
mod wide;

use graphs::{Count, check_count, check_fanout};
use graphwright::checkpoint::{Checkpointer, ListFilter, SqliteSaver};
use graphwright::prelude::*;
use graphwright::{Durability, GraphError, MemorySaver, RunOutput};
use harness::{Checked, Measured, RECURSION_LIMIT, Row, current_thread, fresh_thread, measure, multi_thread};
use serde_json::{Value, json};
use std::io::Write as _;
use std::process::{Command as Process, Stdio};
use std::sync::Arc;
use std::time::Instant;

/// Names the workload a child process runs.
const WORKLOAD_ENV: &str = "GRAPHWRIGHT_BENCH_WORKLOAD";
/// Set in the child of the `startup` workload: build a graph and exit.
const STARTUP_ENV: &str = "GRAPHWRIGHT_BENCH_STARTUP";

/// A workload: its name and the function that runs it and returns its JSON line.
type Workload = (&'static str, fn() -> Value);

/// Every workload, in the baseline's order. Adding one is a line here and a function below.
const WORKLOADS: &[Workload] = &[
    ("sequential_100", || sequential("sequential_100", 100, false)),
    ("sequential_1000", || sequential("sequential_1000", 1000, false)),
    ("sequential_1000_async", || sequential("sequential_1000_async", 1000, true)),
    ("fanout_100", || fanout("fanout_100", 100)),
    ("fanout_1000", || fanout("fanout_1000", 1000)),
    ("fanout_1000_async", fanout_async),
    ("wide_state", wide_state),
    ("react_loop_100", || react_send("react_loop_100", false)),
    ("react_loop_100_toolnode", react_toolnode),
    ("react_loop_100_ckpt_memory", || react_send("react_loop_100_ckpt_memory", true)),
    ("sequential_100_ckpt_memory", || chain_ckpt("sequential_100_ckpt_memory", 100, Saver::Memory, Durability::Async)),
    ("sequential_1000_ckpt_memory", || {
        chain_ckpt("sequential_1000_ckpt_memory", 1000, Saver::Memory, Durability::Async)
    }),
    ("sequential_1000_ckpt_memory_dsync", || {
        chain_ckpt("sequential_1000_ckpt_memory_dsync", 1000, Saver::Memory, Durability::Sync)
    }),
    ("sequential_100_ckpt_sqlite", || chain_ckpt("sequential_100_ckpt_sqlite", 100, Saver::Sqlite, Durability::Async)),
    ("sequential_1000_ckpt_sqlite", || {
        chain_ckpt("sequential_1000_ckpt_sqlite", 1000, Saver::Sqlite, Durability::Async)
    }),
    ("sequential_1000_ckpt_sqlite_dsync", || {
        chain_ckpt("sequential_1000_ckpt_sqlite_dsync", 1000, Saver::Sqlite, Durability::Sync)
    }),
    ("wide_state_ckpt_memory", || wide_ckpt("wide_state_ckpt_memory", Saver::Memory, Durability::Async)),
    ("wide_state_ckpt_memory_dsync", || wide_ckpt("wide_state_ckpt_memory_dsync", Saver::Memory, Durability::Sync)),
    ("wide_state_ckpt_sqlite", || wide_ckpt("wide_state_ckpt_sqlite", Saver::Sqlite, Durability::Async)),
    ("wide_state_ckpt_sqlite_dsync", || wide_ckpt("wide_state_ckpt_sqlite_dsync", Saver::Sqlite, Durability::Sync)),
    ("stream_updates_1000", || stream_chain("stream_updates_1000", StreamMode::Updates)),
    ("stream_values_1000", || stream_chain("stream_values_1000", StreamMode::Values)),
    ("throughput_sync_3node", throughput_sync),
    ("throughput_async_3node_c100", throughput_async),
    ("compile_sequential_1000", compile_sequential),
    ("compile_wide_state", compile_wide),
    ("startup", startup),
    ("sqlite_commit_floor", sqlite_commit_floor),
];

fn main() {
    if std::env::var_os(STARTUP_ENV).is_some() {
        startup_child();
        return;
    }
    if let Ok(name) = std::env::var(WORKLOAD_ENV) {
        let Some((_, run)) = WORKLOADS.iter().find(|(n, _)| *n == name) else {
            eprintln!("no workload named {name}");
            std::process::exit(2);
        };
        println!("{}", run());
        return;
    }
    let mut only: Vec<String> = Vec::new();
    let mut list = false;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--only" => {
                only.extend(args.next().unwrap_or_default().split(',').filter(|s| !s.is_empty()).map(str::to_owned));
            }
            "--list" => list = true,
            // `cargo bench` passes `--bench`; anything else is ignored too.
            _ => {}
        }
    }
    let chosen = WORKLOADS.iter().filter(|(n, _)| only.is_empty() || only.iter().any(|o| n.contains(o.as_str())));
    let exe = std::env::current_exe().expect("the bench binary's path");
    let mut failed = false;
    for (name, _) in chosen {
        if list {
            println!("{name}");
            continue;
        }
        eprintln!("workload {name}");
        let out = Process::new(&exe).env(WORKLOAD_ENV, name).stderr(Stdio::inherit()).output();
        let line = match out {
            Ok(out) if out.status.success() => String::from_utf8_lossy(&out.stdout).trim().to_owned(),
            Ok(out) => {
                json!({"name": name, "ok": false, "error": format!("the workload process ended with {}", out.status)})
                    .to_string()
            }
            Err(e) => json!({"name": name, "ok": false, "error": format!("could not start the workload process: {e}")})
                .to_string(),
        };
        failed |= !line.contains("\"ok\":true");
        println!("{line}");
        let _ = std::io::stdout().flush();
    }
    if failed {
        std::process::exit(1);
    }
}

/// The check of a run without a checkpointer.
fn plain<S: State>(out: Result<RunOutput<S>, GraphError>, check: impl Fn(&S) -> Result<Value, String>) -> Checked {
    match out {
        Ok(out) => Checked::from_result(check(&out.state), out.steps + 1),
        Err(e) => Checked::failed(format!("the run failed: {e}")),
    }
}

fn cfg() -> RunConfig {
    RunConfig::default().recursion_limit(RECURSION_LIMIT)
}

/// Times `build`, returning what it built and the seconds it took.
fn timed_build<T>(build: impl FnOnce() -> T) -> (T, f64) {
    let began = Instant::now();
    let value = build();
    (value, began.elapsed().as_secs_f64())
}

fn sequential(name: &'static str, n: usize, asynchronous: bool) -> Value {
    let (app, compile_s) = timed_build(|| graphs::chain(n, asynchronous, None));
    let (rt, flavor) = if asynchronous {
        (multi_thread(), "async nodes, multi-thread runtime")
    } else {
        (current_thread(), "current-thread runtime")
    };
    let cfg = cfg();
    let m = measure(
        || (),
        |()| rt.block_on(app.invoke(Count { counter: 0 }, &cfg)),
        |(), out| plain(out, |s| check_count(s, n as i64)),
    );
    Row::new(name, format!("n={n}, dynamic builder, {flavor}"), "node", n as u64).with("compile_s", compile_s).finish(m)
}

/// §6: stream the 1000-node chain and read every event; `updates` gives 1000 events (the last
/// from `node_999` with counter 1000), `values` 1001 (counters 0 to 1000).
fn stream_chain(name: &'static str, mode: StreamMode) -> Value {
    use futures::StreamExt as _;
    use graphwright::stream::EventKind;
    let (app, compile_s) = timed_build(|| graphs::chain(1000, false, None));
    let rt = current_thread();
    let cfg = cfg();
    let (expected, last_expected) = if mode == StreamMode::Updates { (1000, "node_999:1000") } else { (1001, "1000") };
    let firsts = std::cell::RefCell::new(Vec::new());
    let m = measure(
        || (),
        |()| {
            rt.block_on(async {
                let started = Instant::now();
                let mut events = app.stream(Count { counter: 0 }, &cfg, mode);
                let (mut first, mut count, mut last, mut outcome) = (None, 0_usize, String::new(), None);
                while let Some(event) = events.next().await {
                    first.get_or_insert_with(|| started.elapsed());
                    match event.kind {
                        EventKind::Update { node, update, .. } => {
                            count += 1;
                            if let Some(graphwright::Write::Reduce(counter)) = update.counter {
                                last = format!("{node}:{counter}");
                            }
                        }
                        EventKind::Values(state) => {
                            count += 1;
                            last = state.counter.to_string();
                        }
                        EventKind::Finished { state, steps } => outcome = Some(Ok((state.counter, steps))),
                        EventKind::Failed(error) => outcome = Some(Err(error.to_string())),
                        _ => {}
                    }
                }
                (count, first, last, outcome)
            })
        },
        |(), (count, first, last, outcome)| {
            firsts.borrow_mut().extend(first);
            match outcome {
                Some(Ok((1000, steps))) if count == expected && last == last_expected => {
                    Checked::from_result(Ok(json!({"events": count, "last": last})), steps + 1)
                }
                other => Checked::failed(format!("{count} events, last {last:?}, outcome {other:?}")),
            }
        },
    );
    let mut firsts = firsts.into_inner();
    firsts.sort();
    let first_median = firsts.get(firsts.len() / 2).map_or(0.0, std::time::Duration::as_secs_f64);
    Row::new(name, format!("n=1000, mode={mode:?}, dynamic builder, current-thread runtime"), "event", expected as u64)
        .with("compile_s", compile_s)
        .with("first_event_s_median", first_median)
        .finish(m)
}

fn fanout(name: &'static str, n: i64) -> Value {
    use graphs::fanout::{StateUpdate, graph};
    let (app, compile_s) = timed_build(|| graph().compile().expect("the fan-out compiles"));
    let rt = current_thread();
    let cfg = cfg();
    let m = measure(
        || (),
        |()| rt.block_on(app.invoke(StateUpdate::new().n(n), &cfg)),
        |(), out| plain(out, |s| check_fanout(n, &s.items, s.total, s.join_calls)),
    );
    Row::new(name, format!("n={n}, #[graph] with Send, sync worker, current-thread runtime"), "worker", n as u64)
        .with("compile_s", compile_s)
        .finish(m)
}

fn fanout_async() -> Value {
    use graphs::fanout_async::{StateUpdate, graph};
    let n = 1000;
    let (app, compile_s) = timed_build(|| graph().compile().expect("the fan-out compiles"));
    let rt = multi_thread();
    let cfg = cfg();
    let m = measure(
        || (),
        |()| rt.block_on(app.invoke(StateUpdate::new().n(n), &cfg)),
        |(), out| plain(out, |s| check_fanout(n, &s.items, s.total, s.join_calls)),
    );
    Row::new("fanout_1000_async", "n=1000, #[graph] with Send, async worker, multi-thread runtime", "worker", 1000)
        .with("compile_s", compile_s)
        .finish(m)
}

fn wide_state() -> Value {
    let (app, compile_s) = timed_build(|| wide::wide::graph().compile().expect("wide_state compiles"));
    let rt = current_thread();
    let cfg = cfg();
    let m = measure(|| (), |()| rt.block_on(app.invoke(wide::input(), &cfg)), |(), out| plain(out, wide::check));
    Row::new("wide_state", "100 fields, 10 nodes, 10 laps, #[state]/#[graph], current-thread runtime", "superstep", 100)
        .with("compile_s", compile_s)
        .finish(m)
}

fn react_send(name: &'static str, checkpointed: bool) -> Value {
    use react::react_send::{State, StateUpdate, graph};
    let rt = current_thread();
    let saver: Arc<dyn Checkpointer> = Arc::new(MemorySaver::new());
    let (app, compile_s) = timed_build(|| {
        let g = graph();
        let g = if checkpointed { g.shared_checkpointer(Arc::clone(&saver)) } else { g };
        g.compile().expect("the agent compiles")
    });
    let input = || StateUpdate::new().messages(react::input());
    let check = |s: &State| react::check(&s.messages);
    let (m, params) = if checkpointed {
        let m = checkpointed_runs(&rt, &app, &saver, Durability::Async, input, check, 2 * react::TURNS + 3);
        (
            m,
            "turns=100, Send of each tool call (prebuilt shape), #[tool] + ToolNode, MemorySaver, durability=async, current-thread runtime",
        )
    } else {
        let cfg = cfg();
        let m = measure(|| (), |()| rt.block_on(app.invoke(input(), &cfg)), |(), out| plain(out, check));
        (m, "turns=100, Send of each tool call (prebuilt shape), #[tool] + ToolNode, current-thread runtime")
    };
    Row::new(name, params, "turn", react::TURNS as u64).with("compile_s", compile_s).finish(m)
}

fn react_toolnode() -> Value {
    use react::react_toolnode::{StateUpdate, graph};
    let rt = current_thread();
    let (app, compile_s) = timed_build(|| graph().compile().expect("the agent compiles"));
    let cfg = cfg();
    let m = measure(
        || (),
        |()| rt.block_on(app.invoke(StateUpdate::new().messages(react::input()), &cfg)),
        |(), out| plain(out, |s| react::check(&s.messages)),
    );
    Row::new(
        "react_loop_100_toolnode",
        "turns=100, tools_condition + ToolNode, #[tool], current-thread runtime",
        "turn",
        react::TURNS as u64,
    )
    .with("compile_s", compile_s)
    .finish(m)
}

/// Where a checkpointed workload stores its checkpoints.
#[derive(Clone, Copy, PartialEq)]
enum Saver {
    Memory,
    Sqlite,
}

/// The saver of a checkpointed workload; for SQLite, its file in /tmp.
struct SaverSetup {
    saver: Arc<dyn Checkpointer>,
    path: Option<std::path::PathBuf>,
}

impl SaverSetup {
    fn new(kind: Saver, name: &str) -> Self {
        match kind {
            Saver::Memory => Self { saver: Arc::new(MemorySaver::new()), path: None },
            Saver::Sqlite => {
                let path = std::env::temp_dir().join(format!("graphwright_bench_{}_{name}.sqlite", std::process::id()));
                let saver = SqliteSaver::open(&path).expect("the SQLite file opens");
                Self { saver: Arc::new(saver), path: Some(path) }
            }
        }
    }

    fn describe(&self, durability: Durability) -> String {
        let saver = if self.path.is_some() { "SqliteSaver (WAL, synchronous=FULL)" } else { "MemorySaver" };
        format!("{saver}, durability={}, current-thread runtime", format!("{durability:?}").to_lowercase())
    }

    /// Bytes stored by one run on a thread, from the SQLite file (before the thread is deleted).
    fn sqlite_stats(&self, thread: &str, steps: u64) -> Option<Value> {
        let path = self.path.as_ref()?;
        let db = rusqlite::Connection::open(path).ok()?;
        let (checkpoints, checkpoint_bodies, checkpoint_keys): (i64, i64, i64) = db
            .query_row(
                "SELECT count(*), coalesce(sum(length(body)), 0), \
                 coalesce(sum(length(thread_id) + length(id) + coalesce(length(parent_id), 0) + length(source) + 24), 0) \
                 FROM checkpoints WHERE thread_id = ?1",
                [thread],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .ok()?;
        let (writes, write_bodies, write_keys): (i64, i64, i64) = db
            .query_row(
                "SELECT count(*), coalesce(sum(length(body)), 0), coalesce(sum(length(thread_id) + length(checkpoint_id) + 16), 0) \
                 FROM writes WHERE thread_id = ?1",
                [thread],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
            )
            .ok()?;
        let bodies = checkpoint_bodies + write_bodies;
        Some(json!({
            "checkpoint_rows": checkpoints,
            "write_rows": writes,
            "checkpoint_body_bytes": checkpoint_bodies,
            "write_body_bytes": write_bodies,
            "avg_checkpoint_body_bytes": checkpoint_bodies as f64 / checkpoints.max(1) as f64,
            "body_bytes_per_step": bodies as f64 / steps as f64,
            "key_and_metadata_bytes_per_step": (checkpoint_keys + write_keys) as f64 / steps as f64,
        }))
    }
}

impl Drop for SaverSetup {
    fn drop(&mut self) {
        if let Some(path) = &self.path {
            for suffix in ["", "-wal", "-shm"] {
                let mut p = path.clone().into_os_string();
                p.push(suffix);
                let _ = std::fs::remove_file(p);
            }
        }
    }
}

/// The runs of a checkpointed workload: a fresh thread per run; after the run, untimed, the
/// final state, the checkpoint count and the latest checkpoint's state are checked and the
/// thread is deleted.
fn checkpointed_runs<S: State, U: Into<S::Update>>(
    rt: &tokio::runtime::Runtime,
    app: &CompiledGraph<S>,
    saver: &Arc<dyn Checkpointer>,
    durability: Durability,
    input: impl Fn() -> U,
    check: impl Fn(&S) -> Result<Value, String>,
    expected_checkpoints: usize,
) -> Measured {
    measure(
        || RunConfig::thread(fresh_thread()).durability(durability).recursion_limit(RECURSION_LIMIT),
        |cfg| rt.block_on(app.invoke(input(), cfg)),
        |cfg, out| {
            let thread = cfg.thread_id().unwrap_or_default().to_owned();
            let checked = rt.block_on(async {
                let out = match out {
                    Ok(out) => out,
                    Err(e) => return Checked::failed(format!("the run failed: {e}")),
                };
                let stored = match saver.list(&thread, &ListFilter::default()).await {
                    Ok(list) => list.len(),
                    Err(e) => return Checked::failed(format!("listing the checkpoints failed: {e}")),
                };
                let checked = Checked::from_result(check(&out.state), out.steps + 1)
                    .with_checkpoints(stored, expected_checkpoints);
                match app.get_state(&cfg).await {
                    Ok(Some(latest))
                        if serde_json::to_value(&latest.state).ok() == serde_json::to_value(&out.state).ok() =>
                    {
                        checked
                    }
                    Ok(Some(_)) => Checked::failed("the latest checkpoint does not hold the final state"),
                    Ok(None) => Checked::failed("the thread has no checkpoint"),
                    Err(e) => Checked::failed(format!("reading the latest checkpoint failed: {e}")),
                }
            });
            match rt.block_on(saver.delete_thread(&thread)) {
                Ok(()) => checked,
                Err(e) => Checked::failed(format!("delete_thread failed: {e}")),
            }
        },
    )
}

/// One more run, untimed, to read the SQLite storage figures.
fn storage_run<S: State, U: Into<S::Update>>(
    rt: &tokio::runtime::Runtime,
    app: &CompiledGraph<S>,
    setup: &SaverSetup,
    durability: Durability,
    input: U,
    steps: u64,
) -> Option<Value> {
    setup.path.as_ref()?;
    let cfg = RunConfig::thread(fresh_thread()).durability(durability).recursion_limit(RECURSION_LIMIT);
    rt.block_on(app.invoke(input, &cfg)).ok()?;
    let stats = setup.sqlite_stats(cfg.thread_id()?, steps);
    rt.block_on(setup.saver.delete_thread(cfg.thread_id()?)).ok()?;
    stats
}

fn chain_ckpt(name: &'static str, n: usize, kind: Saver, durability: Durability) -> Value {
    let setup = SaverSetup::new(kind, name);
    let (app, compile_s) = timed_build(|| graphs::chain(n, false, Some(Arc::clone(&setup.saver))));
    let rt = current_thread();
    let m = checkpointed_runs(
        &rt,
        &app,
        &setup.saver,
        durability,
        || Count { counter: 0 },
        |s| check_count(s, n as i64),
        n + 2,
    );
    let mut row = Row::new(name, format!("n={n}, dynamic builder, {}", setup.describe(durability)), "node", n as u64)
        .with("compile_s", compile_s);
    if let Some(stats) = storage_run(&rt, &app, &setup, durability, Count { counter: 0 }, n as u64) {
        row = row.with("sqlite", stats);
    }
    row.finish(m)
}

fn wide_ckpt(name: &'static str, kind: Saver, durability: Durability) -> Value {
    let setup = SaverSetup::new(kind, name);
    let (app, compile_s) = timed_build(|| {
        wide::wide::graph().shared_checkpointer(Arc::clone(&setup.saver)).compile().expect("wide_state compiles")
    });
    let rt = current_thread();
    let m = checkpointed_runs(&rt, &app, &setup.saver, durability, wide::input, wide::check, 102);
    let mut row = Row::new(
        name,
        format!("100 fields, 10 nodes, #[state]/#[graph], {}", setup.describe(durability)),
        "superstep",
        100,
    )
    .with("compile_s", compile_s);
    if let Some(stats) = storage_run(&rt, &app, &setup, durability, wide::input(), 100) {
        row = row.with("sqlite", stats);
    }
    row.finish(m)
}

const INVOCATIONS: usize = 1000;

fn check_all(outs: Vec<Result<(i64, u64), String>>) -> Checked {
    if outs.len() != INVOCATIONS {
        return Checked::failed(format!("{} results, expected {INVOCATIONS}", outs.len()));
    }
    let mut steps = 0;
    for out in outs {
        match out {
            Ok((3, ran)) => steps = ran + 1,
            Ok((counter, _)) => return Checked::failed(format!("a result has counter = {counter}")),
            Err(e) => return Checked::failed(format!("a run failed: {e}")),
        }
    }
    Checked::ok(json!({"results": INVOCATIONS, "each": {"counter": 3}}), steps)
}

fn throughput_sync() -> Value {
    let (app, compile_s) = timed_build(|| graphs::three::graph().compile().expect("the 3-node chain compiles"));
    let rt = current_thread();
    let m = measure(
        || (),
        |()| {
            (0..INVOCATIONS)
                .map(|_| {
                    rt.block_on(app.invoke(graphs::three::State { counter: 0 }, &cfg()))
                        .map(|o| (o.state.counter, o.steps))
                        .map_err(|e| e.to_string())
                })
                .collect::<Vec<_>>()
        },
        |(), outs| check_all(outs),
    );
    let per_s = INVOCATIONS as f64 / harness::median(&m.wall).as_secs_f64();
    Row::new(
        "throughput_sync_3node",
        "invocations=1000, #[graph], one current-thread runtime reused, block_on per invoke",
        "invocation",
        INVOCATIONS as u64,
    )
    .with("invocations_per_s", per_s)
    .with("compile_s", compile_s)
    .finish(m)
}

fn throughput_async() -> Value {
    let (app, compile_s) = timed_build(|| graphs::three_async::graph().compile().expect("the 3-node chain compiles"));
    let rt = multi_thread();
    let m = measure(
        || (),
        |()| {
            rt.block_on(async {
                use futures::StreamExt as _;
                // At most 100 invocations in flight, all polled by one task: the way Rust bounds
                // concurrency, and what asyncio's `gather` under a semaphore does on its one thread.
                futures::stream::iter(0..INVOCATIONS)
                    .map(|_| {
                        let app = &app;
                        async move { app.invoke(graphs::three_async::State { counter: 0 }, &cfg()).await }
                    })
                    .buffer_unordered(100)
                    .map(|out| out.map(|o| (o.state.counter, o.steps)).map_err(|e| e.to_string()))
                    .collect::<Vec<_>>()
                    .await
            })
        },
        |(), outs| check_all(outs),
    );
    let per_s = INVOCATIONS as f64 / harness::median(&m.wall).as_secs_f64();
    Row::new(
        "throughput_async_3node_c100",
        "invocations=1000, concurrency=100 (buffer_unordered on one task), async nodes, multi-thread runtime (2 workers)",
        "invocation",
        INVOCATIONS as u64,
    )
    .with("invocations_per_s", per_s)
    .with("compile_s", compile_s)
    .finish(m)
}

const NODE_COUNT_NOTE: &str = "graphwright's compiled graph has no START node, so the count is the user nodes only \
                               (LangGraph counts __start__: 1001 and 11)";

fn compile_sequential() -> Value {
    let m = measure(
        || (),
        |()| graphs::chain(1000, false, None),
        |(), app| {
            let nodes = app.node_names().len();
            let result =
                if nodes == 1000 { Ok(json!({"nodes": nodes})) } else { Err(format!("{nodes} nodes, expected 1000")) };
            Checked::from_result(result, 0)
        },
    );
    Row::new(
        "compile_sequential_1000",
        "which=sequential_1000, dynamic builder: add_node x1000, add_edge x1001, compile",
        "graph",
        1,
    )
    .with("note", NODE_COUNT_NOTE)
    .finish(m)
}

fn compile_wide() -> Value {
    let m = measure(
        || (),
        |()| wide::wide::graph().compile(),
        |(), app| match app {
            Ok(app) => {
                let nodes = app.node_names().len();
                let result =
                    if nodes == 10 { Ok(json!({"nodes": nodes})) } else { Err(format!("{nodes} nodes, expected 10")) };
                Checked::from_result(result, 0)
            }
            Err(e) => Checked::failed(e.to_string()),
        },
    );
    Row::new(
        "compile_wide_state",
        "which=wide_state, #[graph]: graph() + compile (the wiring was checked by rustc)",
        "graph",
        1,
    )
    .with("note", NODE_COUNT_NOTE)
    .finish(m)
}

/// The child of `startup`: compile the `ReAct` agent (tools, messages, routing) and exit,
/// printing its node count and peak RSS.
fn startup_child() {
    let app = react::react_toolnode::graph().compile().expect("the agent compiles");
    println!("{} {}", app.node_names().len(), harness::peak_rss_mib());
}

/// Process start to a compiled graph: spawn → exit of this binary in startup mode.
fn startup() -> Value {
    let exe = std::env::current_exe().expect("the bench binary's path");
    let mut rss = Vec::new();
    let m = measure(
        || (),
        |()| Process::new(&exe).env(STARTUP_ENV, "1").env_remove(WORKLOAD_ENV).output(),
        |(), out| {
            let out = match out {
                Ok(out) if out.status.success() => out,
                Ok(out) => return Checked::failed(format!("the child ended with {}", out.status)),
                Err(e) => return Checked::failed(format!("could not start the child: {e}")),
            };
            let text = String::from_utf8_lossy(&out.stdout);
            let mut fields = text.split_whitespace();
            let nodes: usize = fields.next().and_then(|v| v.parse().ok()).unwrap_or(0);
            rss.push(fields.next().and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0));
            let result = if nodes == 2 {
                Ok(json!({"nodes": nodes}))
            } else {
                Err(format!("the child compiled {nodes} nodes, expected 2"))
            };
            Checked::from_result(result, 0)
        },
    );
    let child_rss = rss.iter().copied().fold(0.0_f64, f64::max);
    let mut line = Row::new(
        "startup",
        "spawn -> exit of the bench binary compiling the ReAct agent (#[graph] + ToolNode)",
        "process",
        1,
    )
    .with("note", "peak_rss_mib is the child's VmHWM; the parent's is parent_peak_rss_mib")
    .with("parent_peak_rss_mib", (harness::peak_rss_mib() * 10.0).round() / 10.0)
    .finish(m);
    if let Value::Object(fields) = &mut line {
        fields.insert("peak_rss_mib".to_owned(), ((child_rss * 10.0).round() / 10.0).into());
    }
    line
}

/// The floor for sync durability on SQLite: one fsync'd WAL commit of one small row, as a
/// checkpoint per step would need at least, on this machine's disk.
fn sqlite_commit_floor() -> Value {
    const COMMITS: u64 = 200;
    let path = std::env::temp_dir().join(format!("graphwright_bench_{}_commit_floor.sqlite", std::process::id()));
    let db = rusqlite::Connection::open(&path).expect("the SQLite file opens");
    db.pragma_update(None, "journal_mode", "WAL").expect("WAL");
    db.pragma_update(None, "synchronous", "FULL").expect("synchronous=FULL");
    db.execute_batch("CREATE TABLE IF NOT EXISTS t (k INTEGER PRIMARY KEY, body BLOB NOT NULL)").expect("a table");
    let body = vec![7_u8; 100];
    let mut key: i64 = 0;
    let m = measure(
        || (),
        |()| {
            let mut done = 0;
            for _ in 0..COMMITS {
                key += 1;
                if db.execute("INSERT INTO t (k, body) VALUES (?1, ?2)", rusqlite::params![key, body]).is_ok() {
                    done += 1;
                }
            }
            done
        },
        |(), done: u64| {
            let result = if done == COMMITS {
                Ok(json!({"commits": done}))
            } else {
                Err(format!("{done} commits of {COMMITS}"))
            };
            Checked::from_result(result, 0)
        },
    );
    drop(db);
    for suffix in ["", "-wal", "-shm"] {
        let mut p = path.clone().into_os_string();
        p.push(suffix);
        let _ = std::fs::remove_file(p);
    }
    Row::new(
        "sqlite_commit_floor",
        "one autocommit INSERT of a 100-byte row per commit, WAL, synchronous=FULL, rusqlite",
        "commit",
        COMMITS,
    )
    .with("note", "not a LangGraph workload: the floor for sync durability on SQLite")
    .finish(m)
}
