//! What observability costs a run (BENCHMARKS.md, "Observability"): the `ReAct` loops of the
//! workloads bench, each in four configurations, in one run of this bench.
//!
//! ```text
//! cargo bench -p graphwright --features otel --bench otel -- [--only NAME,NAME] [--rounds N]
//! ```
//!
//! - `off`: no subscriber at all, as a program that sets up no tracing runs;
//! - `thread`: as `off`, in a process with one more thread, parked: the allocator takes locks
//!   once a process has a second thread (glibc's skips them in a process of one), which export's
//!   thread brings to a program that had none; a program on tokio's multi-thread runtime or with
//!   any thread of its own pays it already. `export` is compared with both;
//! - `subscriber`: a `tracing_subscriber::registry()` with a layer that keeps nothing, the cost
//!   of having some subscriber without OpenTelemetry;
//! - `export`: `Otel::from_env().endpoint(..).build()` and its `layer()` on a registry as the
//!   global default, exporting over OTLP/HTTP (protobuf) to a receiver this bench runs on a
//!   thread of its own. The receiver reads every request whole and answers `200` with an empty
//!   body; the spans it received are counted from the protobuf, so the report shows that they
//!   went out (`spans_dropped`: those the runs made that did not arrive). The `OTEL_*`
//!   variables apply as in any program (`OTEL_BSP_*`, the sampler), except that the batch
//!   processor's queue is raised to 65 536 spans unless `OTEL_BSP_MAX_QUEUE_SIZE` is set: the
//!   loops make spans faster than the default queue of 2 048 is drained, and spans dropped
//!   would make export look cheaper than exporting every span is. The child waits (a flush)
//!   until export is ready before its first run: the clock's calibration and the HTTP client's
//!   root certificates, once per process, are reported apart (`export_ready_ms`), not spread
//!   over the first runs measured.
//!
//! Each configuration runs in a child process of its own (this binary again, with
//! `GRAPHWRIGHT_OTEL_BENCH` naming it), so that tracing's per-callsite interest cache is set as
//! in a program that runs only that configuration. A child makes warm-up runs, then timed runs
//! (each checked, untimed), and reports the median time of a run per turn, the mean, and the
//! process's CPU time per turn (every thread: the exporter's too). The four configurations
//! alternate, in a rotating order, for `--rounds` rounds (5 by default); the figures reported
//! are medians over the rounds, and each ratio is the median of the rounds' ratios to `off` (and
//! export's to `thread`) in the same round; beside them, export's fastest round against `off`'s
//! and `thread`'s fastest (`fastest_ratio_to_off`, `fastest_ratio_to_thread`). One JSON line per
//! workload and configuration goes to stdout, a table to stderr.
//!
//! Workloads: `react_loop_100_toolnode` and `react_loop_100` (the workloads bench's, a scripted
//! model answering in the node), and `react_model_2ms_toolnode`: the same loop whose node calls
//! a `ChatModel` that takes 2 ms to answer, as a model over the network would (so each turn
//! also has a `chat` span), to set the overhead against a step of realistic length.

#![forbid(unsafe_code)]
// Benchmark arithmetic turns counts and durations into floats; none comes near 2^52.
#![allow(clippy::cast_precision_loss)]

#[path = "workloads/react.rs"]
mod react;

use futures::future::BoxFuture;
use graphwright::model::{ChatModel, ModelError, ModelReply, ModelRequest, ModelSettings, ReplySink, Usage};
use graphwright::otel::Otel;
use graphwright::prelude::*;
use graphwright::{GraphError, RunOutput};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::{TcpListener, TcpStream};
use std::process::{Command as Process, Stdio};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};
use tracing_subscriber::layer::SubscriberExt as _;

/// Names the workload and configuration a child runs (`workload/config`).
const CHILD_ENV: &str = "GRAPHWRIGHT_OTEL_BENCH";
/// The receiver's base URL, given to an `export` child.
const SINK_ENV: &str = "GRAPHWRIGHT_OTEL_BENCH_SINK";

