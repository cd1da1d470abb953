"""``Engine.refresh`` (``sleuth index`` without paths), from attack session 41's second round: the
roots as the catalog keeps them, read under the write lock, never resolved again; what it cannot index
left out with a problem, never an error that stops the other roots or projects."""

from __future__ import annotations

import json
import os
import sqlite3
from pathlib import Path

from sleuth.config import Config
from sleuth.engine import Engine


def note(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"# {path.stem}\n\n{text}\n", encoding="utf-8")
    return path


def test_a_root_moved_behind_a_link_is_refused_not_followed(tmp_path: Path) -> None:
    notes = tmp_path / "home" / "notes"
    note(notes / "m.md", "kappa words")
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([notes], project="p")
        (tmp_path / "Dropbox").mkdir()
        os.rename(notes, tmp_path / "Dropbox" / "notes")
        os.symlink(tmp_path / "Dropbox" / "notes", notes)
        report = engine.refresh("p")
        assert report is not None and [p["path"] for p in report.problems] == [str(notes)]
        assert "this root leads to" in report.problems[0]["problem"]
        assert engine.catalog.roots()["p"] == [str(notes)]  # no second root: the link was not followed
        assert [h.path for h in engine.search("kappa").hits] == ["m.md"]  # one hit, kept (stale)


def test_what_cannot_be_indexed_is_left_out_and_the_rest_is_indexed(tmp_path: Path) -> None:
    a, b = note(tmp_path / "a" / "a.md", "alpha"), note(tmp_path / "b" / "b.md", "beta")
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([a, b, tmp_path / "a"], project="p")
        keys = engine.catalog.roots()["p"]
        b.unlink()
        os.mkfifo(b)  # a root that is neither a folder nor a regular file now
        note(a, "alpha changed")
        db = engine.index_dir / "catalog.sqlite3"
        with sqlite3.connect(db) as conn:  # hand-edited or planted: what sleuth never writes
            conn.execute("UPDATE projects SET roots=? WHERE project_id='p'",
                         (json.dumps([*keys, "relative/x", str(tmp_path / "a" / ".." / "b"), 7]),))
        report = engine.refresh("p")
        assert report is not None
        # the catalog's roots that sleuth never writes are not roots at all (no walk, no nested root)
        assert engine.catalog.roots()["p"] == keys
        assert {p["path"]: p["problem"].split(":")[0] for p in report.problems} == {
            str(b): "neither a folder nor a regular file now"}
        assert report.updated == 1 and [h.path for h in engine.search("changed").hits] == ["a.md"]


def test_a_project_removed_before_the_refresh_takes_the_lock_is_not_made_again(tmp_path: Path) -> None:
    a = note(tmp_path / "a" / "a.md", "alpha")
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([a.parent], project="p")
        engine.remove_project("p")
        assert engine.refresh("p") is None and "p" not in engine.catalog.roots()


def repo_and_outside(tmp_path: Path) -> tuple[Path, Path, Engine]:
    """A repository folder holding its index, whose project has a second root outside it."""
    repo, outside = tmp_path / "repo", tmp_path / "secrets"
    note(repo / "r.md", "repo words")
    note(outside / "s.md", "TOPSECRET words")
    engine = Engine(repo / ".sleuth", Config(model="none"))
    engine.index([repo, outside], project="p")
    return repo, outside, engine


def test_an_index_found_upwards_refreshes_only_its_folders_roots(tmp_path: Path) -> None:
    repo, outside, engine = repo_and_outside(tmp_path)
    with engine:
        note(outside / "s2.md", "TOPSECRET more")
        report = engine.refresh("p", within=repo)
        assert report is not None and [p["path"] for p in report.problems] == [str(outside)]
        assert "outside " + str(repo) in report.problems[0]["problem"]
        assert [h.path for h in engine.search("TOPSECRET").hits] == ["s.md"]  # s2.md not read
        report = engine.refresh("p")  # the index named (--index): every root
        assert report is not None and report.added == 1


def test_a_watch_of_an_index_found_upwards_watches_only_its_folders_roots(tmp_path: Path) -> None:
    """As ``sleuth index`` without paths: an index found upwards may have come with its folder."""
    from sleuth.watch import left_out_roots, watched_roots

    repo, outside, engine = repo_and_outside(tmp_path)
    with engine:
        assert [str(r.path) for r in watched_roots(engine, None, repo)] == [str(repo)]
        assert left_out_roots(engine, None, repo) == [str(outside)]
        assert [str(r.path) for r in watched_roots(engine)] == [str(repo), str(outside)]
