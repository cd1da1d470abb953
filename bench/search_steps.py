"""Where one search's time goes on a large index (issue 16 item 6; docs/BENCH.md, "Corrected: the
search memo flattered the bm25 rows").

    python bench/search_steps.py steps INDEX QUERIES.json [--lanes bm25]   # ms a search in each step
    python bench/search_steps.py depth INDEX QUERIES.json                  # tantivy's bm25 search by k
    python bench/search_steps.py pruning INDEX TERM [TERM ...]             # top 10 / 200 against counting
    python bench/search_steps.py switch INDEX QUERIES.json [--lanes ...]   # p50 by the GIL's switch interval
    python bench/search_steps.py fusion INDEX QUERIES.json [--inputs F]    # the fusion step alone, by call kind

``steps`` wraps the pipeline's steps with timers (tantivy's search with the fast-field reads, the
fusion, the hits with their rows and snippets, the terms found in the shown blocks; each lane's task
and, in a hybrid, the rows read while the vector lane runs) and prints, for each of two rounds over the
queries, the p50 of the whole search and the mean ms a search in each step. The search memo and the
query-vector cache are emptied before each search, so every search reads the postings and embeds its
text. ``depth`` times tantivy alone on the bm25 lane's query for 10 to 400 blocks. ``pruning`` times
one query of the given terms (the body field): top 10, top 200 and counting every match (what
block-max WAND saves). ``switch`` runs each query at the interpreter's thread switch intervals of 5
(Python's default), 0.5 and 0.2 ms in turn (the order reversed every other round, three rounds) and
prints the p50 and mean of each: whether the vector lane's thread waits for the GIL while the
search's thread runs Python. ``fusion`` records what the pipeline fuses for each query (the default
hybrid's and the bm25 lane's searches: ``fuse_question``, and the early fusion of the lexical lanes
while the vector lane runs), then times each recorded call again five times and prints the median
and mean ms by kind with a SHA-256 of every fused document (id, score, blocks, trace). With
``--inputs F`` the recorded calls are saved to F, or read from it when it exists: run it with
``PYTHONPATH=<other checkout>/src`` in turn with this code to compare two versions of the fusion on
the same inputs (the early calls depend on when the vector lane answers, so each recording differs). Each
prints JSON lines.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import sleuth.lanes.postings as postings_module
import sleuth.pipeline as pipeline_module
import sleuth.pipeline.results as results_module
import sleuth.pipeline.retrieve as retrieve_module
from sleuth.engine import Engine
from sleuth.text import parse_query
from sleuth.types import SearchRequest


def _ms(seconds: list[float]) -> float:
    return round(1000 * statistics.median(seconds), 3)


def _timed(owner: Any, name: str, key: str, spent: dict[str, float]) -> None:
    """Replace ``owner.name`` by a wrapper adding its wall time to ``spent[key]``."""
    real: Callable[..., Any] = getattr(owner, name)

    def wrapper(*args: Any, **kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return real(*args, **kwargs)
        finally:
            spent[key] = spent.get(key, 0.0) + time.perf_counter() - started

    setattr(owner, name, wrapper)


def steps(index: Path, queries: list[str], lanes: list[str] | None) -> None:
    spent: dict[str, float] = {}
    _timed(postings_module.Postings, "_search", "tantivy search + fast fields", spent)
    _timed(pipeline_module.Searcher, "_fuse", "fusion", spent)
    _timed(pipeline_module.Searcher, "_hits", "hits (rows, snippets)", spent)
    _timed(results_module, "find_terms", "terms in the shown blocks", spent)
    real_task = retrieve_module.Retriever._task

    def task(self: Any, name: str, plan: Any, state: Any) -> Any:
        started = time.perf_counter()
        try:
            return real_task(self, name, plan, state)
        finally:
            spent[f"lane {name}"] = spent.get(f"lane {name}", 0.0) + time.perf_counter() - started

    retrieve_module.Retriever._task = task  # type: ignore[method-assign]
    with Engine(index) as e:
        vector = e.lanes.get("vector")
        for q in queries[:20]:
            e.search(SearchRequest(query=q, limit=10, lanes=lanes))
        for r in range(2):
            spent.clear()
            took: list[float] = []
            for q in queries:
                if vector is not None:
                    vector.forget_query_vectors()
                e.postings.forget_searches()
                started = time.perf_counter()
                e.search(SearchRequest(query=q, limit=10, lanes=lanes))
                took.append(time.perf_counter() - started)
            print(json.dumps({"round": r, "lanes": lanes or "default", "search p50 ms": _ms(took),
                              "mean ms a search": {k: round(1000 * v / len(queries), 3) for k, v in spent.items()}}),
                  flush=True)


def depth(index: Path, queries: list[str]) -> None:
    with Engine(index) as e:
        p = e.postings
        searcher = p.searcher()
        built = []
        for q in queries:
            pairs = parse_query(q).weighted_terms()
            query = p.any_of("body", [t for t, _ in pairs], qtf=[n for _, n in pairs]) if pairs else None
            if query is not None:
                built.append(query)
        for r in range(2):
            row = {}
            for k in (10, 20, 50, 100, 200, 400):
                took = []
                for query in built:
                    started = time.perf_counter()
                    searcher.search(query, k, count=False)
                    took.append(time.perf_counter() - started)
                row[f"k={k}"] = _ms(took)
            print(json.dumps({"round": r, "tantivy p50 ms": row}), flush=True)


def pruning(index: Path, terms: list[str]) -> None:
    with Engine(index) as e:
        p = e.postings
        searcher = p.searcher()
        query = p.any_of("body", terms)
        if query is None:
            raise SystemExit("no terms given")
        row: dict[str, Any] = {"terms": terms, "blocks holding each": [searcher.doc_freq("body", t) for t in terms]}
        for label, k, count in (("top 10", 10, False), ("top 200", 200, False), ("count every match", 10, True)):
            took = []
            for _ in range(20):
                started = time.perf_counter()
                searcher.search(query, k, count=count)
                took.append(time.perf_counter() - started)
            row[label] = _ms(took)
        print(json.dumps(row), flush=True)


def switch(index: Path, queries: list[str], lanes: list[str] | None) -> None:
    intervals_s = (0.005, 0.0005, 0.0002)
    took: dict[float, list[float]] = {v: [] for v in intervals_s}
    default = sys.getswitchinterval()
    try:
        with Engine(index) as e:
            vector = e.lanes.get("vector")
            for q in queries[:20]:
                e.search(SearchRequest(query=q, limit=10, lanes=lanes))
            for r in range(3):
                for q in queries:
                    for v in intervals_s if r % 2 == 0 else intervals_s[::-1]:
                        sys.setswitchinterval(v)
                        if vector is not None:
                            vector.forget_query_vectors()
                        e.postings.forget_searches()
                        started = time.perf_counter()
                        e.search(SearchRequest(query=q, limit=10, lanes=lanes))
                        took[v].append(time.perf_counter() - started)
    finally:
        sys.setswitchinterval(default)
    for v, seconds in took.items():
        print(json.dumps({"switch interval ms": v * 1000, "p50 ms": _ms(seconds),
                          "mean ms": round(1000 * statistics.mean(seconds), 3)}), flush=True)


def fusion(index: Path, queries: list[str], inputs: Path | None) -> None:
    import hashlib
    import pickle

    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
    if inputs is not None and inputs.exists():
        with inputs.open("rb") as f:
            calls = pickle.load(f)  # a file this command wrote
    else:
        real_question, real_lists = pipeline_module.fuse_question, pipeline_module.fuse_lists

        def recorded(kind: str, real: Callable[..., Any]) -> Callable[..., Any]:
            def wrapper(*args: Any, **kwargs: Any) -> Any:
                calls.append((kind, args, kwargs))
                return real(*args, **kwargs)
            return wrapper

        pipeline_module.fuse_question = recorded("question", real_question)  # type: ignore[assignment]
        pipeline_module.fuse_lists = recorded("early", real_lists)  # type: ignore[assignment]
        try:
            with Engine(index) as e:
                for lanes in (None, ["bm25"]):
                    for q in queries:
                        e.postings.forget_searches()
                        e.search(SearchRequest(query=q, limit=10, lanes=lanes))
        finally:
            pipeline_module.fuse_question, pipeline_module.fuse_lists = real_question, real_lists
        # the expansion lanes' closures are not kept: the default lanes have none
        calls = [(kind, args[:5] + ({},) + args[6:] if kind == "question" else args, kwargs)
                 for kind, args, kwargs in calls]
        if inputs is not None:
            with inputs.open("wb") as f:
                pickle.dump(calls, f)

    def documents(call: tuple[str, tuple[Any, ...], dict[str, Any]]) -> list[Any]:
        kind, args, kwargs = call
        if kind == "question":
            return list(pipeline_module.fuse_question(*args, **kwargs)[0])
        return list(pipeline_module.fuse_lists(*args, **kwargs))

    digest = hashlib.sha256()
    for call in calls:
        for d in documents(call):
            digest.update(repr((d.doc_id, d.score, d.block_ids, d.best_block_id, d.trace, d.semantic_only)).encode())
    print(json.dumps({"fused documents sha256": digest.hexdigest(), "calls": len(calls)}), flush=True)
    kinds = {"hybrid (fuse_question, 4 lanes)": lambda c: c[0] == "question" and len(c[1][1]) > 1,
             "bm25 (fuse_question, 1 list)": lambda c: c[0] == "question" and len(c[1][1]) == 1,
             "early fusion of the lexical lanes": lambda c: c[0] == "early"}
    for label, chosen in kinds.items():
        picked = [c for c in calls if chosen(c)]
        took = []
        for _ in range(5):
            for call in picked:
                started = time.perf_counter()
                documents(call)
                took.append(time.perf_counter() - started)
        if took:
            print(json.dumps({"kind": label, "calls": len(picked), "median ms": _ms(took),
                              "mean ms": round(1000 * statistics.mean(took), 4)}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("what", choices=["steps", "depth", "pruning", "switch", "fusion"])
    ap.add_argument("index", type=Path)
    ap.add_argument("rest", nargs="+", help="QUERIES.json (steps, depth) or terms (pruning)")
    ap.add_argument("--inputs", type=Path, default=None,
                    help="fusion: the recorded calls (written, or read when present)")
    ap.add_argument("--lanes", default=None, help="comma-separated lanes (steps, switch; default: the default lanes)")
    args = ap.parse_args()
    if args.what == "pruning":
        pruning(args.index, args.rest)
        return
    queries: list[str] = json.loads(Path(args.rest[0]).read_text(encoding="utf-8"))
    lanes = args.lanes.split(",") if args.lanes else None
    if args.what == "steps":
        steps(args.index, queries, lanes)
    elif args.what == "switch":
        switch(args.index, queries, lanes)
    elif args.what == "fusion":
        fusion(args.index, queries, args.inputs)
    else:
        depth(args.index, queries)


if __name__ == "__main__":
    main()
