"""Where a hybrid search's time goes on a large index, and two cuts tried against it (issue 16 item
6; docs/BENCH.md, "Where the 1M hybrid's time goes").

    python bench/hybrid_parts.py parts INDEX QUERIES.json       # embedding, HNSW, rescoring p50 ms
    python bench/hybrid_parts.py rm3-terms INDEX QUERIES.json   # bm25 + rm3 p50 ms per RM3 term count
    python bench/hybrid_parts.py factor INDEX QUERIES.json      # default hybrid p50 ms, HNSW x2 / x1
    python bench/hybrid_parts.py rerank INDEX QUERIES.json      # p50 ms, rm3 reranking / every block
    python bench/hybrid_parts.py recall                         # HNSW recall on the eval caches' real vectors
    python bench/hybrid_parts.py forced [--sets scifact ...]    # nDCG@10 with the HNSW path forced

INDEX / QUERIES.json: e.g. ``bench/scale.py --sizes 1000000 --keep --workdir DIR`` leaves
``DIR/idx-1000000`` and ``DIR/queries.json``. ``rm3-terms`` and ``factor`` run the variants of each
query one after the other in one process (the order reversed every other round), so they see the
same load; ``factor`` empties the query-vector cache before each search. ``recall`` and ``forced``
read the evaluation indexes in sleuth's cache (``sleuth eval`` / ``make eval`` make them):
``recall`` builds one HNSW index (the engine's settings) over the vectors of SciFact, NPL, CISI and
Cranfield and compares 400, 220 and 200 candidates with an exact search for each set's first 100
queries; ``forced`` evaluates copies of those indexes with the vector lane's HNSW path forced
(``VECTOR_EXACT_MAX_BLOCKS`` 0) at ``HNSW_RESCORE_FACTOR`` 2 and 1, and exactly. Each prints JSON lines.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

import sleuth.lanes.vector as vector_module
from sleuth.engine import Engine
from sleuth.eval import load_beir
from sleuth.eval.run import EvalRun, eval_cache_dir
from sleuth.types import SearchRequest

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
JUDGED_SETS = ("scifact", "npl", "cisi", "cranfield")


def _ms(values: list[float]) -> float:
    return round(1000 * statistics.median(values), 2)


def parts(index: Path, queries: list[str]) -> None:
    """p50 of the query's embedding, the HNSW search for the lane's candidates, their rescoring;
    and the lane's recall@10 against an exact search over the stored vectors (HNSW path only)."""
    from sleuth.store.vector_codes import decode

    with Engine(index) as e:
        lane = e.lanes["vector"]
        m = lane.matrix()  # type: ignore[attr-defined]
        embed, ann, rescore, hits = [], [], [], []
        for q in queries:
            lane.forget_query_vectors()  # type: ignore[attr-defined]
            t = time.perf_counter()
            v = lane.query_vector(q)  # type: ignore[attr-defined]
            embed.append(time.perf_counter() - t)
            if m.ann is None:
                continue
            t = time.perf_counter()
            found = m.ann.search(v, 400, threads=1)
            ann.append(time.perf_counter() - t)
            rows = np.sort(np.asarray(found.keys, dtype=np.int64))
            t = time.perf_counter()
            _ = m.rows(rows) @ v
            rescore.append(time.perf_counter() - t)
            exact = np.concatenate([decode(m.stored[i : i + 100_000]) @ v for i in range(0, len(m.block_ids), 100_000)])
            found, _ = m.search(v, 200, None)
            hits.append(len(set(found[:10].tolist()) & set(np.argsort(-exact)[:10].tolist())) / 10)
        print(json.dumps({"embed_ms": _ms(embed), "hnsw_400_ms": _ms(ann) if ann else None,
                          "rescore_400_ms": _ms(rescore) if rescore else None,
                          "recall@10": round(float(np.mean(hits)), 4) if hits else None}))


def _interleaved(e: Engine, queries: list[str], variants: list[object], apply, lanes: list[str] | None,
                 forget: bool) -> dict[str, float]:
    """p50 ms of each variant, every query searched with each in turn (order reversed every other round)."""
    for q in queries[:20]:
        e.search(SearchRequest(query=q, limit=10, lanes=lanes, snippets=True))
    times: dict[str, list[float]] = {str(v): [] for v in variants}
    for r in range(2):
        for q in queries:
            for v in variants if r % 2 == 0 else variants[::-1]:
                apply(v)
                if forget:
                    e.lanes["vector"].forget_query_vectors()  # type: ignore[attr-defined]
                e.postings.forget_searches()  # no variant reads another's bm25 answer
                t = time.perf_counter()
                e.search(SearchRequest(query=q, limit=10, lanes=lanes, snippets=True))
                times[str(v)].append(time.perf_counter() - t)
    return {k: _ms(v) for k, v in times.items()}


def rm3_terms(index: Path, queries: list[str]) -> None:
    with Engine(index) as e:
        lane = e.lanes["rm3"]

        def apply(terms: object) -> None:
            lane.fb_terms = terms  # type: ignore[attr-defined]

        print(json.dumps({"bm25+rm3 p50 ms by expansion terms":
                          _interleaved(e, queries, [20, 15, 10, 5], apply, ["bm25", "rm3"], False)}))