/// The configurations, in the order of the first round.
const CONFIGS: [&str; 4] = ["off", "thread", "subscriber", "export"];

/// A workload: its name, what it is, runs before timing, timed runs, the spans one run makes,
/// and the function that makes the graph and measures it.
struct Workload {
    name: &'static str,
    params: &'static str,
    warmup: usize,
    runs: usize,
    spans: usize,
    run: fn(&Plan) -> Value,
}

const WORKLOADS: &[Workload] = &[
    Workload {
        name: "react_loop_100_toolnode",
        params: "turns=100, tools_condition + ToolNode, #[tool], scripted model in the node, current-thread runtime",
        warmup: 20,
        runs: 101,
        // The run, 201 steps of one task each, and 100 tool calls.
        spans: 1 + 2 * 201 + 100,
        run: toolnode,
    },
    Workload {
        name: "react_loop_100",
        params: "turns=100, Send of each tool call (prebuilt shape), #[tool] + ToolNode, current-thread runtime",
        warmup: 20,
        runs: 101,
        spans: 1 + 2 * 201 + 100,
        run: send,
    },
    Workload {
        name: "react_model_2ms_toolnode",
        params: "turns=100, tools_condition + ToolNode, a ChatModel answering after a 2 ms sleep, current-thread runtime",
        warmup: 1,
        runs: 5,
        // As `react_loop_100_toolnode`, and 101 model calls.
        spans: 1 + 2 * 201 + 100 + 101,
        run: model_2ms,
    },
];

/// How many runs a child makes.
struct Plan {
    warmup: usize,
    runs: usize,
}

fn main() {
    if let Ok(which) = std::env::var(CHILD_ENV) {
        child(&which);
        return;
    }
    let mut only: Vec<String> = Vec::new();
    let mut rounds = 5_usize;
    let mut args = std::env::args().skip(1);
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--only" => {
                only.extend(args.next().unwrap_or_default().split(',').filter(|s| !s.is_empty()).map(str::to_owned));
            }
            "--rounds" => rounds = args.next().and_then(|n| n.parse().ok()).filter(|&n| n > 0).unwrap_or(rounds),
            // `cargo bench` passes `--bench`; anything else is ignored too.
            _ => {}
        }
    }
    let sink = Sink::start();
    let mut summaries = Vec::new();
    let mut failed = false;
    for workload in WORKLOADS.iter().filter(|w| only.is_empty() || only.iter().any(|o| w.name.contains(o.as_str()))) {
        let load_before = load_average();
        let mut lines: BTreeMap<&str, Vec<Value>> = BTreeMap::new();
        for round in 0..rounds {
            for k in 0..CONFIGS.len() {
                let config = CONFIGS[(round + k) % CONFIGS.len()];
                eprintln!("{} {config} (round {})", workload.name, round + 1);
                let line = run_child(workload, config, &sink);
                failed |= line["ok"] != Value::Bool(true);
                lines.entry(config).or_default().push(line);
            }
        }
        let load = [load_before, load_average()];
        for config in CONFIGS {
            let line = summarize(workload, config, &lines, &load);
            println!("{line}");
            let _ = std::io::stdout().flush();
            summaries.push(line);
        }
    }
    print_table(&summaries);
    if failed {
        std::process::exit(1);
    }
}

