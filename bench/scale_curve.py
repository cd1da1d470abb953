"""The scale curve of docs/SCALE.md: indexing rate and lexical query latency, local engine vs
PostgreSQL catalog + lanes in Milvus (``milvus-lite server`` over its gRPC port), at growing sizes;
and dense search on random unit vectors: local exact and HNSW vs Milvus FLAT and HNSW collections
(recall@10 against the exact answer, latency).

Blocks are SciFact abstracts, cycled with a per-copy marker so that every block is new text (about
one block per record); no embedding model (``model = none``: the lexical lanes only).

    .venv/bin/python bench/scale_curve.py --sizes 10000,100000 [--dense-sizes 10000,100000]
        [--dense-indexes FLAT,HNSW] [--out result.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.scale.servers import MilvusLiteServer, PgServer

QUERIES = 100
DIM = 384


def records(corpus, n):  # type: ignore[no-untyped-def]
    from sleuth.engine import Record

    for i in range(n):
        d = corpus[i % len(corpus)]
        yield Record(rel_path=f"r{i}", title=d.title, text=f"{d.title}\n\n{d.text[:1200]} copy{i // len(corpus)}")


def pct(values: list[float], q: int) -> float:
    return round(statistics.quantiles(values, n=100)[q - 1], 2)


def lexical(engine, queries, lanes):  # type: ignore[no-untyped-def]
    from sleuth.types import SearchRequest

    took = []
    for text in queries:
        started = time.perf_counter()
        engine.search(SearchRequest(query=text, limit=10, lanes=lanes, snippets=False))
        took.append((time.perf_counter() - started) * 1000)
    return {"p50_ms": pct(took, 50), "p95_ms": pct(took, 95)}


def measure(kind: str, index_dir: Path, config, corpus, queries, n: int) -> dict[str, object]:  # type: ignore[no-untyped-def]
    from sleuth.engine import Engine

    engine = Engine(index_dir, config)
    started = time.perf_counter()
    engine.index_records("bench", records(corpus, n))
    index_s = time.perf_counter() - started
    blocks = engine.catalog.counts()["blocks"]
    out = {"kind": kind, "records": n, "blocks": blocks, "index_s": round(index_s, 1),
           "blocks_per_s": round(blocks / index_s, 1)}
    for lanes in (["bm25"], ["index"], ["bm25", "index"]):
        out[",".join(lanes)] = lexical(engine, queries, lanes)
    engine.close()
    print(json.dumps(out), flush=True)
    return out


def dense(milvus_uri: str, n: int, index_types: Sequence[str], queries: int = QUERIES) -> list[dict[str, object]]:
    """Dense search on ``n`` seeded random unit vectors (3 projects, filter to one): local exact
    (numpy), local HNSW (the vector lane's VectorMatrix) and Milvus with each of ``index_types``;
    recall@10 against the exact answer and p50/p95 per search."""
    from pymilvus import DataType, MilvusClient

    from sleuth.lanes.vector import VectorMatrix

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    qs = rng.standard_normal((queries, DIM), dtype=np.float32)
    qs /= np.linalg.norm(qs, axis=1, keepdims=True)
    projects = np.asarray([f"p{j % 3}" for j in range(n)])
    allowed = projects == "p1"
    truth, local = [], []
    for q in qs:
        started = time.perf_counter()
        scores = np.where(allowed, vectors @ q, -2.0)
        top = np.argpartition(-scores, 10)[:10]
        local.append((time.perf_counter() - started) * 1000)
        truth.append(set(top.tolist()))
    rows: list[dict[str, object]] = [{"kind": "dense", "engine": "local exact (numpy)", "vectors": n, "recall@10": 1.0,
                                      "p50_ms": pct(local, 50), "p95_ms": pct(local, 95)}]
    started = time.perf_counter()
    matrix = VectorMatrix([f"b{j}" for j in range(n)], projects.tolist(), vectors, exact_max_blocks=0)
    build_s = time.perf_counter() - started
    took, hits = [], 0
    for q, t in zip(qs, truth, strict=True):
        started = time.perf_counter()
        found, _ = matrix.search(q, 10, allowed)
        took.append((time.perf_counter() - started) * 1000)
        hits += len(t & set(found.tolist()))
    rows.append({"kind": "dense", "engine": "local HNSW (usearch i8, exact rescoring)", "vectors": n,
                 "build_s": round(build_s, 1), "recall@10": hits / (10 * queries), "p50_ms": pct(took, 50),
                 "p95_ms": pct(took, 95)})
    print(json.dumps(rows[-1]), flush=True)
    client = MilvusClient(milvus_uri, dedicated=True)
    for index_type in index_types:
        name = f"dense{n}_{index_type.lower()}"
        if client.has_collection(name):
            client.drop_collection(name)
        schema = client.create_schema(auto_id=False)
        schema.add_field("id", DataType.INT64, is_primary=True)
        schema.add_field("project_id", DataType.VARCHAR, max_length=64, is_partition_key=True)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=DIM)
        index = client.prepare_index_params()
        params = {"M": 16, "efConstruction": 128} if index_type == "HNSW" else {}
        index.add_index("dense", index_type=index_type, metric_type="IP", params=params)
        client.create_collection(name, schema=schema, index_params=index)
        started = time.perf_counter()
        for i in range(0, n, 2000):
            client.insert(name, [{"id": j, "project_id": str(projects[j]), "dense": vectors[j].tolist()}
                                 for j in range(i, min(n, i + 2000))])
        client.flush(name)
        insert_s = time.perf_counter() - started
        took, hits = [], 0
        search_params = {"metric_type": "IP", "params": {"ef": 128} if index_type == "HNSW" else {}}
        for q, t in zip(qs, truth, strict=True):
            started = time.perf_counter()
            found = client.search(name, data=[q.tolist()], anns_field="dense", limit=10,
                                  filter='project_id in ["p1"]', search_params=search_params)[0]
            took.append((time.perf_counter() - started) * 1000)
            hits += len(t & {int(h["id"]) for h in found})
        client.drop_collection(name)
        rows.append({"kind": "dense", "engine": f"milvus-lite server {index_type}", "vectors": n,
                     "insert_and_index_s": round(insert_s, 1), "recall@10": hits / (10 * queries),
                     "p50_ms": pct(took, 50), "p95_ms": pct(took, 95)})
        print(json.dumps(rows[-1]), flush=True)
    client.close()
    return rows


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/scifact"))
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--dense-sizes", default="10000,100000")
    ap.add_argument("--dense-indexes", default="FLAT,HNSW")
    ap.add_argument("--out", default="")
    args = ap.parse_args()

    from sleuth.config import Config
    from sleuth.eval import load_beir

    dataset = load_beir(Path(args.data))
    corpus = list(dataset.corpus)
    queries = list(dataset.queries.values())[:QUERIES]
    work = Path(tempfile.mkdtemp(prefix="sleuth-curve-"))
    pg, milvus = PgServer().start(), MilvusLiteServer().start()
    results: list[dict[str, object]] = []
    try:
        for n in (int(s) for s in args.sizes.split(",") if s):
            os.environ.pop("SLEUTH_CATALOG_URL", None)
            results.append(measure("local", work / f"local{n}", Config(model="none"), corpus, queries, n))
            os.environ["SLEUTH_CATALOG_URL"] = pg.new_database(f"curve{n}")
            results.append(measure("postgresql+milvus", work / f"scale{n}",
                                   Config(model="none", milvus_uri=milvus.uri, milvus_collection=f"curve{n}"),
                                   corpus, queries, n))
            os.environ.pop("SLEUTH_CATALOG_URL", None)
        for n in (int(s) for s in args.dense_sizes.split(",") if s):
            results.extend(dense(milvus.uri, n, args.dense_indexes.split(",")))
    finally:
        milvus.stop()
        pg.stop()
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
