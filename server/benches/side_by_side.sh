#!/usr/bin/env bash
# The server side by side with LangGraph's: the same `chat` graph (examples/serve.rs, and
# langgraph_app/graph.py for LangGraph), served by graphwright-server (release build, threads in
# a SQLite file, and again with everything in memory, as `langgraph dev` keeps it) and by
# `langgraph dev` (in-memory runtime), each driven by the same
# langgraph-sdk load script (load.py: create-and-wait runs, first stream events, memory), then by
# wrk on stateless `POST /runs/wait` (stateless.py), on 127.0.0.1. Prints both results and the
# ratios. wrk (Debian's `wrk`) is installed when missing and this runs as root with apt-get.
#
# Run from the repository root: server/benches/side_by_side.sh [load.py options]
# (defaults: 2000 runs, 8 at a time, at most 60 s each; 200 first-event samples; wrk: 15 s, 8
# connections).
set -euo pipefail
cd "$(dirname "$0")/../.."
target=${CARGO_TARGET_DIR:-target}
venv=$target/bench-cache/lg-server
reqs=server/benches/requirements.txt
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$reqs" "$venv/requirements.txt"; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q -r "$reqs"
    cp "$reqs" "$venv/requirements.txt"
fi
if ! command -v wrk >/dev/null; then
    [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null || {
        echo "side_by_side: wrk is missing: install Debian's wrk package" >&2
        exit 1
    }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq wrk >/dev/null
fi
cargo build -q --release -p graphwright-server --example serve

work=$(mktemp -d)
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$work"
}
trap cleanup EXIT

wait_ok() {
    for _ in $(seq 120); do
        curl -sf "$1/ok" >/dev/null && return 0
        sleep 0.5
    done
    echo "side_by_side: nothing answered on $1/ok" >&2
    exit 1
}

"$target/release/examples/serve" 127.0.0.1:2031 "$work/graphwright.db" >"$work/graphwright.log" 2>&1 &
pids+=($!)
ours=$!
wait_ok http://127.0.0.1:2031
"$target/release/examples/serve" 127.0.0.1:2033 :memory: >"$work/graphwright-memory.log" 2>&1 &
pids+=($!)
ours_in_memory=$!
wait_ok http://127.0.0.1:2033

cp -r server/benches/langgraph_app "$work/app"
(
    cd "$work/app"
    LANGSMITH_TRACING=false LANGGRAPH_CLI_NO_ANALYTICS=1 exec "$OLDPWD/$venv/bin/langgraph" dev \
        --host 127.0.0.1 --port 2032 --no-browser --no-reload >"$work/langgraph.log" 2>&1
) &
pids+=($!)
theirs=$!
wait_ok http://127.0.0.1:2032

echo "graphwright-server (SQLite file):"
a=$("$venv/bin/python" server/benches/load.py http://127.0.0.1:2031 "$ours" "$@")
echo "  $a"
sa=$("$venv/bin/python" server/benches/stateless.py http://127.0.0.1:2031 "$ours")
echo "  $sa"
echo "graphwright-server (in memory):"
m=$("$venv/bin/python" server/benches/load.py http://127.0.0.1:2033 "$ours_in_memory" "$@")
echo "  $m"
echo "langgraph dev (in memory):"
b=$("$venv/bin/python" server/benches/load.py http://127.0.0.1:2032 "$theirs" "$@")
echo "  $b"
sb=$("$venv/bin/python" server/benches/stateless.py http://127.0.0.1:2032 "$theirs")
echo "  $sb"
"$venv/bin/python" - "$a" "$b" "$sa" "$sb" "$m" <<'PY'
import json, sys
ours, theirs, stateless_ours, stateless_theirs, in_memory = (json.loads(x) for x in sys.argv[1:])
print("create-and-wait runs (langgraph-sdk, load.py):")
print(f"runs/s:            {ours['runs_per_s'] / theirs['runs_per_s']:.1f}x more")
print(f"server CPU per run: {theirs['server_cpu_ms_per_run'] / ours['server_cpu_ms_per_run']:.1f}x less")
print(f"server CPU per run, ours in memory: {theirs['server_cpu_ms_per_run'] / in_memory['server_cpu_ms_per_run']:.1f}x less")
print(f"client CPU per run: {ours['client_cpu_ms_per_run']} ms against ours, {theirs['client_cpu_ms_per_run']} ms against LangGraph's")
for key in ("first_event_p50_ms", "first_event_p99_ms"):
    print(f"{key}: {theirs[key] / ours[key]:.1f}x lower")
for key in ("rss_idle_mib", "rss_loaded_mib"):
    print(f"{key}:      {ours[key] / theirs[key]:.3f} of LangGraph's")
print("stateless POST /runs/wait (wrk, stateless.py):")
print(f"runs/s:            {stateless_ours['runs_per_s'] / stateless_theirs['runs_per_s']:.1f}x more")
print(f"server CPU per run: {stateless_theirs['server_cpu_ms_per_run'] / stateless_ours['server_cpu_ms_per_run']:.1f}x less")
PY
