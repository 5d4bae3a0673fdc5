//! Functional API benchmarks (BENCHMARKS.md, "Functional API"):
//!
//! - `functional_sequential_100`: an entrypoint awaiting 100 calls of a task one after another,
//!   each adding one to the last; run without a thread.
//! - `functional_fanout_100`: an entrypoint starting 100 calls of the same task at once and
//!   summing their results when all have finished; run without a thread.
//! - `functional_sequential_100_memory`, `functional_fanout_100_memory`: the same on a fresh
//!   thread of a `MemorySaver` per invoke (each task's result stored as it finishes).
//! - `functional_cache_hit_100`: an entrypoint awaiting 100 calls of a cached task with the same
//!   argument, every one a hit in an `InMemoryCache` primed by the warm-up: the cost of a hit.
//! - `node_cache_hit`: a graph of one cached node, invoked with the same input: every invoke after
//!   the warm-up's first is a hit.
//!
//! The unit is one task call (one invoke for `node_cache_hit`). `runtime/benches/functional/
//! side_by_side.sh` runs this and LangGraph's functional API on the same workloads
//! (`functional_langgraph.py`) in one go. Prints one JSON object per line.

use graphwright::functional::EntrypointBuilder;
use graphwright::prelude::*;
use serde_json::{Value, json};
use std::time::Instant;

const RUNS: usize = 5;
/// Task calls per invoke.
const TASKS: u64 = 100;
/// Invokes per timed run of the entrypoint workloads.
const INVOKES: u32 = 200;
/// Invokes per timed run of `node_cache_hit`.
const NODE_INVOKES: u32 = 5_000;

#[task]
fn inc(x: u64) -> u64 {
    x + 1
}

#[task(cache = CachePolicy::new())]
fn cached_inc(x: u64) -> u64 {
    x + 1
}

#[entrypoint]
async fn sequential(n: u64) -> Result<u64, NodeError> {
    let mut x = 0;
    for _ in 0..n {
        x = inc(x).await?;
    }
    Ok(x)
}

#[entrypoint]
async fn fanout(n: u64) -> Result<u64, NodeError> {
    let all = futures::future::try_join_all((0..n).map(inc)).await?;
    Ok(all.iter().sum())
}

#[entrypoint]
async fn hits(n: u64) -> Result<u64, NodeError> {
    let mut total = 0;
    for _ in 0..n {
        total += cached_inc(7).await?;
    }
    Ok(total)
}

#[state]
struct Doubled {
    x: u64,
}

fn double(state: &Doubled) -> DoubledUpdate {
    DoubledUpdate::new().x(state.x * 2)
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Times `invokes` calls of `invoke` (given the round and the invoke's number, true when its
/// result was right), `RUNS` times after a warm-up, and prints the line of `name` with `units`
/// units per invoke.
async fn measure<F, Fut>(name: &str, invokes: u32, units: u64, expected: Value, mut invoke: F)
where
    F: FnMut(usize, u32) -> Fut,
    Fut: Future<Output = bool>,
{
    let mut samples = Vec::with_capacity(RUNS);
    let mut ok = true;
    for round in 0..=RUNS {
        let start = Instant::now();
        for i in 0..invokes {
            ok &= invoke(round, i).await;
        }
        if round > 0 {
            samples.push(start.elapsed().as_secs_f64());
        }
    }
    let wall = median(samples);
    #[allow(clippy::cast_precision_loss, reason = "a count of task calls, far below 2^52")]
    let total = f64::from(invokes) * units as f64;
    println!(
        "{}",
        json!({"name": name, "wall_s": wall, "units": total, "per_unit_us": wall / total * 1e6, "final": expected, "ok": ok})
    );
}

/// An entrypoint workload: its shape's name, the entrypoint, and the value every invoke returns.
type Workload = (&'static str, fn() -> EntrypointBuilder<u64, u64>, u64);

/// Config of invoke `i` of round `round`: a fresh thread when `thread`, none otherwise.
fn config(thread: bool, round: usize, i: u32) -> RunConfig {
    if thread { RunConfig::thread(format!("{round}-{i}")) } else { RunConfig::default() }
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `cargo bench --bench functional -- functional_fanout` runs the benches whose names start
    // with `functional_fanout`.
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wants = |name: &str| only.as_deref().is_none_or(|f| name.starts_with(f));

    let workloads: [Workload; 2] =
        [("sequential", sequential::entrypoint, TASKS), ("fanout", fanout::entrypoint, TASKS * (TASKS + 1) / 2)];
    for (suffix, thread) in [("", false), ("_memory", true)] {
        for (shape, entrypoint, expected) in workloads {
            let name = format!("functional_{shape}_100{suffix}");
            if !wants(&name) {
                continue;
            }
            let builder = entrypoint();
            let app = if thread { builder.checkpointer(MemorySaver::new()) } else { builder }.compile().unwrap();
            measure(&name, INVOKES, TASKS, json!(expected), |round, i| {
                let app = &app;
                async move {
                    let out = app.invoke(TASKS, &config(thread, round, i)).await;
                    out.is_ok_and(|o| o.value == Some(expected))
                }
            })
            .await;
        }
    }

    if wants("functional_cache_hit_100") {
        let app = hits::entrypoint().cache(InMemoryCache::new()).compile().unwrap();
        measure("functional_cache_hit_100", INVOKES, TASKS, json!(8 * TASKS), |_, _| {
            let app = &app;
            async move {
                let out = app.invoke(TASKS, &RunConfig::default()).await;
                out.is_ok_and(|o| o.value == Some(8 * TASKS))
            }
        })
        .await;
    }

    if wants("node_cache_hit") {
        let app = StateGraph::<Doubled>::new()
            .add_node("double", double)
            .policy("double", NodePolicy::new().cache(CachePolicy::new()))
            .add_edge(START, "double")
            .add_edge("double", END)
            .cache(InMemoryCache::new())
            .compile()
            .unwrap();
        measure("node_cache_hit", NODE_INVOKES, 1, json!({"x": 42}), |_, _| {
            let app = &app;
            async move {
                let out = app.invoke(Doubled { x: 21 }, &RunConfig::default()).await;
                out.is_ok_and(|o| o.state.x == 42)
            }
        })
        .await;
    }
}
