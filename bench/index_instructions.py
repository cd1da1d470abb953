"""Instructions executed by lexical indexing (callgrind), robust to other jobs sharing the cores.

``python bench/index_instructions.py --src <checkout>/src [--src ...] [--corpus ../shared/data/scifact]
[--docs 1000]`` runs, for each checkout, ``Engine.index_records`` of the corpus's first ``--docs``
records (no model) under ``valgrind --tool=callgrind`` (PYTHONHASHSEED=0), and the same with no
record (imports, opening and closing the engine), and prints both counts, their difference (what
indexing the records costs) and each checkout's difference over the first one's. With
``--analysis``, the child runs only the analysis the indexer does (``block_fields`` of each text
with its title's terms) instead. Slow: about 50x the run's native time.
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
from pathlib import Path

_INDEX_CHILD = r"""
import gzip, json, sys, tempfile
from pathlib import Path
from sleuth.config import Config
from sleuth.engine import Engine, Record
import sleuth.ingest.parsers  # imported by an empty run too
n = int(sys.argv[2])
with gzip.open(sys.argv[1], "rt") as f:
    records = [Record(rel_path=d["_id"], text=d["text"], title=d.get("title", ""))
               for _, d in zip(range(n), map(json.loads, f))]
with Engine(Path(tempfile.mkdtemp()) / "idx", Config(model="none")) as e:
    e.index_records("p", records)
"""

_ANALYSIS_CHILD = r"""
import gzip, json, sys
import sleuth.text.analyze
A = sys.modules["sleuth.text.analyze"]
title_terms = getattr(A, "title_terms_of", A.analyze)
n = int(sys.argv[2])
with gzip.open(sys.argv[1], "rt") as f:
    docs = [d for _, d in zip(range(n), map(json.loads, f))]
for d in docs:
    A.block_fields(d["text"], title_terms(d.get("title", "")))
"""


def instructions(src: Path, child: str, corpus: Path, docs: int) -> int:
    """Instructions (callgrind's ``Ir``) of one child run with ``src`` first on the path."""
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONHASHSEED": "0"}
    out = subprocess.run(["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", sys.executable, "-c",
                          child, str(corpus), str(docs)], env=env, capture_output=True, text=True, check=True)
    found = re.search(r"Collected : (\d+)", out.stderr)
    if found is None:
        raise SystemExit(f"no instruction count from valgrind for {src}: {out.stderr[-500:]}")
    return int(found.group(1))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, action="append", required=True, help="src/ folder of a checkout")
    ap.add_argument("--corpus", type=Path, default=Path("../shared/data/scifact"))
    ap.add_argument("--docs", type=int, default=1000)
    ap.add_argument("--analysis", action="store_true", help="count the analysis alone")
    args = ap.parse_args()
    corpus = args.corpus / "corpus.jsonl.gz" if args.corpus.is_dir() else args.corpus
    child = _ANALYSIS_CHILD if args.analysis else _INDEX_CHILD
    first: int | None = None
    for src in args.src:
        empty = instructions(src, child, corpus, 0)
        full = instructions(src, child, corpus, args.docs)
        cost = full - empty
        first = cost if first is None else first
        print(f"{src}: {full:,} instructions with {args.docs} records, {empty:,} with none, difference {cost:,}"
              f" ({first / cost:.2f}x fewer than the first checkout)", flush=True)


if __name__ == "__main__":
    main()
