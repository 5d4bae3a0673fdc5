"""Scenarios for graphwright-server, driven by LangGraph's Python client (langgraph-sdk).

Usage: python sdk_scenarios.py http://127.0.0.1:PORT

Each scenario exercises one part of the Agent Server API the way LangGraph users call it, and
asserts what LangGraph's own server answers. The graphs (chat, approval, slow, broken, nested,
layered: nested as a subgraph, forecast: a ReAct agent over a model that streams and a weather
tool, and shipping) are served by tests/server_sdk.rs.
"""

import asyncio
import inspect
import json
import re
import sys
import uuid

import httpx
from jsonschema import Draft202012Validator
from langgraph_sdk import get_client
from langgraph_sdk.errors import ConflictError, NotFoundError, UnprocessableEntityError

URL = sys.argv[1]
client = get_client(url=URL, api_key=None)
SCENARIOS = []


def scenario(fn):
    SCENARIOS.append(fn)
    return fn


async def collect(stream):
    return [(part.event, part.data) async for part in stream]


async def expect_status(call, status):
    """Awaits `call` and checks it failed with HTTP `status` (the SDK raises its own error types
    for most calls and httpx's for `wait`)."""
    try:
        await call
    except httpx.HTTPStatusError as error:
        assert error.response.status_code == status, (error.response.status_code, error.response.text)
        return error.response.json()
    raise AssertionError(f"expected HTTP {status}, the call succeeded")


async def refused(call, error, what):
    """Awaits `call` and checks the SDK raised `error`; `what` says what was wrongly accepted."""
    try:
        await call
    except error:
        return
    raise AssertionError(what)


def events(parts, name):
    return [data for event, data in parts if event == name]


def validator(schema):
    """A validator of `schema`, once it is checked to be a valid JSON Schema (2020-12, the draft
    LangGraph's schemas follow)."""
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def resolve(schema, sub):
    """`sub`, or the definition of `schema` it refers to."""
    ref = sub.get("$ref")
    return schema["$defs"][ref.removeprefix("#/$defs/")] if ref else sub


@scenario
async def system_endpoints():
    async with httpx.AsyncClient(base_url=URL) as http:
        assert (await http.get("/ok")).json() == {"ok": True}
        info = (await http.get("/info")).json()
        assert info["flags"]["crons"] is True
        for flag in ["assistant_versions", "subgraphs", "thread_storage", "docs"]:
            assert info["flags"][flag] is True, (flag, info["flags"])
        missing = await http.get("/no/such/route")
        assert missing.status_code == 404 and "detail" in missing.json()
        crons = await http.post("/runs/crons", json={})
        assert crons.status_code == 422, crons.status_code


@scenario
async def assistants():
    default = await client.assistants.get("chat")
    assert default["graph_id"] == "chat" and default["name"] == "chat"
    assert default["metadata"] == {"created_by": "system"}
    assert default["assistant_id"] == str(uuid.uuid5(uuid.UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "chat"))
    found = await client.assistants.search(graph_id="approval")
    assert [a["graph_id"] for a in found] == ["approval"]
    mine = await client.assistants.create("chat", name="mine", metadata={"team": "a"}, context={"tone": "dry"})
    assert (await client.assistants.get(mine["assistant_id"]))["name"] == "mine"
    assert [a["assistant_id"] for a in await client.assistants.search(metadata={"team": "a"})] == [mine["assistant_id"]]
    await refused(client.assistants.create("chat", assistant_id=mine["assistant_id"]), ConflictError, "a duplicate assistant id was accepted")
    same = await client.assistants.create("chat", assistant_id=mine["assistant_id"], if_exists="do_nothing")
    assert same["name"] == "mine"
    updated = await client.assistants.update(mine["assistant_id"], metadata={"more": 1})
    assert updated["version"] == 2 and updated["metadata"] == {"team": "a", "more": 1}
    assert await client.assistants.count(graph_id="chat") == 2
    drawing = await client.assistants.get_graph("chat")
    ids = [n["id"] for n in drawing["nodes"]]
    assert ids == ["__start__", "agent", "tools", "__end__"], ids
    edges = {(e["source"], e["target"], e["conditional"]) for e in drawing["edges"]}
    assert ("__start__", "agent", False) in edges and ("agent", "tools", True) in edges, edges
    schemas = await client.assistants.get_schemas("chat")
    assert schemas["graph_id"] == "chat"
    await refused(client.assistants.get("no-such-graph"), NotFoundError, "an unknown assistant was found")
    await client.assistants.delete(mine["assistant_id"])
    assert await client.assistants.count(graph_id="chat") == 1


@scenario
async def deleting_an_assistant_with_its_threads():
    """`delete_threads=True` deletes the threads the assistant's runs ran on, and no other."""
    doomed = await client.assistants.create("chat", name="doomed")
    ran, untouched = await client.threads.create(), await client.threads.create()
    await client.runs.wait(ran["thread_id"], doomed["assistant_id"], input={"messages": ["hi"]})
    await client.runs.wait(untouched["thread_id"], "chat", input={"messages": ["hi"]})
    await client.assistants.delete(doomed["assistant_id"], delete_threads=True)
    await refused(client.threads.get(ran["thread_id"]), NotFoundError, "a thread of the deleted assistant was kept")
    assert (await client.threads.get(untouched["thread_id"]))["thread_id"] == untouched["thread_id"]
    await refused(client.assistants.get(doomed["assistant_id"]), NotFoundError, "the assistant was kept")


@scenario
async def threads_lifecycle():
    thread = await client.threads.create(metadata={"user": "ana"}, graph_id="approval")
    tid = thread["thread_id"]
    assert thread["status"] == "idle" and thread["metadata"]["user"] == "ana"
    await refused(client.threads.create(thread_id=tid), ConflictError, "a duplicate thread id was accepted")
    assert (await client.threads.create(thread_id=tid, if_exists="do_nothing"))["thread_id"] == tid
    await client.threads.update(tid, metadata={"plan": "pro"})
    got = await client.threads.get(tid)
    assert got["metadata"]["user"] == "ana" and got["metadata"]["plan"] == "pro"
    found = await client.threads.search(metadata={"plan": "pro"})
    assert [t["thread_id"] for t in found] == [tid]
    empty = await client.threads.get_state(tid)
    assert empty["checkpoint"] is None and empty["values"] == {}
    assert await client.threads.get_history(tid) == []
    await client.threads.delete(tid)
    await refused(client.threads.get(tid), NotFoundError, "a deleted thread was found")


@scenario
async def runs_name_their_graph_in_thread_metadata():
    """A thread created bare is listed under its graph once a run starts on it (agent-chat-ui's
    history sidebar searches by `graph_id`), and its history names LangGraph's nodes."""
    thread = await client.threads.create(metadata={"user": "cy"})
    tid = thread["thread_id"]
    assert thread["metadata"] == {"user": "cy"}
    await client.runs.wait(tid, "chat", input={"messages": [{"type": "human", "content": "hi"}]})
    default = (await client.assistants.get("chat"))["assistant_id"]
    got = await client.threads.get(tid)
    assert got["metadata"] == {"user": "cy", "graph_id": "chat", "assistant_id": default}, got["metadata"]
    assert tid in [t["thread_id"] for t in await client.threads.search(metadata={"graph_id": "chat"}, limit=100)]
    # A run through another assistant of the graph names that assistant from then on.
    other = await client.assistants.create("chat", name="other")
    await client.runs.wait(tid, other["assistant_id"], input={"messages": [{"type": "human", "content": "again"}]})
    got = await client.threads.get(tid)
    assert got["metadata"]["assistant_id"] == other["assistant_id"] and got["metadata"]["user"] == "cy", got
    # The input checkpoint waits on `__start__`, as LangGraph's clients name it.
    history = await client.threads.get_history(tid, limit=20)
    first = history[-1]
    assert first["next"] == ["__start__"], first["next"]
    assert [task["name"] for task in first["tasks"]] == ["__start__"], first["tasks"]
    assert all("START" not in state["next"] for state in history)


