"""The first Milvus sync of a PostgreSQL catalog on its own (no indexing around it), code
variants alternated in one run, on one catalog and one ``milvus-lite server``.

    .venv/bin/python bench/scale_sync_profile.py --records 30000 --rounds 3 \
        --variants main=/path/to/main/src,branch=src [--profile-dir DIR]

The catalog is indexed once (local lanes, no Milvus: ``bench/scale_curve.py``'s records, SciFact
abstracts cycled, one block each). Then each round runs each variant in a process of its own
(``PYTHONPATH`` at that variant's ``src``), which forgets the catalog's Milvus state (meta
``milvus:*``: the statistics are counted from scratch) and syncs into a collection of its own
(dropped after), the sync alone timed: wall, sleuth's CPU (``time.process_time``), the CPU of the
thread that ran each pass (``thread_cpu_s``, as ``bench/scale_index_profile.py --timings``), and
PostgreSQL's and milvus-lite's CPU over the child's run (every backend counted, from /proc).
``--profile-dir`` writes a cProfile of each child's sync instead of the wrappers.

``--callgrind`` runs, instead of the syncs, each variant's reading of the blocks back under
``valgrind --tool=callgrind`` (instructions of sleuth's process, ``PYTHONHASHSEED=0``): the
statistics pass's parts over every block (read, analysed, counted: ``MilvusSync._parts``) and, for
a variant without ``sync_block_pages`` (the code before it), the document rows its rows pass read
per part (``Catalog.documents``). The analysis is the same code in every variant.
"""

from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))


def index_catalog(index_dir: Path, data: Path, n: int) -> None:
    from bench.scale_curve import records
    from sleuth.config import Config
    from sleuth.engine import Engine
    from sleuth.eval import load_beir

    corpus = list(load_beir(data).corpus)
    with Engine(index_dir, Config(model="none")) as engine:
        engine.index_records("bench", records(corpus, n))


def sync_once(index_dir: Path, milvus_uri: str, collection: str, profile: str) -> dict[str, object]:
    from bench.scale_index_profile import THREAD_CPU, TIMINGS, instrument
    from sleuth.config import Config
    from sleuth.engine import Engine

    if not profile:
        instrument()
    cfg = Config(model="none", milvus_uri=milvus_uri, milvus_collection=collection)
    with Engine(index_dir, cfg) as engine:
        conn = engine.catalog.conn
        conn.execute("DELETE FROM meta WHERE key LIKE 'milvus:%'")  # counted and sent from scratch
        shared = engine.lanes["bm25"].shared  # type: ignore[attr-defined]
        prof = cProfile.Profile() if profile else None
        load = os.getloadavg()[0]
        cpu, started = time.process_time(), time.perf_counter()
        if prof is not None:
            prof.enable()
        shared.sync()
        if prof is not None:
            prof.disable()
            prof.dump_stats(profile)
        took, cpu = time.perf_counter() - started, time.process_time() - cpu
        rows = shared.index.rows(f"{collection}_lex")
        shared.index.client.drop_collection(f"{collection}_lex")
    return {"sync_s": round(took, 2), "sleuth_cpu_s": round(cpu, 2), "rows": rows, "load_start": round(load, 1),
            "load_end": round(os.getloadavg()[0], 1),
            "timings_s": {k: round(v, 2) for k, v in sorted(TIMINGS.items())},
            "thread_cpu_s": {k: round(v, 2) for k, v in sorted(THREAD_CPU.items())}}


