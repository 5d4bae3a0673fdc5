//! Micro-benchmarks of the hot paths, with plain timings (no criterion: each case is a loop
//! timed with `Instant`, median of 7 samples, so the numbers need no extra dependency and
//! print in a second or two):
//!
//! ```text
//! cargo bench -p graphwright --bench micro [-- FILTER]
//! ```
//!
//! - step overhead: one super-step of a chain, and the fixed cost of one `invoke`;
//! - graph construction: builder + compile of chains of 250, 1000 and 4000 nodes;
//! - reducer application: `State::apply` of `add`, `append` and `messages` writes;
//! - checkpoint encode and decode through the public API: the extra cost per step of a
//!   `MemorySaver` run with sync durability, and `get_state` of a long thread.

#![forbid(unsafe_code)]
// Benchmark arithmetic turns counts and durations into floats; none comes near 2^52.
#![allow(clippy::cast_precision_loss, clippy::cast_possible_wrap, clippy::cast_sign_loss)]

use graphwright::prelude::*;
use graphwright::{Durability, MemorySaver};
use std::hint::black_box;
use std::time::{Duration, Instant};

#[state]
struct Count {
    counter: i64,
}

fn bump(state: &Count) -> CountUpdate {
    CountUpdate::new().counter(state.counter + 1)
}

fn chain(n: usize, saver: Option<MemorySaver>) -> CompiledGraph<Count> {
    let mut graph = StateGraph::<Count>::new();
    for i in 0..n {
        graph = graph.add_node(format!("node_{i}"), bump);
    }
    graph = graph.add_edge(START, "node_0");
    for i in 1..n {
        graph = graph.add_edge(format!("node_{}", i - 1), format!("node_{i}"));
    }
    graph = graph.add_edge(format!("node_{}", n - 1), END);
    if let Some(saver) = saver {
        graph = graph.checkpointer(saver);
    }
    graph.compile().expect("the chain compiles")
}

#[state]
struct Reduced {
    #[reducer(add)]
    total: i64,
    #[reducer(append)]
    items: Vec<i64>,
    #[reducer(messages)]
    messages: Vec<Message>,
}

const SAMPLES: usize = 7;

/// Times `f` over `iters` iterations, `SAMPLES` times; prints the median and the minimum per
/// iteration, and returns the median.
fn bench(filter: &[String], name: &str, unit: &str, iters: u32, mut f: impl FnMut()) -> Option<Duration> {
    if !filter.is_empty() && !filter.iter().any(|w| name.contains(w.as_str())) {
        return None;
    }
    f();
    let mut samples: Vec<Duration> = (0..SAMPLES)
        .map(|_| {
            let started = Instant::now();
            for _ in 0..iters {
                f();
            }
            started.elapsed() / iters
        })
        .collect();
    samples.sort();
    let median = samples[SAMPLES / 2];
    println!(
        "{name:<44} {:>12.3} µs/{unit:<10} (min {:.3})",
        median.as_secs_f64() * 1e6,
        samples[0].as_secs_f64() * 1e6
    );
    Some(median)
}

fn main() {
    let filter: Vec<String> = std::env::args().skip(1).filter(|a| !a.starts_with("--")).collect();
    let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().expect("a tokio runtime");
    let cfg = RunConfig::default().recursion_limit(100_000);

    // Step overhead.
    let one = chain(1, None);
    bench(&filter, "invoke: 1-node graph (fixed cost of a run)", "run", 20_000, || {
        black_box(rt.block_on(one.invoke(Count { counter: 0 }, &cfg)).expect("runs"));
    });
    let long = chain(1000, None);
    let step = bench(&filter, "step: 1000-node chain invoke", "run", 50, || {
        black_box(rt.block_on(long.invoke(Count { counter: 0 }, &cfg)).expect("runs"));
    })
    .map(|d| d / 1000);
    if let Some(step) = step {
        println!("{:<44} {:>12.3} µs/step", "  = per step", step.as_secs_f64() * 1e6);
    }

    // Graph construction: build + compile of a chain, to see how it scales with its length.
    for n in [250, 1000, 4000] {
        let iters = if n == 4000 { 3 } else { 20 };
        bench(&filter, &format!("compile: {n}-node chain (builder + compile)"), "graph", iters, || {
            black_box(chain(n, None));
        });
    }

    // Reducer application.
    bench(&filter, "reducer: add, one write", "apply", 1_000_000, || {
        let mut s = Reduced::default();
        s.apply(ReducedUpdate::new().total(1));
        black_box(s.total);
    });
    let mut appended = Reduced::default();
    bench(&filter, "reducer: append, one item onto a growing list", "apply", 1_000_000, || {
        appended.apply(ReducedUpdate::new().items(vec![1]));
    });
    black_box(appended.items.len());
    let base: Vec<Message> = (0..200).map(|i| Message::assistant(format!("m{i}")).with_id(format!("id-{i}"))).collect();
    let with_history = Reduced { messages: base.clone(), ..Reduced::default() };
    bench(&filter, "reducer: messages, append to 200 (clone incl.)", "apply", 20_000, || {
        let mut s = with_history.clone();
        s.apply(ReducedUpdate::new().messages(vec![Message::tool("c", "1").with_id("new")]));
        black_box(s.messages.len());
    });
    bench(&filter, "reducer: messages, replace by id in 200", "apply", 20_000, || {
        let mut s = with_history.clone();
        s.apply(ReducedUpdate::new().messages(vec![Message::assistant("x").with_id("id-100")]));
        black_box(s.messages.len());
    });
    bench(&filter, "reducer: messages, clone of 200 alone", "clone", 20_000, || {
        black_box(with_history.clone());
    });

    // Checkpoint encode (per step, through a MemorySaver run) and decode (get_state).
    let saved = chain(1000, Some(MemorySaver::new()));
    let mut thread = 0_u64;
    let with_saver = bench(&filter, "checkpoint: 1000-node chain, MemorySaver, sync", "run", 20, || {
        thread += 1;
        let cfg = RunConfig::thread(format!("t{thread}")).durability(Durability::Sync).recursion_limit(100_000);
        black_box(rt.block_on(saved.invoke(Count { counter: 0 }, &cfg)).expect("runs"));
    })
    .map(|d| d / 1000);
    if let (Some(with_saver), Some(step)) = (with_saver, step) {
        let extra = with_saver.saturating_sub(step);
        println!("{:<44} {:>12.3} µs/step (encode + store)", "  = checkpoint cost per step", extra.as_secs_f64() * 1e6);
    }
    let cfg_last = RunConfig::thread("decode").durability(Durability::Sync).recursion_limit(100_000);
    rt.block_on(saved.invoke(Count { counter: 0 }, &cfg_last)).expect("runs");
    bench(&filter, "checkpoint: get_state of a 1000-step thread", "call", 2_000, || {
        black_box(rt.block_on(saved.get_state(&cfg_last)).expect("reads"));
    });
}