@scenario
async def thread_copy():
    thread = await client.threads.create(metadata={"user": "bo"})
    tid = thread["thread_id"]
    await client.runs.wait(tid, "chat", input={"messages": [{"type": "human", "content": "hello"}]})
    copy = await client.threads.copy(tid)
    cid = copy["thread_id"]
    assert cid != tid and copy["metadata"]["user"] == "bo" and copy["status"] == "idle", copy
    original, copied = await client.threads.get_state(tid), await client.threads.get_state(cid)
    assert copied["values"] == original["values"], (copied, original)
    assert copied["checkpoint"]["checkpoint_id"] == original["checkpoint"]["checkpoint_id"]
    assert len(await client.threads.get_history(cid)) == len(await client.threads.get_history(tid))
    assert copy["values"] == original["values"]
    # The two go their own ways.
    await client.runs.wait(cid, "chat", input={"messages": [{"type": "human", "content": "again"}]})
    assert len((await client.threads.get_state(cid))["values"]["messages"]) == 4
    assert len((await client.threads.get_state(tid))["values"]["messages"]) == 2
    await refused(client.threads.copy(str(uuid.uuid4())), NotFoundError, "an unknown thread was copied")


@scenario
async def stream_values_updates_messages_custom():
    thread = await client.threads.create()
    parts = await collect(client.runs.stream(
        thread["thread_id"], "chat",
        input={"messages": [{"type": "human", "content": "what is the weather?"}]},
        stream_mode=["values", "updates", "messages-tuple", "custom"],
    ))
    names = [event for event, _ in parts]
    assert names[0] == "metadata", names
    assert "end" not in names
    assert set(names) == {"metadata", "values", "updates", "messages", "custom"}, set(names)
    final = events(parts, "values")[-1]
    kinds = [m["type"] for m in final["messages"]]
    assert kinds == ["human", "ai", "tool", "ai"], kinds
    assert final["messages"][1]["tool_calls"][0]["args"] == {"city": "Oslo"}
    assert final["messages"][2]["tool_call_id"] == "call-1"
    assert final["messages"][3]["content"] == "It is 4 °C and raining there."
    updates = events(parts, "updates")
    assert [list(u) for u in updates] == [["agent"], ["tools"], ["agent"]], updates
    chunks = [c for c, meta in events(parts, "messages")]
    streamed = "".join(c["content"] for c in chunks if c["type"] == "AIMessageChunk")
    assert streamed == "It is 4 °C and raining there.", streamed
    assert any(c["type"] == "tool" for c in chunks), "the tool's message is sent whole in messages mode"
    meta = events(parts, "messages")[0][1]
    assert meta["langgraph_node"] in ("agent", "tools") and meta["thread_id"] == thread["thread_id"]
    custom = events(parts, "custom")
    assert custom[0] == {"type": "progress", "seen": 1}, custom
    state = await client.threads.get_state(thread["thread_id"])
    assert state["values"] == final, (state["values"], final)
    assert state["next"] == [], state["next"]
    assert (await client.threads.get(thread["thread_id"]))["status"] == "idle"
    history = await client.threads.get_history(thread["thread_id"], limit=100)
    assert len(history) >= 4 and history[0]["checkpoint"]["checkpoint_id"] == state["checkpoint"]["checkpoint_id"]
    older = await client.threads.get_state(thread["thread_id"], checkpoint_id=history[-1]["checkpoint"]["checkpoint_id"])
    assert older["checkpoint"]["checkpoint_id"] == history[-1]["checkpoint"]["checkpoint_id"]


@scenario
async def stream_tasks_checkpoints_debug():
    thread = await client.threads.create()
    parts = await collect(client.runs.stream(
        thread["thread_id"], "chat", input={"messages": ["hello"]},
        stream_mode=["tasks", "checkpoints", "debug"],
    ))
    tasks = events(parts, "tasks")
    assert tasks[0]["name"] == "agent" and "triggers" in tasks[0], tasks
    assert tasks[1]["name"] == "agent" and tasks[1]["error"] is None and "result" in tasks[1], tasks
    checkpoints = events(parts, "checkpoints")
    assert checkpoints and checkpoints[-1]["config"]["configurable"]["thread_id"] == thread["thread_id"]
    assert checkpoints[-1]["values"]["messages"][-1]["content"] == "You said: hello"
    kinds = {d["type"] for d in events(parts, "debug")}
    assert kinds == {"task", "task_result", "checkpoint"}, kinds


@scenario
async def stream_subgraphs():
    thread = await client.threads.create()
    parts = await collect(client.runs.stream(
        thread["thread_id"], "nested", input={"trail": []}, stream_mode="updates", stream_subgraphs=True,
    ))
    names = [event for event, _ in parts]
    inner = [n for n in names if n.startswith("updates|inner:")]
    assert inner, names
    flat = await collect(client.runs.stream(thread["thread_id"], "nested", input={}, stream_mode="updates"))
    assert all("|" not in event for event, _ in flat)


def chains(parts):
    """The `events` mode's events (LangChain's run events) among a stream's parts."""
    return [data for event, data in parts if event == "events"]


def starts_of(evs, name):
    return [e for e in evs if e["event"] == "on_chain_start" and e["name"] == name]


@scenario
async def stream_events_mode():
    thread = await client.threads.create()
    tid = thread["thread_id"]
    question = {"messages": [{"type": "human", "content": "what is the weather?"}]}
    parts = await collect(client.runs.stream(tid, "chat", input=question, stream_mode="events"))
    assert {event for event, _ in parts} == {"metadata", "events"}, {event for event, _ in parts}
    run_id = parts[0][1]["run_id"]
    evs = chains(parts)

    # The run is the root chain, named after the graph, from the input to the final state.
    root, end = evs[0], evs[-1]
    assert (root["event"], root["name"], root["run_id"], root["parent_ids"]) == ("on_chain_start", "chat", run_id, []), root
    assert root["data"]["input"] == question, root["data"]
    assert root["metadata"]["thread_id"] == tid and root["metadata"]["graph_id"] == "chat", root["metadata"]
    assert (end["event"], end["name"], end["run_id"], end["parent_ids"]) == ("on_chain_end", "chat", run_id, []), end
    final = end["data"]["output"]["messages"]
    assert [m["type"] for m in final] == ["human", "ai", "tool", "ai"], final
    assert final[-1]["content"] == "It is 4 °C and raining there."
    assert final == (await client.threads.get_state(tid))["values"]["messages"]

    # Each node task is a chain under the root: started with the state it read, ended with its update.
    tasks = [(e["event"], e["name"]) for e in evs
             if e["parent_ids"] == [run_id] and e["event"] in ("on_chain_start", "on_chain_end")]
    assert tasks == [("on_chain_start", "agent"), ("on_chain_end", "agent"), ("on_chain_start", "tools"),
                     ("on_chain_end", "tools"), ("on_chain_start", "agent"), ("on_chain_end", "agent")], tasks
    asking, answering = [e["run_id"] for e in starts_of(evs, "agent")]
    assert asking != answering and len({e["run_id"] for e in evs}) > 3
    asked = next(e for e in evs if e["event"] == "on_chain_end" and e["run_id"] == asking)
    assert [m["type"] for m in asked["data"]["input"]["messages"]] == ["human"], asked["data"]
    assert asked["data"]["output"]["messages"][0]["tool_calls"][0]["args"] == {"city": "Oslo"}, asked["data"]
    streamed = next(e for e in evs if e["event"] == "on_chain_stream" and e["run_id"] == asking)
    assert streamed["data"]["chunk"] == asked["data"]["output"]
    meta = starts_of(evs, "agent")[1]["metadata"]
    assert (meta["langgraph_node"], meta["langgraph_step"], meta["thread_id"]) == ("agent", 3, tid), meta
    assert starts_of(evs, "agent")[1]["tags"] == ["graph:step:3"]
    # Every event of a task comes between its start and its end.
    for task in (asking, answering):
        at = [i for i, e in enumerate(evs) if e["run_id"] == task or task in e["parent_ids"]]
        assert evs[at[0]]["event"] == "on_chain_start" and evs[at[-1]]["event"] == "on_chain_end", task

    # The reply streams token by token as a chat model run of the task that wrote it.
    model = [e for e in evs if e["event"].startswith("on_chat_model")]
    kinds = [e["event"] for e in model]
    assert kinds[0] == "on_chat_model_start" and kinds[-1] == "on_chat_model_end", kinds
    assert set(kinds[1:-1]) == {"on_chat_model_stream"} and len(kinds) > 4, kinds
    assert all(e["parent_ids"] == [run_id, answering] and e["run_id"] == model[0]["run_id"] for e in model)
    chunks = [e["data"]["chunk"] for e in model[1:-1]]
    assert all(c["type"] == "AIMessageChunk" and c["id"] == "reply-3" for c in chunks), chunks
    assert "".join(c["content"] for c in chunks) == "It is 4 °C and raining there."
    assert model[-1]["data"]["output"]["content"] == "It is 4 °C and raining there."
    assert model[-1]["metadata"]["langgraph_node"] == "agent"

    # A node's writes are custom events of its task.
    custom = [e for e in evs if e["event"] == "on_custom_event"]
    assert [c["data"] for c in custom] == [{"type": "progress", "seen": 1}, {"type": "progress", "seen": 3}], custom
    assert [c["run_id"] for c in custom] == [asking, answering] and custom[0]["parent_ids"] == [run_id]

    # A pause ends the root with the state at the pause; the paused task has no end, as in LangChain.
    paused = await collect(client.runs.stream(None, "approval", input={"request": "r"}, stream_mode="events"))
    held = chains(paused)
    assert starts_of(held, "ask") and not [e for e in held if e["event"] == "on_chain_end" and e["name"] == "ask"], held
    assert (held[-1]["event"], held[-1]["name"]) == ("on_chain_end", "approval"), held[-1]
    assert held[-1]["data"]["output"]["request"] == "r", held[-1]
    assert events(paused, "values")[-1]["__interrupt__"][0]["value"]["question"] == "approve?", paused

    # With other modes, each mode's events come as before.
    both = await collect(client.runs.stream(tid, "chat", input={"messages": ["hi"]}, stream_mode=["events", "values"]))
    assert {event for event, _ in both} == {"metadata", "events", "values"}
    assert events(both, "values")[-1] == chains(both)[-1]["data"]["output"]


