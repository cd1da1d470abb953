"""How long a change takes to reach search under `sleuth watch`: edit → visible, delete → gone,
rename → found under the new path.

Runs `sleuth watch` on an existing index in a subprocess, changes files of one of its roots
(seeded choice), and polls a search in this process (a long-lived reader, as an MCP server is)
until the change shows, for the bm25 lane alone and for the default lanes. Every change is undone
at the end. Prints one line per change and the medians.

Usage: python bench/watch_latency.py --index IDX --root ROOT [--changes 10] [--seed 1]
       (ROOT: one of the index's roots, e.g. the 38,404 tldr pages indexed with `sleuth index`)
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import time
from pathlib import Path

from sleuth.engine import Engine

POLL_S = 0.02
TIMEOUT_S = 120.0


def word(rng: random.Random) -> str:
    return "zq" + "".join(rng.choice("bcdfghjklmnpqrstvwxz") for _ in range(10))


def wait_for(engine: Engine, query: str, want: str | None, lanes: list[str] | None) -> float:
    """Seconds until the top hit of ``query`` is ``want`` (None: no hit at all)."""
    started = time.perf_counter()
    while time.perf_counter() - started < TIMEOUT_S:
        hits = engine.search(query, lanes=lanes, limit=1).hits
        if (hits[0].path if hits else None) == want:
            return time.perf_counter() - started
        time.sleep(POLL_S)
    raise TimeoutError(f"{query!r} -> {want!r} not seen in {TIMEOUT_S} s")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--index", type=Path, required=True)
    parser.add_argument("--root", type=Path, required=True)
    parser.add_argument("--changes", type=int, default=10)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    root = args.root.resolve()
    files = sorted(p for p in root.rglob("*.md") if ".sleuth" not in p.parts)
    rng = random.Random(args.seed)
    watch = subprocess.Popen([sys.executable, "-m", "sleuth.cli", "watch", "--index", str(args.index)],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    started = time.perf_counter()
    line = watch.stderr.readline() if watch.stderr else ""
    print(f"{line.strip()} (first scan of every root included: {time.perf_counter() - started:.1f} s)")
    undo: list[tuple[Path, bytes | None, Path | None]] = []  # (path, original bytes, renamed to)
    results: dict[str, list[float]] = {}
    try:
        with Engine(args.index) as engine:
            engine.search("warm up")  # lanes loaded once, as in a running server
            for i in range(args.changes):
                kind = ("edit", "edit", "delete", "rename")[i % 4]
                path = rng.choice(files)
                files.remove(path)
                rel = path.relative_to(root).as_posix()
                for lanes, label in ((["bm25"], "bm25"), (None, "default lanes")):
                    token = word(rng)  # a made-up word found nowhere else
                    original = path.read_bytes()
                    if kind == "edit":
                        path.write_bytes(original + f"\n- {token}\n".encode())
                        undo.append((path, original, None))
                        took = wait_for(engine, token, rel, lanes)
                    elif kind == "delete":
                        marker = token
                        path.write_bytes(original + f"\n- {marker}\n".encode())
                        undo.append((path, original, None))
                        wait_for(engine, marker, rel, lanes)
                        path.unlink()
                        took = wait_for(engine, marker, None, lanes)
                    else:
                        path.write_bytes(original + f"\n- {token}\n".encode())
                        undo.append((path, original, None))
                        wait_for(engine, token, rel, lanes)
                        new = path.with_name(f"renamed-{i}-{label[0]}.md")
                        path.rename(new)
                        undo.append((path, original, new))
                        took = wait_for(engine, token, new.relative_to(root).as_posix(), lanes)
                        new.rename(path)
                        undo.pop()
                    print(f"{kind:<6} {rel}: visible to {label} after {took:.2f} s")
                    results.setdefault(f"{kind} ({label})", []).append(took)
                    if kind == "delete":
                        path.write_bytes(original)
    finally:
        for path, original, renamed in reversed(undo):
            if renamed is not None and renamed.exists():
                renamed.unlink()
            if original is not None:
                path.write_bytes(original)
        time.sleep(1.0)  # let the watcher index the restored files
        watch.terminate()
        watch.wait(timeout=60)
    for key, values in sorted(results.items()):
        print(f"{key}: median {statistics.median(values):.2f} s, max {max(values):.2f} s over {len(values)}")
    print(f"machine: {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
