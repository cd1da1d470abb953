"""Instructions a warm search executes (callgrind), and digests proving two checkouts answer alike.

``python bench/search_instructions.py INDEX QUERIES.json --src <checkout>/src [--src ...]
[--sets bm25 hybrid hybrid-cached] [--warmup 20] [--count 50]`` runs, for each checkout and lane
set, a child process under ``valgrind --tool=callgrind`` (``PYTHONHASHSEED=0``, one onnxruntime
thread: sleuth.embed.ORT_THREADS) that opens the engine on INDEX, warms its lanes, runs one search
(lazy loads), then ``--warmup`` queries (the first ones of QUERIES.json), then ``--count`` more
(the next ones), each ``limit=10`` with snippets on. The same child with no counted query is run
too: a search's count is the difference divided by ``--count`` (in millions, per checkout, and as
a ratio over the first checkout). Lane sets: ``bm25`` (the bm25 lane alone), ``hybrid`` (the
default lanes; each counted query embeds its text), ``hybrid-cached`` (the default lanes, every
query of QUERIES.json embedded before the warm-up: the search without the embedding). Unaffected by other jobs on
the cores; about 50x slower than the searches themselves.

With ``--digests``, no valgrind: for each checkout, each lane set's ``--digest-queries`` first
queries are searched with ``explain`` on, and the SHA-256 of each whole response (JSON, keys
sorted, ``took_ms`` left out) is taken; prints one digest over them per checkout and lane set, and
how many queries answer differently from the first checkout (0: identical answers, scores,
traces and snippets). The 100k index and queries of ``bench/scale.py --sizes 100000 --keep
--workdir DIR`` (``DIR/idx-100000``, ``DIR/queries.json``) are the ones of docs/BENCH.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

#: Lane sets by name: (lanes, whether every query is embedded before the warm-up).
LANE_SETS: dict[str, tuple[list[str] | None, bool]] = {
    "bm25": (["bm25"], False), "hybrid": (None, False), "hybrid-cached": (None, True),
}

_COUNT_CHILD = r"""
import json, sys
from sleuth.engine import Engine
from sleuth.types import SearchRequest
index, queries, lanes, cached, warmup, count = sys.argv[1], json.load(open(sys.argv[2])), json.loads(sys.argv[3]), \
    sys.argv[4] == "1", int(sys.argv[5]), int(sys.argv[6])
run = queries[: warmup + count]
engine = Engine(index)
vector = lanes is None or "vector" in lanes
engine.warm_lanes(vectors=vector)
engine.search(SearchRequest(query=queries[-1], limit=10, lanes=lanes))
if cached:
    engine.lanes["vector"].embed_queries(queries)  # every query, whatever the count: the same work in both runs
for q in run:
    if vector and not cached:
        engine.lanes["vector"].forget_query_vectors()  # each query embeds its text
    engine.search(SearchRequest(query=q, limit=10, lanes=lanes))
engine.close()
"""

_DIGEST_CHILD = r"""
import hashlib, json, sys
import sleuth
from sleuth.engine import Engine
from sleuth.types import SearchRequest
index, queries, sets, n = sys.argv[1], json.load(open(sys.argv[2])), json.loads(sys.argv[3]), int(sys.argv[4])
engine = Engine(index)
engine.warm_lanes()
out = {"sleuth": sleuth.__file__}
for name, lanes in sets.items():
    digests = []
    for q in queries[:n]:
        body = engine.search(SearchRequest(query=q, limit=10, lanes=lanes, explain=True)).model_dump(mode="json")
        del body["took_ms"]
        digests.append(hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest())
    out[name] = digests
engine.close()
print(json.dumps(out))
"""


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}


def instructions(src: Path, index: Path, queries: Path, name: str, warmup: int, count: int) -> int:
    """Instructions (callgrind's ``Ir``, every thread) of one count child with ``src`` first on the path.

    Raises:
        SystemExit: valgrind printed no count (the child failed).
    """
    lanes, cached = LANE_SETS[name]
    proc = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
                           _COUNT_CHILD, str(index), str(queries), json.dumps(lanes), "1" if cached else "0",
                           str(warmup), str(count)], env=_env(src), capture_output=True, text=True)
    found = re.search(r"Collected : (\d+)", proc.stderr)
    if proc.returncode != 0 or found is None:
        raise SystemExit(f"no instruction count from valgrind for {src} ({name}): {proc.stderr[-2000:]}")
    return int(found.group(1))


def digests(src: Path, index: Path, queries: Path, sets: list[str], n: int) -> dict[str, list[str]]:
    """Per lane set, the SHA-256 of each of the first ``n`` queries' responses (``took_ms`` left out)."""
    chosen = {name: LANE_SETS[name][0] for name in dict.fromkeys(s.removesuffix("-cached") for s in sets)}
    proc = subprocess.run([sys.executable, "-c", _DIGEST_CHILD, str(index), str(queries), json.dumps(chosen), str(n)],
                          env=_env(src), capture_output=True, text=True, check=True)
    out = json.loads(proc.stdout)
    if not out.pop("sleuth").startswith(str(src.resolve())):
        raise SystemExit(f"the child did not import sleuth from {src}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("index", type=Path, help="index folder")
    ap.add_argument("queries", type=Path, help="JSON list of query strings")
    ap.add_argument("--src", type=Path, action="append", required=True, help="src/ folder of a checkout")
    ap.add_argument("--sets", nargs="+", choices=list(LANE_SETS), default=["bm25", "hybrid"])
    ap.add_argument("--warmup", type=int, default=20, help="uncounted queries before the counted ones")
    ap.add_argument("--count", type=int, default=50, help="counted queries")
    ap.add_argument("--digests", action="store_true", help="compare the answers instead of counting")
    ap.add_argument("--digest-queries", type=int, default=100)
    args = ap.parse_args()
    if args.digests:
        first: dict[str, list[str]] | None = None
        for src in args.src:
            got = digests(src, args.index, args.queries, args.sets, args.digest_queries)
            first = first or got
            for name, ds in got.items():
                differ = sum(a != b for a, b in zip(first[name], ds, strict=True))
                total = hashlib.sha256("".join(ds).encode()).hexdigest()
                print(f"{src} {name}: {len(ds)} responses, digest {total[:16]},"
                      f" {differ} differ from the first checkout", flush=True)
        return
    base: dict[str, float] = {}
    for src in args.src:
        for name in args.sets:
            empty = instructions(src, args.index, args.queries, name, args.warmup, 0)
            full = instructions(src, args.index, args.queries, name, args.warmup, args.count)
            per = (full - empty) / args.count / 1e6
            base.setdefault(name, per)
            print(f"{src} {name}: {per:.3f} M instructions a search ({full:,} with {args.count} counted queries,"
                  f" {empty:,} without; {base[name] / per:.3f}x fewer than the first checkout)", flush=True)


if __name__ == "__main__":
    main()