/// Runs one child and returns its JSON line, with what the receiver got while it ran.
fn run_child(workload: &Workload, config: &str, sink: &Sink) -> Value {
    let exe = std::env::current_exe().expect("the bench binary's path");
    sink.reset();
    let mut child = Process::new(exe);
    child.env(CHILD_ENV, format!("{}/{config}", workload.name)).env(SINK_ENV, &sink.url).stderr(Stdio::inherit());
    if std::env::var_os("OTEL_BSP_MAX_QUEUE_SIZE").is_none() {
        // The loops make spans far faster than an agent talking to a real model; with the
        // default queue (2048) the processor would drop some, and the export would look cheaper
        // than exporting every span is.
        child.env("OTEL_BSP_MAX_QUEUE_SIZE", "65536");
    }
    let out = child.output();
    let mut line = match out {
        Ok(out) if out.status.success() => {
            serde_json::from_slice(&out.stdout).unwrap_or_else(|e| json!({"ok": false, "error": e.to_string()}))
        }
        Ok(out) => json!({"ok": false, "error": format!("the child ended with {}", out.status)}),
        Err(e) => json!({"ok": false, "error": format!("could not start the child: {e}")}),
    };
    let expected = workload.spans;
    let received = sink.take();
    if config == "export" {
        let runs = line["runs_total"].as_u64().unwrap_or(0);
        let spans: usize = received.spans.values().sum();
        let fields = line.as_object_mut().expect("a JSON object");
        fields.insert("export_requests".to_owned(), received.trace_requests.into());
        fields.insert("export_bytes".to_owned(), received.trace_bytes.into());
        fields.insert("metric_requests".to_owned(), received.metric_requests.into());
        fields.insert("spans".to_owned(), spans.into());
        fields.insert("spans_dropped".to_owned(), (expected * runs as usize).saturating_sub(spans).into());
        fields.insert("spans_per_run".to_owned(), json!(spans as f64 / runs.max(1) as f64));
        fields.insert("span_names".to_owned(), json!(received.spans));
        if received.trace_requests == 0 || spans == 0 {
            fields.insert("ok".to_owned(), false.into());
            fields.insert("error".to_owned(), "the receiver got no spans".into());
        }
    } else if received.trace_requests > 0 {
        line["ok"] = false.into();
        line["error"] = format!("{} export requests in configuration {config}", received.trace_requests).into();
    }
    line
}

/// One workload's line for `config`: medians over the rounds, and ratios to `off` taken round by
/// round.
fn summarize(workload: &Workload, config: &str, lines: &BTreeMap<&str, Vec<Value>>, load: &[Value; 2]) -> Value {
    let of = |config: &str, key: &str| -> Vec<f64> {
        lines.get(config).map(|ls| ls.iter().map(|l| l[key].as_f64().unwrap_or(f64::NAN)).collect()).unwrap_or_default()
    };
    let ratios_to =
        |to: &str, key: &str| -> Vec<f64> { of(config, key).iter().zip(of(to, key)).map(|(a, b)| a / b).collect() };
    let ratios = |key: &str| ratios_to("off", key);
    let mine = lines.get(config).map(Vec::as_slice).unwrap_or_default();
    let my_fastest = fastest(&of(config, "per_turn_us"));
    let mut line = json!({
        "name": workload.name,
        "config": config,
        "params": workload.params,
        "per_turn_us": median(&of(config, "per_turn_us")),
        "per_turn_us_rounds": of(config, "per_turn_us"),
        "per_turn_us_mean": median(&of(config, "per_turn_us_mean")),
        "cpu_per_turn_us": median(&of(config, "cpu_per_turn_us")),
        "ratio_to_off": median(&ratios("per_turn_us")),
        "ratio_to_off_rounds": ratios("per_turn_us"),
        "per_turn_us_fastest": my_fastest,
        "fastest_ratio_to_off": my_fastest / fastest(&of("off", "per_turn_us")),
        "cpu_ratio_to_off": median(&ratios("cpu_per_turn_us")),
        "run_cpu_per_turn_us": median(&of(config, "run_cpu_per_turn_us")),
        "run_cpu_ratio_to_off": median(&ratios("run_cpu_per_turn_us")),
        "unit": "turn",
        "units": react::TURNS,
        "runs_per_round": mine.first().map_or(Value::Null, |l| l["runs"].clone()),
        "rounds": mine.len(),
        "load_1m": load,
        "ok": !mine.is_empty() && mine.iter().all(|l| l["ok"] == Value::Bool(true)),
    });
    let fields = line.as_object_mut().expect("a JSON object");
    if config == "export" {
        for key in ["export_requests", "export_bytes", "spans", "spans_dropped", "export_ready_ms"] {
            fields.insert(format!("{key}_per_round"), json!(of(config, key)));
        }
        fields.insert("export_ready_ms".to_owned(), json!(median(&of(config, "export_ready_ms"))));
        fields.insert("ratio_to_thread".to_owned(), json!(median(&ratios_to("thread", "per_turn_us"))));
        fields.insert("ratio_to_thread_rounds".to_owned(), json!(ratios_to("thread", "per_turn_us")));
        let to_thread = my_fastest / fastest(&of("thread", "per_turn_us"));
        fields.insert("fastest_ratio_to_thread".to_owned(), json!(to_thread));
        fields.insert("run_cpu_ratio_to_thread".to_owned(), json!(median(&ratios_to("thread", "run_cpu_per_turn_us"))));
        fields.insert("spans_per_run".to_owned(), json!(median(&of(config, "spans_per_run"))));
        fields.insert("spans_per_run_expected".to_owned(), workload.spans.into());
        if let Some(names) = mine.first().map(|l| l["span_names"].clone()) {
            fields.insert("span_names_first_round".to_owned(), names);
        }
    }
    let problems: Vec<Value> =
        mine.iter().filter_map(|l| l.get("error").or_else(|| l.get("problems")).cloned()).collect();
    if !problems.is_empty() {
        fields.insert("problems".to_owned(), problems.into());
    }
    line
}

