"""Fixtures for integration tests: a real sample of the Hugo docs, indexed by the real CLI."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tarfile
from collections.abc import Callable
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


def signalled(command: list[str], env: dict[str, str], ready: Callable[[subprocess.Popen[str]], None],
              sig: int = signal.SIGINT) -> tuple[int, str, str]:
    """Run ``command`` (``env``: its whole environment) with SIGINT as a terminal has it (a suite run
    in the background ignores it), send it ``sig`` once ``ready(proc)`` has returned, and return its
    exit status, stdout and stderr (whole, but for what ``ready`` read). A safety net of two minutes
    for it to stop; killed if it does not."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        ready(proc)
        proc.send_signal(sig)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


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
