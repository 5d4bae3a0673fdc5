"""The workloads of benches/models.rs in Python LangGraph, for side-by-side ratios.

- `react_10_turns_aimock`: `create_react_agent` with `langchain-openai`'s `ChatOpenAI` against
  the same aimock server and fixtures (tests/fixtures/model): the model calls `count` ten
  times, then answers; eleven HTTP calls. One warm-up, five timed runs.
- `stream_100k_tokens`: a one-node graph whose node calls a streaming `ChatOpenAI`, streamed
  with `stream_mode="messages"`; the same 100,000-token reply (the fixture of user message
  "long"), timed from the first message event to the last event. One warm-up, two timed runs
  (a run takes seconds).

Each prints one JSON line with the median. Usage: react_langgraph.py AIMOCK_URL
"""

import json
import statistics
import sys
import time

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import create_react_agent


@tool
def count(n: int) -> str:
    """Counts to `n`."""
    return f"count={n};"


def stream_100k(base: str) -> None:
    model = ChatOpenAI(model="bench", base_url=base, api_key="none", max_retries=0, streaming=True)

    def relay(state: MessagesState) -> dict:
        return {"messages": [model.invoke(state["messages"])]}

    app = StateGraph(MessagesState).add_node("model", relay).add_edge(START, "model").add_edge("model", END).compile()
    walls, ok = [], True
    for run in range(3):
        first, text = None, []
        for chunk, _meta in app.stream({"messages": [("user", "long")]}, stream_mode="messages"):
            if first is None:
                first = time.perf_counter()
            text.append(chunk.content)
        wall = time.perf_counter() - first
        ok &= len("".join(text)) == 400_000
        if run > 0:
            walls.append(wall)
    wall = statistics.median(walls)
    print(json.dumps({"name": "stream_100k_tokens", "wall_s": wall, "units": 100_000, "ok": ok}))


def main() -> None:
    base = sys.argv[1].rstrip("/") + "/v1"
    model = ChatOpenAI(model="bench", base_url=base, api_key="none", max_retries=2)
    agent = create_react_agent(model, [count])
    walls, ok = [], True
    for run in range(6):
        started = time.perf_counter()
        out = agent.invoke({"messages": [("user", "count to ten")]})
        wall = time.perf_counter() - started
        ok &= out["messages"][-1].content == "I counted to ten."
        if run > 0:
            walls.append(wall)
    wall = statistics.median(walls)
    print(json.dumps({"name": "react_10_turns_aimock", "wall_s": wall, "per_unit_us": wall / 11 * 1e6,
                      "units": 11, "ok": ok}))
    if len(sys.argv) < 3 or sys.argv[2] != "--no-stream":
        stream_100k(base)


main()