fn print_table(lines: &[Value]) {
    eprintln!();
    eprintln!(
        "{:<26} {:>8} {:>16} {:>16} {:>16} {:>11} {:>20} {:>20} {:>9} {:>9}",
        "workload",
        "off µs",
        "thread µs",
        "subscriber µs",
        "export µs",
        "export/thread",
        "fastest: off, thread",
        "export, run's CPU µs",
        "spans/run",
        "load 1m"
    );
    for chunk in lines.chunks(CONFIGS.len()) {
        let cell = |l: &Value, key: &str, ratio: &str| {
            format!("{:.3} ({:.2}×)", l[key].as_f64().unwrap_or(0.0), l[ratio].as_f64().unwrap_or(0.0))
        };
        let [off, thread, sub, export] = chunk else { continue };
        eprintln!(
            "{:<26} {:>8.3} {:>16} {:>16} {:>16} {:>11} {:>20} {:>20} {:>9.1} {:>9}",
            off["name"].as_str().unwrap_or(""),
            off["per_turn_us"].as_f64().unwrap_or(0.0),
            cell(thread, "per_turn_us", "ratio_to_off"),
            cell(sub, "per_turn_us", "ratio_to_off"),
            cell(export, "per_turn_us", "ratio_to_off"),
            format!("{:.2}×", export["ratio_to_thread"].as_f64().unwrap_or(0.0)),
            format!(
                "{:.3}×, {:.3}×",
                export["fastest_ratio_to_off"].as_f64().unwrap_or(0.0),
                export["fastest_ratio_to_thread"].as_f64().unwrap_or(0.0)
            ),
            cell(export, "run_cpu_per_turn_us", "run_cpu_ratio_to_off"),
            export["spans_per_run"].as_f64().unwrap_or(0.0),
            format!("{}–{}", export["load_1m"][0], export["load_1m"][1]),
        );
    }
}

/// The 1-minute load average, as `/proc/loadavg` gives it.
fn load_average() -> Value {
    std::fs::read_to_string("/proc/loadavg")
        .ok()
        .and_then(|s| s.split_whitespace().next().and_then(|l| l.parse::<f64>().ok()))
        .map_or(Value::Null, Into::into)
}

/// The fastest of a configuration's rounds: on a machine whose rounds run at one of two speeds
/// (BENCHMARKS.md), fastest against fastest compares the two at the same speed, where a median
/// may set one speed against the other.
fn fastest(values: &[f64]) -> f64 {
    values.iter().copied().reduce(f64::min).unwrap_or(f64::NAN)
}

