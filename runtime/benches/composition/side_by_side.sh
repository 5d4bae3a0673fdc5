#!/usr/bin/env bash
# The composition benchmarks beside Python LangGraph, in one run on one machine: ours
# (benches/composition.rs), then LangGraph's nested subgraphs and create_react_agent
# (subgraphs_langgraph.py, react_agent_langgraph.py; versions
# pinned in ../models/requirements.lock.txt, installed on first use into
# target/bench-cache/lg-models), then the ratios. Needs python3 with venv.
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=runtime/benches/composition

ours=$(cargo bench -q -p graphwright --bench composition)
echo "$ours"

venv=$(runtime/benches/langgraph_venv.sh)
theirs=$("$venv/bin/python" "$here/subgraphs_langgraph.py"; "$venv/bin/python" "$here/react_agent_langgraph.py")
echo "$theirs"

python3 - "$ours" "$theirs" <<'PY'
import json, sys
ours = {l["name"]: l for l in map(json.loads, sys.argv[1].splitlines())}
theirs = {l["name"]: l for l in map(json.loads, sys.argv[2].splitlines())}
for name in ("nested_subgraphs_3_levels", "flat_7_nodes", "react_agent_scripted"):
    o, t = ours[name], theirs[name]
    print(f"{name}: LangGraph {t['per_unit_us']:.1f} us/invoke, graphwright {o['per_unit_us']:.2f} us/invoke, "
          f"ratio {t['per_unit_us'] / o['per_unit_us']:.0f}x")
print(f"nested over flat: graphwright {ours['nested_over_flat']['ratio']:.2f}x, "
      f"LangGraph {theirs['nested_subgraphs_3_levels']['per_unit_us'] / theirs['flat_7_nodes']['per_unit_us']:.2f}x")
PY
