"""The cost of a no-op re-index: ``Engine.index`` of a folder indexed already and unchanged since.

``python bench/noop_reindex.py [--folder ../shared/data/md-tldr/markdown.tar.gz] [--under pages]
[--files N] [--runs 5] [--base-src <checkout>/src] [--profile noop.prof]``

extracts the archive's markdown members (``--under``: those whose name starts with it; the default
``pages`` keeps every language's pages, 38,404 of the tldr archive) to a temporary folder once,
indexes it once per checkout (model ``none``), then times ``--runs`` re-indexes of the unchanged
folder, each in a fresh process (as ``sleuth index``): wall seconds, and CPU seconds of the process
and of the parse workers it started (their start-up included). With ``--base-src``, the base
checkout gets its own index and its runs interleave with this checkout's (base, new, base, new ...).
One more run per checkout counts the opens under the folder (an audit hook on ``open``: an unchanged
file should cost a stat, not an open; ``gitignore_opens``: of them, each folder's ``.gitignore``
looked for, which the walk reads in every run, as git does). Prints one JSON line per run, then one per
checkout with the medians and, with a base, one with the median per-round ratios base / new (above
1: this checkout is faster); each line carries ``/proc/loadavg``. ``--profile FILE``: one more
no-op run of this checkout under cProfile, its 25 most expensive calls (cumulative) printed to
stderr and the stats saved to FILE.
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
from index_ab import extract_folder, loadavg

_CHILD = r"""
import json, os, resource, sys, time
from pathlib import Path
corpus, index, mode = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3]
opens = []
if mode == "opens":
    prefix = str(corpus) + os.sep
    def hook(event, args):
        if event == "open" and isinstance(args[0], str) and args[0].startswith(prefix):
            opens.append(args[0])  # an attempt: a .gitignore probe of a folder without one counts
    sys.addaudithook(hook)
from sleuth.config import Config
from sleuth.engine import Engine
def children_cpu():
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return ru.ru_utime + ru.ru_stime
def run():
    with Engine(index, Config(model="none")) as e:
        return e.index([corpus], project="p")
started, cpu, child_cpu = time.perf_counter(), time.process_time(), children_cpu()
if mode == "profile":
    import cProfile, pstats
    profiler = cProfile.Profile()
    report = profiler.runcall(run)
    profiler.dump_stats(sys.argv[4])
    pstats.Stats(sys.argv[4], stream=sys.stderr).sort_stats("cumulative").print_stats(25)
else:
    report = run()
took = time.perf_counter() - started
own = time.process_time() - cpu
from sleuth.ingest import pool
pool._IDLE.close_all()  # the parse workers are kept for a next run: end them, so their CPU is counted
print(json.dumps({"wall_s": round(took, 4), "cpu_s": round(own + children_cpu() - child_cpu, 4),
                  "own_cpu_s": round(own, 4), "scanned": report.scanned, "added": report.added,
                  "updated": report.updated, "unchanged": report.unchanged, "removed": report.removed,
                  "opens": len(opens) if mode == "opens" else None,
                  "gitignore_opens": sum(p.endswith("/.gitignore") for p in opens) if mode == "opens" else None}))
"""


def run_child(src: Path, corpus: Path, index: Path, mode: str = "time", extra: str = "") -> dict:
    """One ``Engine.index`` of ``corpus`` into ``index`` in a fresh process with ``src`` first on
    the path; ``mode``: ``time``, ``opens`` (count opens under ``corpus``) or ``profile``."""
    env = dict(os.environ, PYTHONPATH=str(src), PYTHONHASHSEED="0")
    out = subprocess.run([sys.executable, "-c", _CHILD, str(corpus), str(index), mode, extra], env=env,
                         check=True, capture_output=True, text=True)
    if mode == "profile":
        sys.stderr.write(out.stderr)
    return json.loads(out.stdout.strip().splitlines()[-1])


def emit(record: dict) -> None:
    print(json.dumps({**record, "load": loadavg()}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--folder", type=Path, default=Path("../shared/data/md-tldr/markdown.tar.gz"))
    ap.add_argument("--under", default="pages", help="only members whose name starts with this")
    ap.add_argument("--files", type=int, default=10**9, help="at most this many markdown files")
    ap.add_argument("--runs", type=int, default=5, help="timed no-op runs per checkout")
    ap.add_argument("--base-src", type=Path, help="src/ folder of a checkout to compare with")
    ap.add_argument("--profile", type=Path, help="profile one no-op run of this checkout, stats saved here")
    args = ap.parse_args()
    sides = {"new": Path(__file__).resolve().parent.parent / "src"}
    if args.base_src is not None:
        sides = {"base": args.base_src.resolve(), **sides}
    with tempfile.TemporaryDirectory(prefix="noop-reindex.") as tmp:
        corpus = extract_folder(args.folder, args.under, args.files, Path(tmp))
        for side, src in sides.items():
            first = run_child(src, corpus, Path(tmp) / f"idx-{side}")
            emit({"side": side, "run": "first index", **first})
        times: dict[str, list[dict]] = {side: [] for side in sides}
        for r in range(args.runs):
            for side, src in sides.items():
                result = run_child(src, corpus, Path(tmp) / f"idx-{side}")
                times[side].append(result)
                emit({"side": side, "run": r + 1, **result})
        for side, src in sides.items():
            emit({"side": side, "run": "opens", **run_child(src, corpus, Path(tmp) / f"idx-{side}", "opens")})
        for side, runs in times.items():
            emit({"side": side, "median_wall_s": statistics.median(r["wall_s"] for r in runs),
                  "median_cpu_s": statistics.median(r["cpu_s"] for r in runs),
                  "median_own_cpu_s": statistics.median(r["own_cpu_s"] for r in runs)})
        if "base" in times:
            ratio = {what: [b[what] / n[what] for b, n in zip(times["base"], times["new"], strict=True)]
                     for what in ("wall_s", "cpu_s")}
            emit({"ratio base/new": {what: {"median": round(statistics.median(v), 3), "min": round(min(v), 3),
                                            "max": round(max(v), 3)} for what, v in ratio.items()}})
        if args.profile is not None:
            emit({"side": "new", "run": "profile",
                  **run_child(sides["new"], corpus, Path(tmp) / "idx-new", "profile", str(args.profile.resolve()))})


if __name__ == "__main__":
    main()
