//! Composition benchmarks (BENCHMARKS.md, "Composition"):
//!
//! - `nested_subgraphs_3_levels`: three graphs nested in one another, each `pre → inner →
//!   post`, the innermost `pre → mid → post`: seven counting nodes, two of them levels down,
//!   run without a thread.
//! - `flat_7_nodes`: the same seven nodes in one chain, the cost nesting is measured against.
//! - `nested_subgraphs_3_levels_memory`: the nested graph on a thread with a `MemorySaver`
//!   (each level checkpoints in its own namespace).
//!
//! - `react_agent_scripted`: `react_agent` over a scripted model that asks for a tool three
//!   times, one call each, then answers: four model calls, three tool calls, seven steps.
//!
//! `runtime/benches/composition/side_by_side.sh` runs this and LangGraph's nested subgraphs and
//! `create_react_agent` (`subgraphs_langgraph.py`, `react_agent_langgraph.py`) in one go.
//! Prints one JSON object per line.

use graphwright::model::ScriptedModel;
use graphwright::prebuilt::{MessagesState, react_agent};
use graphwright::prelude::*;
use serde_json::json;
use std::time::Instant;

const AGENT_INVOKES: u32 = 1_000;

/// Ticks to `n`.
#[tool]
fn tick(
    /// The number reached.
    n: u32,
) -> String {
    format!("tick={n}")
}

const RUNS: usize = 5;
const INVOKES: u32 = 2_000;

#[state]
struct Count {
    counter: u64,
}

fn bump(state: &Count) -> CountUpdate {
    CountUpdate::new().counter(state.counter + 1)
}

/// Level `depth` of the nested graph: `pre → inner → post`, `inner` the next level down (or a
/// counting node at the bottom).
fn level(depth: u32) -> StateGraph<Count> {
    let graph = StateGraph::<Count>::new().name(format!("level{depth}")).add_node("pre", bump);
    let graph = if depth == 3 { graph.add_node("inner", bump) } else { graph.add_subgraph("inner", level(depth + 1)) };
    graph
        .add_node("post", bump)
        .add_edge(START, "pre")
        .add_edge("pre", "inner")
        .add_edge("inner", "post")
        .add_edge("post", END)
}

fn flat() -> StateGraph<Count> {
    let mut graph = StateGraph::<Count>::new().add_edge(START, "n0");
    for i in 0..7 {
        graph = graph.add_node(format!("n{i}"), bump);
        graph = if i == 6 { graph.add_edge("n6", END) } else { graph.add_edge(format!("n{i}"), format!("n{}", i + 1)) };
    }
    graph
}

fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    samples[samples.len() / 2]
}

/// Times `INVOKES` runs of `app`, `RUNS` times after a warm-up; every run must count to 7.
async fn measure(name: &str, app: &CompiledGraph<Count>, thread: bool) -> f64 {
    let mut samples = Vec::with_capacity(RUNS);
    let mut ok = true;
    for round in 0..=RUNS {
        let start = Instant::now();
        for i in 0..INVOKES {
            let cfg = if thread { RunConfig::thread(format!("{round}-{i}")) } else { RunConfig::default() };
            let out = app.invoke(Count::default(), &cfg).await.unwrap();
            ok &= out.state.counter == 7;
        }
        if round > 0 {
            samples.push(start.elapsed().as_secs_f64());
        }
    }
    let wall = median(samples);
    let per_invoke_us = wall / f64::from(INVOKES) * 1e6;
    println!(
        "{}",
        json!({"name": name, "wall_s": wall, "units": INVOKES, "per_unit_us": per_invoke_us, "final": {"counter": 7}, "ok": ok})
    );
    per_invoke_us
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    // `cargo bench --bench composition -- react` runs the benches whose names start with `react`.
    let only = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let wants = |name: &str| only.as_deref().is_none_or(|f| name.starts_with(f));
    // The agent runs first, before the thread bench below fills the heap with stored threads.
    if wants("react_agent_scripted") {
        react_agent_scripted().await;
    }
    let (mut nested_us, mut flat_us) = (None, None);
    if wants("nested_subgraphs_3_levels") {
        nested_us = Some(measure("nested_subgraphs_3_levels", &level(1).compile().unwrap(), false).await);
    }
    if wants("flat_7_nodes") {
        flat_us = Some(measure("flat_7_nodes", &flat().compile().unwrap(), false).await);
    }
    if let (Some(nested_us), Some(flat_us)) = (nested_us, flat_us) {
        println!("{}", json!({"name": "nested_over_flat", "ratio": nested_us / flat_us}));
    }
    if wants("nested_subgraphs_3_levels_memory") && only.as_deref() != Some("nested_subgraphs_3_levels") {
        let saved = level(1).checkpointer(MemorySaver::new()).compile().unwrap();
        measure("nested_subgraphs_3_levels_memory", &saved, true).await;
    }
}

/// The scripted turn of one invoke: three rounds of one tool call, then the answer.
fn script(model: &ScriptedModel) {
    for n in 1..=3 {
        let call = ToolCall::new(format!("call_{n}"), "tick", json!({"n": n}));
        model.push(Message::assistant("").with_tool_calls(vec![call]));
    }
    model.push(Message::assistant("Counted to three."));
}

async fn react_agent_scripted() {
    let model = ScriptedModel::new(Vec::<Message>::new());
    let app = react_agent(model.clone(), tools![Tick]).compile().unwrap();
    let mut samples = Vec::with_capacity(RUNS);
    let mut ok = true;
    for round in 0..=RUNS {
        let start = Instant::now();
        for _ in 0..AGENT_INVOKES {
            script(&model);
            let out = app.invoke(MessagesState::new([Message::user("tick to three")]), &RunConfig::default()).await;
            ok &= out.is_ok_and(|o| o.state.messages.len() == 8 && o.state.messages[6].content == "tick=3");
        }
        if round > 0 {
            samples.push(start.elapsed().as_secs_f64());
        }
    }
    let wall = median(samples);
    let per_invoke_us = wall / f64::from(AGENT_INVOKES) * 1e6;
    println!(
        "{}",
        json!({"name": "react_agent_scripted", "wall_s": wall, "units": AGENT_INVOKES, "per_unit_us": per_invoke_us, "ok": ok})
    );
}
