"""The code passes the project's linter and type checker (ruff and pyright, configured in pyproject.toml)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_ruff_clean() -> None:
    proc = subprocess.run([sys.executable, "-m", "ruff", "check", "src", "tests", "bench"], cwd=ROOT,
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_pyright_clean() -> None:
    # --pythonpath: the interpreter running the tests, whichever virtualenv holds it
    proc = subprocess.run([sys.executable, "-m", "pyright", "--pythonpath", sys.executable], cwd=ROOT,
                          capture_output=True, text=True, timeout=900)
    assert proc.returncode == 0 and "0 errors, " in proc.stdout, proc.stdout + proc.stderr