@scenario
async def stream_events_of_a_model_call_and_its_tool():
    parts = await collect(client.runs.stream(
        None, "forecast", input={"messages": [{"type": "human", "content": "the weather, please"}]},
        stream_mode="events",
    ))
    evs = chains(parts)
    run_id = evs[0]["run_id"]
    assert evs[0]["name"] == "forecast" and evs[-1]["event"] == "on_chain_end"
    tools_task = starts_of(evs, "tools")[0]["run_id"]
    agent_tasks = [e["run_id"] for e in starts_of(evs, "agent")]

    start = next(e for e in evs if e["event"] == "on_tool_start")
    assert (start["name"], start["data"]["input"], start["parent_ids"]) == ("weather", {"city": "Oslo"}, [run_id, tools_task]), start
    end = next(e for e in evs if e["event"] == "on_tool_end")
    assert end["run_id"] == start["run_id"] and end["parent_ids"] == start["parent_ids"], end
    out = end["data"]["output"]
    assert (out["type"], out["content"], out["tool_call_id"], out["name"]) == ("tool", "3 °C in Oslo", "call-7", "weather"), out
    assert evs.index(start) < evs.index(end)

    # Two model calls, each under its own agent task, ending with its reply and what it used.
    ends = [e for e in evs if e["event"] == "on_chat_model_end"]
    assert [e["parent_ids"] for e in ends] == [[run_id, task] for task in agent_tasks], ends
    asked = ends[0]["data"]["output"]
    assert asked["tool_calls"] == [{"id": "call-7", "name": "weather", "args": {"city": "Oslo"}, "type": "tool_call"}], asked
    assert asked["usage_metadata"]["input_tokens"] == 12 and asked["usage_metadata"]["total_tokens"] == 19, asked
    pieces = [e["data"]["chunk"] for e in evs
              if e["event"] == "on_chat_model_stream" and e["run_id"] == ends[0]["run_id"]]
    assert pieces[0]["tool_call_chunks"][0]["name"] == "weather", pieces
    assert json.loads("".join(p["tool_call_chunks"][0]["args"] for p in pieces if p["tool_call_chunks"])) == {"city": "Oslo"}
    answer = [e["data"]["chunk"]["content"] for e in evs
              if e["event"] == "on_chat_model_stream" and e["run_id"] == ends[1]["run_id"]]
    assert "".join(answer) == "In Oslo it is 3 °C in Oslo." == ends[1]["data"]["output"]["content"], answer
    # The model's end comes before its task's.
    task_end = next(e for e in evs if e["event"] == "on_chain_end" and e["run_id"] == agent_tasks[1])
    assert evs.index(ends[1]) < evs.index(task_end)


@scenario
async def stream_events_with_subgraphs():
    parts = await collect(client.runs.stream(
        None, "nested", input={"trail": []}, stream_mode=["events", "updates"], stream_subgraphs=True,
    ))
    names = {event for event, _ in parts}
    assert "events" in names and any(n.startswith("updates|inner:") for n in names), names
    evs = chains(parts)
    run_id = evs[0]["run_id"]
    inner, work = starts_of(evs, "inner")[0], starts_of(evs, "work")[0]
    assert inner["parent_ids"] == [run_id] and work["parent_ids"] == [run_id, inner["run_id"]], (inner, work)
    assert work["metadata"]["langgraph_checkpoint_ns"].startswith("inner:"), work["metadata"]
    work_end = next(e for e in evs if e["event"] == "on_chain_end" and e["name"] == "work")
    assert work_end["data"]["output"] == {"trail": ["inner"]}, work_end
    # Without stream_subgraphs the other modes stay flat; the events still tell the subgraph's tasks.
    flat = await collect(client.runs.stream(None, "nested", input={"trail": []}, stream_mode=["events", "updates"]))
    assert all("|" not in event for event, _ in flat), [event for event, _ in flat]
    assert starts_of(chains(flat), "work"), chains(flat)


async def take(stream, enough):
    """The parts of `stream` until `enough(parts)` holds; then the stream is closed. (The
    client's `threads.join_stream` is a coroutine that gives the stream.)"""
    if inspect.isawaitable(stream):
        stream = await stream
    parts = []
    try:
        async for part in stream:
            parts.append(part)
            if enough(parts):
                break
    finally:
        await stream.aclose()
    return parts


def runs_done(n):
    return lambda parts: sum(1 for p in parts if p.event == "metadata" and p.data.get("status") == "run_done") >= n


@scenario
async def join_thread_stream():
    tid = (await client.threads.create())["thread_id"]
    follower = asyncio.create_task(take(client.threads.join_stream(tid), runs_done(2)))
    await asyncio.sleep(0.3)
    first = await client.runs.create(tid, "chat", input={"messages": ["one"]}, stream_mode="values")
    second = await client.runs.create(tid, "chat", input={"messages": ["two"]}, stream_mode="updates",
                                      multitask_strategy="enqueue")
    seen = await asyncio.wait_for(follower, 20)

    # Both runs, one after the other: each with its own stream modes, opened by its metadata and
    # closed by its run_done.
    lifecycle = [(p.data.get("status"), p.data["run_id"]) for p in seen if p.event == "metadata"]
    assert lifecycle == [(None, first["run_id"]), ("run_done", first["run_id"]),
                         (None, second["run_id"]), ("run_done", second["run_id"])], lifecycle
    split = next(i for i, p in enumerate(seen) if p.event == "metadata" and p.data.get("status") == "run_done")
    assert {p.event for p in seen[1:split]} == {"values"}, seen[:split]
    assert {p.event for p in seen[split + 2:-1]} == {"updates"}, seen[split:]
    assert seen[split - 1].data["messages"][-1]["content"] == "You said: one"
    ids = [p.id for p in seen]
    assert all(ids) and len(set(ids)) == len(ids), ids

    # Reconnecting after an event replays exactly what followed it.
    replay = await take(client.threads.join_stream(tid, last_event_id=seen[split - 1].id), runs_done(2))
    assert [(p.event, p.data, p.id) for p in replay] == [(p.event, p.data, p.id) for p in seen[split:]], replay
    after_first = await take(client.threads.join_stream(tid, last_event_id=seen[split].id), runs_done(1))
    assert after_first[0].data == {"run_id": second["run_id"], "attempt": 1}, after_first[0]

    # Lifecycle alone: each run's start and end.
    starts_and_ends = await take(
        client.threads.join_stream(tid, last_event_id=seen[0].id, stream_mode="lifecycle"), runs_done(2))
    assert [p.event for p in starts_and_ends] == ["metadata"] * 3, starts_and_ends
    assert [p.id for p in starts_and_ends] == [p.id for p in seen if p.event == "metadata"][1:]

    # The thread's state after a change made outside a run.
    updates = asyncio.create_task(take(client.threads.join_stream(tid, stream_mode=["state_update", "lifecycle"]),
                                       lambda parts: any(p.event == "state_update" for p in parts)))
    await asyncio.sleep(0.3)
    await client.threads.update_state(tid, {"messages": [{"type": "human", "content": "edited"}]})
    changed = await asyncio.wait_for(updates, 10)
    assert [p.event for p in changed] == ["state_update"], changed
    assert changed[0].data["thread_id"] == tid
    assert changed[0].data["state"]["values"]["messages"][-1]["content"] == "edited", changed[0].data

    await refused(take(client.threads.join_stream(str(uuid.uuid4())), bool), NotFoundError, "an unknown thread was joined")
    await refused(take(client.threads.join_stream(tid, stream_mode="values"), bool), UnprocessableEntityError,
                  "a thread stream took a run's stream mode")


