//! Timing, checking and reporting, shared by every workload.
//!
//! A workload is measured by [`measure`]: one warm-up run, then [`RUNS`] timed runs. Around
//! each run, untimed, it prepares what the run needs (a fresh thread id) and afterwards checks
//! the result (final state, checkpoint count) and cleans up (deletes the thread). The JSON
//! line follows the baseline's fields (the harness README).

use serde_json::{Map, Value, json};
use std::time::{Duration, Instant};

/// Timed runs per workload (after one warm-up).
pub const RUNS: usize = 5;

/// The recursion limit every run passes, as the baseline does.
pub const RECURSION_LIMIT: u64 = 100_000;

/// What the check of one run found.
pub struct Checked {
    /// The checked final values (reported in `final`).
    pub final_: Value,
    /// Super-steps the run took, counting the input step as LangGraph counts its START step.
    pub supersteps: u64,
    /// Checkpoints stored by the run, for checkpointed workloads.
    pub checkpoints: Option<usize>,
    /// Why the run did not compute what WORKLOADS.md says, if it did not.
    pub problem: Option<String>,
}

impl Checked {
    /// A run whose result matched.
    pub fn ok(final_: Value, supersteps: u64) -> Self {
        Self { final_, supersteps, checkpoints: None, problem: None }
    }

    /// A run whose result did not match (or that failed).
    pub fn failed(problem: impl Into<String>) -> Self {
        Self { final_: Value::Null, supersteps: 0, checkpoints: None, problem: Some(problem.into()) }
    }

    /// Adds the checkpoint count, failing the check when it is not `expected`.
    #[must_use]
    pub fn with_checkpoints(mut self, found: usize, expected: usize) -> Self {
        self.checkpoints = Some(found);
        if found != expected && self.problem.is_none() {
            self.problem = Some(format!("{found} checkpoints stored, expected {expected}"));
        }
        self
    }

    /// Turns a check's `Result` into a `Checked`.
    pub fn from_result(result: Result<Value, String>, supersteps: u64) -> Self {
        match result {
            Ok(v) => Self::ok(v, supersteps),
            Err(e) => Self::failed(e),
        }
    }
}

/// The measured figures of one workload.
pub struct Measured {
    pub wall: Vec<Duration>,
    pub cpu: Vec<Duration>,
    pub last: Checked,
    pub problems: Vec<String>,
}

/// Runs 1 warm-up and [`RUNS`] timed runs. `prepare` and `check` are not timed.
pub fn measure<P, T>(
    mut prepare: impl FnMut() -> P,
    mut timed: impl FnMut(&P) -> T,
    mut check: impl FnMut(P, T) -> Checked,
) -> Measured {
    let mut wall = Vec::with_capacity(RUNS);
    let mut cpu = Vec::with_capacity(RUNS);
    let mut problems = Vec::new();
    let mut last = None;
    for run in 0..=RUNS {
        let prepared = prepare();
        let cpu_before = cpu_time();
        let started = Instant::now();
        let out = timed(&prepared);
        let elapsed = started.elapsed();
        let cpu_used = cpu_time().saturating_sub(cpu_before);
        let checked = check(prepared, out);
        if let Some(problem) = &checked.problem {
            problems.push(format!("run {run}: {problem}"));
        }
        if run > 0 {
            wall.push(elapsed);
            cpu.push(cpu_used);
        }
        last = Some(checked);
    }
    Measured { wall, cpu, last: last.unwrap_or_else(|| Checked::failed("no run")), problems }
}

/// The median of `values` (the middle one; `values` has an odd length here).
pub fn median(values: &[Duration]) -> Duration {
    let mut sorted = values.to_vec();
    sorted.sort();
    sorted.get(sorted.len() / 2).copied().unwrap_or_default()
}

/// CPU time of the whole process, every thread (`CLOCK_PROCESS_CPUTIME_ID`).
pub fn cpu_time() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(u64::try_from(t.tv_sec).unwrap_or(0), u32::try_from(t.tv_nsec).unwrap_or(0))
}

/// Peak resident set size of this process in MiB (`VmHWM`, what `ru_maxrss` reports).
pub fn peak_rss_mib() -> f64 {
    status_kib("VmHWM:").map_or(0.0, |kib| kib as f64 / 1024.0)
}

fn status_kib(key: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(key))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

/// One workload's JSON line.
pub struct Row {
    pub name: &'static str,
    pub params: String,
    pub unit: &'static str,
    pub units: u64,
    pub extra: Map<String, Value>,
}

impl Row {
    pub fn new(name: &'static str, params: impl Into<String>, unit: &'static str, units: u64) -> Self {
        Self { name, params: params.into(), unit, units, extra: Map::new() }
    }

    /// Adds a field to the line.
    #[must_use]
    pub fn with(mut self, key: &str, value: impl Into<Value>) -> Self {
        self.extra.insert(key.to_owned(), value.into());
        self
    }

    /// The JSON line of `m`.
    pub fn finish(self, m: Measured) -> Value {
        let wall = median(&m.wall);
        let wall_s = wall.as_secs_f64();
        let mut line = json!({
            "name": self.name,
            "params": self.params,
            "wall_s": wall_s,
            "wall_s_runs": m.wall.iter().map(Duration::as_secs_f64).collect::<Vec<_>>(),
            "wall_s_min": m.wall.iter().min().copied().unwrap_or_default().as_secs_f64(),
            "cpu_s": median(&m.cpu).as_secs_f64(),
            "per_unit_us": wall_s / self.units as f64 * 1e6,
            "unit": self.unit,
            "units": self.units,
            "supersteps": m.last.supersteps,
            "peak_rss_mib": (peak_rss_mib() * 10.0).round() / 10.0,
            "final": m.last.final_,
            "ok": m.problems.is_empty(),
        });
        let Value::Object(fields) = &mut line else { unreachable!("a JSON object") };
        if let Some(n) = m.last.checkpoints {
            fields.insert("checkpoints".to_owned(), n.into());
        }
        if !m.problems.is_empty() {
            fields.insert("problems".to_owned(), m.problems.into());
        }
        fields.extend(self.extra);
        line
    }
}

/// A current-thread runtime, as for the baseline's sync `invoke`.
pub fn current_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime")
}

/// A multi-thread runtime (one worker per core), as for the baseline's async workloads.
pub fn multi_thread() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread().enable_all().build().expect("a tokio runtime")
}

/// A fresh thread id for one run.
pub fn fresh_thread() -> String {
    uuid::Uuid::new_v4().to_string()
}
