"""docs/EVAL.md is what `make eval` writes: after its generated tables, exactly the hand-written
history kept in bench/eval_table.py (``HISTORY``) and the grids of bench/fusion_grids.md. A section
written into docs/EVAL.md alone would be lost at the next run (two were, at the 2026-12-02 rerun)."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_eval_doc_history_is_kept_by_the_generator() -> None:
    sys.path.insert(0, str(ROOT / "bench"))
    try:
        spec = importlib.util.spec_from_file_location("eval_table_doc_check", ROOT / "bench" / "eval_table.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(ROOT / "bench"))
    doc = (ROOT / "docs" / "EVAL.md").read_text(encoding="utf-8")
    history = "\n".join(module.HISTORY)
    grids = (ROOT / "bench" / "fusion_grids.md").read_text(encoding="utf-8")
    start = doc.index(module.HISTORY[0])
    assert doc[start:] == history + "\n" + grids