@scenario
async def wait_and_errors_of_runs():
    thread = await client.threads.create()
    result = await client.runs.wait(thread["thread_id"], "chat", input={"messages": [{"role": "user", "content": "hi"}]})
    assert result["messages"][-1]["content"] == "You said: hi", result
    broken = await client.threads.create()
    failed = await client.runs.wait(broken["thread_id"], "broken", input={"n": 3}, raise_error=False)
    assert failed["__error__"]["message"].find("cannot handle 3") >= 0, failed
    assert (await client.threads.get(broken["thread_id"]))["status"] == "error"
    runs = await client.runs.list(broken["thread_id"])
    assert [r["status"] for r in runs] == ["error"]
    parts = await collect(client.runs.stream(broken["thread_id"], "broken", input={"n": 4}))
    errors = events(parts, "error")
    assert errors and "cannot handle 4" in errors[0]["message"], parts
    # The thread already ran `chat`: another graph may not continue it.
    await expect_status(client.runs.wait(thread["thread_id"], "broken", input={"n": 1}), 409)


@scenario
async def interrupt_then_resume():
    thread = await client.threads.create()
    tid = thread["thread_id"]
    parts = await collect(client.runs.stream(tid, "approval", input={"request": "refund 12"}, stream_mode="updates"))
    pause = [u for u in events(parts, "updates") if "__interrupt__" in u]
    assert pause and pause[0]["__interrupt__"][0]["value"]["request"] == "refund 12", parts
    after = await client.threads.get(tid)
    assert after["status"] == "interrupted", after["status"]
    assert list(after["interrupts"].values())[0][0]["value"]["question"] == "approve?"
    state = await client.threads.get_state(tid)
    assert state["next"] == ["ask"] and state["interrupts"][0]["value"]["question"] == "approve?"
    assert state["tasks"][0]["interrupts"], state["tasks"]
    values = await client.runs.wait(tid, "approval", command={"resume": "yes"})
    assert values["log"] == ["answer: yes", "acted"], values
    assert (await client.threads.get(tid))["status"] == "idle"
    # An interrupt reached through wait comes back under __interrupt__.
    second = await client.threads.create()
    paused = await client.runs.wait(second["thread_id"], "approval", input={"request": "r"})
    assert paused["__interrupt__"][0]["value"]["question"] == "approve?", paused
    # Resuming needs a thread.
    await expect_status(client.runs.wait(None, "approval", command={"resume": "yes"}), 400)


@scenario
async def breakpoints_per_run():
    tid = (await client.threads.create())["thread_id"]
    weather = {"messages": [{"type": "human", "content": "weather?"}]}
    parts = await collect(
        client.runs.stream(tid, "chat", input=weather, interrupt_before=["tools"], stream_mode="updates")
    )
    assert events(parts, "updates")[-1] == {"__interrupt__": []}, parts
    thread = await client.threads.get(tid)
    assert thread["status"] == "interrupted" and thread["interrupts"] == {}, thread
    state = await client.threads.get_state(tid)
    assert state["next"] == ["tools"] and state["interrupts"] == [], state
    # No input continues the thread past the breakpoint; interrupt_after stops it again.
    paused = await client.runs.wait(tid, "chat", input=None, interrupt_after="*")
    assert [m["type"] for m in paused["messages"]] == ["human", "ai", "tool"], paused
    assert (await client.threads.get_state(tid))["next"] == ["agent"]
    done = await client.runs.wait(tid, "chat", input=None)
    assert done["messages"][-1]["content"] == "It is 4 °C and raining there.", done
    # The breakpoint was the run's, not the assistant's: a new run goes straight through.
    plain = await client.runs.wait(None, "chat", input=weather)
    assert len(plain["messages"]) == 4, plain
    body = await expect_status(client.runs.wait(None, "chat", input=weather, interrupt_before=["tolls"]), 422)
    assert "tolls" in body["detail"] and "agent, tools" in body["detail"], body


@scenario
async def update_state_and_fork():
    thread = await client.threads.create()
    tid = thread["thread_id"]
    await client.runs.wait(tid, "approval", input={"request": "r"})
    update = await client.threads.update_state(tid, {"request": "edited"})
    assert update["checkpoint"]["thread_id"] == tid
    state = await client.threads.get_state(tid)
    assert state["values"]["request"] == "edited"
    await refused(client.threads.update_state(tid, {"nonexistent": 1}), UnprocessableEntityError, "an update of an unknown field was accepted")


@scenario
async def background_run_join_and_cancel():
    thread = await client.threads.create()
    tid = thread["thread_id"]
    run = await client.runs.create(tid, "slow", input={"steps": 3, "pause_ms": 50})
    assert run["status"] == "pending"
    values = await client.runs.join(tid, run["run_id"])
    assert values["done"] == 3, values
    got = await client.runs.get(tid, run["run_id"])
    assert got["status"] == "success"
    long = await client.runs.create(tid, "slow", input={"steps": 200, "pause_ms": 50})
    await asyncio.sleep(0.3)
    assert (await client.threads.get(tid))["status"] == "busy"
    await client.runs.cancel(tid, long["run_id"], wait=True)
    cancelled = await client.runs.get(tid, long["run_id"])
    assert cancelled["status"] == "interrupted", cancelled
    assert (await client.threads.get(tid))["status"] == "idle"
    await refused(client.runs.cancel(tid, long["run_id"], action="rollback"), ConflictError, "an ended run was rolled back")
    await client.runs.delete(tid, run["run_id"])
    await refused(client.runs.get(tid, run["run_id"]), NotFoundError, "a deleted run was found")


@scenario
async def multitask_strategies():
    thread = await client.threads.create()
    tid = thread["thread_id"]
    first = await client.runs.create(tid, "slow", input={"steps": 100, "pause_ms": 30})
    await asyncio.sleep(0.2)
    await refused(client.runs.create(tid, "slow", input={"steps": 1, "pause_ms": 1}, multitask_strategy="reject"), ConflictError, "a second run was accepted with reject")
    queued = await client.runs.create(tid, "slow", input={"steps": 1, "pause_ms": 1}, multitask_strategy="enqueue")
    assert queued["status"] == "pending"
    interrupting = await client.runs.create(tid, "slow", input={"steps": 1, "pause_ms": 1}, multitask_strategy="interrupt")
    await client.runs.join(tid, interrupting["run_id"])
    statuses = {r["run_id"]: r["status"] for r in await client.runs.list(tid)}
    assert statuses[first["run_id"]] == "interrupted", statuses
    assert statuses[queued["run_id"]] in ("interrupted", "success"), statuses
    assert statuses[interrupting["run_id"]] == "success", statuses


async def progress(tid, run_id, steps):
    """Waits until run `run_id` has stored `steps` steps of the slow graph."""
    async for part in client.runs.join_stream(tid, run_id, stream_mode="values"):
        if part.event == "values" and part.data.get("done", 0) >= steps:
            return


