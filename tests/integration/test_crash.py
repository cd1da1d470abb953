"""kill -9 of a real `sleuth index` at random points and while it embeds vectors: the index left
opens, answers, shows no partial document, and resumes to the same index as a clean run
(bench/kill_trials.py runs 20 and more trials on a larger corpus)."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path

from tests.integration.conftest import SHARED_DATA

TLDR = SHARED_DATA / "md-tldr" / "markdown.tar.gz"
SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "kill_trials.py"


def load_script():
    spec = importlib.util.spec_from_file_location("kill_trials", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_kill_trials(tmp_path: Path) -> None:
    assert TLDR.is_file(), f"test data missing: {TLDR}"
    kt = load_script()
    pages = kt.sample_tldr(TLDR, 30, seed=3)
    lines: list[str] = []
    # Random kill points in an update run and a fresh run (seed 6; lexical: fast), then a kill while embedding.
    lexical = {**os.environ, "SLEUTH_MODEL": "none"}
    results = kt.run_trials(pages, tmp_path / "lexical", trials=2, seed=6, env=lexical, log=lines.append,
                            check_update=False)
    default = {k: v for k, v in os.environ.items() if k != "SLEUTH_MODEL"}  # the default model: vectors on
    results += kt.run_trials(pages, tmp_path / "vectors", trials=0, seed=3, env=default, log=lines.append,
                             kill_when_embedding=1)
    assert len(results) == 3
    assert [t.problems for t in results] == [[]] * 3, "\n".join(lines)
    assert all(t.resumed_identical for t in results)
    assert [t.kind for t in results] == ["update", "fresh", "embed"]
    assert " 0 embedded" not in lines[-2]  # the clean index of the second run has vectors
    assert results[-1].phase.startswith(("embedding", "after writing")), results[-1].phase
