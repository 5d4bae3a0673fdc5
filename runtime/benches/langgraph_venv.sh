#!/usr/bin/env bash
# Makes (or refreshes) the virtualenv the side-by-side benches run LangGraph in, with the
# versions pinned in models/requirements.lock.txt, and prints its path. Run from the repository
# root; the venv lives in the target directory's bench cache.
set -euo pipefail
lock=runtime/benches/models/requirements.lock.txt
venv=${CARGO_TARGET_DIR:-target}/bench-cache/lg-models
if [ ! -x "$venv/bin/python" ] || ! cmp -s "$lock" "$venv/requirements.lock.txt"; then
    python3 -m venv "$venv" >&2
    "$venv/bin/pip" install -q --no-deps -r "$lock" >&2
    cp "$lock" "$venv/requirements.lock.txt"
fi
echo "$venv"