fn median(values: &[f64]) -> f64 {
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    match sorted.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => sorted[n / 2],
        n => f64::midpoint(sorted[n / 2 - 1], sorted[n / 2]),
    }
}

// ---- the child -------------------------------------------------------------------------------

fn child(which: &str) {
    let (name, config) = which.split_once('/').unwrap_or((which, ""));
    let Some(workload) = WORKLOADS.iter().find(|w| w.name == name) else {
        eprintln!("no workload named {name}");
        std::process::exit(2);
    };
    // How long export took to be ready, from its setup.
    let mut ready = None;
    let telemetry = match config {
        "off" => None,
        "thread" => {
            std::thread::spawn(|| {
                loop {
                    std::thread::park();
                }
            });
            None
        }
        "subscriber" => {
            let subscriber = tracing_subscriber::registry().with(KeepNothing);
            tracing::subscriber::set_global_default(subscriber).expect("no subscriber yet");
            None
        }
        "export" => {
            let url = std::env::var(SINK_ENV).expect("the receiver's URL");
            let started = Instant::now();
            let telemetry = Otel::from_env().endpoint(url).build().expect("export sets up");
            let subscriber = tracing_subscriber::registry().with(telemetry.layer());
            tracing::subscriber::set_global_default(subscriber).expect("no subscriber yet");
            // Untimed: the export's thread readies itself (the clock's calibration, the HTTP
            // client's root certificates) once per process; a flush returns when it is ready,
            // so the runs measured are a process's steady state, and the start is reported apart.
            telemetry.flush().expect("nothing to send yet");
            ready = Some(started.elapsed());
            Some(telemetry)
        }
        other => {
            eprintln!("no configuration named {other}");
            std::process::exit(2);
        }
    };
    let mut line = (workload.run)(&Plan { warmup: workload.warmup, runs: workload.runs });
    if let Some(ready) = ready {
        line["export_ready_ms"] = (ready.as_secs_f64() * 1e3).into();
    }
    if let Some(telemetry) = telemetry {
        // Untimed: what is still queued goes out before the receiver's counts are read.
        if let Err(e) = telemetry.flush() {
            line["ok"] = false.into();
            line["error"] = format!("the last export failed: {e}").into();
        }
        drop(telemetry);
    }
    println!("{line}");
}

/// A layer that keeps nothing: the registry under it still makes and tracks every span.
struct KeepNothing;

impl<S: tracing::Subscriber> tracing_subscriber::Layer<S> for KeepNothing {}

/// Makes `plan.warmup` untimed runs, then `plan.runs` timed ones, checking each (untimed).
fn measure<T>(plan: &Plan, mut run: impl FnMut() -> T, check: impl Fn(T) -> Result<(), String>) -> Value {
    let mut problems = Vec::new();
    let mut walls = Vec::with_capacity(plan.runs);
    let mut cpu = Duration::ZERO;
    let mut run_cpu = Duration::ZERO;
    for i in 0..plan.warmup + plan.runs {
        let cpu_before = cpu_time();
        let run_cpu_before = thread_cpu_time();
        let started = Instant::now();
        let out = run();
        let wall = started.elapsed();
        let run_cpu_used = thread_cpu_time().saturating_sub(run_cpu_before);
        let cpu_used = cpu_time().saturating_sub(cpu_before);
        if let Err(problem) = check(out) {
            problems.push(format!("run {i}: {problem}"));
        }
        if i >= plan.warmup {
            walls.push(wall);
            cpu += cpu_used;
            run_cpu += run_cpu_used;
        }
    }
    let turns = react::TURNS as f64;
    let per_turn: Vec<f64> = walls.iter().map(|w| w.as_secs_f64() * 1e6 / turns).collect();
    let total: Duration = walls.iter().sum();
    let mut line = Map::new();
    line.insert("per_turn_us".to_owned(), median(&per_turn).into());
    line.insert("per_turn_us_min".to_owned(), per_turn.iter().copied().fold(f64::INFINITY, f64::min).into());
    line.insert("per_turn_us_mean".to_owned(), (total.as_secs_f64() * 1e6 / turns / plan.runs as f64).into());
    line.insert("cpu_per_turn_us".to_owned(), (cpu.as_secs_f64() * 1e6 / turns / plan.runs as f64).into());
    line.insert("run_cpu_per_turn_us".to_owned(), (run_cpu.as_secs_f64() * 1e6 / turns / plan.runs as f64).into());
    line.insert("runs".to_owned(), plan.runs.into());
    line.insert("runs_total".to_owned(), (plan.warmup + plan.runs).into());
    line.insert("ok".to_owned(), problems.is_empty().into());
    if !problems.is_empty() {
        problems.truncate(3);
        line.insert("problems".to_owned(), problems.into());
    }
    Value::Object(line)
}

