#!/usr/bin/env bash
# The models benchmarks beside Python LangGraph, in one run on one machine: our
# `react_10_turns_aimock` and `stream_100k_tokens` (benches/models.rs), then LangGraph's
# `create_react_agent` on the same aimock fixtures (react_langgraph.py, versions pinned in
# requirements.lock.txt, installed on first use into target/bench-cache/lg-models), then the
# ratio. Needs node/npm and python3 with venv.
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=runtime/benches/models
target=${CARGO_TARGET_DIR:-target}

ours=$(cargo bench -q -p graphwright --bench models)
echo "$ours"

venv=$(runtime/benches/langgraph_venv.sh)

# An aimock server of its own for the baseline (the bench installed aimock into the test cache),
# serving the test fixtures and the bench's 100,000-token reply (as benches/models.rs writes it).
log=$(mktemp)
fixtures=$(mktemp -d)
cp tests/fixtures/model/*.json "$fixtures"
python3 -c 'import json; print(json.dumps({"fixtures": [{"match": {"userMessage": "long"},
    "response": {"content": "tok " * 100000}, "chunkSize": 4}]}))' >"$fixtures/long.json"
exec 3> >(node tests/support/aimock_launcher.mjs "$target/test-cache/aimock/node_modules/@copilotkit/aimock/dist/cli.js" \
    -p 0 -h 127.0.0.1 -f "$fixtures" >"$log")
for _ in $(seq 50); do grep -q "http://" "$log" && break; sleep 0.1; done
url=$(grep -o "http://[0-9.:]*" "$log" | head -n 1)
theirs=$("$venv/bin/python" "$here/react_langgraph.py" "$url")
exec 3>&-
rm -r "$fixtures"
echo "$theirs"

python3 - "$ours" "$theirs" <<'PY'
import json, sys
ours = {l["name"]: l for l in map(json.loads, sys.argv[1].splitlines())}
theirs = {l["name"]: l for l in map(json.loads, sys.argv[2].splitlines())}
mine = ours["react_10_turns_aimock"]
react = theirs["react_10_turns_aimock"]
print(f"react_10_turns_aimock: LangGraph {react['wall_s']*1e3:.2f} ms, graphwright {mine['wall_s']*1e3:.2f} ms, "
      f"ratio {react['wall_s'] / mine['wall_s']:.1f}x; the same requests sent raw take {mine['raw_requests_s']*1e3:.2f} ms "
      f"({mine['raw_requests_s'] / react['wall_s']:.0%} of LangGraph's time, {mine['server_share']:.0%} of ours)")
s = ours.get("stream_100k_tokens")
if s:
    print(f"stream_100k_tokens: raw {s['raw_s']*1e3:.1f} ms, client {s['client_s']*1e3:.1f} ms ({s['client_over_raw']:.2f}x), "
          f"through a graph {s['graph_s']*1e3:.1f} ms ({s['graph_over_raw']:.2f}x)")
    lg = theirs.get("stream_100k_tokens")
    if lg:
        print(f"  LangGraph through a graph {lg['wall_s']*1e3:.1f} ms ({lg['wall_s'] / s['raw_s']:.1f}x the raw read; "
              f"ratio {lg['wall_s'] / s['graph_s']:.1f}x)")
PY
