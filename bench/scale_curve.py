"""The scale curve of docs/SCALE.md: indexing rate and lexical query latency, local engine vs
PostgreSQL catalog + lanes in Milvus (``milvus-lite server`` over its gRPC port), at growing sizes;
and dense search latency, local matrix vs a Milvus FLAT collection, on random unit vectors.

Blocks are SciFact abstracts, cycled with a per-copy marker so that every block is new text (about
one block per record); no embedding model (``model = none``: the lexical lanes only).

    .venv/bin/python bench/scale_curve.py --sizes 10000,100000 [--out result.json]
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


def dense(milvus_uri: str, n: int, queries: int = QUERIES) -> dict[str, object]:
    from pymilvus import DataType, MilvusClient

    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    qs = vectors[rng.integers(0, n, queries)]
    local = []
    for q in qs:
        started = time.perf_counter()
        scores = vectors @ q
        np.argpartition(-scores, 100)[:100]
        local.append((time.perf_counter() - started) * 1000)
    client = MilvusClient(milvus_uri)
    name = f"dense{n}"
    schema = client.create_schema(auto_id=False)
    schema.add_field("id", DataType.INT64, is_primary=True)
    schema.add_field("project_id", DataType.VARCHAR, max_length=64, is_partition_key=True)
    schema.add_field("dense", DataType.FLOAT_VECTOR, dim=DIM)
    index = client.prepare_index_params()
    index.add_index("dense", index_type="FLAT", metric_type="IP")
    client.create_collection(name, schema=schema, index_params=index)
    started = time.perf_counter()
    for i in range(0, n, 2000):
        client.insert(name, [{"id": j, "project_id": f"p{j % 3}", "dense": vectors[j].tolist()}
                             for j in range(i, min(n, i + 2000))])
    client.flush(name)
    insert_s = time.perf_counter() - started
    remote = []
    for q in qs:
        started = time.perf_counter()
        client.search(name, data=[q.tolist()], anns_field="dense", limit=100, filter='project_id in ["p1"]')
        remote.append((time.perf_counter() - started) * 1000)
    client.drop_collection(name)
    client.close()
    out = {"kind": "dense", "vectors": n, "local_p50_ms": pct(local, 50), "local_p95_ms": pct(local, 95),
           "milvus_insert_per_s": round(n / insert_s, 1), "milvus_p50_ms": pct(remote, 50),
           "milvus_p95_ms": pct(remote, 95)}
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/scifact"))
    ap.add_argument("--sizes", default="10000,100000")
    ap.add_argument("--dense-sizes", default="10000,100000")
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
            results.append(dense(milvus.uri, n))
    finally:
        milvus.stop()
        pg.stop()
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
