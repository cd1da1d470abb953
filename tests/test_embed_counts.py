"""Embedding progress counts blocks, as ``sleuth status`` and ``to_embed`` do: blocks of the same
text share one vector, and the worker's state file once counted distinct texts against blocks (a
new user's trial: ``embedded`` stopped short of ``to_embed`` when the embedding was done). Real
catalog, real model."""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth import background
from sleuth.background import EMBED_STATE_FILE, embed_now, read_state
from sleuth.config import Config
from sleuth.engine import Engine


def test_blocks_sharing_a_text_are_counted_as_the_blocks_they_are(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(4):  # the same page copied: four blocks, one embedding text
        (notes / f"copy{i}.md").write_text("# Release checklist\n\nTag, build, publish the notes.\n",
                                           encoding="utf-8")
    (notes / "other.md").write_text("# Other\n\nSomething else entirely.\n", encoding="utf-8")
    with Engine(tmp_path / "idx") as engine:
        report = engine.index([notes], project="notes", embed=False)
        assert report.blocks == 5
        seen: list[tuple[int, int]] = []
        assert engine.embed_pending(lambda done, total: seen.append((done, total))) == 5
        assert seen[-1] == (5, 5)
        (notes / "copy4.md").write_text("# Release checklist\n\nTag, build, publish the notes.\n", encoding="utf-8")
        (notes / "new.md").write_text("# New\n\nA page of its own.\n", encoding="utf-8")
        (notes / "new2.md").write_text("# New\n\nA page of its own.\n", encoding="utf-8")
        engine.index([notes], project="notes", embed=False)  # copy4 shares a cached vector; new, new2 do not
        assert embed_now(engine) == 2
        state = read_state(engine.index_dir)
        assert state is not None
        assert (state["state"], state["embedded"], state["to_embed"]) == ("done", 2, 2)


def test_a_state_file_nested_too_deeply_reads_as_no_state(tmp_path: Path) -> None:
    """Attack session 32 (low): an embed.state.json of arrays nested past the JSON decoder's limit
    raised RecursionError out of read_state (sleuth status, doctor), where a malformed one reads as
    no state."""
    (tmp_path / "embed.state.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    assert read_state(tmp_path) is None


def test_embedding_progress_reads_the_state_file_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`sleuth status`'s embedding progress read the state file twice -- once to tell whether a
    worker was starting, once for its pid and rate -- so a worker rewriting it in between (here:
    its start record replaced by a failed run's, written after the first reading) gave an answer
    mixing the two ("running" with the failed run's empty rate). Now one reading serves the whole answer."""
    (tmp_path / "idx").mkdir()
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "embed", "--worker", "--index",
                               str(tmp_path / "idx")])
    with Engine(tmp_path / "idx", Config(model="none")) as engine, _ended(worker):
        state_file = engine.index_dir / EMBED_STATE_FILE
        state_file.write_text(json.dumps({  # what start_worker writes for a worker still starting
            "pid": worker.pid, "model": None, "state": "starting", "started_at": "2026-01-01T00:00:00Z",
            "started_s": time.time(), "embedded": 0, "to_embed": None, "rate_blocks_per_s": None,
            "error": None}), encoding="utf-8")
        reads: list[dict[str, Any] | None] = []

        def read_then_rewrite(index_dir: Path) -> dict[str, Any] | None:
            reads.append(read_state(index_dir))
            state_file.write_text(json.dumps({  # the worker's record, written right after this reading
                "pid": worker.pid, "model": "m", "state": "failed", "embedded": 0, "to_embed": 2,
                "rate_blocks_per_s": None, "error": "boom"}), encoding="utf-8")
            return reads[-1]

        monkeypatch.setattr(background, "read_state", read_then_rewrite)
        progress = background.embedding_progress(engine, "m", 1, 3)
    assert len(reads) == 1
    assert progress == {"state": "running", "embedded": 1, "total": 3, "pid": worker.pid, "starting": True}


@contextlib.contextmanager
def _ended(proc: subprocess.Popen[bytes]) -> Iterator[None]:
    try:
        yield
    finally:
        proc.kill()
        proc.wait()


def _start_record(index_dir: Path, pid: int) -> None:
    """The record start_worker writes for a worker still starting, naming process ``pid``."""
    (index_dir / EMBED_STATE_FILE).write_text(json.dumps({
        "pid": pid, "model": None, "state": "starting", "started_at": "2026-01-01T00:00:00Z",
        "started_s": time.time(), "embedded": 0, "to_embed": None, "rate_blocks_per_s": None,
        "error": None}), encoding="utf-8")


def test_a_start_record_naming_a_process_that_is_no_worker_is_not_a_worker_starting(tmp_path: Path) -> None:
    """Attack round of stop 37: an embed.state.json saying "starting" with any live pid (here this
    test's own process) made status report a worker starting, and held back `sleuth index`'s worker,
    for up to EMBED_START_GRACE_S (120 s). /proc tells the process is no embedding worker of this index."""
    _start_record(tmp_path, os.getpid())
    assert background.worker_running(tmp_path) is False
    (tmp_path / "other").mkdir()
    for args in (["--index", str(tmp_path / "other")], [], ["--index"], ["--index", ""]):
        # the worker of another index; one naming none; --index last (attack round 2 of stop 38: the
        # empty string after cmdline's last NUL was read as its value, the working folder); an empty one
        other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "embed", "--worker", *args],
                                 cwd=tmp_path)
        with _ended(other):
            _start_record(tmp_path, other.pid)
            assert background.worker_running(tmp_path) is False
    worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "embed", "--worker", "--index",
                               "."], cwd=tmp_path)  # a relative --index: of its working folder
    with _ended(worker):
        _start_record(tmp_path, worker.pid)
        assert background.worker_running(tmp_path) is True