@scenario
async def rollback():
    tid = (await client.threads.create())["thread_id"]
    base = await client.runs.wait(tid, "slow", input={"steps": 1, "pause_ms": 1})
    assert base["done"] == 1
    kept = len(await client.threads.get_history(tid, limit=100))

    # Cancelling with rollback deletes the run and every checkpoint it wrote.
    long = await client.runs.create(tid, "slow", input={"steps": 200, "pause_ms": 20}, stream_mode="values")
    await progress(tid, long["run_id"], 3)
    await client.runs.cancel(tid, long["run_id"], wait=True, action="rollback")
    assert long["run_id"] not in [r["run_id"] for r in await client.runs.list(tid)]
    assert len(await client.threads.get_history(tid, limit=100)) == kept
    assert (await client.threads.get_state(tid))["values"]["done"] == 1
    assert (await client.threads.get(tid))["status"] == "idle"

    # multitask_strategy "rollback": the new run starts from the thread as it was before the
    # run it replaces.
    first = await client.runs.create(tid, "slow", input={"steps": 200, "pause_ms": 20}, stream_mode="values")
    await progress(tid, first["run_id"], 4)
    second = await client.runs.create(tid, "slow", input={"steps": 2, "pause_ms": 1}, multitask_strategy="rollback")
    values = await client.runs.join(tid, second["run_id"])
    assert values["done"] == 2, values
    runs = {r["run_id"]: r["status"] for r in await client.runs.list(tid)}
    assert first["run_id"] not in runs and runs[second["run_id"]] == "success", runs

    # A run rolled back before it started leaves nothing either.
    blocker = await client.runs.create(tid, "slow", input={"steps": 5, "pause_ms": 20})
    queued = await client.runs.create(tid, "slow", input={"steps": 1}, multitask_strategy="enqueue")
    await client.runs.cancel(tid, queued["run_id"], action="rollback")
    await client.runs.join(tid, blocker["run_id"])
    assert queued["run_id"] not in [r["run_id"] for r in await client.runs.list(tid)]


@scenario
async def resumable_stream_reconnects():
    thread = await client.threads.create()
    tid = thread["thread_id"]
    run = await client.runs.create(tid, "slow", input={"steps": 6, "pause_ms": 40}, stream_resumable=True,
                                   stream_mode="values")
    seen = []
    async for part in client.runs.join_stream(tid, run["run_id"]):
        seen.append(part)
        if len(seen) == 3:
            break
    assert seen[0].event == "metadata"
    # Reconnect after the second event: the third and what followed are replayed.
    rest = [p async for p in client.runs.join_stream(tid, run["run_id"], last_event_id="1")]
    assert rest[0].data == seen[2].data, (rest[0], seen[2])
    assert rest[-1].data["done"] == 6, rest[-1]
    everything = [p async for p in client.runs.join_stream(tid, run["run_id"], last_event_id="-1")]
    assert everything[0].event == "metadata" and len(everything) == len(rest) + 2


@scenario
async def stateless_runs():
    result = await client.runs.wait(None, "chat", input={"messages": ["alone"]})
    assert result["messages"][-1]["content"] == "You said: alone"
    parts = await collect(client.runs.stream(None, "chat", input={"messages": ["streamed"]}, stream_mode="values"))
    assert events(parts, "values")[-1]["messages"][-1]["content"] == "You said: streamed"


@scenario
async def stateless_run_batch():
    """A batch starts every run in the background; a batch with one bad run starts none."""
    payloads = [
        {"assistant_id": "chat", "input": {"messages": [f"batch {i}"]}, "on_completion": "keep"} for i in range(3)
    ]
    runs = await client.runs.create_batch(payloads)
    assert len(runs) == 3 and len({r["run_id"] for r in runs}) == 3, runs
    for i, run in enumerate(runs):
        values = await client.runs.join(run["thread_id"], run["run_id"])
        assert values["messages"][-1]["content"] == f"You said: batch {i}", values
    before = await client.threads.count()
    bad = [payloads[0], {"assistant_id": "no-such-graph", "input": {}}]
    async with httpx.AsyncClient(base_url=URL) as http:
        refused_batch = await http.post("/runs/batch", json=bad)
        assert refused_batch.status_code == 404, refused_batch.text
        assert "run 1 of the batch" in refused_batch.json()["detail"], refused_batch.text
        assert await client.threads.count() == before, "a refused batch started a run"
        assert (await http.post("/runs/batch", json=[])).status_code == 422


@scenario
async def prune_threads():
    """`delete` deletes the threads named (unknown ids are skipped and not counted)."""
    kept, gone = [await client.threads.create() for _ in range(2)]
    await client.runs.wait(gone["thread_id"], "chat", input={"messages": ["hi"]})
    pruned = await client.threads.prune([gone["thread_id"], str(uuid.uuid4())])
    assert pruned == {"pruned_count": 1}, pruned
    await refused(client.threads.get(gone["thread_id"]), NotFoundError, "a pruned thread was found")
    assert (await client.threads.get(kept["thread_id"]))["thread_id"] == kept["thread_id"]
    assert await client.threads.prune([]) == {"pruned_count": 0}
    async with httpx.AsyncClient(base_url=URL) as http:
        bad = await http.post("/threads/prune", json={"thread_ids": [], "strategy": "all"})
        assert bad.status_code == 422, bad.text


@scenario
async def prune_keep_latest():
    """`keep_latest` deletes a thread's history but its latest checkpoint: the state reads as
    before, the next run continues the conversation, a paused thread still takes its answer;
    pruning again is harmless, and a thread with a run in progress is a conflict."""
    chat = (await client.threads.create())["thread_id"]
    for text in ["one", "two", "what is the weather?"]:
        await client.runs.wait(chat, "chat", input={"messages": [{"type": "human", "content": text}]})
    paused = (await client.threads.create())["thread_id"]
    await client.runs.wait(paused, "approval", input={"request": "refund 7"})
    before, paused_before = await client.threads.get_state(chat), await client.threads.get_state(paused)
    assert len(await client.threads.get_history(chat, limit=100)) > 3
    pruned = await client.threads.prune([chat, paused, str(uuid.uuid4())], strategy="keep_latest")
    assert pruned == {"pruned_count": 2}, pruned

    history = await client.threads.get_history(chat, limit=100)
    assert len(history) == 1 and history[0]["values"] == before["values"], history
    after = await client.threads.get_state(chat)
    assert (after["values"], after["next"]) == (before["values"], before["next"]), (after, before)
    assert after["checkpoint"]["checkpoint_id"] == before["checkpoint"]["checkpoint_id"]
    assert after["parent_checkpoint"] is None, after["parent_checkpoint"]
    values = await client.runs.wait(chat, "chat", input={"messages": [{"type": "human", "content": "three"}]})
    contents = [m["content"] for m in values["messages"]]
    assert len(contents) == len(before["values"]["messages"]) + 2, contents
    assert contents[:2] == ["one", "You said: one"] and contents[-2:] == ["three", "You said: three"], contents

    paused_after = await client.threads.get_state(paused)
    assert paused_after["next"] == ["ask"] and paused_after["interrupts"] == paused_before["interrupts"], paused_after
    assert len(await client.threads.get_history(paused)) == 1
    done = await client.runs.wait(paused, "approval", command={"resume": "yes"})
    assert done["log"] == ["answer: yes", "acted"], done

    assert await client.threads.prune([paused], strategy="keep_latest") == {"pruned_count": 1}
    assert await client.threads.prune([paused], strategy="keep_latest") == {"pruned_count": 1}
    assert [s["values"] for s in await client.threads.get_history(paused)] == [done]
    busy = (await client.threads.create())["thread_id"]
    run = await client.runs.create(busy, "slow", input={"steps": 100, "pause_ms": 20})
    await refused(client.threads.prune([busy], strategy="keep_latest"), ConflictError, "a busy thread was pruned")
    await client.runs.cancel(busy, run["run_id"], wait=True)


