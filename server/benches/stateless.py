"""Drives an Agent Server's stateless `POST /runs/wait` with wrk and prints what it measured, as
one JSON line.

Usage: python stateless.py URL PID [--seconds S] [--connections C] [--threads T]

wrk (a C load generator, Debian's `wrk`) keeps C connections busy for S seconds, each sending the
`chat` graph a weather question and waiting for its final values, light enough on the CPU to
leave the cores to the server. Reported: runs per second, wrk's latency percentiles, and the CPU
time the server's processes used per run (from /proc, as load.py measures it). Every answer must
be a 200, or the measure is refused.
"""

import argparse
import json
import os
import re
import subprocess
import tempfile

from procfs import cpu_seconds

BODY = '{"assistant_id": "chat", "input": {"messages": [{"type": "human", "content": "what is the weather?"}]}}'

SCRIPT = f"""
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.body = '{BODY}'
done = function(summary, latency, requests)
  io.write(string.format("RESULT %d %d %d %d %d\\n", summary.requests, summary.errors.status,
    latency:percentile(50), latency:percentile(99), summary.duration))
end
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("url")
    parser.add_argument("pid", type=int)
    parser.add_argument("--seconds", type=int, default=15)
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    with tempfile.NamedTemporaryFile("w", suffix=".lua") as script:
        script.write(SCRIPT)
        script.flush()
        wrk = [
            "wrk", f"-t{args.threads}", f"-c{args.connections}", f"-d{args.seconds}s", "-s", script.name,
            f"{args.url}/runs/wait",
        ]
        subprocess.run([*wrk[:3], "-d1s", *wrk[4:]], check=True, capture_output=True)  # warm up
        before = cpu_seconds(args.pid)
        out = subprocess.run(wrk, check=True, capture_output=True, text=True).stdout
        cpu = cpu_seconds(args.pid) - before
    found = re.search(r"RESULT (\d+) (\d+) (\d+) (\d+) (\d+)", out)
    if not found:
        raise SystemExit(f"wrk printed no result:\n{out}")
    requests, bad, p50, p99, micros = (int(x) for x in found.groups())
    if bad or requests == 0:
        raise SystemExit(f"{bad} of {requests} answers were not 2xx: the measure is refused\n{out}")
    print(json.dumps({
        "runs": requests,
        "runs_per_s": round(requests / (micros / 1e6), 1),
        "latency_p50_ms": round(p50 / 1000, 2),
        "latency_p99_ms": round(p99 / 1000, 2),
        "server_cpu_ms_per_run": round(cpu * 1000 / requests, 3),
    }))


main()
