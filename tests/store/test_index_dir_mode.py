"""A new index folder is private to its user (it holds the text of every indexed file); an existing
folder keeps its mode."""

from __future__ import annotations

import os
import stat
from pathlib import Path

from sleuth.config import Config
from sleuth.engine import Engine


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_index_folder_is_private_under_a_permissive_umask(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        notes = tmp_path / "notes"
        notes.mkdir()
        (notes / "a.md").write_text("# Secret\n\nThe launch code is swordfish.\n", encoding="utf-8")
        with Engine(tmp_path / "deep" / "idx", Config(model="none")) as engine:
            engine.index([notes], project="notes")
    finally:
        os.umask(old)
    assert _mode(tmp_path / "deep" / "idx") == 0o700
    assert _mode(tmp_path / "deep") == 0o755  # only the index folder itself is sleuth's to close


def test_an_existing_index_folder_keeps_its_mode(tmp_path: Path) -> None:
    shared = tmp_path / "shared-idx"
    shared.mkdir()
    shared.chmod(0o750)
    with Engine(shared, Config(model="none")):
        pass
    assert _mode(shared) == 0o750