@scenario
async def metrics():
    """`/metrics` in Prometheus's text format counts runs and requests; `?format=json` gives
    LangGraph's queue figures."""
    await client.runs.wait(None, "chat", input={"messages": ["counted"]})
    async with httpx.AsyncClient(base_url=URL) as http:
        text = await http.get("/metrics")
        assert text.status_code == 200 and text.headers["content-type"].startswith("text/plain"), text.headers
        lines = text.text.splitlines()
        started = [l for l in lines if l.startswith('graphwright_runs_started_total{graph="chat"}')]
        assert started and int(started[0].split()[-1]) >= 1, started
        assert any(l.startswith('graphwright_runs_ended_total{graph="broken",status="error"}') for l in lines)
        assert any(l.startswith('graphwright_http_requests_total{method="POST",route="/runs/wait",status="200"}') for l in lines)
        assert "graphwright_queue_pending_runs 0" in lines, [l for l in lines if "queue" in l]
        figures = (await http.get("/metrics", params={"format": "json"})).json()
        assert figures["queue"]["n_pending"] == 0 and figures["queue"]["n_running"] == 0, figures
        assert figures["runs"]["chat"]["started"] >= 1 and figures["runs"]["chat"]["success"] >= 1, figures
        bad = await http.get("/metrics", params={"format": "xml"})
        assert bad.status_code == 422, bad.status_code


@scenario
async def store():
    await client.store.put_item(["users", "ana"], "prefs", {"theme": "dark", "size": 3})
    await client.store.put_item(["users", "bo"], "prefs", {"theme": "light", "size": 5})
    item = await client.store.get_item(["users", "ana"], "prefs")
    assert item["value"] == {"theme": "dark", "size": 3} and item["namespace"] == ["users", "ana"]
    found = await client.store.search_items(["users"], filter={"theme": "light"})
    assert [i["namespace"] for i in found["items"]] == [["users", "bo"]]
    spaces = await client.store.list_namespaces(prefix=["users"])
    assert spaces["namespaces"] == [["users", "ana"], ["users", "bo"]], spaces
    await client.store.delete_item(["users", "ana"], "prefs")
    assert await client.store.get_item(["users", "ana"], "prefs") is None


@scenario
async def schemas_describe_chat_messages():
    schemas = await client.assistants.get_schemas("chat")
    # No context type: no context schema (as LangGraph answers), and nothing to configure.
    assert schemas["context_schema"] is None
    assert schemas["config_schema"] == {"type": "object", "properties": {}, "additionalProperties": False}
    validator(schemas["config_schema"])
    inputs, output = schemas["input_schema"], schemas["output_schema"]
    assert "required" not in inputs and output["required"] == ["messages"]
    assert schemas["state_schema"] == output
    # Message fields are described as LangChain messages, not as graphwright's Rust type.
    assert inputs["properties"]["messages"]["type"] == "array"
    written = resolve(inputs, inputs["properties"]["messages"]["items"])["anyOf"]
    kinds = {k["properties"]["type"]["const"]: k for k in written if "type" in k.get("properties", {})}
    assert {"human", "ai", "tool", "system"} <= kinds.keys(), kinds.keys()
    assert kinds["human"]["required"] == ["type", "content"] and "content" in kinds["human"]["properties"]
    given = resolve(output, output["properties"]["messages"]["items"])["oneOf"]
    assert [k["properties"]["type"]["const"] for k in given] == ["human", "ai", "tool", "system"]
    assert "tool_calls" in given[1]["properties"] and "tool_call_id" in given[2]["properties"]
    for schema in (inputs, output):
        assert not {"Message", "Role", "ToolCall"} & schema["$defs"].keys(), schema["$defs"].keys()
    # What the scenarios send fits the input schema, and what comes back fits the output schema.
    check_input, check_output = validator(inputs), validator(output)
    sent = [
        {"messages": [{"type": "human", "content": "hello"}]},
        {"messages": [{"type": "human", "content": "what is the weather?", "id": "q1"}]},
        {"messages": ["new", ["ai", "hi"]]},
        {"messages": [{"role": "user", "content": [{"type": "text", "text": "a"}]}]},
    ]
    for value in sent:
        check_input.validate(value)
        thread = await client.threads.create()
        check_output.validate(await client.runs.wait(thread["thread_id"], "chat", input=value))
        check_output.validate((await client.threads.get_state(thread["thread_id"]))["values"])
    # What the input schema refuses, the server refuses too.
    refused_inputs = [
        {"messages": [{"type": "human", "content": "x"}], "bogus": 1},
        {"messages": [{"type": "alien", "content": 1}]},
        {"messages": "not a list"},
    ]
    for value in refused_inputs:
        assert not check_input.is_valid(value), value
        thread = await client.threads.create()
        await expect_status(client.runs.wait(thread["thread_id"], "chat", input=value), 422)


@scenario
async def schemas_describe_typed_fields():
    schemas = await client.assistants.get_schemas("shipping")
    inputs, state = schemas["input_schema"], schemas["state_schema"]
    fields = inputs["properties"]
    assert fields["grams"] == {"type": "integer", "minimum": 0, "description": "The weight in grams."}, fields["grams"]
    assert fields["contents"] == {"type": "string", "description": "What is inside."}
    assert fields["speed"]["description"] == "How fast it goes."
    speed = resolve(inputs, fields["speed"])
    assert speed["enum"] == ["standard", "express"] and speed["description"] == "How fast a parcel goes."
    assert fields["insured_value"]["type"] == ["number", "null"]
    address = resolve(inputs, fields["to"])
    assert address["properties"]["city"] == {"type": "string", "description": "The city."}
    assert address["required"] == ["street", "city"]
    assert fields["quotes"]["items"] == {"type": "string"}
    # An input may write any subset of the fields; the state and the output have them all.
    assert "required" not in inputs
    assert state["required"] == ["grams", "contents", "speed", "insured_value", "to", "quotes"]
    assert state["description"] == "A parcel to price." and schemas["output_schema"] == state
    # The context's schema, also that of `config.configurable`, which is read as the context.
    context = schemas["context_schema"]
    assert context["properties"]["account"] == {"type": "string", "description": "The account that pays."}
    assert context["required"] == ["account"] and schemas["config_schema"] == context
    check_input, check_state, check_context = validator(inputs), validator(state), validator(context)
    good = {"grams": 1200, "contents": "books", "speed": "express", "to": {"street": "Storgata 1", "city": "Oslo"}}
    check_input.validate(good)
    check_input.validate({"insured_value": None})
    check_context.validate({"account": "acme"})
    result = await client.runs.wait(None, "shipping", input=good, context={"account": "acme"})
    assert result["quotes"] == ["3600 cents to Oslo, paid by acme"], result
    check_state.validate(result)
    for bad in ({"grams": "heavy"}, {"grams": -1}, {"speed": "overnight"}, {"to": {"city": "Oslo"}}, {"weight": 3}):
        assert not check_input.is_valid(bad), bad
        await expect_status(client.runs.wait(None, "shipping", input=bad, context={"account": "acme"}), 422)
    assert not check_context.is_valid({"account": 7})
    await expect_status(client.runs.wait(None, "shipping", input=good, context={"account": 7}), 422)


@scenario
async def bad_input():
    async with httpx.AsyncClient(base_url=URL) as http:
        malformed = await http.post("/threads", content=b"{not json", headers={"content-type": "application/json"})
        assert malformed.status_code == 400 and "not valid JSON" in malformed.json()["detail"]
        wrong = await http.post("/threads", json={"thread_id": 7})
        assert wrong.status_code == 422, wrong.text
        huge = await http.post("/threads", content=b"{\"metadata\": {\"x\": \"" + b"a" * (10 * 1024 * 1024) + b"\"}}",
                               headers={"content-type": "application/json"})
        assert huge.status_code == 413, huge.status_code
        assert "detail" in huge.json()
        unknown_mode = await http.post("/runs/wait", json={"assistant_id": "chat", "stream_mode": "nonsense"})
        assert unknown_mode.status_code == 422
    thread = await client.threads.create()
    bogus = {"messages": [{"type": "human", "content": "x"}], "bogus": 1}
    detail = await expect_status(client.runs.wait(thread["thread_id"], "chat", input=bogus), 422)
    assert "bogus" in detail["detail"], detail
    await expect_status(client.runs.wait(str(uuid.uuid4()), "chat", input={}), 404)
    created = await client.runs.wait(str(uuid.uuid4()), "chat", input={"messages": ["new"]}, if_not_exists="create")
    assert created["messages"][-1]["content"] == "You said: new"
    assert (await client.threads.get(thread["thread_id"]))["status"] == "idle"


