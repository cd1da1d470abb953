"""Growth of sleuth with the number of blocks: a seeded synthetic corpus (bench/run.py's, one block a
document: 3-7 SciFact and tldr sentences) at several sizes, each indexed lexical-only in its own
process (peak RSS), given seeded random unit block vectors, then queried warm (bm25 lane alone and
the default lanes, hybrid, with real query embeddings), with the index folder's size on disk.

``python bench/scale.py --data ../shared/data --sizes 10000,100000,300000 [--queries 100] [--workdir DIR]``
prints one markdown row per size (and the machine's load average beside each), for docs/BENCH.md.
The default model must be installed (the vector lane and hybrid rows need it).
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import run as bench

SETS = ["bm25", "hybrid (default lanes)"]


def folder_bytes(folder: Path) -> int:
    """Bytes of every regular file under ``folder`` (the lock file included)."""
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())


def sources_and_queries(data: Path, n_queries: int) -> tuple[list[str], list[str]]:
    sf_docs, sf_q = bench.load_scifact(data, False)
    with gzip.open(data / "md-tldr" / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        tldr = [json.loads(line) for line in fh]
    sources = [f"{d['title']}. {d['text']}" for d in sf_docs] + [d["text"] for d in tldr]
    tl_q = [q for d in tldr if (q := bench.tldr_query(d["text"]))]
    rng = random.Random(bench.SEED + 1)
    half = n_queries // 2
    return sources, rng.sample(sf_q, half) + rng.sample(tl_q, n_queries - half)


def measure(n: int, sources: list[str], queries: list[str], workdir: Path, warmup: int, keep: bool = False) -> dict:
    docs = bench.synth_docs(sources, n, bench.SEED)
    corpus = workdir / f"synth-{n}.jsonl"
    bench.write_jsonl(corpus, docs)
    del docs
    qfile = workdir / "queries.json"
    qfile.write_text(json.dumps(queries), encoding="utf-8")
    index = workdir / f"idx-{n}"
    row: dict = {"blocks": n, "load_before": bench.loadavg()}
    lex = bench.run_child("index_records", {"index": str(index), "corpus": str(corpus), "model": "none",
                                            "project": "scale", "stream": True}, workdir)
    row.update(index_s=lex.get("took_s"), index_rss_mb=lex.get("rss_mb"), error=lex.get("error"))
    row["lexical_bytes"] = folder_bytes(index)
    print(f"<!-- {n:,} blocks: indexed in {lex.get('took_s') or 0:.1f} s, peak RSS {lex.get('rss_mb')} MB,"
          f" {row['lexical_bytes'] / 2**20:,.1f} MB; load {bench.loadavg()};"
          f" peaks by phase {lex.get('memory_mb')} -->", flush=True)
    vec = bench.run_child("random_vectors", {"index": str(index), "seed": bench.SEED}, workdir)
    row.update(vectors_s=vec.get("took_s"), vectors_rss_mb=vec.get("rss_mb"))
    lane = bench.run_child("vector_lane", {"index": str(index)}, workdir)
    row.update(lane_s=lane.get("took_s"), lane_rss_mb=lane.get("rss_mb"), error=row["error"] or lane.get("error"))
    print(f"<!-- {n:,} blocks: random vectors {vec.get('took_s') or 0:.1f} s; vector lane built and saved in"
          f" {lane.get('took_s') or 0:.1f} s (HNSW {lane.get('hnsw')}), peak RSS {lane.get('rss_mb')} MB;"
          f" load {bench.loadavg()}; peaks {lane.get('memory_mb')} -->", flush=True)
    q = bench.run_child("queries", {"index": str(index), "queries": str(qfile), "warmup": warmup, "sets": SETS},
                        workdir)
    row.update(vector_ready_s=q.get("vector_matrix_s"), query_rss_mb=q.get("rss_mb"))
    for r in q.get("rows", []):
        row[f"{r['lane']} p50"] = r["p50"]
        row[f"{r['lane']} p95"] = r["p95"]
    row["bytes"] = folder_bytes(index)
    row["load_after"] = bench.loadavg()
    if not keep:
        shutil.rmtree(index, ignore_errors=True)
    corpus.unlink()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--sizes", default="10000,100000,300000")
    ap.add_argument("--queries", type=int, default=100)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--keep", action="store_true", help="keep each size's index folder in the workdir")
    args = ap.parse_args()
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sleuth-scale."))
    workdir.mkdir(parents=True, exist_ok=True)
    sources, queries = sources_and_queries(args.data, args.queries)
    print("| blocks | index s | blocks/s | index peak RSS MB | lexical index MB | random vectors s |"
          " vector lane build s | build peak RSS MB | vector lane ready s | query process peak RSS MB |"
          " bm25 p50 / p95 ms | hybrid p50 / p95 ms |"
          " index folder MB | load (1/5/15 min) before; after |")
    print("| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |")
    for n in (int(x) for x in args.sizes.split(",")):
        started = time.perf_counter()
        r = measure(n, sources, queries, workdir, args.warmup, args.keep)

        def f(key: str, digits: int = 2, r: dict = r) -> str:
            v = r.get(key)
            return "-" if v is None else f"{v:,.{digits}f}"
        bps = f"{n / r['index_s']:,.0f}" if r.get("index_s") else "-"
        print(f"| {n:,} | {f('index_s', 1)} | {bps} | {f('index_rss_mb', 0)} | {r['lexical_bytes'] / 2**20:,.1f} |"
              f" {f('vectors_s', 1)} | {f('lane_s', 1)} | {f('lane_rss_mb', 0)} | {f('vector_ready_s', 1)} |"
              f" {f('query_rss_mb', 0)} |"
              f" {f('bm25 p50')} / {f('bm25 p95')} | {f('hybrid (default lanes) p50')} /"
              f" {f('hybrid (default lanes) p95')} | {r['bytes'] / 2**20:,.1f} |"
              f" {r['load_before']}; {r['load_after']} |"
              + (f" error: {r['error']}" if r.get("error") else ""), flush=True)
        print(f"<!-- {n:,} blocks: {time.perf_counter() - started:.0f} s -->", flush=True)
    if args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
