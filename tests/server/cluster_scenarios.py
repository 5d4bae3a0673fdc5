"""Two graphwright-server processes on one PostgreSQL database, driven by LangGraph's Python
client (langgraph-sdk).

Usage: python cluster_scenarios.py http://A http://B PID_OF_A

A run accepted by one process is joined, streamed and cancelled through the other; a thread's
stream on one process follows the runs the other executes; runs on one thread queue across
processes; and when process A is killed mid-run, B takes A's runs over (the one in flight goes on
from its checkpoints, every stored step counted once, a client following it reading every event
once), runs the queued ones in order, and leaves the thread free. The `slow` graph (served by
tests/server_sdk.rs) counts `steps` ticks of `pause_ms` each.
"""

import asyncio
import os
import signal
import sys
import time

from langgraph_sdk import get_client

A = get_client(url=sys.argv[1], api_key=None)
B = get_client(url=sys.argv[2], api_key=None)
PID_A = int(sys.argv[3])
SCENARIOS = []


def scenario(fn):
    SCENARIOS.append(fn)
    return fn


async def until(check, what, seconds=10.0):
    """Polls `check` until it returns something true; fails saying `what` did not happen."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = await check()
        if found:
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"{what} did not happen within {seconds} s")


async def status_on(client, thread, run):
    return (await client.runs.get(thread, run))["status"]


async def status_is(client, thread, run, status):
    return await status_on(client, thread["thread_id"], run["run_id"]) == status


def slow(steps, pause_ms):
    return {"steps": steps, "pause_ms": pause_ms}


@scenario
async def a_run_accepted_by_a_is_joined_through_b():
    thread = await A.threads.create()
    run = await A.runs.create(thread["thread_id"], "slow", input=slow(3, 100))
    # Both see the same records.
    assert (await B.threads.get(thread["thread_id"]))["thread_id"] == thread["thread_id"]
    assert (await B.runs.get(thread["thread_id"], run["run_id"]))["run_id"] == run["run_id"]
    result = await B.runs.join(thread["thread_id"], run["run_id"])
    assert result["done"] == 3, result
    assert await status_on(B, thread["thread_id"], run["run_id"]) == "success"
    assert (await B.threads.get(thread["thread_id"]))["status"] == "idle"


@scenario
async def a_run_on_a_streams_live_through_b_with_the_same_events():
    thread = await A.threads.create()
    run = await A.runs.create(
        thread["thread_id"], "slow", input=slow(5, 150), stream_mode=["values", "updates"], stream_resumable=True
    )
    seen_on_b = [(p.event, p.data) async for p in B.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="-1")]
    values = [data for event, data in seen_on_b if event == "values"]
    assert values and values[-1]["done"] == 5, seen_on_b
    assert [data["done"] for data in values] == sorted(data["done"] for data in values), values
    assert seen_on_b[0][0] == "metadata" and seen_on_b[0][1]["run_id"] == run["run_id"], seen_on_b[0]
    # Replayed after the end through A (which executed it), the stream is the same.
    seen_on_a = [(p.event, p.data) async for p in A.runs.join_stream(thread["thread_id"], run["run_id"], last_event_id="-1")]
    assert seen_on_a == seen_on_b, (seen_on_a, seen_on_b)


@scenario
async def a_run_on_a_is_cancelled_through_b():
    thread = await A.threads.create()
    run = await A.runs.create(thread["thread_id"], "slow", input=slow(100, 100))
    await until(lambda: done_at_least(thread, 1), "a step checkpointed")
    await B.runs.cancel(thread["thread_id"], run["run_id"], wait=True)
    assert await status_on(A, thread["thread_id"], run["run_id"]) == "interrupted"
    state = await A.threads.get_state(thread["thread_id"])
    assert 0 < state["values"]["done"] < 100, state["values"]
    assert (await B.threads.get(thread["thread_id"]))["status"] == "idle"


@scenario
async def runs_on_one_thread_queue_across_processes():
    thread = await A.threads.create()
    first = await A.runs.create(thread["thread_id"], "slow", input=slow(3, 150))
    second = await B.runs.create(thread["thread_id"], "slow", input=slow(6, 50), multitask_strategy="enqueue")
    assert await status_on(B, thread["thread_id"], second["run_id"]) == "pending"
    result = await A.runs.join(thread["thread_id"], second["run_id"])
    # The second continued where the first ended: one after the other, never both at once.
    assert result["done"] == 6, result
    for run in (first, second):
        assert await status_on(A, thread["thread_id"], run["run_id"]) == "success"
    history = await B.threads.get_history(thread["thread_id"], limit=100)
    assert [s["values"]["done"] for s in reversed(history) if s["values"]][-1] == 6


@scenario
async def a_run_on_b_interrupts_a_run_on_a():
    thread = await A.threads.create()
    first = await A.runs.create(thread["thread_id"], "slow", input=slow(100, 100))
    await until(lambda: status_is(A, thread, first, "running"), "the first run starting")
    second = await B.runs.create(thread["thread_id"], "slow", input=slow(1, 10), multitask_strategy="interrupt")
    await B.runs.join(thread["thread_id"], second["run_id"])
    statuses = [await status_on(B, thread["thread_id"], run["run_id"]) for run in (first, second)]
    assert statuses == ["interrupted", "success"], statuses


async def take(stream, enough):
    """The parts of a stream (the client's `threads.join_stream` gives it through a coroutine)
    until `enough(parts)` holds; then the stream is closed."""
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
async def a_thread_stream_on_b_follows_runs_made_through_a():
    thread = await A.threads.create()
    tid = thread["thread_id"]
    follower = asyncio.create_task(take(B.threads.join_stream(tid, stream_mode=["run_modes", "state_update"]), runs_done(2)))
    await asyncio.sleep(0.5)
    first = await A.runs.create(tid, "slow", input=slow(3, 50), stream_mode="values")
    second = await A.runs.create(tid, "slow", input=slow(5, 20), stream_mode="updates", multitask_strategy="enqueue")
    seen = await asyncio.wait_for(follower, 30)
    lifecycle = [(p.data.get("status"), p.data["run_id"]) for p in seen if p.event == "metadata"]
    assert lifecycle == [(None, first["run_id"]), ("run_done", first["run_id"]),
                         (None, second["run_id"]), ("run_done", second["run_id"])], lifecycle
    values = [p.data["done"] for p in seen if p.event == "values"]
    assert values == [0, 1, 2, 3], values
    assert len([p for p in seen if p.event == "updates"]) == 2, seen
    # The same ids on either process: a stream joined on A resumes where B's left off.
    middle = next(i for i, p in enumerate(seen) if p.event == "metadata" and p.data.get("status") == "run_done")
    replay = await take(A.threads.join_stream(tid, last_event_id=seen[middle - 1].id), runs_done(2))
    assert [(p.event, p.data, p.id) for p in replay] == [(p.event, p.data, p.id) for p in seen[middle:]], replay
    # A state change made through A reaches B's followers.
    changes = asyncio.create_task(take(B.threads.join_stream(tid, stream_mode="state_update"), bool))
    await asyncio.sleep(0.5)
    await A.threads.update_state(tid, {"steps": 9})
    changed = await asyncio.wait_for(changes, 10)
    assert changed[0].event == "state_update" and changed[0].data["state"]["values"]["steps"] == 9, changed


@scenario
async def killing_a_mid_run_hands_its_runs_to_b():
    thread = await A.threads.create()
    tid = thread["thread_id"]
    running = await A.runs.create(tid, "slow", input=slow(40, 50), stream_mode="values", stream_resumable=True)
    await until(lambda: status_is(B, thread, running, "running"), "the run starting")
    # A client follows the run through B across A's death.
    followed = asyncio.create_task(read_all(B.runs.join_stream(tid, running["run_id"], last_event_id="-1")))
    await until(lambda: done_at_least(thread, 2), "two steps checkpointed")
    queued_on_b = await B.runs.create(tid, "slow", input=slow(3, 10), multitask_strategy="enqueue")
    queued_on_a = await A.runs.create(tid, "slow", input=slow(3, 10), multitask_strategy="enqueue")
    os.kill(PID_A, signal.SIGKILL)
    # B takes A's runs over: the run in flight goes on from its checkpoints (every stored step
    # counted once: `done` ends at exactly 40), then the queued runs in their order.
    joined = await B.runs.join(tid, running["run_id"])
    assert "__error__" not in joined and joined["done"] == 40, joined
    # The follower read the run to its end under ids without a gap, no error, the hand-over as
    # the second attempt, and every state once, in order: what the second attempt sent again
    # (from its last checkpoint on) was held back.
    seen = await asyncio.wait_for(followed, 30)
    assert not [p for p in seen if p.event == "error"], seen
    ids = [int(p.id) for p in seen]
    assert ids == list(range(len(ids))), ids
    counts = [p.data["done"] for p in seen if p.event == "values"]
    assert counts == list(range(counts[0], 41)), counts
    attempts = [p.data.get("attempt") for p in seen if p.event == "metadata"]
    assert attempts == [1, 2], attempts
    assert await status_on(B, tid, running["run_id"]) == "success"
    result = await B.runs.join(tid, queued_on_b["run_id"])
    assert result == {"steps": 3, "pause_ms": 10, "done": 41}, result
    result = await B.runs.join(tid, queued_on_a["run_id"])
    assert result == {"steps": 3, "pause_ms": 10, "done": 42}, result
    assert await status_on(B, tid, queued_on_a["run_id"]) == "success"
    assert (await B.threads.get(tid))["status"] == "idle"
    # The thread takes new runs.
    again = await B.runs.wait(tid, "slow", input=slow(1, 10))
    assert "__error__" not in again, again


async def read_all(stream):
    """Every part of a stream, to its end."""
    return [part async for part in stream]


async def done_at_least(thread, n):
    state = await B.threads.get_state(thread["thread_id"])
    return (state.get("values") or {}).get("done", 0) >= n


async def main():
    failed = []
    for fn in SCENARIOS:
        try:
            await asyncio.wait_for(fn(), timeout=60)
            print(f"ok   {fn.__name__}")
        except Exception as error:  # every scenario runs, then all failures are reported
            failed.append(fn.__name__)
            print(f"FAIL {fn.__name__}: {type(error).__name__}: {error}")
    if failed:
        print(f"{len(failed)} scenarios failed: {', '.join(failed)}")
        sys.exit(1)
    print("all scenarios passed")


asyncio.run(main())
