"""The cost of a root per file: ``sleuth index notes/*.md`` (each file given is a root of its own).

``python bench/many_roots.py [--files 1500] [--rounds 3] [--base-src <checkout>/src]``

writes ``--files`` small markdown notes into one temporary folder, then, in each round and for each
checkout in turn (base first, then this one), runs ``python -m sleuth.cli index <every note>
--project many --index <fresh folder>`` twice in fresh processes with ``SLEUTH_MODEL=none``: the
first run (every file added) and a second, no-op run (every file unchanged). Prints one JSON line per
run (checkout, run, wall seconds, ``/proc/loadavg``), then the median of each and, with a base, the
median per-round ratios base / this (above 1: this checkout is faster).

Each run gets its own HOME, XDG folders and broker folder under the temporary folder, so nothing of
the user's is read or written. The notes' text is fixed, so every run indexes the same input.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: The text of note ``i`` (about 50 bytes: the runs time per-root work, not parsing).
NOTE_TEXT = "# Note {i}\n\nSome text about topic {i} and rotating the signing keys.\n"


def loadavg() -> str:
    """``/proc/loadavg``'s first three figures, or ``""`` where there is none."""
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return ""


def timed_index(src: Path, files: list[str], work: Path, index: Path) -> float:
    """Wall seconds of one ``sleuth index`` of ``files`` into ``index`` with the code at ``src``.

    Raises:
        subprocess.CalledProcessError: the command failed (its stderr is shown).
    """
    env = {**os.environ, "PYTHONPATH": str(src), "SLEUTH_MODEL": "none", "HOME": str(work / "home"),
           "XDG_CONFIG_HOME": str(work / "cfg"), "XDG_DATA_HOME": str(work / "data"),
           "XDG_CACHE_HOME": str(work / "cache"), "SLEUTH_BROKER_DIR": str(work / "broker")}
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-m", "sleuth.cli", "index", *files, "--project", "many",
                           "--index", str(index)], env=env, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if done.returncode != 0:
        sys.stderr.write(done.stderr)
        done.check_returncode()
    return wall


def main() -> None:
    """Run the rounds and print their lines (see the module docstring)."""
    parser = argparse.ArgumentParser(description="The cost of a root per file (see the module docstring).")
    parser.add_argument("--files", type=int, default=1500)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--base-src", type=Path, default=None)
    args = parser.parse_args()
    checkouts = {"this": Path(__file__).resolve().parent.parent / "src"}
    if args.base_src is not None:
        checkouts = {"base": args.base_src.resolve(), **checkouts}
    with tempfile.TemporaryDirectory(prefix="sleuth-many-roots-") as tmp:
        work = Path(tmp)
        notes = work / "notes"
        notes.mkdir()
        files = []
        for i in range(args.files):
            path = notes / f"n{i:05d}.md"
            path.write_text(NOTE_TEXT.format(i=i), encoding="utf-8")
            files.append(str(path))
        walls: dict[tuple[str, str], list[float]] = {}
        for r in range(args.rounds):
            for name, src in checkouts.items():
                index = work / f"idx-{name}-{r}"
                for run in ("first", "no-op"):
                    wall = timed_index(src, files, work, index)
                    walls.setdefault((name, run), []).append(wall)
                    print(json.dumps({"round": r, "checkout": name, "run": run, "files": args.files,
                                      "wall_s": round(wall, 3), "loadavg": loadavg()}), flush=True)
        for (name, run), values in walls.items():
            print(json.dumps({"checkout": name, "run": run, "median_wall_s": round(statistics.median(values), 3)}))
        if "base" in checkouts:
            for run in ("first", "no-op"):
                ratios = [b / t for b, t in zip(walls["base", run], walls["this", run], strict=True)]
                print(json.dumps({"run": run, "median_ratio_base_over_this": round(statistics.median(ratios), 2),
                                  "range": [round(min(ratios), 2), round(max(ratios), 2)]}))


if __name__ == "__main__":
    main()
