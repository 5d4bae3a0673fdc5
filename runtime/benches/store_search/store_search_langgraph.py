"""LangGraph's side of benches/store_search.rs: 100,000 items in LangGraph's InMemoryStore with an
index on their `text` field (384 numbers; numpy installed, which LangGraph's cosine similarity
uses when present), then searches for the 10 best matches of a query. The vectors are the Rust
bench's, number for number (xorshift64*, seeded by the item's number), so both print the same
keys for the first query. Prints one JSON object per line."""
import json
import statistics
import sys
import time

import numpy as np
from langgraph.store.base import PutOp
from langgraph.store.memory import InMemoryStore

ITEMS = 100_000
DIMS = 384
CHUNK = 5_000
SEARCHES = 20


def vectors(first: int, count: int) -> np.ndarray:
    """The DIMS numbers of vectors first..first+count, as benches/store_search.rs makes them."""
    with np.errstate(over="ignore"):
        state = (np.arange(first + 1, first + count + 1, dtype=np.uint64)) * np.uint64(0x9E3779B97F4A7C15)
        out = np.empty((count, DIMS), dtype=np.float64)
        for d in range(DIMS):
            state ^= state >> np.uint64(12)
            state ^= state << np.uint64(25)
            state ^= state >> np.uint64(27)
            bits = (state * np.uint64(0x2545F4914F6CDD1D)) >> np.uint64(40)
            out[:, d] = bits.astype(np.float64) / 16_777_216.0 * 2.0 - 1.0
    return out


DOCS = vectors(0, ITEMS)
QUERIES = vectors(ITEMS, SEARCHES + 1)


def embed(texts):
    out = []
    for text in texts:
        kind, n = text.split(" ")
        out.append((DOCS if kind == "doc" else QUERIES)[int(n)].tolist())
    return out


def main():
    store = InMemoryStore(index={"dims": DIMS, "embed": embed, "fields": ["text"]})
    start = time.perf_counter()
    for first in range(0, ITEMS, CHUNK):
        store.batch(
            [
                PutOp(("bench", "items"), f"item-{n:06d}", {"text": f"doc {n}", "n": n})
                for n in range(first, min(first + CHUNK, ITEMS))
            ]
        )
    load_s = time.perf_counter() - start
    top = store.search(("bench",), query="query 0", limit=10)
    samples = []
    for q in range(SEARCHES):
        start = time.perf_counter()
        found = store.search(("bench",), query=f"query {q}", limit=10)
        samples.append((time.perf_counter() - start) * 1e3)
        assert len(found) == 10
    samples.sort()
    print(
        json.dumps(
            {
                "name": "store_search_memory",
                "items": ITEMS,
                "dims": DIMS,
                "searches": SEARCHES,
                "load_s": load_s,
                "p50_ms": statistics.median(samples),
                "p99_ms": samples[round((len(samples) - 1) * 0.99)],
                "top10": [item.key for item in top],
            }
        )
    )


if __name__ == "__main__":
    main()
