"""Drives an Agent Server with langgraph-sdk and prints what it measured, as one JSON line.

Usage: python load.py URL PID [--runs N] [--concurrency C] [--first-events M] [--time-limit S]

- runs/s: N create-and-wait runs (`runs.wait` on a new thread each), C at a time, stopped at
  the time limit; the rate counts the runs that finished.
- first event: M streamed runs one after another, each timed from sending the request to the
  first SSE event (`metadata`); p50 and p99.
- server CPU per run: the CPU time the server's processes used during those runs, per run. On
  a small machine the client can be the bottleneck of runs/s; this says what each run cost
  the server whatever the client's speed.
- client CPU per run: the same for this script's own process, so that the runs/s the client
  could reach on its own (at most 1000 / this, per core it has) is known beside the server's.
- RSS: the server process and its children (from /proc), idle before the load and right after.
"""

import argparse
import asyncio
import json
import os
import statistics
import time

from langgraph_sdk import get_client

from procfs import cpu_seconds, rss_kib

MESSAGE = {"messages": [{"type": "human", "content": "what is the weather?"}]}


async def one_run(client):
    thread = await client.threads.create()
    values = await client.runs.wait(thread["thread_id"], "chat", input=MESSAGE)
    assert len(values["messages"]) == 4, values


async def throughput(client, runs, concurrency, limit):
    deadline = time.perf_counter() + limit
    done = 0
    queue = iter(range(runs))

    async def worker():
        nonlocal done
        for _ in queue:
            if time.perf_counter() > deadline:
                return
            await one_run(client)
            done += 1

    start = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return done, time.perf_counter() - start


async def first_events(client, count):
    latencies = []
    for _ in range(count):
        thread = await client.threads.create()
        start = time.perf_counter()
        stream = client.runs.stream(thread["thread_id"], "chat", input=MESSAGE, stream_mode="values")
        async for _part in stream:
            latencies.append(time.perf_counter() - start)
            break
        await stream.aclose()
        # Let the run finish before the next, so each request finds the server idle.
        await client.runs.join(thread["thread_id"], (await client.runs.list(thread["thread_id"]))[0]["run_id"])
    latencies.sort()
    p99 = latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))]
    return statistics.median(latencies), p99


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("pid", type=int)
    parser.add_argument("--runs", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=8)
    parser.add_argument("--first-events", type=int, default=200)
    parser.add_argument("--time-limit", type=float, default=60)
    args = parser.parse_args()
    client = get_client(url=args.url, api_key=None)
    await one_run(client)  # warm up: the graph is loaded and the first request served
    idle = rss_kib(args.pid)
    cpu, own = cpu_seconds(args.pid), time.process_time()
    done, seconds = await throughput(client, args.runs, args.concurrency, args.time_limit)
    cpu, own = cpu_seconds(args.pid) - cpu, time.process_time() - own
    loaded = rss_kib(args.pid)
    p50, p99 = await first_events(client, args.first_events)
    print(json.dumps({
        "runs": done,
        "seconds": round(seconds, 3),
        "runs_per_s": round(done / seconds, 1),
        "server_cpu_ms_per_run": round(cpu * 1000 / done, 3),
        "client_cpu_ms_per_run": round(own * 1000 / done, 3),
        "first_event_p50_ms": round(p50 * 1000, 2),
        "first_event_p99_ms": round(p99 * 1000, 2),
        "rss_idle_mib": round(idle / 1024, 1),
        "rss_loaded_mib": round(loaded / 1024, 1),
    }))


asyncio.run(main())