/// CPU time of the whole process, every thread (`CLOCK_PROCESS_CPUTIME_ID`).
fn cpu_time() -> Duration {
    clock(rustix::time::ClockId::ProcessCPUTime)
}

/// CPU time of this thread, the one the run goes on (`CLOCK_THREAD_CPUTIME_ID`): the run's own
/// time, whatever other threads (the exporter's) take of the machine.
fn thread_cpu_time() -> Duration {
    clock(rustix::time::ClockId::ThreadCPUTime)
}

fn clock(id: rustix::time::ClockId) -> Duration {
    let t = rustix::time::clock_gettime(id);
    Duration::new(u64::try_from(t.tv_sec).unwrap_or(0), u32::try_from(t.tv_nsec).unwrap_or(0))
}

fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}

fn cfg() -> RunConfig {
    RunConfig::default().recursion_limit(100_000)
}

/// The check of a run's result, given the check of its messages.
fn checked<S>(
    out: Result<RunOutput<S>, GraphError>,
    messages: impl Fn(&S) -> Result<(), String>,
) -> Result<(), String> {
    match out {
        Ok(out) => messages(&out.state),
        Err(e) => Err(format!("the run failed: {e}")),
    }
}

fn toolnode(plan: &Plan) -> Value {
    use react::react_toolnode::{StateUpdate, graph};
    let rt = current_thread();
    let app = graph().compile().expect("the agent compiles");
    let cfg = cfg();
    measure(
        plan,
        || rt.block_on(app.invoke(StateUpdate::new().messages(react::input()), &cfg)),
        |out| checked(out, |s| react::check(&s.messages).map(drop)),
    )
}

fn send(plan: &Plan) -> Value {
    use react::react_send::{StateUpdate, graph};
    let rt = current_thread();
    let app = graph().compile().expect("the agent compiles");
    let cfg = cfg();
    measure(
        plan,
        || rt.block_on(app.invoke(StateUpdate::new().messages(react::input()), &cfg)),
        |out| checked(out, |s| react::check(&s.messages).map(drop)),
    )
}

fn model_2ms(plan: &Plan) -> Value {
    use with_model::{StateUpdate, graph};
    let rt = current_thread();
    let app = graph().compile().expect("the agent compiles");
    let cfg = cfg();
    measure(
        plan,
        || rt.block_on(app.invoke(StateUpdate::new().messages(react::input()), &cfg)),
        |out| checked(out, |s| check_model_run(&s.messages)),
    )
}

/// The scripted model's replies, after a 2 ms wait. The wait is a sleep of the thread: the run
/// has nothing else to do meanwhile, as while a reply comes over the network, and a timer of the
/// runtime would round it up to its next millisecond tick.
struct SlowModel {
    settings: ModelSettings,
}

/// How long a model call takes.
const MODEL_WAIT: Duration = Duration::from_millis(2);

static MODEL: std::sync::LazyLock<SlowModel> =
    std::sync::LazyLock::new(|| SlowModel { settings: ModelSettings::default() });

