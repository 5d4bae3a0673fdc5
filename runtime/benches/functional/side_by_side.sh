#!/usr/bin/env bash
# The functional API benchmarks beside Python LangGraph's functional API, in one run on one
# machine: ours (benches/functional.rs), then LangGraph's (functional_langgraph.py; versions
# pinned in ../models/requirements.lock.txt, installed on first use into
# target/bench-cache/lg-models), then the ratios. Needs python3 with venv.
#   side_by_side.sh [ONLY]   ONLY: run the workloads whose names start with it
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=runtime/benches/functional
only=${1:-}

ours=$(cargo bench -q -p graphwright --bench functional -- ${only:+"$only"})
echo "$ours"

venv=$(runtime/benches/langgraph_venv.sh)
theirs=$("$venv/bin/python" "$here/functional_langgraph.py" ${only:+"$only"})
echo "$theirs"

python3 - "$ours" "$theirs" <<'PY'
import json, sys
ours = {l["name"]: l for l in map(json.loads, sys.argv[1].splitlines())}
theirs = {l["name"]: l for l in map(json.loads, sys.argv[2].splitlines())}
for name, o in ours.items():
    t = theirs.get(name)
    if t is None:
        continue
    flag = "" if o["ok"] and t["ok"] else "  (a wrong result: does not count)"
    print(f"{name}: LangGraph {t['per_unit_us']:.2f} us/unit, graphwright {o['per_unit_us']:.3f} us/unit, "
          f"ratio {t['per_unit_us'] / o['per_unit_us']:.0f}x{flag}")
PY