@scenario
async def disconnect_cancels_when_asked():
    thread = await client.threads.create()
    tid = thread["thread_id"]
    stream = client.runs.stream(tid, "slow", input={"steps": 200, "pause_ms": 20}, on_disconnect="cancel")
    async for part in stream:
        if part.event == "values":
            break
    await stream.aclose()
    for _ in range(100):
        runs = await client.runs.list(tid)
        if runs[0]["status"] != "running":
            break
        await asyncio.sleep(0.05)
    assert runs[0]["status"] == "interrupted", runs[0]["status"]
    assert (await client.threads.get(tid))["status"] == "idle"
    # With `continue` (the default) the run goes on without its client.
    kept = client.runs.stream(tid, "slow", input={"steps": 5, "pause_ms": 20})
    async for part in kept:
        if part.event == "values":
            break
    await kept.aclose()
    run = (await client.runs.list(tid))[0]
    values = await client.runs.join(tid, run["run_id"])
    assert (await client.runs.get(tid, run["run_id"]))["status"] == "success", values

PARCEL = {"grams": 10, "contents": "books", "to": {"street": "Storgata 1", "city": "Oslo"}}


@scenario
async def assistant_versions():
    """Every update keeps a version; going back to one makes its configuration current again,
    and runs use it."""
    mine = await client.assistants.create(
        "shipping", name="rates", config={"tags": ["v1"]}, context={"account": "first"}, metadata={"team": "ops"})
    aid = mine["assistant_id"]
    assert mine["version"] == 1
    second = await client.assistants.update(aid, config={"tags": ["v2"]}, context={"account": "second"},
                                            metadata={"stage": "b"})
    assert second["version"] == 2 and second["metadata"] == {"team": "ops", "stage": "b"}
    third = await client.assistants.update(aid, context={"account": "third"}, name="rates 3")
    assert third["version"] == 3

    versions = await client.assistants.get_versions(aid)
    assert [v["version"] for v in versions] == [3, 2, 1], versions
    assert [v["context"]["account"] for v in versions] == ["third", "second", "first"]
    assert [v["config"] for v in versions] == [{"tags": ["v2"]}, {"tags": ["v2"]}, {"tags": ["v1"]}]
    assert [v["name"] for v in versions] == ["rates 3", "rates", "rates"]
    assert all(v["assistant_id"] == aid and v["graph_id"] == "shipping" for v in versions)
    # Each is an `Assistant` as LangGraph's document describes it; a version never changes.
    assert all(v["updated_at"] == v["created_at"] for v in versions), versions
    assert [v["version"] for v in await client.assistants.get_versions(aid, metadata={"stage": "b"})] == [3, 2]
    assert [v["version"] for v in await client.assistants.get_versions(aid, limit=1, offset=1)] == [2]
    assert await client.assistants.get_versions(aid, metadata={"stage": "z"}) == []
    assert await client.assistants.get_versions(aid, offset=3) == []

    back = await client.assistants.set_latest(aid, 1)
    assert back["version"] == 1, back
    assert (back["config"], back["context"], back["name"], back["metadata"]) == (
        {"tags": ["v1"]}, {"account": "first"}, "rates", {"team": "ops"}), back
    assert await client.assistants.get(aid) == back
    result = await client.runs.wait(None, aid, input=PARCEL)
    assert result["quotes"] == ["10 cents to Oslo, paid by first"], result
    thread = await client.threads.create()
    result = await client.runs.wait(thread["thread_id"], aid, input=PARCEL)
    assert result["quotes"] == ["10 cents to Oslo, paid by first"], result

    # An update after going back is a new version, made from the one in use.
    fourth = await client.assistants.update(aid, metadata={"after": True})
    assert fourth["version"] == 4 and fourth["context"] == {"account": "first"}, fourth
    assert [v["version"] for v in await client.assistants.get_versions(aid)] == [4, 3, 2, 1]
    forward = await client.assistants.set_latest(aid, 3)
    assert (forward["version"], forward["context"]) == (3, {"account": "third"})
    result = await client.runs.wait(None, aid, input=PARCEL)
    assert result["quotes"] == ["10 cents to Oslo, paid by third"], result

    # A graph's default assistant is its version 1.
    default = await client.assistants.get("approval")
    kept = await client.assistants.get_versions(default["assistant_id"])
    assert [(v["version"], v["metadata"]) for v in kept] == [(1, {"created_by": "system"})], kept

    # Failures: unknown assistant, unknown version, bad bodies; a deleted assistant's versions go.
    nobody = str(uuid.uuid4())
    await refused(client.assistants.get_versions(nobody), NotFoundError, "versions of an unknown assistant")
    await refused(client.assistants.set_latest(nobody, 1), NotFoundError, "set_latest of an unknown assistant")
    await refused(client.assistants.set_latest(aid, 9), NotFoundError, "an unknown version was made current")
    assert (await client.assistants.get(aid))["version"] == 3, "a refused set_latest changed nothing"
    async with httpx.AsyncClient(base_url=URL) as http:
        for body in [{}, {"version": "one"}, {"version": None}]:
            answer = await http.post(f"/assistants/{aid}/latest", json=body)
            assert answer.status_code == 422, (body, answer.status_code, answer.text)
        by_query = await http.post(f"/assistants/{aid}/latest?version=2")
        assert by_query.status_code == 200 and by_query.json()["version"] == 2, by_query.text
        for body in [{"limit": 0}, {"limit": 1001}, {"offset": -1}, {"limit": "ten"}, {"metadata": 5}]:
            answer = await http.post(f"/assistants/{aid}/versions", json=body)
            assert answer.status_code == 422, (body, answer.status_code, answer.text)
        assert "detail" in answer.json()
    await client.assistants.delete(aid)
    await refused(client.assistants.get_versions(aid), NotFoundError, "versions of a deleted assistant")


@scenario
async def graph_xray():
    """`xray` draws subgraph nodes as the graphs they run, as many levels down as asked: their
    nodes as `node:inner`, reached and left by the subgraph node's edges."""

    def shape(drawing):
        nodes = [(n["id"], n.get("metadata", {}).get("subgraph")) for n in drawing["nodes"]]
        edges = {(e["source"], e["target"], e["conditional"]) for e in drawing["edges"]}
        return nodes, edges

    flat = shape(await client.assistants.get_graph("layered"))
    assert flat == shape(await client.assistants.get_graph("layered", xray=0)), "depth 0 draws no subgraph"
    assert flat[0] == [("__start__", None), ("outer", True), ("__end__", None)], flat
    nodes, edges = shape(await client.assistants.get_graph("layered", xray=1))
    assert nodes == [("__start__", None), ("outer:before", False), ("outer:inner", True), ("outer:after", False),
                     ("__end__", None)], nodes
    assert edges == {("__start__", "outer:before", False), ("outer:before", "outer:inner", False),
                     ("outer:inner", "outer:after", False), ("outer:after", "__end__", False)}, edges
    nodes, edges = shape(await client.assistants.get_graph("layered", xray=True))
    assert [n for n, _ in nodes] == ["__start__", "outer:before", "outer:inner:work", "outer:after", "__end__"], nodes
    assert ("outer:before", "outer:inner:work", False) in edges and ("outer:inner:work", "outer:after", False) in edges
    # A graph without subgraphs is drawn the same with or without it; a conditional edge stays one.
    assert shape(await client.assistants.get_graph("chat", xray=True)) == shape(await client.assistants.get_graph("chat"))
    async with httpx.AsyncClient(base_url=URL) as http:
        answer = await http.get("/assistants/layered/graph", params={"xray": "deep"})
    assert answer.status_code == 422 and "xray" in answer.json()["detail"], answer.text


