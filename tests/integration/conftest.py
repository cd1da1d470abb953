"""Fixtures for integration tests: a real sample of the Hugo docs, indexed by the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

SHARED_DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
HUGO_TAR = SHARED_DATA / "md-hugo-docs" / "markdown.tar.gz"
#: Folders of the Hugo docs copied into the sample corpus (39 real pages).
SAMPLE_PREFIXES = ("content/en/functions/os/", "content/en/render-hooks/", "content/en/content-management/")
SLEUTH = [sys.executable, "-m", "sleuth.cli"]


def run_cli(*args: str, cwd: Path | None = None, check: bool = True,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the real `sleuth` command line in a subprocess (``env``: extra environment variables)."""
    full_env = {**os.environ, **(env or {})}
    proc = subprocess.run([*SLEUTH, *args], capture_output=True, text=True, cwd=cwd, timeout=300, env=full_env)
    if check and proc.returncode != 0:
        raise AssertionError(f"sleuth {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc


@pytest.fixture(scope="session")
def hugo_sample(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder with a real sample of the Hugo documentation (markdown with front matter)."""
    assert HUGO_TAR.is_file(), f"test data missing: {HUGO_TAR}"
    root = tmp_path_factory.mktemp("hugo")
    with tarfile.open(HUGO_TAR) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.startswith(SAMPLE_PREFIXES)]
        tar.extractall(root, members=members, filter="data")
    return root / "content" / "en"


@pytest.fixture(scope="session")
def hugo_index(hugo_sample: Path, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The sample indexed by `sleuth index` into its own index folder (project "hugo")."""
    index = tmp_path_factory.mktemp("index") / "idx"
    run_cli("index", str(hugo_sample), "--project", "hugo", "--index", str(index))
    return index
