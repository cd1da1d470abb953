"""Indexing rate, local vs PostgreSQL catalog + ``milvus-lite server``, on the same records (SciFact
abstracts cycled, one block each, no embedding model), optionally under cProfile.

    .venv/bin/python bench/scale_index_profile.py --records 3000 [--profile out.prof] [--only scale]
        [--timings] [--sample-s 60]

Each run reports the CPU seconds of sleuth's process and, scaled out, of the PostgreSQL server
(with its backends) and the ``milvus-lite server`` process (``cpu_s``), to tell whose work the
wall time is. ``--timings`` adds up the wall time of the sync's steps (wrappers, no profiler), and
the CPU time of the thread that ran them (``thread_cpu_s``, ``time.thread_time``); ``--sample-s``
prints, every so many seconds, the blocks committed to the catalog, the rows in Milvus, this
process's RSS and the load average (what a run stopped before its end reached).
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import resource
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.scale_curve import records
from tests.scale.servers import MilvusLiteServer, PgServer

TIMINGS: dict[str, float] = {}
#: CPU seconds of the calling thread in each wrapped call (``time.thread_time``), same keys.
THREAD_CPU: dict[str, float] = {}


def timed(owner, name: str) -> None:  # type: ignore[no-untyped-def]
    """Wrap ``owner.name`` to add its wall time to ``TIMINGS``."""
    inner = getattr(owner, name)

    def wrapper(*args, **kwargs):  # type: ignore[no-untyped-def]
        started, cpu = time.perf_counter(), time.thread_time()
        try:
            return inner(*args, **kwargs)
        finally:
            key = f"{getattr(owner, '__name__', type(owner).__name__)}.{name}"
            TIMINGS[key] = TIMINGS.get(key, 0.0) + time.perf_counter() - started
            THREAD_CPU[key] = THREAD_CPU.get(key, 0.0) + time.thread_time() - cpu

    setattr(owner, name, wrapper)


def instrument() -> None:
    from pymilvus import MilvusClient

    from sleuth.lanes.postings import Postings
    from sleuth.store.catalog import Catalog
    from sleuth.store.milvus import MilvusIndex

    for name in ("_sync_stats", "_sync_lex", "_insert_lex", "_delete"):
        if hasattr(MilvusIndex, name):
            timed(MilvusIndex, name)
    for name in ("insert", "upsert", "flush", "delete"):
        timed(MilvusClient, name)
    with contextlib.suppress(ImportError):  # the column requests (sleuth.store.milvus_columns)
        from sleuth.store import milvus_columns

        timed(milvus_columns, "send")
    from sleuth.lanes import sparse

    for name in ("block_vectors", "part_vectors", "count_part", "weigh_part"):  # the terms counted, the weights
        if hasattr(sparse, name):
            timed(sparse, name)
    timed(Catalog, "write_documents")
    for name in ("apply", "catch_up"):
        timed(Postings, name)


def rss_mb() -> float:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def sampler(url: str, milvus_uri: str, collection: str, every_s: float, stop: threading.Event,  # type: ignore[no-untyped-def]
            servers: dict[str, int] | None = None) -> None:
    """Print progress every ``every_s`` seconds until ``stop``: catalog blocks, Milvus rows, this
    process's RSS, the servers' (PostgreSQL: every backend's, summed; shared buffers counted in
    each), load."""
    import psycopg
    from pymilvus import MilvusClient

    started = time.perf_counter()
    client = MilvusClient(milvus_uri, dedicated=True)
    peak = 0.0
    while not stop.wait(every_s):
        with psycopg.connect(url, autocommit=True) as conn:
            row = conn.execute("SELECT count(*) FROM blocks").fetchone()
        name = f"{collection}_lex"
        rows = int(client.get_collection_stats(name).get("row_count", 0)) if client.has_collection(name) else 0
        peak = max(peak, rss_mb())
        print(json.dumps({"t_s": round(time.perf_counter() - started), "catalog_blocks": row[0] if row else 0,
                          "milvus_rows": rows, "rss_mb": round(rss_mb()), "peak_rss_mb": round(peak),
                          "servers_rss_mb": {k: round(tree_rss_mb(p)) for k, p in (servers or {}).items()},
                          "load": os.getloadavg()[0]}), flush=True)
    client.close()


def descendants(pid: int) -> list[int]:
    """``pid`` and every process below it, from /proc."""
    pids, todo = [], [pid]
    while todo:
        p = todo.pop()
        pids.append(p)
        with contextlib.suppress(OSError):
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as fh:
                    todo += [int(c) for c in fh.read().split()]
    return pids


def tree_rss_mb(pid: int) -> float:
    """RSS of ``pid`` and its descendants, summed, in MB."""
    total = 0
    for p in descendants(pid):
        with contextlib.suppress(OSError), open(f"/proc/{p}/status") as fh:
            total += next((int(line.split()[1]) for line in fh if line.startswith("VmRSS:")), 0)
    return total / 1024


def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid`` and of its descendants alive now or reaped by
    them (PostgreSQL's backends), from /proc (0 for a process gone)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    for p in descendants(pid):
        with contextlib.suppress(OSError), open(f"/proc/{p}/stat") as fh:
            fields = fh.read().rsplit(")", 1)[1].split()
            total += (int(fields[11]) + int(fields[12]) + int(fields[13]) + int(fields[14])) / tick
    return total


def server_pids(*servers) -> dict[str, int]:  # type: ignore[no-untyped-def]
    return {name: s.proc.pid for name, s in zip(("postgresql", "milvus-lite"), servers, strict=True)
            if s.proc is not None}


def run(kind: str, index_dir: Path, config, corpus, n: int, profile: str,  # type: ignore[no-untyped-def]
        servers: dict[str, int] | None = None) -> dict[str, object]:
    from sleuth.engine import Engine

    engine = Engine(index_dir, config)
    prof = cProfile.Profile() if profile else None
    load = os.getloadavg()[0]
    cpu_before = {name: cpu_s(pid) for name, pid in (servers or {}).items()}
    own_before = time.process_time()
    started = time.perf_counter()
    if prof is not None:
        prof.enable()
    engine.index_records("bench", records(corpus, n))
    if prof is not None:
        prof.disable()
        prof.dump_stats(profile)
    took = time.perf_counter() - started
    cpu = {"sleuth": round(time.process_time() - own_before, 1),
           **{name: round(cpu_s(pid) - cpu_before[name], 1) for name, pid in (servers or {}).items()}}
    blocks = engine.catalog.counts()["blocks"]
    engine.close()
    out = {"kind": kind, "records": n, "blocks": blocks, "index_s": round(took, 1),
           "blocks_per_s": round(blocks / took, 1), "load_start": round(load, 1),
           "load_end": round(os.getloadavg()[0], 1),
           "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024), "cpu_s": cpu,
           "timings_s": {k: round(v, 2) for k, v in sorted(TIMINGS.items())},
           "thread_cpu_s": {k: round(v, 2) for k, v in sorted(THREAD_CPU.items())}}
    print(json.dumps(out), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/scifact"))
    ap.add_argument("--records", type=int, default=3000)
    ap.add_argument("--profile", default="")
    ap.add_argument("--only", default="local,scale")
    ap.add_argument("--sample-s", type=float, default=0)
    ap.add_argument("--timings", action="store_true", help="time the sync's steps (wrappers, no profiler)")
    args = ap.parse_args()
    if args.timings:
        instrument()

    from sleuth.config import Config
    from sleuth.eval import load_beir

    corpus = list(load_beir(Path(args.data)).corpus)
    work = Path(tempfile.mkdtemp(prefix="sleuth-idx-"))
    kinds = args.only.split(",")
    if "local" in kinds:
        os.environ.pop("SLEUTH_CATALOG_URL", None)
        run("local", work / "local", Config(model="none"), corpus, args.records, "")
        TIMINGS.clear()
        THREAD_CPU.clear()
    if "scale" in kinds:
        pg, milvus = PgServer().start(), MilvusLiteServer().start()
        try:
            os.environ["SLEUTH_CATALOG_URL"] = pg.new_database("prof")
            stop = threading.Event()
            if args.sample_s:
                threading.Thread(target=sampler, args=(os.environ["SLEUTH_CATALOG_URL"], milvus.uri, "prof",
                                                       args.sample_s, stop, server_pids(pg, milvus)),
                                 daemon=True).start()
            run("postgresql+milvus", work / "scale",
                Config(model="none", milvus_uri=milvus.uri, milvus_collection="prof"), corpus, args.records,
                args.profile, server_pids(pg, milvus))
        finally:
            stop.set()
            os.environ.pop("SLEUTH_CATALOG_URL", None)
            milvus.stop()
            pg.stop()


if __name__ == "__main__":
    main()
