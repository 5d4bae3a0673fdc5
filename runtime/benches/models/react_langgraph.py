"""The ReAct workload of benches/models.rs in Python LangGraph, for a side-by-side ratio.

`create_react_agent` with `langchain-openai`'s `ChatOpenAI` against the same aimock server
and fixtures (tests/fixtures/model): the model calls `count` ten times, then answers; eleven
HTTP calls. One warm-up, five timed runs, the median printed as one JSON line.

Usage: react_langgraph.py AIMOCK_URL
"""

import json
import statistics
import sys
import time

from langchain_core.tools import tool
from langchain_openai import ChatOpenAI
from langgraph.prebuilt import create_react_agent


@tool
def count(n: int) -> str:
    """Counts to `n`."""
    return f"count={n};"


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


main()
