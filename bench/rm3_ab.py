"""In-process A/B of the rm3 lane's two speed changes on one index (issue 16 item 6; docs/BENCH.md,
"The rm3 lane's cost at 1M"): *before* = the first round searched again and the whole expanded union
intersected with the query's terms, *after* = this code (the first round from the postings' memo,
the query's terms a required scoring clause). Every query runs in both modes in turn, the order
swapped every other round, the memo and the query-vector cache emptied before each timed search.

    python bench/rm3_ab.py INDEX QUERIES.json [--rounds 2] [--queries 100] [--model-name NAME]

``--model-name``: the name the index's vectors are stored under, when it is not the default model's
(the indexes kept by bench/scale.py before 2026-12-02 hold ``all-MiniLM-L6-v2@int8-token-outliers2``,
the same int8 arithmetic). Prints one JSON line: p50 ms before / after, their ratio and how many
top-10 lists were the same, per lane set, with the load average before and after each round.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import tantivy

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench

import sleuth.embed as embed
from sleuth.lanes import lexical

SETS: dict[str, list[str]] = {"rm3": ["rm3"], "bm25+index+rm3": ["bm25", "index", "rm3"],
                              "hybrid (default)": ["bm25", "index", "rm3", "vector"]}
_MEMO_KEY, _SCORING = lexical.BM25Lane.memo_key, lexical.FeedbackLane._scoring


def _scoring_before(self: lexical.FeedbackLane, expanded: list[tuple[str, float]],
                    own: set[str]) -> tantivy.Query | None:
    """The second round before: the whole union, restricted to blocks holding a query term."""
    union = self.postings.any_of("body", [t for t, _ in expanded], qtf=[w for _, w in expanded])
    if union is None or not self.query_word_required:
        return union
    first = self.postings.any_of("body", [t for t, _ in expanded if t in own])
    assert first is not None
    return tantivy.Query.boolean_query([(tantivy.Occur.Must, union),
                                        (tantivy.Occur.Must, tantivy.Query.const_score_query(first, 0.0))])


def set_mode(mode: str) -> None:
    after = mode == "after"
    lexical.BM25Lane.memo_key = _MEMO_KEY if after else (lambda self, parsed: None)  # type: ignore[method-assign]
    lexical.FeedbackLane._scoring = _SCORING if after else _scoring_before  # type: ignore[method-assign]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("queries", type=Path)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--queries", dest="n_queries", type=int, default=100)
    ap.add_argument("--model-name", default=None)
    args = ap.parse_args()
    if args.model_name:
        _, _, suffix = args.model_name.partition("@")
        embed.INT8_OUTLIERS_SUFFIX = f"@{suffix}"
    from sleuth.engine import Engine
    from sleuth.types import SearchRequest

    queries: list[str] = json.loads(args.queries.read_text(encoding="utf-8"))[: args.n_queries]
    modes = ("before", "after")
    times: dict[tuple[str, str], list[float]] = {(k, m): [] for k in SETS for m in modes}
    same = dict.fromkeys(SETS, 0)
    loads = [bench.loadavg()]
    with Engine(args.index) as e:
        e.lanes["vector"].matrix()
        for mode in modes:
            set_mode(mode)
            for lanes in SETS.values():
                for q in queries[:10]:
                    e.search(SearchRequest(query=q, limit=10, lanes=lanes, snippets=True))
        for r in range(args.rounds):
            for q in queries:
                for name, lanes in SETS.items():
                    got: dict[str, list[str]] = {}
                    for mode in (modes if r % 2 == 0 else modes[::-1]):
                        set_mode(mode)
                        e.postings.forget_searches()
                        e.lanes["vector"].forget_query_vectors()
                        t = time.perf_counter()
                        res = e.search(SearchRequest(query=q, limit=10, lanes=lanes, snippets=True))
                        times[(name, mode)].append((time.perf_counter() - t) * 1000)
                        got[mode] = [h.doc_id for h in res.hits]
                    same[name] += got["before"] == got["after"]
            loads.append(bench.loadavg())
    rows = {}
    for name in SETS:
        before, after = bench.pct(times[(name, "before")], 50), bench.pct(times[(name, "after")], 50)
        rows[name] = {"before": round(before, 2), "after": round(after, 2), "ratio": round(before / after, 3),
                      "same top-10": f"{same[name]}/{args.rounds * len(queries)}"}
    print(json.dumps({"index": str(args.index), "rows": rows, "loads": loads}))


if __name__ == "__main__":
    main()
