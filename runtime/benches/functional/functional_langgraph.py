"""LangGraph's side of benches/functional.rs: the same entrypoints and tasks in LangGraph's
functional API (langgraph.func), timed as the Rust bench times them (median of 5 runs after a
warm-up), with a tenth of its invokes per run (LangGraph takes some 300 times longer per task
call; the figure compared is the time per unit). Prints one JSON object per line; the unit is
one task call (one invoke for node_cache_hit)."""
import json
import statistics
import sys
import time
from typing import TypedDict

from langgraph.cache.memory import InMemoryCache
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.func import entrypoint, task
from langgraph.graph import END, START, StateGraph
from langgraph.types import CachePolicy

RUNS = 5
TASKS = 100
INVOKES = 20
NODE_INVOKES = 500


@task
def inc(x: int) -> int:
    return x + 1


@task(cache_policy=CachePolicy())
def cached_inc(x: int) -> int:
    return x + 1


def sequential(checkpointer=None):
    @entrypoint(checkpointer=checkpointer)
    def run(n: int) -> int:
        x = 0
        for _ in range(n):
            x = inc(x).result()
        return x

    return run


def fanout(checkpointer=None):
    @entrypoint(checkpointer=checkpointer)
    def run(n: int) -> int:
        calls = [inc(i) for i in range(n)]
        return sum(call.result() for call in calls)

    return run


def hits():
    @entrypoint(cache=InMemoryCache())
    def run(n: int) -> int:
        return sum(cached_inc(7).result() for _ in range(n))

    return run


class Doubled(TypedDict):
    x: int


def double(state: Doubled) -> dict:
    return {"x": state["x"] * 2}


def node_cached():
    graph = StateGraph(Doubled)
    graph.add_node("double", double, cache_policy=CachePolicy())
    graph.add_edge(START, "double")
    graph.add_edge("double", END)
    return graph.compile(cache=InMemoryCache())


def measure(name: str, invokes: int, units: int, expected, invoke) -> None:
    samples, ok = [], True
    for round_ in range(RUNS + 1):
        start = time.perf_counter()
        for i in range(invokes):
            ok &= invoke(round_, i)
        if round_ > 0:
            samples.append(time.perf_counter() - start)
    wall = statistics.median(samples)
    total = invokes * units
    print(json.dumps({"name": name, "wall_s": wall, "units": total, "per_unit_us": wall / total * 1e6,
                      "final": expected, "ok": ok}), flush=True)


def config(thread: bool, round_: int, i: int) -> dict:
    return {"configurable": {"thread_id": f"{round_}-{i}"}} if thread else {}


def main() -> None:
    only = next((a for a in sys.argv[1:] if not a.startswith("-")), None)

    def wants(name: str) -> bool:
        return only is None or name.startswith(only)

    fanout_sum = TASKS * (TASKS + 1) // 2
    for suffix, thread in (("", False), ("_memory", True)):
        for name, build, expected in (
            (f"functional_sequential_100{suffix}", sequential, TASKS),
            (f"functional_fanout_100{suffix}", fanout, fanout_sum),
        ):
            if wants(name):
                app = build(InMemorySaver() if thread else None)
                measure(name, INVOKES, TASKS, expected,
                        lambda r, i, app=app, expected=expected: app.invoke(TASKS, config(thread, r, i)) == expected)
    if wants("functional_cache_hit_100"):
        app = hits()
        measure("functional_cache_hit_100", INVOKES, TASKS, 8 * TASKS, lambda r, i: app.invoke(TASKS) == 8 * TASKS)
    if wants("node_cache_hit"):
        app = node_cached()
        measure("node_cache_hit", NODE_INVOKES, 1, {"x": 42}, lambda r, i: app.invoke({"x": 21}) == {"x": 42})


main()
