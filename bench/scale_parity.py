"""Parity of the scale-out engine with the local one on SciFact (docs/SCALE.md).

Indexes SciFact twice: locally (SQLite catalog, tantivy, local vector lane) and through a
PostgreSQL catalog with the lanes in Milvus (a ``milvus-lite server`` process reached over its
gRPC port, a PostgreSQL server started here), then runs every query through both and reports
nDCG@10 of each, how many queries have the same top-10 documents (in order, and as a set), and the
same per lane. Vectors are embedded once, by the local run, and copied into the PostgreSQL catalog.

    .venv/bin/python bench/scale_parity.py [--data ../shared/data/scifact] [--out result.json]
        [--lane-sets default,bm25,index,tfidf,vector]

``--lane-sets``: the lane sets compared (``default``: the default lanes; a set of several lanes is
written with ``+``, e.g. ``bm25+index``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.scale.servers import MilvusLiteServer, PgServer

LANE_SETS = (None, ("bm25",), ("index",), ("tfidf",), ("vector",))


def run_queries(engine, dataset, lanes):  # type: ignore[no-untyped-def]
    from sleuth.types import SearchRequest

    run, took = {}, []
    for qid, text in dataset.queries.items():
        started = time.perf_counter()
        resp = engine.search(SearchRequest(query=text, limit=100, lanes=list(lanes) if lanes else None,
                                           snippets=False))
        took.append((time.perf_counter() - started) * 1000)
        run[qid] = [h.path for h in resp.hits]
    return run, took


def index(engine, dataset):  # type: ignore[no-untyped-def]
    from sleuth.engine import Record

    started = time.perf_counter()
    engine.index_records(dataset.name, (Record(rel_path=d.doc_id, title=d.title,
                                               text=f"{d.title}\n\n{d.text}" if d.title else d.text)
                                        for d in dataset.corpus))
    return time.perf_counter() - started


def pct(values: list[float], q: float) -> float:
    return round(statistics.quantiles(values, n=100)[int(q) - 1], 2)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/scifact"))
    ap.add_argument("--out", default="")
    ap.add_argument("--lane-sets", default=",".join("+".join(lanes) if lanes else "default" for lanes in LANE_SETS))
    args = ap.parse_args()
    lane_sets = [None if name == "default" else tuple(name.split("+")) for name in args.lane_sets.split(",")]

    from sleuth.config import Config
    from sleuth.engine import Engine
    from sleuth.eval import evaluate, load_beir

    dataset = load_beir(Path(args.data))
    work = Path(tempfile.mkdtemp(prefix="sleuth-parity-"))
    pg, milvus = PgServer().start(), MilvusLiteServer().start()
    out: dict[str, object] = {"dataset": dataset.name, "documents": len(dataset.corpus),
                              "queries": len(dataset.queries), "default_lanes": list(Config().lanes)}
    try:
        local = Engine(work / "local", Config())
        out["local_index_s"] = round(index(local, dataset), 2)
        os.environ["SLEUTH_CATALOG_URL"] = pg.new_database("parity")
        scale = Engine(work / "scale", Config(milvus_uri=milvus.uri, milvus_collection="parity"))
        scale.catalog.import_vectors(work / "local" / "catalog.sqlite3")
        started = time.perf_counter()
        index(scale, dataset)
        out["scale_index_s"] = round(time.perf_counter() - started, 2)
        out["blocks"] = local.catalog.counts()["blocks"]
        results = {}
        for lanes in lane_sets:
            name = ",".join(lanes) if lanes else "default"
            a, ta = run_queries(local, dataset, lanes)
            b, tb = run_queries(scale, dataset, lanes)
            same = sum(a[q][:10] == b[q][:10] for q in a)
            same_set = sum(set(a[q][:10]) == set(b[q][:10]) for q in a)
            na, nb = evaluate(a, dataset.qrels)["ndcg@10"], evaluate(b, dataset.qrels)["ndcg@10"]
            results[name] = {
                "ndcg@10_local": round(na, 4), "ndcg@10_scale": round(nb, 4), "ndcg@10_diff": round(nb - na, 4),
                "same_top10_ordered": round(same / len(a), 4), "same_top10_set": round(same_set / len(a), 4),
                "local_ms_p50": pct(ta, 50), "local_ms_p95": pct(ta, 95),
                "scale_ms_p50": pct(tb, 50), "scale_ms_p95": pct(tb, 95),
            }
            print(name, json.dumps(results[name]), flush=True)
        out["lanes"] = results
        local.close()
        scale.close()
    finally:
        milvus.stop()
        pg.stop()
    print(json.dumps(out, indent=1))
    if args.out:
        Path(args.out).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