impl ChatModel for SlowModel {
    fn provider(&self) -> &'static str {
        "bench"
    }

    fn model(&self) -> &'static str {
        "scripted-2ms"
    }

    fn settings(&self) -> &ModelSettings {
        &self.settings
    }

    fn settings_mut(&mut self) -> &mut ModelSettings {
        &mut self.settings
    }

    fn generate<'a>(
        &'a self,
        request: ModelRequest<'a>,
        _sink: &'a mut dyn ReplySink,
    ) -> BoxFuture<'a, Result<ModelReply, ModelError>> {
        std::thread::sleep(MODEL_WAIT);
        let message = react::scripted_model(request.messages);
        Box::pin(std::future::ready(Ok(ModelReply { usage: Usage::tokens(40, 10), ..ModelReply::new(message) })))
    }
}

/// The hand-built loop, its node calling [`SlowModel`].
#[graph]
mod with_model {
    use super::MODEL;
    use super::react::TOOLS;
    use graphwright::model::ChatModel as _;
    use graphwright::prelude::*;

    #[state]
    pub struct State {
        #[reducer(messages)]
        pub messages: Vec<Message>,
    }

    #[node(entry, next = tools | END, route = should_continue)]
    async fn agent(state: &State, rt: &Runtime) -> Result<StateUpdate, NodeError> {
        let reply = MODEL.invoke(&state.messages, rt).await?;
        Ok(StateUpdate::new().messages(vec![reply]))
    }

    fn should_continue(state: &State) -> AgentNext {
        tools_condition(&state.messages).pick(AgentNext::Tools, AgentNext::End)
    }

    #[node(next = agent)]
    async fn tools(state: &State, rt: &Runtime) -> StateUpdate {
        StateUpdate::new().messages(TOOLS.run(&state.messages, state, rt).await)
    }
}

/// The loop through a model call: the model's messages get fresh ids, so the check is of the
/// calls and answers.
fn check_model_run(messages: &[Message]) -> Result<(), String> {
    let turns = react::TURNS;
    if messages.len() != 2 * turns + 2 {
        return Err(format!("{} messages, expected {}", messages.len(), 2 * turns + 2));
    }
    for k in 0..turns {
        let tool = &messages[2 + 2 * k];
        if tool.role != Role::Tool || tool.content != (2 * k).to_string() || tool.is_error {
            return Err(format!("message {} is {tool:?}", 2 + 2 * k));
        }
    }
    match messages.last() {
        Some(done) if done.content == "done" => Ok(()),
        other => Err(format!("the last message is {other:?}")),
    }
}

// ---- the receiver ----------------------------------------------------------------------------

/// What the receiver got since it was last read.
#[derive(Default)]
struct Received {
    trace_requests: u64,
    trace_bytes: u64,
    metric_requests: u64,
    /// Spans by the first word of their name (`step 3` counts as `step`).
    spans: BTreeMap<String, usize>,
}

/// An OTLP/HTTP receiver on loopback that keeps the trace requests' bodies to count their spans.
struct Sink {
    url: String,
    got: Arc<Mutex<(Received, Vec<Vec<u8>>)>>,
}

impl Sink {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a loopback port");
        let url = format!("http://{}", listener.local_addr().expect("its address"));
        let got: Arc<Mutex<(Received, Vec<Vec<u8>>)>> = Arc::default();
        let shared = Arc::clone(&got);
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let shared = Arc::clone(&shared);
                std::thread::spawn(move || {
                    let _ = serve(stream, &shared);
                });
            }
        });
        Self { url, got }
    }

    fn reset(&self) {
        *self.got.lock().unwrap_or_else(PoisonError::into_inner) = Default::default();
    }

    /// What arrived since the last reset, its spans counted.
    fn take(&self) -> Received {
        let (mut received, bodies) = std::mem::take(&mut *self.got.lock().unwrap_or_else(PoisonError::into_inner));
        for body in &bodies {
            count_spans(body, &mut received.spans);
        }
        received
    }
}

