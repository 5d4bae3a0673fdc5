#!/usr/bin/env bash
# Search by meaning over 100,000 items beside Python LangGraph's InMemoryStore, in one run on one
# machine: ours (benches/store_search.rs: in memory, SQLite, PostgreSQL), then LangGraph's
# (store_search_langgraph.py; versions pinned in ../models/requirements.lock.txt, installed on
# first use into target/bench-cache/lg-models), then each of ours against LangGraph's, and
# whether both found the same ten items for the first query. Needs python3 with venv.
set -euo pipefail
cd "$(dirname "$0")/../../.."
here=runtime/benches/store_search

ours=$(cargo bench -q -p graphwright --features postgres --bench store_search)
echo "$ours"

venv=$(runtime/benches/langgraph_venv.sh)
theirs=$("$venv/bin/python" "$here/store_search_langgraph.py")
echo "$theirs"

python3 - "$ours" "$theirs" <<'PY'
import json, sys
ours = [json.loads(l) for l in sys.argv[1].splitlines()]
theirs = json.loads(sys.argv[2].splitlines()[-1])
for o in ours:
    same = "same ten items" if o["top10"] == theirs["top10"] else "DIFFERENT items: a wrong result"
    print(f"{o['name']}: p50 {o['p50_ms']:.2f} ms, p99 {o['p99_ms']:.2f} ms; LangGraph InMemoryStore p50 "
          f"{theirs['p50_ms']:.1f} ms, p99 {theirs['p99_ms']:.1f} ms; p50 ratio {theirs['p50_ms'] / o['p50_ms']:.0f}x; {same}")
PY
