"""Nothing outside the roots is read: symlinks judged against the roots, files opened without
following links, checked to be the file the walker listed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sleuth.ingest.confine import (
    LINK_OUTSIDE_REASON,
    ConfinementError,
    FileTooLarge,
    Roots,
    confined_path,
    link_reason,
    open_file,
    read_file,
)


def test_roots_contain_their_files_and_nothing_else(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs-old").mkdir()
    (tmp_path / "one.md").write_text("x")
    roots = Roots([tmp_path / "docs", tmp_path / "one.md"])
    assert roots.contains(str(tmp_path / "docs"))
    assert roots.contains(str(tmp_path / "docs" / "a" / "b.md"))
    assert roots.contains(str(tmp_path / "one.md"))
    assert not roots.contains(str(tmp_path / "docs-old" / "a.md"))  # a name that starts like a root
    assert not roots.contains(str(tmp_path / "one.md.bak"))
    assert not roots.contains(str(tmp_path))


def test_a_root_named_through_a_symlink_is_its_target(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "alias").symlink_to(tmp_path / "real", target_is_directory=True)
    assert Roots([tmp_path / "alias"]).contains(str(tmp_path / "real" / "x.md"))


def test_link_reasons(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "index.md").write_text("x")
    (root / "sub" / "README.md").symlink_to("index.md")
    (root / "passwd").symlink_to("/etc/passwd")
    roots = Roots([root])
    assert link_reason(root / "passwd", roots) == LINK_OUTSIDE_REASON
    assert link_reason(root / "sub" / "README.md", roots) == (
        "symlink to sub/index.md: each file is indexed once, under its own path")


def test_open_file_refuses_links_fifos_and_other_files(tmp_path: Path) -> None:
    (tmp_path / "a.md").write_text("alpha")
    (tmp_path / "b.md").write_text("beta")
    (tmp_path / "link.md").symlink_to(tmp_path / "a.md")
    os.mkfifo(tmp_path / "fifo")
    st = os.stat(tmp_path / "a.md")
    fd = open_file(tmp_path / "a.md", (st.st_dev, st.st_ino), Roots([tmp_path]))
    assert os.read(fd, 100) == b"alpha"
    os.close(fd)
    with pytest.raises(ConfinementError, match="symlink"):
        open_file(tmp_path / "link.md")
    with pytest.raises(ConfinementError, match="not a regular file"):
        open_file(tmp_path / "fifo")  # O_NONBLOCK: opening a FIFO without a writer does not hang
    with pytest.raises(ConfinementError, match="replaced"):
        open_file(tmp_path / "b.md", (st.st_dev, st.st_ino))
    with pytest.raises(ConfinementError, match="outside the project's roots"):
        open_file(tmp_path / "a.md", roots=Roots([tmp_path / "elsewhere"]))
    with pytest.raises(FileNotFoundError):
        open_file(tmp_path / "missing.md")


def test_read_file_is_bounded(tmp_path: Path) -> None:
    (tmp_path / "big.md").write_bytes(b"x" * 1000)
    assert read_file(tmp_path / "big.md", 1000) == b"x" * 1000
    with pytest.raises(FileTooLarge, match="too large: 1000 bytes > 999 byte limit"):
        read_file(tmp_path / "big.md", 999)


def test_a_folder_swapped_for_a_symlink_leads_nowhere(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "sub" / "doc.md").write_text("mine")
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "doc.md").write_text("secret")
    st = os.stat(root / "sub" / "doc.md")
    (root / "sub").rename(root / "gone")
    (root / "sub").symlink_to(tmp_path / "outside", target_is_directory=True)  # after the walk listed sub/doc.md
    with pytest.raises(ConfinementError):
        read_file(root / "sub" / "doc.md", 100, (st.st_dev, st.st_ino))
    with pytest.raises(ConfinementError, match="outside"):
        read_file(root / "sub" / "doc.md", 100, roots=Roots([root]))


def test_confined_path_of_stored_documents(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (root / "a.md").write_text("x")
    (root / "bundle.zip").write_bytes(b"PK")
    (root / "link.md").symlink_to("/etc/passwd")
    (tmp_path / "linked.zip").write_bytes(b"PK")
    (root / "linked.zip").symlink_to(tmp_path / "linked.zip")
    roots = Roots([root])
    assert confined_path(str(root), "a.md", roots)
    assert confined_path(str(root), "bundle.zip/inner/x.md", roots)
    assert confined_path(str(root), "deleted-since.md", roots)  # nothing on disk leads anywhere
    assert confined_path("", "records/x.md", roots)  # a record given as text has no file
    assert not confined_path(str(root), "link.md", roots)
    assert not confined_path(str(root), "linked.zip/inner/x.md", roots)
    assert not confined_path(str(root), "../escape.md", roots)
    assert not confined_path(str(root), "/etc/passwd", roots)


def test_a_folder_swapped_for_a_symlink_after_the_walk_leads_nowhere(tmp_path: Path) -> None:
    """The race a walker cannot see: ``sub/`` becomes a symlink to a folder outside the roots
    between the walk and the read. The walker's stat and the reader's open both resolve the
    swapped folder, so the identities match; the descriptor's real path gives it away."""
    from sleuth.ingest.guard import Failed, ParseJob, parse_job

    root, outside = tmp_path / "proj", tmp_path / "outside"
    root.mkdir()
    outside.mkdir()
    (outside / "secret.md").write_text("# Secret\n\nTOPSECRET outside the roots\n", encoding="utf-8")
    (root / "sub").symlink_to(outside, target_is_directory=True)  # the swap, already made
    path = root / "sub" / "secret.md"
    st = os.stat(path)  # what a walker racing the swap would have recorded
    roots = Roots([root])
    with pytest.raises(ConfinementError, match="outside the project's roots"):
        read_file(path, 1 << 20, (st.st_dev, st.st_ino), roots)
    outcome = parse_job(ParseJob("sub/secret.md", str(path), identity=(st.st_dev, st.st_ino), roots=roots.real,
                                 max_bytes=1 << 20))
    assert isinstance(outcome, Failed) and "outside the project's roots" in outcome.reason
    assert "TOPSECRET" not in outcome.reason
