"""Lexical indexing speed of two checkouts, interleaved: ``Engine.index_records`` of a BEIR corpus
(lexical only, no model) in a fresh process per run, the records read before the clock starts; or,
with ``--folder``, ``Engine.index`` of a folder of markdown files.

``python bench/index_ab.py --base-src <checkout>/src [--corpus ../shared/data/scifact] [--rounds 5] [--peers]``
runs the base checkout and this one in turn (base, new, base, new, ...), each into a new index
folder, and prints each run's seconds, the median of each and the median of the per-round ratios
base / new (above 1: this checkout is faster), of wall time and of CPU time (user + system, every
thread of the indexing process *and of the parse workers it started*, their start-up included: less
disturbed than wall time when other jobs share the cores), with the load average before and after
each round. With ``--peers``, bm25s and SQLite FTS5 (bench/peers.py) build their indexes of the same
texts in the same rounds, and the ratios sleuth / peer are printed.

``--folder ARCHIVE.tar.gz --files N`` extracts the first N markdown members of the archive (in
archive order; ``--under pages/`` keeps those under that folder) to a temporary folder once, and
times ``Engine.index`` of that folder (a fresh index per run: the walk, the parse workers, the
catalog and the postings); the peers index the same files' texts read from the folder in memory.
For example ``--folder ../shared/data/md-tldr/markdown.tar.gz --under pages/ --files 5000``.
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
import gzip, json, resource, sys, time
from pathlib import Path
from sleuth.config import Config
from sleuth.engine import Engine, Record
corpus, index = Path(sys.argv[1]), Path(sys.argv[2])
if corpus.is_dir():
    records = None
else:
    opener = gzip.open if corpus.suffix == ".gz" else open
    with opener(corpus, "rt", encoding="utf-8") as f:
        records = [Record(rel_path=d["_id"], text=d["text"], title=d.get("title", "")) for d in map(json.loads, f)]
def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime
started, cpu, child_cpu = time.perf_counter(), time.process_time(), children_cpu()
with Engine(index, Config(model="none")) as e:
    report = e.index_records("p", records) if records is not None else e.index([corpus], project="p")
took = time.perf_counter() - started
own = time.process_time() - cpu
try:  # the parse workers are kept for a next run: end them, so that their CPU time is counted
    from sleuth.ingest import pool
    pool._IDLE.close_all()
except (ImportError, AttributeError):
    pass
print(json.dumps({"took_s": took, "cpu_s": own + children_cpu() - child_cpu, "own_cpu_s": own,
                  "blocks": report.blocks, "skipped": len(report.skipped)}))
"""


_PEER_CHILD = r"""
import gzip, json, sys, time
from pathlib import Path
sys.path.insert(0, sys.argv[3])
import peers
corpus, workdir, name = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[4]
if corpus.is_dir():
    files = sorted(p for p in corpus.rglob("*.md") if p.is_file())
    docs = [{"_id": str(p.relative_to(corpus)), "title": "", "text": p.read_text(encoding="utf-8")} for p in files]
else:
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


def extract_folder(archive: Path, under: str, files: int, into: Path) -> Path:
    """The first ``files`` markdown members of ``archive`` under ``under`` (archive order), written
    below ``into``; returns the folder."""
    import tarfile

    folder = into / "corpus"
    done = 0
    with tarfile.open(archive) as tar:
        for member in tar:
            if done >= files:
                break
            name = member.name
            if not (member.isfile() and name.endswith(".md") and name.startswith(under)) or ".." in name.split("/"):
                continue
            data = tar.extractfile(member)
            if data is None:
                continue
            target = folder / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data.read())
            done += 1
    return folder


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
    ap.add_argument("--folder", type=Path, help="a .tar.gz of markdown files: index a folder of them instead")
    ap.add_argument("--under", default="", help="with --folder: only members whose name starts with this")
    ap.add_argument("--files", type=int, default=5000, help="with --folder: how many files")
    args = ap.parse_args()
    here = Path(__file__).resolve().parent.parent / "src"
    with tempfile.TemporaryDirectory(prefix="index-ab-corpus.") as corpus_tmp:
        corpus = (extract_folder(args.folder, args.under, args.files, Path(corpus_tmp)) if args.folder
                  else _corpus_file(args.corpus))
        _rounds(args, corpus, here)


def _rounds(args: argparse.Namespace, corpus: Path, here: Path) -> None:
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
                  f" ({base['blocks']} / {new['blocks']} blocks, {new.get('skipped', 0)} skipped),"
                  f" ratio {base['took_s'] / new['took_s']:.2f}; cpu base {base['cpu_s']:.3f} s, new"
                  f" {new['cpu_s']:.3f} s (main process {new.get('own_cpu_s', new['cpu_s']):.3f} s),"
                  f" ratio {base['cpu_s'] / new['cpu_s']:.2f}; load {loadavg()}", flush=True)
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
