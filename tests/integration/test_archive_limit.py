"""A new user's trial: indexing a tar of 38,404 members read the first 10,000 and said "archive
holds more than the 10000 member limit; the rest was not read", naming no way to raise the limit.
The limit is the setting ``archive_max_members`` (config.toml or $SLEUTH_ARCHIVE_MAX_MEMBERS, at
most 100,000), and the report says the limit and how to raise it. Real CLI runs on a real tar."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

from tests.integration.conftest import run_cli

ENV = {"SLEUTH_MODEL": "none"}
RAISE = "raise archive_max_members in <index>/config.toml or $SLEUTH_ARCHIVE_MAX_MEMBERS, up to 100,000"


def _notes_with_a_tar(tmp_path: Path, members: int) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    with tarfile.open(notes / "bundle.tar.gz", "w:gz") as tf:
        for i in range(members):
            data = f"# Page {i}\n\nHarbour tide note {i}.\n".encode()
            info = tarfile.TarInfo(f"pages/p{i:02d}.md")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return notes


def _index(notes: Path, index: Path, env: dict[str, str], check: bool = True) -> tuple[int, dict, str]:
    proc = run_cli("index", str(notes), "--project", "notes", "--index", str(index), "--format", "json",
                   env=env, check=check)
    return proc.returncode, json.loads(proc.stdout) if proc.returncode == 0 else {}, proc.stderr


def test_the_member_limit_is_a_setting_the_report_names(tmp_path: Path) -> None:
    notes = _notes_with_a_tar(tmp_path, 12)
    index = tmp_path / "idx"
    index.mkdir()
    (index / "config.toml").write_text("archive_max_members = 5\n", encoding="utf-8")
    _, report, _ = _index(notes, index, ENV)
    assert report["added"] == 5
    assert report["skipped"] == [{"path": "bundle.tar.gz", "reason": (
        "archive partly indexed, its first 5 members only (it holds more than the 5 member limit; the others were"
        " not read, not counted); " + RAISE)}]
    text = run_cli("index", str(notes), "--project", "notes", "--index", str(index), env=ENV).stdout.splitlines()
    assert ("    1 archive partly indexed, its first 5 members only (it holds more than the 5 member limit; the"
            f" others were not read, not counted); {RAISE} (bundle.tar.gz)") in text  # keeps how to raise it
    _, raised, _ = _index(notes, index, {**ENV, "SLEUTH_ARCHIVE_MAX_MEMBERS": "12"})  # the variable wins
    assert (raised["added"], raised["unchanged"], raised["skipped"]) == (7, 5, [])


def test_bad_member_limits_are_refused_naming_the_setting(tmp_path: Path) -> None:
    notes = _notes_with_a_tar(tmp_path, 2)
    index = tmp_path / "idx"
    for value in ("0", "100001", "lots", "-3"):
        code, _, err = _index(notes, index, {**ENV, "SLEUTH_ARCHIVE_MAX_MEMBERS": value}, check=False)
        assert (code, err.strip()) == (2, f"error: archive_max_members must be a whole number of members from 1 to"
                                          f" 100,000, got {value!r} (settings from $SLEUTH_MODEL and"
                                          " $SLEUTH_ARCHIVE_MAX_MEMBERS)")
    _, ok, _ = _index(notes, index, {**ENV, "SLEUTH_ARCHIVE_MAX_MEMBERS": "100000"})
    assert (ok["added"], ok["skipped"]) == (2, [])