def factor(index: Path, queries: list[str]) -> None:
    with Engine(index) as e:
        e.lanes["vector"].matrix()  # type: ignore[attr-defined]

        def apply(f: object) -> None:
            vector_module.HNSW_RESCORE_FACTOR = f  # type: ignore[assignment]

        print(json.dumps({"default hybrid p50 ms by HNSW_RESCORE_FACTOR":
                          _interleaved(e, queries, [2, 1], apply, None, True)}))


def rerank(index: Path, queries: list[str]) -> None:
    """p50 ms of three lane sets with the rm3 lane reranking the first round (the default since
    docs/BENCH.md, "rm3 reranks the first round") and searching every block holding a word of the
    query (before), interleaved; and how many top-10 document lists are the same."""
    with Engine(index) as e:
        lane = e.lanes["rm3"]
        if "vector" in e.lanes:
            e.lanes["vector"].matrix()  # type: ignore[attr-defined]
        for lanes in (["bm25", "rm3"], ["bm25", "index", "rm3"], None):

            def apply(mode: object) -> None:
                lane.rerank_first_round = mode == "rerank"  # type: ignore[attr-defined]

            same = 0
            for q in queries:
                tops = []
                for mode in ("rerank", "every block"):
                    apply(mode)
                    e.postings.forget_searches()
                    tops.append([h.doc_id for h in e.search(SearchRequest(query=q, limit=10, lanes=lanes)).hits])
                same += tops[0] == tops[1]
            row = _interleaved(e, queries, ["rerank", "every block"], apply, lanes, lanes is None)
            print(json.dumps({"lanes": lanes or "default", "p50 ms": row,
                              "ratio": round(row["every block"] / row["rerank"], 3),
                              "same top 10": f"{same} of {len(queries)}", "load": os.getloadavg()[0]}), flush=True)
        lane.rerank_first_round = True  # type: ignore[attr-defined]


def recall() -> None:
    vectors, texts, embedder = [], [], None
    vector_module.VECTOR_EXACT_MAX_BLOCKS = 10**9  # the matrix only: no HNSW index built here
    for name in JUDGED_SETS:
        with Engine(eval_cache_dir(name)) as e:
            vectors.append(np.asarray(e.lanes["vector"].matrix().vectors, dtype=np.float32))  # type: ignore[attr-defined]
            texts += list(load_beir(DATA / name).queries.values())[:100]
            embedder = e.embedder()
    assert embedder is not None
    x = np.concatenate(vectors)
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    q = np.asarray(embedder.embed(texts), dtype=np.float32)
    index = vector_module.new_hnsw(x.shape[1])
    index.add(np.arange(len(x)), x, threads=2)
    exact = np.argsort(-(q @ x.T), axis=1)[:, :200]
    for wanted in (400, 220, 200):
        found: dict[int, list[float]] = {10: [], 100: [], 200: []}
        took = []
        for v, best in zip(q, exact, strict=True):
            t = time.perf_counter()
            rows = np.asarray(index.search(v, wanted, threads=1).keys, dtype=np.int64)
            took.append(time.perf_counter() - t)
            top = rows[np.argsort(-(x[rows] @ v))][:200]
            for k, out in found.items():
                out.append(len(set(top[:k]) & set(best[:k])) / k)
        print(json.dumps({"vectors": len(x), "queries": len(q), "candidates": wanted, "hnsw_ms": _ms(took),
                          **{f"recall@{k}": round(float(np.mean(v)), 4) for k, v in found.items()}}))


def forced(sets: list[str]) -> None:
    vector_module.VECTOR_EXACT_MAX_BLOCKS = 0
    with tempfile.TemporaryDirectory() as scratch:
        for name in sets:
            copy = Path(scratch) / name  # the HNSW index is saved beside a copy, not in the cache
            shutil.copytree(eval_cache_dir(name), copy)
            run = EvalRun(DATA / name, index_dir=copy)
            row: dict[str, object] = {"set": name}
            for f in (2, 1):
                vector_module.HNSW_RESCORE_FACTOR = f
                row[f"hnsw x{f} hybrid"] = run.evaluate(None).ndcg_10
            run.engine.lanes["vector"].matrix().ann = None  # type: ignore[attr-defined]
            row["exact hybrid"] = run.evaluate(None).ndcg_10
            print(json.dumps(row), flush=True)
            run.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("what", choices=["parts", "rm3-terms", "factor", "rerank", "recall", "forced"])
    ap.add_argument("index", type=Path, nargs="?")
    ap.add_argument("queries", type=Path, nargs="?")
    ap.add_argument("--sets", nargs="+", default=list(JUDGED_SETS))
    args = ap.parse_args()
    if args.what == "recall":
        recall()
    elif args.what == "forced":
        forced(args.sets)
    else:
        if args.index is None or args.queries is None:
            ap.error(f"{args.what} needs INDEX and QUERIES.json")
        queries: list[str] = json.loads(args.queries.read_text(encoding="utf-8"))
        {"parts": parts, "rm3-terms": rm3_terms, "factor": factor, "rerank": rerank}[args.what](args.index, queries)


if __name__ == "__main__":
    main()
