"""LangGraph's side of react_agent_scripted in benches/composition.rs: create_react_agent over a
fake chat model that asks for a tool three times, one call each, then answers (four model
calls, three tool calls). Timed as the Rust bench times it (median of 5 runs after a
warm-up), with fewer invokes per run."""
import json
import statistics
import time

from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.prebuilt import create_react_agent

INVOKES = 200
RUNS = 5


@tool
def tick(n: int) -> str:
    """Ticks to `n`."""
    return f"tick={n}"


class ScriptedModel(FakeMessagesListChatModel):
    """The fake chat model, taking tools (create_react_agent binds them)."""

    def bind_tools(self, tools, **kwargs):
        return self


def script():
    turns = [AIMessage("", tool_calls=[{"id": f"call_{n}", "name": "tick", "args": {"n": n}}]) for n in (1, 2, 3)]
    return turns + [AIMessage("Counted to three.")]


agent = create_react_agent(ScriptedModel(responses=script()), [tick])
samples, ok = [], True
for round_ in range(RUNS + 1):
    start = time.perf_counter()
    for _ in range(INVOKES):
        out = agent.invoke({"messages": [("user", "tick to three")]})
        ok &= len(out["messages"]) == 8 and out["messages"][6].content == "tick=3"
    if round_ > 0:
        samples.append(time.perf_counter() - start)
wall = statistics.median(samples)
print(json.dumps({"name": "react_agent_scripted", "wall_s": wall, "units": INVOKES, "per_unit_us": wall / INVOKES * 1e6, "ok": ok}))
