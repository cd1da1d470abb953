"""Lexical indexing speed of two checkouts, interleaved: ``Engine.index_records`` of a BEIR corpus
(lexical only, no model) in a fresh process per run, the records read before the clock starts.

``python bench/index_ab.py --base-src <checkout>/src [--corpus ../shared/data/scifact] [--rounds 5] [--peers]``
runs the base checkout and this one in turn (base, new, base, new, ...), each into a new index
folder, and prints each run's seconds, the median of each and the median of the per-round ratios
base / new (above 1: this checkout is faster), of wall time and of CPU time (user + system, every
thread of the process: less disturbed than wall time when other jobs share the cores), with the load
average before and after each round. With ``--peers``, bm25s and SQLite FTS5 (bench/peers.py) build
their indexes of the same texts in the same rounds, and the ratios sleuth / peer are printed.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

_CHILD = r"""
import gzip, json, sys, time
from pathlib import Path
from sleuth.config import Config
from sleuth.engine import Engine, Record
corpus, index = Path(sys.argv[1]), Path(sys.argv[2])
opener = gzip.open if corpus.suffix == ".gz" else open
with opener(corpus, "rt", encoding="utf-8") as f:
    records = [Record(rel_path=d["_id"], text=d["text"], title=d.get("title", "")) for d in map(json.loads, f)]
started, cpu = time.perf_counter(), time.process_time()
with Engine(index, Config(model="none")) as e:
    report = e.index_records("p", records)
print(json.dumps({"took_s": time.perf_counter() - started, "cpu_s": time.process_time() - cpu,
                  "blocks": report.blocks}))
"""


_PEER_CHILD = r"""
import gzip, json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
import peers
corpus, workdir, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[4]
opener = gzip.open if corpus.suffix == ".gz" else open
with opener(corpus, "rt", encoding="utf-8") as f:
    docs = list(map(json.loads, f))
ids, titles, texts = [d["_id"] for d in docs], [d.get("title", "") for d in docs], [d["text"] for d in docs]
peer = peers.Bm25sPeer() if name == "bm25s" else peers.Fts5Peer(workdir / "fts5.sqlite3")
started, cpu = time.perf_counter(), time.process_time()
peer.build(ids, titles, texts)
print(json.dumps({"took_s": time.perf_counter() - started, "cpu_s": time.process_time() - cpu}))
"""
PEERS = ("bm25s", "sqlite-fts5")


def run_peer(name: str, corpus: Path, workdir: Path) -> dict:
    """One peer's index build (bench/peers.py) in a fresh process, from in-memory texts."""
    folder = Path(tempfile.mkdtemp(dir=workdir))
    out = subprocess.run([sys.executable, "-c", _PEER_CHILD, str(corpus), str(folder),
                          str(Path(__file__).resolve().parent), name], check=True, capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def _corpus_file(folder: Path) -> Path:
    for name in ("corpus.jsonl.gz", "corpus.jsonl"):
        if (folder / name).is_file():
            return folder / name
    raise SystemExit(f"no corpus.jsonl[.gz] in {folder}")


def run_once(src: Path | None, corpus: Path, workdir: Path) -> dict:
    """One indexing run in a fresh process with ``src`` first on the path (None: this checkout)."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(src)
    index = Path(tempfile.mkdtemp(dir=workdir)) / "idx"
    out = subprocess.run([sys.executable, "-c", _CHILD, str(corpus), str(index)], env=env, check=True,
                         capture_output=True, text=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def loadavg() -> str:
    return " ".join(Path("/proc/loadavg").read_text().split()[:3])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-src", type=Path, required=True, help="src/ folder of the checkout to compare with")
    ap.add_argument("--corpus", type=Path, default=Path("../shared/data/scifact"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--peers", action="store_true", help="also time bm25s and SQLite FTS5 builds each round")
    args = ap.parse_args()
    corpus = _corpus_file(args.corpus)
    here = Path(__file__).resolve().parent.parent / "src"
    print(f"corpus {corpus}; load before {loadavg()}")
    base_s: list[float] = []
    new_s: list[float] = []
    base_cpu: list[float] = []
    new_cpu: list[float] = []
    peer_runs: dict[str, list[dict]] = {name: [] for name in PEERS}
    with tempfile.TemporaryDirectory(prefix="index-ab.") as tmp:
        for r in range(args.rounds):
            base = run_once(args.base_src, corpus, Path(tmp))
            new = run_once(here, corpus, Path(tmp))
            base_s.append(base["took_s"])
            new_s.append(new["took_s"])
            if args.peers:
                for name in PEERS:
                    peer_runs[name].append(run_peer(name, corpus, Path(tmp)))
            base_cpu.append(base["cpu_s"])
            new_cpu.append(new["cpu_s"])
            print(f"round {r + 1}: wall base {base['took_s']:.3f} s, new {new['took_s']:.3f} s"
                  f" ({new['blocks']} blocks),"
                  f" ratio {base['took_s'] / new['took_s']:.2f}; cpu base {base['cpu_s']:.3f} s, new"
                  f" {new['cpu_s']:.3f} s, ratio {base['cpu_s'] / new['cpu_s']:.2f}; load {loadavg()}", flush=True)
    for what, b_s, n_s in (("wall", base_s, new_s), ("cpu", base_cpu, new_cpu)):
        ratios = [b / n for b, n in zip(b_s, n_s, strict=True)]
        print(f"median {what}: base {statistics.median(b_s):.3f} s, new {statistics.median(n_s):.3f} s,"
              f" ratio base/new {statistics.median(ratios):.2f} (min {min(ratios):.2f}, max {max(ratios):.2f})")
    for name, runs in peer_runs.items():
        if runs:
            wall = statistics.median(r["took_s"] for r in runs)
            cpu = statistics.median(r["cpu_s"] for r in runs)
            print(f"median {name}: wall {wall:.3f} s, cpu {cpu:.3f} s; base/{name} wall"
                  f" {statistics.median(base_s) / wall:.2f}, cpu {statistics.median(base_cpu) / cpu:.2f};"
                  f" new/{name} wall {statistics.median(new_s) / wall:.2f}, cpu {statistics.median(new_cpu) / cpu:.2f}")
    print(f"load after {loadavg()}")


if __name__ == "__main__":
    main()
