"""LangGraph's side of benches/composition.rs: three graphs nested in one another, each
pre -> inner -> post (the innermost pre -> mid -> post), and the same seven nodes flat.
Prints one JSON object per line, timed as the Rust bench times them (2000 invokes, median
of 5 runs after a warm-up)."""
import json
import statistics
import time
from typing import TypedDict

from langgraph.graph import END, START, StateGraph

INVOKES = 2000
RUNS = 5


class Count(TypedDict):
    counter: int


def bump(state: Count) -> dict:
    return {"counter": state["counter"] + 1}


def level(depth: int):
    graph = StateGraph(Count)
    graph.add_node("pre", bump)
    graph.add_node("inner", bump if depth == 3 else level(depth + 1))
    graph.add_node("post", bump)
    graph.add_edge(START, "pre")
    graph.add_edge("pre", "inner")
    graph.add_edge("inner", "post")
    graph.add_edge("post", END)
    return graph.compile()


def flat():
    graph = StateGraph(Count)
    for i in range(7):
        graph.add_node(f"n{i}", bump)
    graph.add_edge(START, "n0")
    for i in range(6):
        graph.add_edge(f"n{i}", f"n{i + 1}")
    graph.add_edge("n6", END)
    return graph.compile()


def measure(name: str, app) -> None:
    samples, ok = [], True
    for round_ in range(RUNS + 1):
        start = time.perf_counter()
        for _ in range(INVOKES):
            ok &= app.invoke({"counter": 0})["counter"] == 7
        if round_ > 0:
            samples.append(time.perf_counter() - start)
    wall = statistics.median(samples)
    print(json.dumps({"name": name, "wall_s": wall, "units": INVOKES, "per_unit_us": wall / INVOKES * 1e6, "ok": ok}))


measure("nested_subgraphs_3_levels", level(1))
measure("flat_7_nodes", flat())
