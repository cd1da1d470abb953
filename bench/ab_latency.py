"""Warm search latency of one index, per lane set, for A/B comparisons of two checkouts.

Run it with each checkout's Python, interleaved, on the same index and queries (e.g. the
200k-block index and queries that ``bench/run.py --sizes scale --keep --workdir DIR`` leaves in
DIR), and compare the p50s printed::

    python bench/ab_latency.py DIR/scale-idx DIR/scale.queries.json --sets bm25 lexical hybrid

It opens one engine, loads its lane caches, runs each lane set once (lazy loads), then per lane set
``--warmup`` queries and every query once, timed (the query-vector cache is emptied before each
timed query, so hybrid searches embed their query), in the same order as ``bench/run.py``'s warm
rows. Prints one line: ``name p50-ms; ...``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path

from sleuth.engine import Engine
from sleuth.types import SearchRequest

#: Lane sets by name, in bench/run.py's order (None: the default lanes).
LANE_SETS: dict[str, list[str] | None] = {
    "bm25": ["bm25"], "tfidf": ["tfidf"], "index": ["index"], "vector": ["vector"],
    "lexical": ["bm25", "tfidf", "index"], "hybrid": None,
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("index", type=Path, help="index folder")
    ap.add_argument("queries", type=Path, help="JSON list of query strings")
    ap.add_argument("--sets", nargs="+", choices=list(LANE_SETS), default=list(LANE_SETS))
    ap.add_argument("--warmup", type=int, default=30, help="untimed queries per lane set")
    args = ap.parse_args()
    queries = json.loads(args.queries.read_text(encoding="utf-8"))
    engine = Engine(args.index)
    engine.warm_lanes()
    for name in args.sets:
        engine.search(SearchRequest(query=queries[-1], limit=10, lanes=LANE_SETS[name]))
    out = []
    for name in args.sets:
        lanes = LANE_SETS[name]
        for q in queries[: args.warmup]:
            engine.search(SearchRequest(query=q, limit=10, lanes=lanes))
        times = []
        for q in queries:
            engine.lanes["vector"].forget_query_vectors()  # every timed query embeds its text
            memo = getattr(engine.postings, "_memo", None)  # the warm-up's bm25 answers (older code: none)
            if memo is not None:
                memo.clear()
            started = time.perf_counter()
            engine.search(SearchRequest(query=q, limit=10, lanes=lanes))
            times.append((time.perf_counter() - started) * 1000)
        out.append(f"{name} {statistics.median(times):.3f}")
    print("; ".join(out))


if __name__ == "__main__":
    main()
