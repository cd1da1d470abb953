"""Ctrl-C stops `sleuth index` and `sleuth embed` with a word on what stays, exit status 130 (click
said only "Aborted!", a new user's trial found). Real processes; the run is held on a file by fault
injection, so the signal lands while it works (no guessed delay)."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable
from pathlib import Path

from tests.integration.conftest import SLEUTH


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)  # a suite started in the background ignores SIGINT


def _interrupted(command: list[str], env: dict[str, str], ready: Callable[[str], bool],
                 skip_lines: bool = False) -> tuple[int, str, str]:
    """Run ``command``, send it SIGINT once a line of its stderr is ``ready`` (the first line must be,
    unless ``skip_lines``); (exit status, stdout, the rest of stderr). A safety net of two minutes for
    it to stop (its hold would last ten)."""
    proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
                            preexec_fn=_default_sigint)
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        while skip_lines and line and not ready(line):
            line = proc.stderr.readline()
        assert ready(line), line
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return proc.returncode, out, err


def test_ctrl_c_during_sleuth_index_says_what_stays_and_exits_130(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nwombats\n", encoding="utf-8")
    (root / "b.md").write_text("# Beta\n\nnumbats\n", encoding="utf-8")
    env = {**os.environ, "SLEUTH_MODEL": "none", "SLEUTH_FAULT_SLOW_FILE": "b.md=600000",
           "SLEUTH_FILE_BUDGET_S": "900", "SLEUTH_PROGRESS_INTERVAL_S": "0"}
    # a progress line: the run is under way (the held file would keep it 600 s)
    code, out, err = _interrupted([*SLEUTH, "index", str(root), "--index", str(tmp_path / "idx")], env,
                                  lambda line: line.startswith("sleuth index:"))
    assert (code, out) == (130, "")
    assert err.rstrip().splitlines()[-1] == ("sleuth index: interrupted; what it wrote stays indexed (and the vectors "
                                             "it made): run the same command again to go on")


def test_ctrl_c_during_sleuth_embed_says_the_vectors_stay_and_exits_130(tmp_path: Path) -> None:
    from sleuth.background import HOLD_AFTER_ENV
    from sleuth.engine import Engine

    root, index = tmp_path / "notes", tmp_path / "idx"
    root.mkdir()
    for i in range(3):
        (root / f"n{i}.md").write_text(f"# Note {i}\n\nThe owl {i} hunts at dusk.\n", encoding="utf-8")
    with Engine(index) as engine:
        engine.index([root], project="notes", embed=False)
    env = {**os.environ, HOLD_AFTER_ENV: "1", "SLEUTH_PROGRESS_INTERVAL_S": "0"}
    # the first committed batch's count: it holds there until the process is stopped
    code, out, err = _interrupted([*SLEUTH, "embed", "--index", str(index)], env, lambda line: "embedding" in line,
                                  skip_lines=True)
    assert (code, out) == (130, "")
    assert err.rstrip().splitlines()[-1] == ("sleuth embed: interrupted; the vectors made so far are kept: run "
                                             "`sleuth embed` again to go on")
