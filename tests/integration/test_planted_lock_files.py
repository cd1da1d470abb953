"""Lock files an index folder could come with (a cloned repository keeps symbolic links and can
hold a FIFO): sleuth never writes through a planted link, never waits on a FIFO, and says which file
to remove (found by an attack session: the holder's ``process PID (command)`` line overwrote the
link's target)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.conftest import run_cli


def _notes(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Ledger\n\nthe ledger notes\n", encoding="utf-8")
    return notes


@pytest.mark.parametrize("planted", ["symlink", "fifo", "folder"])
def test_a_planted_write_lock_is_refused_and_its_target_untouched(tmp_path: Path, planted: str) -> None:
    notes = _notes(tmp_path)
    index = tmp_path / "idx"
    run_cli("index", str(notes), "--index", str(index), "--project", "p")
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    lock = index / "write.lock"
    lock.unlink()
    if planted == "symlink":
        lock.symlink_to(victim)
    elif planted == "fifo":
        os.mkfifo(lock)
    else:
        lock.mkdir()
    (notes / "b.md").write_text("# Other\n\nmore notes\n", encoding="utf-8")
    proc = run_cli("index", str(notes), "--index", str(index), "--project", "p", check=False)
    assert proc.returncode != 0
    assert "write.lock is not a regular file" in proc.stderr and "remove it" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert victim.read_text(encoding="utf-8") == "precious\n"
    found = json.loads(run_cli("search", "ledger", "--index", str(index), "--format", "json").stdout)
    assert [hit["path"] for hit in found["hits"]] == ["a.md"]  # readers never take the lock
