"""A re-index of files that did not change reads none of them and rebuilds nothing (as ``git
status``: an unchanged file costs a stat), while every file whose time or size moved is read again."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.lanes import graph as graph_module
from tests.ingest.test_walk import _counting_opens

T1_NS = 1_000_000_000
T2_NS = 2_000_000_000


def write(root: Path, rel: str, text: str | bytes, mtime_ns: int = T1_NS) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_bytes(text if isinstance(text, bytes) else text.encode())
    os.utime(p, ns=(mtime_ns, mtime_ns))
    return p


@pytest.fixture
def src(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    write(root, "cats.md", "# Cats\n\nCats sleep all day. See [dogs](dogs.md).\n")
    write(root, "dogs.md", "# Dogs\n\nDogs fetch sticks.\n")
    write(root, "sub/owls.md", "# Owls\n\nOwls hunt at night.\n")
    return root


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The files the walk opens (its binary sniff), as absolute paths."""
    return _counting_opens(monkeypatch)


@pytest.fixture
def graphs_built(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """One entry per link graph built (its linked nodes)."""
    built: list[int] = []

    class Counted(graph_module.LinkGraph):
        def __init__(self, *args, **kwargs) -> None:
            super().__init__(*args, **kwargs)
            built.append(len(self.neighbours))

    monkeypatch.setattr(graph_module, "LinkGraph", Counted)
    return built


def counts(report) -> tuple[int, int, int, int]:
    return report.added, report.updated, report.unchanged, report.removed


def test_a_reindex_of_unchanged_files_opens_none_and_a_moved_time_or_size_reads_that_file(
        tmp_path: Path, src: Path, opened: list[str]) -> None:
    with Engine(tmp_path / "idx", Config(model="none")) as eng:
        assert counts(eng.index([src], project="notes")) == (3, 0, 0, 0)
        assert len(opened) == 3
        opened.clear()
        assert counts(eng.index([src], project="notes")) == (0, 0, 3, 0)
        assert opened == []
        # A new time (same size and content): read, found the same, its new time recorded.
        os.utime(src / "dogs.md", ns=(T2_NS, T2_NS))
        assert counts(eng.index([src], project="notes")) == (0, 0, 3, 0)
        assert opened == [str(src / "dogs.md")]
        opened.clear()
        assert counts(eng.index([src], project="notes")) == (0, 0, 3, 0)
        assert opened == []
        # A new size with the old time: read and indexed again.
        write(src, "sub/owls.md", "# Owls\n\nOwls hunt mice at night.\n")
        assert counts(eng.index([src], project="notes")) == (0, 1, 2, 0)
        assert opened == [str(src / "sub/owls.md")]
        assert [h.path for h in eng.search("mice").hits] == ["sub/owls.md"]


def test_a_watcher_update_of_unchanged_paths_opens_none(tmp_path: Path, src: Path, opened: list[str]) -> None:
    with Engine(tmp_path / "idx", Config(model="none")) as eng:
        eng.index([src], project="notes")
        opened.clear()
        rep = eng.indexer.update_paths("notes", src, ["sub", "cats.md"])
        assert counts(rep) == (0, 0, 2, 0) and opened == []


def test_an_unchanged_file_turned_symlink_is_not_followed_even_with_the_same_time_and_size(
        tmp_path: Path, src: Path, opened: list[str]) -> None:
    outside = write(tmp_path / "outside", "dogs.md", (src / "dogs.md").read_bytes())  # same size, same time
    with Engine(tmp_path / "idx", Config(model="none")) as eng:
        eng.index([src], project="notes")
        (src / "dogs.md").unlink()
        (src / "dogs.md").symlink_to(outside)
        opened.clear()
        rep = eng.index([src], project="notes")
        assert counts(rep) == (0, 0, 2, 1) and opened == []
        assert rep.skipped == [{"path": "dogs.md", "reason": "symlink to a file outside the project's roots"}]


def test_a_parser_version_bump_reads_every_file_again(tmp_path: Path, src: Path, opened: list[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    from sleuth import indexer

    with Engine(tmp_path / "idx", Config(model="none")) as eng:
        eng.index([src], project="notes")
        opened.clear()
        monkeypatch.setattr(indexer, "PARSER_VERSION", indexer.PARSER_VERSION + 1)
        rep = eng.index([src], project="notes")
        assert counts(rep) == (0, 3, 0, 0)
        assert sorted(opened) == sorted(str(src / rel) for rel in ("cats.md", "dogs.md", "sub/owls.md"))


def test_a_run_that_changes_nothing_does_not_build_the_link_graph(tmp_path: Path, src: Path,
                                                                  graphs_built: list[int]) -> None:
    with Engine(tmp_path / "idx", Config(model="none")) as eng:
        eng.index([src], project="notes")
    assert graphs_built == [2]  # the run that wrote documents warms the graph (cats.md - dogs.md)
    with Engine(tmp_path / "idx", Config(model="none")) as eng:  # a new process, as `sleuth index`
        gen = eng.catalog.generation()
        assert counts(eng.index([src], project="notes")) == (0, 0, 3, 0)
        assert graphs_built == [2] and eng.catalog.generation() == gen
        assert [h.path for h in eng.search("dogs fetch").hits][:1] == ["dogs.md"]  # a query builds it
        assert graphs_built == [2, 2]
        write(src, "owls2.md", "# More owls\n\n[[cats]]\n")
        assert counts(eng.index([src], project="notes")) == (1, 0, 3, 0)
        assert graphs_built == [2, 2, 3]
