"""Scratch files: renamed into place or removed, named after their writer, swept only when stale and
only while the caller may write."""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from sleuth.store import scratch


def test_replacing_renames_into_place_or_leaves_nothing(tmp_path: Path) -> None:
    final = tmp_path / "tfidf.cache.npz"
    final.write_text("old")
    with scratch.replacing(final) as tmp:
        assert tmp.parent == tmp_path and scratch.writer_pid(tmp.name) == os.getpid()
        assert tmp.name.startswith("tfidf.cache.npz.") and tmp.name.endswith(".tmp")
        tmp.write_text("new")
    assert final.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["tfidf.cache.npz"]
    with pytest.raises(OSError), scratch.replacing(final) as tmp:
        tmp.write_text("half")
        raise OSError(28, "No space left on device")
    assert final.read_text() == "new" and sorted(p.name for p in tmp_path.iterdir()) == ["tfidf.cache.npz"]


def test_sweep_removes_only_stale_files_and_only_when_allowed(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    dead = tmp_path / f"vectors.0123abcd.f32.{gone.pid}.89abcdef.tmp"
    mine = tmp_path / f"vectors.0123abcd.f32.{os.getpid()}.89abcdef.tmp"
    old, recent = tmp_path / "postings.tmp", tmp_path / "tfidf.cache.npzq1w2e3.tmp"
    other = tmp_path / "catalog.sqlite3"
    for path in (dead, mine, old, recent, other):
        path.write_text("x")
    past = time.time() - scratch.SCRATCH_STALE_S - 60
    os.utime(old, (past, past))
    os.utime(other, (past, past))
    assert sorted(p.name for p in scratch.stale_files(tmp_path)) == sorted([dead.name, old.name])

    @contextlib.contextmanager
    def refused() -> Iterator[bool]:
        yield False

    assert scratch.sweep(tmp_path, may_write=refused) == []
    assert dead.exists() and old.exists()
    assert sorted(p.name for p in scratch.sweep(tmp_path)) == sorted([dead.name, old.name])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([mine.name, recent.name, other.name])
    assert scratch.sweep(tmp_path) == []  # nothing left to sweep: nothing written


def test_index_globs_reach_every_scratch_file_of_an_index(tmp_path: Path) -> None:
    gone = subprocess.Popen(["true"])
    gone.wait()
    names = [f"tfidf.cache.npz.{gone.pid}.aa.tmp", f"postings/meta.json.{gone.pid}.bb.tmp",
             f"memory/p/decisions/2026-01-01-x.md.{gone.pid}.cc.tmp"]
    for name in names:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("x")
    (tmp_path / "memory" / "p" / "decisions" / "2026-01-01-x.md").write_text("a record")
    found = scratch.stale_files(tmp_path, scratch.INDEX_SCRATCH_GLOBS)
    assert sorted(p.relative_to(tmp_path).as_posix() for p in found) == sorted(names)