@scenario
async def subgraphs():
    """The schemas of the graphs subgraph nodes run, keyed as LangGraph keys them."""
    nested = await client.assistants.get_subgraphs("nested")
    assert list(nested) == ["inner"], nested
    inner = nested["inner"]
    assert set(inner) == {"input_schema", "output_schema", "state_schema", "config_schema", "context_schema"}
    for key in ["input_schema", "output_schema", "state_schema", "config_schema"]:
        validator(inner[key])
    assert inner["state_schema"]["description"] == "The trail of the subgraph.", inner["state_schema"]
    assert inner["state_schema"]["required"] == ["trail"] and "required" not in inner["input_schema"]
    assert inner["context_schema"] is None, "a subgraph runs with its parent's context: none here"
    assert await client.assistants.get_subgraphs("chat") == {}

    top = await client.assistants.get_subgraphs("layered")
    assert list(top) == ["outer"], top
    assert top["outer"]["state_schema"]["description"] == "The trail of the graph that holds the subgraph."
    own = await client.assistants.get_schemas("layered")
    assert "label" in own["state_schema"]["properties"] and "label" not in top["outer"]["state_schema"]["properties"]
    every = await client.assistants.get_subgraphs("layered", recurse=True)
    assert sorted(every) == ["outer", "outer|inner"], every
    assert every["outer|inner"] == inner, "the same subgraph, whichever graph holds it"
    assert await client.assistants.get_subgraphs("layered", namespace="outer") == {"outer": top["outer"]}
    assert await client.assistants.get_subgraphs("layered", namespace="outer", recurse=True) == {"outer": top["outer"]}
    deep = await client.assistants.get_subgraphs("layered", namespace="outer|inner", recurse=True)
    assert deep == {"outer|inner": inner}, deep
    # As LangGraph answers: a nested namespace needs `recurse`, and an unknown one matches nothing.
    assert await client.assistants.get_subgraphs("layered", namespace="outer|inner") == {}
    assert await client.assistants.get_subgraphs("layered", namespace="inner", recurse=True) == {}
    assert await client.assistants.get_subgraphs("layered", namespace="out", recurse=True) == {}

    async with httpx.AsyncClient(base_url=URL) as http:
        # The namespace unescaped, as JavaScript's client sends it.
        raw = await http.get("/assistants/layered/subgraphs/outer|inner?recurse=true")
        assert raw.status_code == 200 and raw.json() == deep, raw.text
        bad = await http.get("/assistants/layered/subgraphs?recurse=maybe")
        assert bad.status_code == 422 and "recurse" in bad.json()["detail"], bad.text
    await refused(client.assistants.get_subgraphs(str(uuid.uuid4())), NotFoundError, "an unknown assistant's subgraphs")


def storage_fits(storage, tid):
    """Checks `storage` has the shape of LangGraph's `ThreadStorage` and adds up."""
    assert storage["thread_id"] == tid
    for part in ["checkpoints", "pending_writes"]:
        assert set(storage[part]) == {"count", "bytes"}, storage
    assert storage["channel_values"] == {"count": 0, "bytes": 0, "by_channel": {}}, storage
    assert storage["total_bytes"] == storage["checkpoints"]["bytes"] + storage["pending_writes"]["bytes"], storage


@scenario
async def thread_storage():
    async with httpx.AsyncClient(base_url=URL) as http:
        async def storage(tid):
            answer = await http.get(f"/threads/{tid}/storage")
            assert answer.status_code == 200, answer.text
            storage_fits(answer.json(), tid)
            return answer.json()

        thread = await client.threads.create()
        tid = thread["thread_id"]
        empty = await storage(tid)
        assert empty["total_bytes"] == 0 and empty["checkpoints"]["count"] == 0, empty

        await client.runs.wait(tid, "chat", input={"messages": [{"type": "human", "content": "hi"}]})
        once = await storage(tid)
        history = await client.threads.get_history(tid, limit=100)
        assert once["checkpoints"]["count"] == len(history), (once, len(history))
        assert once["pending_writes"]["count"] > 0 and once["checkpoints"]["bytes"] > 0, once
        await client.runs.wait(tid, "chat", input={"messages": [{"type": "human", "content": "a much longer message " * 20}]})
        twice = await storage(tid)
        assert twice["checkpoints"]["count"] > once["checkpoints"]["count"], (once, twice)
        assert twice["pending_writes"]["bytes"] - once["pending_writes"]["bytes"] > 400, "the message is stored"

        # A subgraph's checkpoints are stored under the thread, and counted with it.
        nested = await client.threads.create()
        await client.runs.wait(nested["thread_id"], "nested", input={"trail": []})
        counted = await storage(nested["thread_id"])
        own = await client.threads.get_history(nested["thread_id"], limit=100)
        assert counted["checkpoints"]["count"] > len(own), (counted, len(own))

        missing = await http.get(f"/threads/{uuid.uuid4()}/storage")
        assert missing.status_code == 404 and "not found" in missing.json()["detail"], missing.text
        await client.threads.delete(tid)
        gone = await http.get(f"/threads/{tid}/storage")
        assert gone.status_code == 404, gone.text


@scenario
async def docs_page():
    """`/docs` lists the operations served, each answered by a route of the server."""
    async with httpx.AsyncClient(base_url=URL, timeout=10) as http:
        page = await http.get("/docs")
        assert page.status_code == 200 and page.headers["content-type"].startswith("text/html"), page.headers
        assert 'href="https://docs.langchain.com/langsmith/server-api-ref"' in page.text
        rows = re.findall(r'<tr data-methods="([A-Z ]+)" data-path="([^"]+)">', page.text)
        listed = {(method, path) for methods, path in rows for method in methods.split()}
        for wanted in [("POST", "/assistants/{assistant_id}/versions"), ("POST", "/assistants/{assistant_id}/latest"),
                       ("GET", "/assistants/{assistant_id}/subgraphs/{namespace}"),
                       ("GET", "/threads/{thread_id}/storage"), ("GET", "/docs"), ("POST", "/runs/wait")]:
            assert wanted in listed, wanted
        assert len(listed) > 60, len(listed)
        for method, path in sorted(listed):
            # Ids nothing has: every route answers, none with "no route".
            url = re.sub(r"\{[a-z_]+\}", "nothing-here", path)
            try:
                async with http.stream(method, url, json={} if method in ("POST", "PUT", "PATCH") else None) as answer:
                    if answer.status_code == 404:
                        assert b"no route" not in await answer.aread(), (method, path)
                    assert answer.status_code < 500, (method, path, answer.status_code)
                    # MCP's transport answers the methods it takes itself; every other route is
                    # the router's, which answers 405 for a method it does not serve.
                    assert answer.status_code != 405 or path == "/mcp", (method, path)
            except httpx.TransportError as error:
                raise AssertionError(f"{method} {url}: {error!r}") from error


@scenario
async def functional_entrypoint():
    """An `#[entrypoint]` served as LangGraph serves one: the input is the fn's, the values are
    what it returned, each task streams its result under its name, the interrupt in the middle
    is answered with a Command, and `update_state` sets what the next run gets as `previous`."""
    tid = (await client.threads.create())["thread_id"]
    parts = [p async for p in client.runs.stream(tid, "essay", input="rust", stream_mode="updates")]
    updates = [p.data for p in parts if p.event == "updates"]
    assert {"outline": ["rust: why", "rust: how"]} in updates, updates
    assert sorted(u["section"] for u in updates if "section" in u) == ["rust: how, written", "rust: why, written"]
    assert updates[-1]["__interrupt__"][0]["value"] == {"draft": ["rust: why, written", "rust: how, written"]}
    done = await client.runs.wait(tid, "essay", command={"resume": "fine"})
    assert done == {"sections": ["rust: why, written", "rust: how, written"], "verdict": "fine", "count": 1}, done
    state = await client.threads.get_state(tid)
    assert state["values"] == done and state["next"] == [], state
    await client.threads.update_state(tid, 41)
    again = await client.runs.wait(tid, "essay", input="go")
    assert "__interrupt__" in again or again.get("count") is None, again
    finished = await client.runs.wait(tid, "essay", command={"resume": "ok"})
    assert finished["count"] == 42, finished


async def main():
    failed = 0
    for fn in SCENARIOS:
        try:
            await asyncio.wait_for(fn(), timeout=60)
            print(f"ok   {fn.__name__}")
        except Exception as error:  # report every scenario, then fail
            failed += 1
            print(f"FAIL {fn.__name__}: {type(error).__name__}: {error}")
            import traceback
            traceback.print_exc()
    if failed:
        print(f"{failed} of {len(SCENARIOS)} scenarios failed")
        sys.exit(1)
    print("all scenarios passed")


asyncio.run(main())
