"""The scale curve of docs/SCALE.md: indexing rate and lexical query latency, local engine vs
PostgreSQL catalog + lanes in Milvus (``milvus-lite server`` over its gRPC port), at growing sizes;
and dense search on random unit vectors: local exact and HNSW vs Milvus FLAT and HNSW collections
(recall@10 against the exact answer, latency).

Blocks are SciFact abstracts, cycled with a per-copy marker so that every block is new text (about
one block per record); no embedding model (``model = none``: the lexical lanes only).

    .venv/bin/python bench/scale_curve.py --sizes 10000,100000 [--dense-sizes 10000,100000]
        [--dense-indexes FLAT,HNSW] [--kinds local,postgresql+milvus] [--queries 100] [--sample-s 60]
        [--out result.json]

``--kinds`` runs one of the two engines only; ``--queries`` takes the first so many SciFact queries
(milvus-lite's sparse search scans its rows: at 1M blocks a query takes seconds); ``--sample-s``
prints to stderr, every so many seconds, the blocks in the catalog, the rows in Milvus, the sync's
parts read so far, the RSS of sleuth's process and of each server and the load average, so that a
run stopped before its end still says what it reached. Each scaled-out row also gives the sync's
wall time (``sync_s``, its statistics and rows passes) and the peak RSS of the three processes.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import sys
import tempfile
import threading
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
    load = [os.getloadavg()[0]]
    for text in queries:
        started = time.perf_counter()
        engine.search(SearchRequest(query=text, limit=10, lanes=lanes, snippets=False))
        took.append((time.perf_counter() - started) * 1000)
    load.append(os.getloadavg()[0])
    out = {"queries": len(took), "p50_ms": pct(took, 50), "p95_ms": pct(took, 95),
           "load": [round(x, 1) for x in load], "ms": [round(t, 1) for t in took]}
    print(json.dumps({"lanes": lanes, **out}), file=sys.stderr, flush=True)
    return out


#: What the sync did so far (``--sample-s``): parts and blocks read per pass, each step's wall time.
SYNC: dict[str, float] = {}
#: Peak RSS seen by the sampler, in MB, per process (``sleuth``, ``postgresql``, ``milvus-lite``).
PEAK_RSS_MB: dict[str, float] = {}


def watch_sync() -> None:
    """Count the sync's parts (``MilvusSync.on_part``) and time its passes into ``SYNC``."""
    from sleuth.store.milvus_sync import MilvusSync

    def on_part(self, phase, blocks):  # type: ignore[no-untyped-def]
        SYNC[f"{phase}_parts"] = SYNC.get(f"{phase}_parts", 0) + 1
        SYNC[f"{phase}_blocks"] = SYNC.get(f"{phase}_blocks", 0) + len(blocks)

    MilvusSync.on_part = on_part  # type: ignore[assignment]
    for name in ("sync", "_sync_stats", "_sync_lex"):
        inner = getattr(MilvusSync, name)

        def wrapper(*args, _inner=inner, _name=name, **kwargs):  # type: ignore[no-untyped-def]
            started = time.perf_counter()
            try:
                return _inner(*args, **kwargs)
            finally:
                SYNC[f"{_name.lstrip('_')}_s"] = round(SYNC.get(f"{_name.lstrip('_')}_s", 0.0)
                                                       + time.perf_counter() - started, 1)

        setattr(MilvusSync, name, wrapper)


def sample(url: str, milvus_uri: str, collection: str, every_s: float, stop: threading.Event,  # type: ignore[no-untyped-def]
           servers: dict[str, int]) -> None:
    """Print to stderr every ``every_s`` seconds until ``stop``: catalog blocks, Milvus rows, the
    sync's progress, RSS of this process and of each server (PostgreSQL: every backend's, summed;
    shared buffers counted in each), load; keep the peaks in ``PEAK_RSS_MB``."""
    import psycopg
    from pymilvus import MilvusClient, MilvusException

    from bench.scale_index_profile import rss_mb, tree_rss_mb

    started = time.perf_counter()
    client = MilvusClient(milvus_uri, dedicated=True)
    while not stop.wait(every_s):
        try:
            with psycopg.connect(url, autocommit=True) as conn:
                row = conn.execute("SELECT count(*) FROM blocks").fetchone()
            name = f"{collection}_lex"
            rows = int(client.get_collection_stats(name).get("row_count", 0)) if client.has_collection(name) else 0
        except (psycopg.Error, MilvusException, OSError) as e:  # a sample must not end the run
            row, rows = None, -1
            print(f"sample failed: {e!r}", file=sys.stderr, flush=True)
        rss = {"sleuth": rss_mb(), **{k: tree_rss_mb(p) for k, p in servers.items()}}
        for k, v in rss.items():
            PEAK_RSS_MB[k] = max(PEAK_RSS_MB.get(k, 0.0), v)
        print(json.dumps({"t_s": round(time.perf_counter() - started), "utc": time.strftime("%H:%M:%S", time.gmtime()),
                          "catalog_blocks": row[0] if row else None, "milvus_rows": rows, "sync": SYNC,
                          "rss_mb": {k: round(v) for k, v in rss.items()}, "load": os.getloadavg()[0]}),
              file=sys.stderr, flush=True)
    client.close()


