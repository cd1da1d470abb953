"""Warm latency of the hybrid with and without the rm3 lane on one index, the lane sets interleaved
per query so that both see the same load (issue 14, fourth pass; docs/EVAL.md).

    python bench/rm3_latency.py INDEX QUERIES.json [--rounds 2] [--warmup 20]

INDEX: e.g. the 200k-block index ``bench/scale.py --sizes 200000 --queries 200 --keep --workdir DIR``
leaves in DIR (``DIR/idx-200000``, its queries: ``DIR/queries.json``). One engine; the vector lane's matrix loaded
first; ``--warmup`` queries per lane set; then, for every query and round, each lane set once (the
order reversed every other round; the query-vector cache emptied before each timed search, so a
hybrid search embeds its query). Prints one JSON line: p50 / p95 ms per lane set, the load average
before and after each round.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench

from sleuth.engine import Engine
from sleuth.types import SearchRequest

#: Lane sets timed, by name.
SETS: dict[str, list[str]] = {
    "bm25": ["bm25"], "rm3": ["rm3"], "bm25+index": ["bm25", "index"], "bm25+index+rm3": ["bm25", "index", "rm3"],
    "hybrid without rm3": ["bm25", "index", "vector"], "hybrid with rm3": ["bm25", "index", "rm3", "vector"],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("queries", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--warmup", type=int, default=20)
    args = ap.parse_args()
    queries: list[str] = json.loads(args.queries.read_text(encoding="utf-8"))
    times: dict[str, list[float]] = {name: [] for name in SETS}
    loads = [bench.loadavg()]
    with Engine(args.index) as e:
        e.lanes["vector"].matrix()
        for lanes in SETS.values():
            for q in queries[: args.warmup]:
                e.search(SearchRequest(query=q, limit=10, lanes=lanes, snippets=True))
        for r in range(args.rounds):
            order = list(SETS) if r % 2 == 0 else list(reversed(SETS))
            for q in queries:
                for name in order:
                    e.lanes["vector"].forget_query_vectors()
                    e.postings.forget_searches()  # no set reads another's bm25 answer
                    t = time.perf_counter()
                    e.search(SearchRequest(query=q, limit=10, lanes=SETS[name], snippets=True))
                    times[name].append((time.perf_counter() - t) * 1000)
            loads.append(bench.loadavg())
    rows = {name: {"n": len(v), "p50": bench.pct(v, 50), "p95": bench.pct(v, 95)} for name, v in times.items()}
    print(json.dumps({"rows": rows, "loads": loads}))


if __name__ == "__main__":
    main()