def read_once(index_dir: Path, milvus_uri: str, collection: str) -> dict[str, object]:
    from sleuth.config import Config
    from sleuth.engine import Engine

    cfg = Config(model="none", milvus_uri=milvus_uri, milvus_collection=collection)
    with Engine(index_dir, cfg) as engine:
        index = engine.lanes["bm25"].shared.index  # type: ignore[attr-defined]
        blocks = 0
        for part in index._parts("stats", 0):
            blocks += len(part.blocks)
            if not hasattr(engine.catalog, "sync_block_pages"):  # before: the rows pass read the documents
                engine.catalog.documents(sorted({b.doc_id for b in part.blocks}))
    return {"blocks": blocks}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared/data/scifact"))
    ap.add_argument("--records", type=int, default=30000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--variants", default="", help="name=src_path,name=src_path (run in this order)")
    ap.add_argument("--profile-dir", default="")
    ap.add_argument("--callgrind", action="store_true", help="count the read-back's instructions instead")
    ap.add_argument("--child-read", nargs=3, help=argparse.SUPPRESS)  # index_dir milvus_uri collection
    ap.add_argument("--child", nargs=4, help=argparse.SUPPRESS)  # index_dir milvus_uri collection profile
    args = ap.parse_args()
    if args.child:
        index_dir, uri, collection, profile = args.child
        print(json.dumps(sync_once(Path(index_dir), uri, collection, "" if profile == "-" else profile)), flush=True)
        return
    if args.child_read:
        print(json.dumps(read_once(Path(args.child_read[0]), args.child_read[1], args.child_read[2])), flush=True)
        return

    from bench.scale_index_profile import cpu_s
    from tests.scale.servers import MilvusLiteServer, PgServer

    if not args.variants:
        ap.error("--variants is needed")
    variants = [v.split("=", 1) for v in args.variants.split(",")]
    work = Path(tempfile.mkdtemp(prefix="sleuth-sync-"))
    pg, milvus = PgServer().start(), MilvusLiteServer().start()
    try:
        url = pg.new_database("syncbench")
        env = {**os.environ, "SLEUTH_CATALOG_URL": url, "PYTHONHASHSEED": "0"}
        subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, sys.argv[1]);"
                        " from bench.scale_sync_profile import index_catalog; from pathlib import Path;"
                        " index_catalog(Path(sys.argv[2]), Path(sys.argv[3]), int(sys.argv[4]))",
                        str(Path(__file__).resolve().parents[1]), str(work / "index"), args.data, str(args.records)],
                       env={**env, "PYTHONPATH": variants[-1][1]}, check=True)
        for r in range(1, args.rounds + 1):
            for name, src in variants:
                if args.callgrind:
                    started = time.strftime("%H:%M:%S", time.gmtime())
                    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null",
                                           sys.executable, __file__, "--child-read", str(work / "index"), milvus.uri,
                                           "read"], env={**env, "PYTHONPATH": src}, check=True, capture_output=True,
                                          text=True)
                    found = re.search(r"Collected : (\d+)", proc.stderr)
                    print(json.dumps({"round": r, "variant": name, "utc": started,
                                      **json.loads(proc.stdout.strip().splitlines()[-1]),
                                      "instructions": int(found.group(1)) if found else None}), flush=True)
                    continue
                collection = f"sync_{r}_{name}".replace("-", "_")
                profile = str(Path(args.profile_dir) / f"{collection}.prof") if args.profile_dir else "-"
                before = {"postgresql": cpu_s(pg.proc.pid), "milvus-lite": cpu_s(milvus.proc.pid)}  # type: ignore[union-attr]
                started = time.strftime("%H:%M:%S", time.gmtime())
                out = subprocess.run([sys.executable, __file__, "--child", str(work / "index"), milvus.uri, collection,
                                      profile], env={**env, "PYTHONPATH": src}, check=True, capture_output=True,
                                     text=True).stdout.strip().splitlines()[-1]
                result = json.loads(out)
                result["servers_cpu_s"] = {"postgresql": round(cpu_s(pg.proc.pid) - before["postgresql"], 2),  # type: ignore[union-attr]
                                           "milvus-lite": round(cpu_s(milvus.proc.pid) - before["milvus-lite"], 2)}  # type: ignore[union-attr]
                print(json.dumps({"round": r, "variant": name, "utc": started, **result}), flush=True)
    finally:
        milvus.stop()
        pg.stop()
        with contextlib.suppress(OSError):
            import shutil

            shutil.rmtree(work)


if __name__ == "__main__":
    main()