def measure(kind: str, index_dir: Path, config, corpus, queries, n: int,  # type: ignore[no-untyped-def]
            sampling: tuple[str, str, float, dict[str, int]] | None = None) -> dict[str, object]:
    from sleuth.engine import Engine

    engine = Engine(index_dir, config)
    stop = threading.Event()
    SYNC.clear()
    PEAK_RSS_MB.clear()
    if sampling is not None:
        url, milvus_uri, every_s, servers = sampling
        threading.Thread(target=sample, args=(url, milvus_uri, config.milvus_collection, every_s, stop, servers),
                         daemon=True).start()
    load = os.getloadavg()[0]
    started = time.perf_counter()
    try:
        engine.index_records("bench", records(corpus, n))
        index_s = time.perf_counter() - started
        blocks = engine.catalog.counts()["blocks"]
        out = {"kind": kind, "records": n, "blocks": blocks, "index_s": round(index_s, 1),
               "blocks_per_s": round(blocks / index_s, 1), "load_index": [round(load, 1), round(os.getloadavg()[0], 1)]}
        if SYNC:
            out["sync"] = dict(SYNC)
        print(json.dumps(out), file=sys.stderr, flush=True)
        for lanes in (["bm25"], ["index"], ["bm25", "index"]):
            out[",".join(lanes)] = lexical(engine, queries, lanes)
        engine.close()
    finally:
        stop.set()
    out["peak_rss_mb"] = {"sleuth": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024),
                          **{k: round(v) for k, v in PEAK_RSS_MB.items() if k != "sleuth"}}
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
    ap.add_argument("--kinds", default="local,postgresql+milvus", help="the engines measured at each size")
    ap.add_argument("--queries", type=int, default=QUERIES, help="SciFact queries per lane set")
    ap.add_argument("--sample-s", type=float, default=0, help="print progress to stderr this often (0: never)")
    ap.add_argument("--out", default="")
    args = ap.parse_args()
    kinds = args.kinds.split(",")
    if not set(kinds) <= {"local", "postgresql+milvus"}:
        ap.error(f"--kinds: local and/or postgresql+milvus, not {args.kinds!r}")

    from sleuth.config import Config
    from sleuth.eval import load_beir

    dataset = load_beir(Path(args.data))
    corpus = list(dataset.corpus)
    queries = list(dataset.queries.values())[:args.queries]
    work = Path(tempfile.mkdtemp(prefix="sleuth-curve-"))
    pg, milvus = PgServer().start(), MilvusLiteServer().start()
    results: list[dict[str, object]] = []
    try:
        if args.sample_s:
            watch_sync()
        for n in (int(s) for s in args.sizes.split(",") if s):
            os.environ.pop("SLEUTH_CATALOG_URL", None)
            if "local" in kinds:
                results.append(measure("local", work / f"local{n}", Config(model="none"), corpus, queries, n))
            if "postgresql+milvus" in kinds:
                from bench.scale_index_profile import server_pids

                url = os.environ["SLEUTH_CATALOG_URL"] = pg.new_database(f"curve{n}")
                results.append(measure("postgresql+milvus", work / f"scale{n}",
                                       Config(model="none", milvus_uri=milvus.uri, milvus_collection=f"curve{n}"),
                                       corpus, queries, n,
                                       (url, milvus.uri, args.sample_s, server_pids(pg, milvus)) if args.sample_s
                                       else None))
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