/// Answers the requests of one connection (kept alive) until the client closes it.
fn serve(stream: TcpStream, got: &Mutex<(Received, Vec<Vec<u8>>)>) -> std::io::Result<()> {
    let mut writer = stream.try_clone()?;
    let mut reader = BufReader::new(stream);
    loop {
        let mut request_line = String::new();
        if reader.read_line(&mut request_line)? == 0 {
            return Ok(());
        }
        let (mut length, mut chunked) = (0_usize, false);
        loop {
            let mut header = String::new();
            if reader.read_line(&mut header)? == 0 {
                return Ok(());
            }
            let header = header.trim_end();
            if header.is_empty() {
                break;
            }
            let (name, value) = header.split_once(':').unwrap_or((header, ""));
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().unwrap_or(0);
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                chunked = value.to_ascii_lowercase().contains("chunked");
            }
        }
        let body = if chunked { read_chunked(&mut reader)? } else { read_exact(&mut reader, length)? };
        {
            let mut got = got.lock().unwrap_or_else(PoisonError::into_inner);
            if request_line.contains("/v1/traces") {
                got.0.trace_requests += 1;
                got.0.trace_bytes += body.len() as u64;
                got.1.push(body);
            } else if request_line.contains("/v1/metrics") {
                got.0.metric_requests += 1;
            }
        }
        writer.write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n")?;
    }
}

fn read_exact(reader: &mut impl std::io::Read, length: usize) -> std::io::Result<Vec<u8>> {
    let mut body = vec![0; length];
    reader.read_exact(&mut body)?;
    Ok(body)
}

fn read_chunked(reader: &mut BufReader<TcpStream>) -> std::io::Result<Vec<u8>> {
    let mut body = Vec::new();
    loop {
        let mut size = String::new();
        reader.read_line(&mut size)?;
        let size = usize::from_str_radix(size.trim().split(';').next().unwrap_or("0"), 16).unwrap_or(0);
        let mut chunk = read_exact(reader, size + 2)?;
        chunk.truncate(size);
        body.extend_from_slice(&chunk);
        if size == 0 {
            return Ok(body);
        }
    }
}

/// Counts the spans of an `ExportTraceServiceRequest` by the first word of their names:
/// `resource_spans` (1) → `scope_spans` (2) → `spans` (2) → `name` (5).
fn count_spans(body: &[u8], spans: &mut BTreeMap<String, usize>) {
    for resource in fields(body).filter(|f| f.0 == 1) {
        for scope in fields(resource.1).filter(|f| f.0 == 2) {
            for span in fields(scope.1).filter(|f| f.0 == 2) {
                let name = fields(span.1).find(|f| f.0 == 5).map_or(&[][..], |f| f.1);
                let name = String::from_utf8_lossy(name);
                *spans.entry(name.split(' ').next().unwrap_or("").to_owned()).or_default() += 1;
            }
        }
    }
}

/// The length-delimited fields of a protobuf message, as (number, bytes); others are skipped.
fn fields(mut buf: &[u8]) -> impl Iterator<Item = (u64, &[u8])> {
    std::iter::from_fn(move || {
        loop {
            let key = varint(&mut buf)?;
            let value: &[u8] = match key & 7 {
                0 => {
                    varint(&mut buf)?;
                    continue;
                }
                1 => take(&mut buf, 8).map(|_| &[][..])?,
                2 => {
                    let n = usize::try_from(varint(&mut buf)?).ok()?;
                    take(&mut buf, n)?
                }
                5 => take(&mut buf, 4).map(|_| &[][..])?,
                _ => return None,
            };
            if key & 7 == 2 {
                return Some((key >> 3, value));
            }
        }
    })
}

fn take<'a>(buf: &mut &'a [u8], n: usize) -> Option<&'a [u8]> {
    if buf.len() < n {
        return None;
    }
    let (head, rest) = buf.split_at(n);
    *buf = rest;
    Some(head)
}

fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut value = 0_u64;
    for shift in (0..64).step_by(7) {
        let (&byte, rest) = buf.split_first()?;
        *buf = rest;
        value |= u64::from(byte & 0x7f) << shift;
        if byte & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}
