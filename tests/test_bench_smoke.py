"""The benchmark (bench/run.py) runs end to end on tiny sizes and prints its tables."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from sleuth.lanes.vector import HNSW_EXPANSION_SEARCH

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("SLEUTH_SHARED_DATA", ROOT.parent / "shared" / "data"))

EXPECTED_ROWS = [
    "sleuth lexical (index_records)", "sleuth lexical (index folder)", "sleuth + embeddings fp32",
    "bm25s", "sqlite-fts5", "rank-bm25", "numpy exact",
    "bm25", "tfidf", "index", "vector (cached query vector)", "lexical fusion (bm25+tfidf+index)",
    "hybrid (default lanes)", "lexical (--lanes bm25,tfidf,index)",
    f"{HNSW_EXPANSION_SEARCH} (engine)",
    "cold `sleuth search`", "ANN recall@10",
]


def test_bench_smoke(tmp_path: Path) -> None:
    assert (DATA / "scifact").is_dir() and (DATA / "md-tldr").is_dir(), (
        f"shared data not found at {DATA} (set SLEUTH_SHARED_DATA)")
    out = tmp_path / "BENCH.md"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "run.py"), "--smoke", "--data", str(DATA), "--out", str(out),
         "--workdir", str(tmp_path / "work")],
        capture_output=True, text=True, timeout=1800, cwd=tmp_path,  # a safety net only
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    for name in EXPECTED_ROWS:
        assert name in proc.stdout, f"row {name!r} missing from the printed table"
    for title in ("Indexing", "Warm query latency", "Cold", "ANN recall@10", "Targets"):
        assert title in proc.stdout
    assert "failed" not in proc.stderr, proc.stderr[-3000:]
    report = out.read_text(encoding="utf-8")
    assert report.startswith("# Performance") and "SMOKE RUN" in report
    assert "hybrid (default lanes)" in report and "## Targets from the issue" in report
