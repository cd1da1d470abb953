"""A new index folder is private to its user (it holds the text of every indexed file); an existing
folder keeps its mode."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

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


def test_a_folder_of_another_user_is_named_as_such(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An attack round's finding: indexing into a folder another user made (and may read) said
    nothing. ``sleuth index`` now warns, as git warns of a repository another user owns."""
    from sleuth.store import folder

    index = tmp_path / "idx"
    index.mkdir()
    assert folder.foreign_owner(index) is None
    owner = os.stat(index).st_uid
    monkeypatch.setattr(folder.os, "geteuid", lambda: owner + 1)
    assert folder.foreign_owner(index) == (
        f"the index folder {index} belongs to another user (uid {owner}), who can read the text of what is "
        "indexed into it and change what searches of it return; index into a folder of your own (--index DIR) "
        "unless you trust that user")


def test_sleuth_index_warns_of_a_folder_another_user_owns(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("giving a folder to another user needs root (CI runs as root)")
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha\n", encoding="utf-8")
    theirs = tmp_path / "theirs"
    theirs.mkdir()
    os.chown(theirs, 65534, 65534)
    env = {**os.environ, "SLEUTH_MODEL": "none"}
    proc = subprocess.run([sys.executable, "-m", "sleuth.cli", "index", str(notes), "--index", str(theirs)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0, proc.stderr
    assert f"warning: the index folder {theirs} belongs to another user (uid 65534)" in proc.stderr
    mine = tmp_path / "mine"
    proc = subprocess.run([sys.executable, "-m", "sleuth.cli", "index", str(notes), "--index", str(mine)],
                          capture_output=True, text=True, env=env, timeout=300, check=False)
    assert proc.returncode == 0 and "another user" not in proc.stderr
