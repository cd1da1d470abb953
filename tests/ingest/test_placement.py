"""Paths given to ``index`` inside an indexed folder, and a file indexed before its folder: each
file is filed once, in the project that holds it, and ``sleuth index SUBFOLDER`` inside an indexed
tree refreshes the enclosing index instead of making a second one (as git adds a path to the
repository it is in)."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.ingest.placement import (
    _free_name,
    choose_project,
    nested_root_excludes,
    other_projects_paths,
    outermost,
    place,
)
from sleuth.ingest.walk import OTHER_INDEX_REASON, reaches
from sleuth.locate import enclosing_index
from tests.integration.conftest import run_cli
from tests.test_live import write

#: The notes folder: a page, a subfolder, and a folder its .gitignore leaves out.
NOTES = {"top.md": "# Top\n\nalpha beta\n", "sub/p1.md": "# P1\n\nrotate the signing keys\n",
         "sub/p2.md": "# P2\n\nsigning ceremony\n", "build/b.md": "# B\n\nbuilt gamma\n", ".gitignore": "build/\n"}


@pytest.fixture
def notes(tmp_path: Path) -> Path:
    for rel, text in NOTES.items():
        write(tmp_path / "notes", rel, text)
    return tmp_path / "notes"


def docs(engine: Engine) -> list[tuple[str, str, str]]:
    """(project, root, path) of every document, sorted."""
    rows = engine.catalog.conn.execute("SELECT project_id, root, rel_path FROM documents").fetchall()
    return sorted((str(p), str(r), str(rel)) for p, r, rel in rows)


def test_reaches_follows_the_walks_rules(notes: Path) -> None:
    assert reaches(notes, "") and reaches(notes, "sub") and reaches(notes, "sub/p1.md")
    assert not reaches(notes, "build") and not reaches(notes, "build/b.md")  # .gitignore
    assert not reaches(notes, "node_modules/x.md")  # a default exclude
    assert not reaches(notes, "sub", ["/sub/"])
    os.symlink(notes / "sub", notes / "link")
    assert not reaches(notes, "link/p1.md")
    with pytest.raises(ValueError, match="outside the root"):
        reaches(notes, "../x")


def test_default_project_and_placement(notes: Path) -> None:
    roots = {"notes": [str(notes)], "zz": [str(notes / "sub")]}
    assert choose_project([notes], roots)[0] == "notes"  # its own root
    assert choose_project([notes / "sub" / "p1.md"], roots)[0] == "zz"  # the deepest holding root
    assert choose_project([notes / "top.md"], roots)[0] == "notes"
    assert choose_project([notes / "build"], roots)[0] == "build"  # ignored by the holding root: its own
    assert choose_project([notes.parent], {"notes": [str(notes / "top.md")]})[0] == "notes"  # one project inside
    two_inside = {"a": [str(notes / "top.md")], "b": [str(notes / "sub")]}
    assert choose_project([notes.parent], two_inside)[0] == notes.parent.name
    assert choose_project([notes / "top.md"], {})[0] == "notes"  # a file: its folder's name
    memory = {"inbox": [str(notes / ".sleuth" / "memory" / "inbox")]}  # project_memory_record's folder
    assert choose_project([notes], memory, notes / ".sleuth")[0] == "notes"
    placed = place([notes / "sub", notes / "top.md", notes / "build", notes], [str(notes)])
    assert placed.roots == [notes / "build", notes]
    assert placed.refresh == {str(notes): ["sub", "top.md"]}
    assert nested_root_excludes(notes, [notes, notes / "top.md", notes / "sub", notes / ".sleuth" / "memory"],
                                notes / ".sleuth") == ["/top.md", "/sub/"]


def test_a_subfolder_is_refreshed_in_its_root(notes: Path, tmp_path: Path) -> None:
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([notes], embed=False)
        write(notes, "sub/p3.md", "# P3\n\nnew page\n")
        (notes / "sub" / "p1.md").unlink()
        report = engine.index([notes / "sub"], embed=False)
        assert (report.project, report.roots) == ("notes", [str(notes)])
        assert (report.added, report.removed, report.unchanged) == (1, 1, 1)
        assert docs(engine) == [("notes", str(notes), "sub/p2.md"), ("notes", str(notes), "sub/p3.md"),
                                ("notes", str(notes), "top.md")]
        assert engine.catalog.roots() == {"notes": [str(notes)]}


def test_a_file_then_its_folder_files_it_once(notes: Path, tmp_path: Path) -> None:
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        assert engine.index([notes / "top.md"], embed=False).project == "notes"
        report = engine.index([notes], embed=False)  # the file's root is taken in: refreshed with it from now on
        assert (report.project, report.added, report.removed) == ("notes", 3, 0)
        assert report.merged_roots == [str(notes / "top.md")] and report.shared_roots == []
        assert engine.catalog.roots() == {"notes": [str(notes)]}
        assert docs(engine) == [("notes", str(notes), "sub/p1.md"), ("notes", str(notes), "sub/p2.md"),
                                ("notes", str(notes), "top.md")]
        assert [h.path for h in engine.search("alpha", lanes=["bm25"]).hits] == ["top.md"]
        write(notes, "top.md", "# Top\n\nalpha beta quokka\n")
        assert engine.index([notes], embed=False).updated == 1
        assert [h.path for h in engine.search("quokka", lanes=["bm25"]).hits] == ["top.md"]
        # An ignored folder of the root is a root of its own (in a project of its own without a name)...
        build = engine.index([notes / "build"], embed=False)
        assert (build.project, build.shared_roots) == ("build", [])
        # ... or of the same project on purpose, walked again with the root that holds it.
        assert engine.index([notes / "build"], project="notes", embed=False).roots == [str(notes / "build")]
        assert engine.catalog.roots()["notes"] == [str(notes), str(notes / "build")]
        write(notes, "build/c.md", "# C\n\nanother built page\n")
        again = engine.index([notes], embed=False)
        assert (again.scanned, again.added, again.unchanged, again.merged_roots) == (5, 1, 4, [])
        assert [d for d in docs(engine) if d[0] == "notes"] == [
            ("notes", str(notes), "sub/p1.md"), ("notes", str(notes), "sub/p2.md"), ("notes", str(notes), "top.md"),
            ("notes", str(notes / "build"), "b.md"), ("notes", str(notes / "build"), "c.md")]


def test_paths_given_together_and_overlapping_projects(notes: Path, tmp_path: Path) -> None:
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        both = engine.index([notes / "sub", notes], embed=False)  # sub is walked with notes: named after notes
        assert (both.project, both.roots, both.added) == ("notes", [str(notes)], 3)
        other = engine.index([notes / "sub"], project="other", embed=False)
        assert other.shared_roots == [f"notes: {notes}"]
        assert engine.index([notes], embed=False).shared_roots == [f"other: {notes / 'sub'}"]


def test_enclosing_index(notes: Path, tmp_path: Path) -> None:
    assert enclosing_index(notes / "sub") is None
    with Engine(notes / ".sleuth", Config(model="none")) as engine:
        engine.index([notes], embed=False)
    assert enclosing_index(notes / "sub") == (notes / ".sleuth", str(notes))
    assert enclosing_index(notes / "sub" / "p1.md") == (notes / ".sleuth", str(notes))
    assert enclosing_index(notes) is None  # its own folder's index is not "above" it
    assert enclosing_index(tmp_path) is None
    (notes / ".sleuth" / "catalog.sqlite3").write_bytes(b"not a database" * 100)
    assert enclosing_index(notes / "sub") is None


def test_an_index_of_another_user_above_is_passed_over(notes: Path, tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """As git's safe.directory: a .sleuth/ another user owns (in /tmp, listing /tmp as a root) would
    receive the text of everything indexed below it."""
    with Engine(notes / ".sleuth", Config(model="none")) as engine:
        engine.index([notes], embed=False)
    assert enclosing_index(notes / "sub") == (notes / ".sleuth", str(notes))
    monkeypatch.setattr(os, "geteuid", lambda: os.getuid() + 1)  # as seen by another user
    assert enclosing_index(notes / "sub") is None


def test_sleuth_index_of_a_subfolder_uses_the_enclosing_index(notes: Path) -> None:
    lexical = {"SLEUTH_MODEL": "none"}
    run_cli("index", str(notes), env=lexical)
    write(notes, "sub/p3.md", "# P3\n\nnew page about owls\n")
    out = run_cli("index", str(notes / "sub"), env=lexical).stdout
    assert f"indexed project 'notes' into {notes / '.sleuth'}: 3 files scanned, 1 added" in out
    assert (f"  {notes / 'sub'} is under {notes}, a root of this index: refreshed within that root "
            f"(`--index {notes / 'sub' / '.sleuth'}` makes a separate index)") in out
    assert not (notes / "sub" / ".sleuth").exists()
    found = run_cli("search", "owls", "--lanes", "bm25", "--format", "json", cwd=notes / "sub", env=lexical).stdout
    assert '"path": "sub/p3.md"' in found
    # A subfolder given a project of its own becomes a root there, and the line says why (it blamed
    # ignore rules: a new user's finding); an ignored one is blamed on the ignore rules.
    out = run_cli("index", str(notes / "sub"), "--project", "tpl", env=lexical).stdout
    assert (f"  {notes / 'sub'} is under {notes}, a root of this index: indexed there as a root of project 'tpl', as"
            f" --project named it (or that root's ignore rules leaving it out) (`--index {notes / 'sub' / '.sleuth'}`"
            " makes a separate index)") in out.splitlines()
    out = run_cli("index", str(notes / "build"), env=lexical).stdout
    assert (f"  {notes / 'build'} is under {notes}, a root of this index: indexed there as a root of project "
            f"'build', that root's ignore rules leaving it out (`--index {notes / 'build' / '.sleuth'}` makes a "
            "separate index)") in out.splitlines()
    # --index still makes a separate one on purpose.
    run_cli("index", str(notes / "sub"), "--index", str(notes / "sub" / ".sleuth"), env=lexical)
    assert (notes / "sub" / ".sleuth" / "catalog.sqlite3").is_file()


def test_a_folder_holding_the_index_does_not_join_a_memory_folders_project(notes: Path) -> None:
    """project_memory_record writes into <index>/memory/<project>, a root inside the folder that
    holds the index: indexing that folder later makes its own project, not the records'."""
    from sleuth.memory.records import RecordStore

    with Engine(notes / ".sleuth", Config(model="none")) as engine:
        RecordStore(engine).write("journal", "note", "Quokka habitat", "Quokkas live on Rottnest Island.",
                                  create_project=True)
        assert engine.index([notes], embed=False).project == "notes"
        assert sorted(engine.catalog.roots()) == ["journal", "notes"]



def test_an_index_folder_is_never_indexed(notes: Path, tmp_path: Path) -> None:
    """`sleuth index notes/.sleuth` indexed users.json, config.toml and embed.log into the index it
    serves (an attack round's finding): an index folder, or a path inside one, is refused; this
    index's memory folders (project_memory_record's) are indexed as before."""
    from sleuth.errors import ConfigError
    from sleuth.memory.records import RecordStore

    with Engine(notes / ".sleuth", Config(model="none")) as engine:
        engine.index([notes], embed=False)
        for path, said in ((notes / ".sleuth", f"{notes / '.sleuth'} is an index folder"),
                           (notes / ".sleuth" / "memory",
                            f"{notes / '.sleuth' / 'memory'} is inside the index folder {notes / '.sleuth'}")):
            path.mkdir(exist_ok=True)
            with pytest.raises(ConfigError, match="^" + re.escape(said) + ": sleuth does not index an index's own"):
                engine.index([path], embed=False)
        receipt = RecordStore(engine).write("notes", "note", "Quokka habitat", "Quokkas live on Rottnest Island.")
        assert engine.search("quokka rottnest", lanes=["bm25"]).hits[0].doc_id == receipt.record_id
    with Engine(tmp_path / "other", Config(model="none")) as other, pytest.raises(ConfigError, match="index folder"):
        other.index([notes / ".sleuth"], embed=False)  # another index's folder too
    assert sorted(p.name for p in notes.iterdir()) == [".gitignore", ".sleuth", "build", "sub", "top.md"]


def test_a_take_in_cut_short_loses_nothing(notes: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Ctrl-C after the walk of the folder filed the inner roots' files again, before their own
    copies went: both copies stay (an attack round cut a take-in short and found no document at
    all until the command was run again); the next run finishes the take-in."""
    from sleuth.indexer import Indexer

    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([notes / "sub"], project="notes", embed=False)
        engine.index([notes / "top.md"], project="notes", embed=False)

        def interrupted(self: Indexer, run: object, key: str) -> None:
            raise KeyboardInterrupt

        monkeypatch.setattr(Indexer, "_drop_root", interrupted)
        with pytest.raises(KeyboardInterrupt):
            engine.index([notes], embed=False)
        assert len(docs(engine)) == 6  # three files, each under the folder and under its own root
        monkeypatch.undo()
        again = engine.index([notes], embed=False)
        assert (again.unchanged, sorted(again.merged_roots)) == (3, [str(notes / "sub"), str(notes / "top.md")])
        assert docs(engine) == [("notes", str(notes), rel) for rel in ("sub/p1.md", "sub/p2.md", "top.md")]


def test_another_index_folder_under_a_root_is_never_walked(notes: Path, tmp_path: Path) -> None:
    """An index kept with --index under any name inside a folder indexed later: its users.json,
    config.toml and embed.log were indexed into the new index (an attack round's finding)."""
    with Engine(notes / "myidx", Config(model="none")) as other:
        other.index([notes / "sub"], embed=False)
    (notes / "myidx" / "embed.log").write_text("embedlogword\n")
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        report = engine.index([notes], embed=False)
        assert report.added == 3
        assert engine.search("embedlogword", lanes=["bm25"]).hits == []
        # ... and said (commands run in notes/ find it, not this index: a new user's trial found an
        # older notes/sub/.sleuth unmentioned; the default name is reported too, this index's own never)
        assert report.skipped == [{"path": "myidx", "reason": OTHER_INDEX_REASON}]
    with Engine(notes / "sub" / ".sleuth", Config(model="none")) as nested:
        nested.index([notes / "sub"], embed=False)
    with Engine(notes / ".sleuth", Config(model="none")) as own:
        assert [s["path"] for s in own.index([notes], embed=False).skipped] == ["myidx", "sub/.sleuth"]
        assert [s["path"] for s in own.index([notes], embed=False).skipped] == ["myidx", "sub/.sleuth"]
    (notes / "myidx" / "postings").rename(notes / "myidx" / "elsewhere")  # a catalog file alone is anyone's
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([notes], embed=False)
        assert [h.path for h in engine.search("embedlogword", lanes=["bm25"]).hits] == ["myidx/embed.log"]


def test_an_ignored_new_root_drops_the_holding_roots_copy(notes: Path, tmp_path: Path) -> None:
    """A file indexed under the folder, then ignored there and given as a root of its own: the
    folder's old copy went only at the folder's next walk (an attack round found it twice)."""
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([notes], embed=False)
        write(notes, ".gitignore", "build/\ntop.md\n")
        report = engine.index([notes / "top.md"], embed=False)
        assert (report.project, report.added, report.removed) == ("notes", 1, 1)
        assert [d for d in docs(engine) if d[2] == "top.md"] == [("notes", str(notes / "top.md"), "top.md")]


def test_a_path_gone_from_disk_loses_its_documents(notes: Path, tmp_path: Path) -> None:
    """A deleted or renamed root, or a path under a root, given to index: its documents go (it was
    refused as not existing, and they stayed, stale, for ever); the run names roots that are gone."""
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([notes / "sub"], project="subs", embed=False)
        engine.index([notes], project="notes", embed=False)
        (notes / "top.md").unlink()
        assert engine.index([notes / "top.md"], embed=False).removed == 1
        (notes / "sub").rename(notes / "moved")
        report = engine.index([notes / "moved"], project="moved", embed=False)
        assert report.gone_roots == [f"subs: {notes / 'sub'}"]
        gone = engine.index([notes / "sub"], project="subs", embed=False)
        assert (gone.removed, gone.gone_roots, gone.forgotten_roots) == (2, [], [str(notes / "sub")])
        # its last root gone, the project was left with nothing: removed (it stayed, empty, in every listing)
        assert gone.project_removed and "subs" not in engine.catalog.roots()
        (tmp_path / "other").mkdir()
        (tmp_path / "other" / "o.md").write_text("# Other\n", encoding="utf-8")
        engine.index([notes / "moved", tmp_path / "other"], project="moved", embed=False)
        (tmp_path / "other").rename(tmp_path / "elsewhere")
        one_of_two = engine.index([tmp_path / "other"], project="moved", embed=False)
        assert (one_of_two.removed, one_of_two.project_removed) == (1, False)
        assert engine.catalog.roots()["moved"] == [str(notes / "moved")]
        with pytest.raises(FileNotFoundError, match="path does not exist: .*/nowhere$"):
            engine.index([tmp_path / "nowhere"], embed=False)


def test_a_refused_sleuth_index_writes_nothing(notes: Path, tmp_path: Path) -> None:
    lexical = {"SLEUTH_MODEL": "none"}
    for args, said in (((str(notes), "--index", str(notes)), f"error: {notes} is the index folder (where --index or"),
                       (("/dev/null",), "error: /dev/null is neither a folder nor a regular file"),
                       ((str(tmp_path / "gone"),), f"error: path does not exist: {tmp_path / 'gone'}")):
        proc = run_cli("index", *args, env=lexical, check=False)
        assert proc.returncode != 0 and proc.stderr.startswith(said), proc.stderr
    assert sorted(p.name for p in notes.iterdir()) == [".gitignore", "build", "sub", "top.md"]
    assert not (tmp_path / ".sleuth").exists() and not Path("/dev/.sleuth").exists()


def test_a_folder_named_inbox_is_not_the_inbox(tmp_path: Path) -> None:
    """The Inbox holds records filed without a project, and a search of every project leaves it
    out: a folder named ``inbox`` (any case) makes the project ``inbox-folder``, which it does not;
    ``--project inbox`` files into the Inbox on purpose, and ``sleuth index`` says what that means."""
    lexical = {"SLEUTH_MODEL": "none"}
    write(tmp_path / "Inbox", "todo.md", "# Todo\n\nwombat errands\n")
    assert choose_project([tmp_path / "Inbox"], {})[0] == "Inbox-folder"
    assert choose_project([tmp_path / "Inbox" / "todo.md"], {})[0] == "Inbox-folder"
    # Before any record is filed the Inbox is there to name, empty (it was "project not found").
    write(tmp_path, "empty/e.md", "# E\n\nwombat\n")
    run_cli("index", str(tmp_path / "empty"), env=lexical)
    none = run_cli("search", "wombat", "--project", "inbox", "--lanes", "bm25", cwd=tmp_path / "empty", env=lexical)
    assert none.stdout.startswith("no results for 'wombat'")
    out = run_cli("index", str(tmp_path / "Inbox"), env=lexical).stdout
    assert out.startswith(f"indexed project 'inbox-folder' into {tmp_path / 'Inbox' / '.sleuth'}: 1 file scanned")
    assert ("  (a folder named inbox makes the project 'inbox-folder': the id 'inbox' is the Inbox of records filed"
            " without a project)") in out.splitlines()
    found = run_cli("search", "wombat", "--lanes", "bm25", "--format", "json", cwd=tmp_path / "Inbox",
                    env=lexical).stdout
    assert '"path": "todo.md"' in found and '"project": "inbox-folder"' in found
    write(tmp_path, "other/x.md", "# X\n\nquokka\n")
    out = run_cli("index", str(tmp_path / "other"), "--project", "inbox", "--index",
                  str(tmp_path / "Inbox" / ".sleuth"), env=lexical).stdout
    assert ("  project 'inbox' is the Inbox of records filed without a project: a search of every project leaves"
            " it out (`--project inbox` searches it)") in out.splitlines()


def test_a_first_path_not_valid_utf8_is_refused_readably(tmp_path: Path) -> None:
    """Without --index the index goes beside the first path, and tantivy and SQLite take UTF-8
    paths only: a name that is not valid UTF-8 is refused with a readable error before anything
    is written (it ended in tantivy's UnicodeEncodeError)."""
    bad = tmp_path / os.fsdecode(b"caf\xe9")
    write(bad, "a.md", "# A\n\nalpha\n")
    proc = run_cli("index", str(bad), env={"SLEUTH_MODEL": "none"}, check=False)
    assert proc.returncode == 2, proc.stderr  # a usage error, as every ConfigError
    assert proc.stderr == (f"error: the index folder {tmp_path}/caf\\xe9/.sleuth (beside {tmp_path}/caf\\xe9, as"
                           " without --index) would have a path that is not valid UTF-8: choose one whose path is"
                           " with --index (or SLEUTH_INDEX)\n")
    assert sorted(p.name for p in bad.iterdir()) == ["a.md"]
    # An index folder renamed so (an attack round: status, projects and search ended in tracebacks).
    run_cli("index", str(tmp_path / "ok"), env={"SLEUTH_MODEL": "none"}, check=False)
    write(tmp_path / "ok", "a.md", "# A\n\nalpha\n")
    run_cli("index", str(tmp_path / "ok"), env={"SLEUTH_MODEL": "none"})
    moved = tmp_path / os.fsdecode(b"idx\xfe")
    (tmp_path / "ok" / ".sleuth").rename(moved)
    proc = run_cli("index", str(tmp_path / "ok"), "--index", str(moved), env={"SLEUTH_MODEL": "none"}, check=False)
    assert proc.returncode == 2 and proc.stderr == (
        f"error: the index folder {tmp_path}/idx\\xfe would have a path that is not valid UTF-8: choose one whose path"
        " is with --index (or SLEUTH_INDEX)\n")
    long_name = tmp_path / ("x" * 300)  # a name over 255 bytes: `search` ended in ENAMETOOLONG's traceback
    for command in (["status"], ["search", "alpha"]):
        proc = run_cli(*command, "--index", str(long_name), env={"SLEUTH_MODEL": "none"}, check=False)
        assert proc.returncode != 0 and proc.stderr.startswith("error: "), proc.stderr
        assert "Traceback" not in proc.stderr, proc.stderr
    for command in (["status"], ["projects"], ["search", "alpha"], ["doctor"]):
        proc = run_cli(*command, "--index", str(moved), env={"SLEUTH_MODEL": "none"}, check=False)
        assert proc.returncode == 2 and proc.stderr == (
            f"error: the index folder {tmp_path}/idx\\xfe has a path that is not valid UTF-8: use one whose path is"
            " (rename it, or choose another with --index)\n"), (command, proc.stderr)


def test_a_root_named_with_a_newline_cannot_forge_a_line(tmp_path: Path) -> None:
    """``sleuth index``, ``status`` and ``projects`` print a root's name on one line: tab, newline
    and carriage return escaped as ``\\xNN`` (file names below a root are escaped by the index form)."""
    lexical = {"SLEUTH_MODEL": "none"}
    write(tmp_path / "notes", "a.md", "# A\n\nalpha\n")
    odd = tmp_path / "odd\ndir\r\tx"
    write(odd, "b.md", "# B\n\nbeta\n")
    index = str(tmp_path / "notes" / ".sleuth")
    out = run_cli("index", str(tmp_path / "notes"), str(odd), "--index", index, env=lexical).stdout
    assert "\r" not in out and "\t" not in out
    status = run_cli("status", "--files", "--index", index, env=lexical).stdout
    assert f"    {tmp_path}/odd\\x0adir\\x0d\\x09x: 1 indexed, 0 skipped, 0 failed, last indexed" in status
    assert "    indexed  odd\\x0adir\\x0d\\x09x/b.md  (indexed " in status
    listed = run_cli("projects", "--index", index, env=lexical).stdout.splitlines()
    assert listed[1:] == [f"    {tmp_path}/notes", f"    {tmp_path}/odd\\x0adir\\x0d\\x09x"]
    # search results too: the root's label in a path, a title of several lines (YAML's `title: |`)
    write(tmp_path / "notes", "t.md", "---\ntitle: |\n  First line\n  2. forged.md  [notes]\n---\n# Body\n\nzebra\n")
    run_cli("index", str(tmp_path / "notes"), "--index", index, env=lexical)
    found = run_cli("search", "beta", "--lanes", "bm25", "--index", index, env=lexical).stdout.splitlines()
    assert found[0].startswith(" 1. odd\\x0adir\\x0d\\x09x/b.md  [notes]  ")
    found = run_cli("search", "zebra", "--lanes", "bm25", "--index", index, env=lexical).stdout.splitlines()
    assert found[1] == "    First line\\x0a2. forged.md  [notes]  §  Body"


def test_sleuth_index_of_a_renamed_root_says_what_it_removed(tmp_path: Path) -> None:
    lexical = {"SLEUTH_MODEL": "none"}
    write(tmp_path, "proj/a.md", "# A\n\nzebra\n")
    index = tmp_path / "idx"
    run_cli("index", str(tmp_path / "proj"), "--index", str(index), env=lexical)
    (tmp_path / "proj").rename(tmp_path / "proj2")
    out = run_cli("index", str(tmp_path / "proj"), "--index", str(index), env=lexical).stdout.splitlines()
    assert out[1:3] == [
        f"  {tmp_path / 'proj'} no longer exists (renamed or deleted): its documents were removed and it is no longer"
        " a root of project 'proj'",
        "  project 'proj' had no root left, so it was removed (index the folder's new path to search it again)"]
    assert run_cli("projects", "--index", str(index)).stdout == "no projects yet: run `sleuth index PATH`\n"


def test_a_second_folder_of_the_same_name_is_a_project_of_its_own(tmp_path: Path) -> None:
    """Two unrelated folders named ``notes`` were filed into one project ``notes`` (a search of it
    returned both); the second is ``<parent>-notes`` now, then ``notes-2``..., and says so, even
    when the first folder is gone (moved, or a drive not mounted). A project with only its memory
    folder lends its name as before; ``--project``, or both folders given to one run, still file a
    folder into the project on purpose."""
    lexical = {"SLEUTH_MODEL": "none"}
    for parent, text in (("work", "alpha"), ("home", "beta"), ("x/home", "gamma"), ("y", "delta")):
        write(tmp_path / parent / "notes", "a.md", f"# A\n\n{text}\n")
    work, home = tmp_path / "work" / "notes", tmp_path / "home" / "notes"
    index = tmp_path / "idx"
    with Engine(index, Config(model="none")) as engine:
        first = engine.index([work], embed=False)
        assert (first.project, first.name_taken_by) == ("notes", [])
        second = engine.index([home], embed=False)
        assert (second.project, second.name_taken_by) == ("home-notes", [f"notes: {work}"])
        third = engine.index([tmp_path / "x" / "home" / "notes" / "a.md"], embed=False)
        assert third.project == "notes-2"  # home-notes is taken too
        again = engine.index([home], embed=False)  # its own root: its project
        assert (again.project, again.name_taken_by, again.unchanged) == ("home-notes", [], 1)
        both = engine.index([tmp_path / "y" / "notes", work], embed=False)  # given with notes' folder: notes
        assert (both.project, both.name_taken_by) == ("notes", [])
        assert sorted(engine.catalog.roots()) == ["home-notes", "notes", "notes-2"]
        assert engine.catalog.roots()["notes"] == [str(work), str(tmp_path / "y" / "notes")]
    gone = {"notes": [str(tmp_path / "gone" / "notes")]}  # moved away, or only away: its name stays its own
    assert choose_project([work], gone) == ("work-notes", [f"notes: {tmp_path / 'gone' / 'notes'}"])
    memory = {"notes": [str(index / "memory" / "notes")]}  # only project_memory_record's folder
    assert choose_project([work], memory, index) == ("notes", [])
    taken = {"notes": [str(work)], "home-notes": [], "notes-2": []}
    assert choose_project([home], taken) == ("notes-3", [f"notes: {work}"])
    assert choose_project([home], taken, reserved={"notes-3", "notes-4"}) == ("notes-5", [f"notes: {work}"])
    inbox = {"inbox-folder": [str(work)]}  # "inbox-folder" taken: never the Inbox's id
    write(tmp_path / "y" / "inbox", "i.md", "# I\n\ndelta\n")
    assert choose_project([tmp_path / "y" / "inbox"], inbox)[0] == "y-inbox-folder"
    index2 = str(tmp_path / "idx2")
    run_cli("index", str(tmp_path / "x" / "home" / "notes"), "--index", index2, env=lexical)
    out = run_cli("index", str(home), "--index", index2, env=lexical).stdout
    assert (f"  (project 'notes' already has this folder's name, with other folders"
            f" ({tmp_path / 'x' / 'home' / 'notes'}): this one is project 'home-notes'; `--project notes` adds it to"
            f" 'notes' instead)") in out.splitlines()
    out = run_cli("index", str(work), "--project", "notes", "--index", index2, env=lexical).stdout
    assert out.startswith("indexed project 'notes' into") and "already has" not in out
    with Engine(tmp_path / "idx2", Config(model="none")) as engine:
        roots = engine.catalog.roots()
        assert roots["notes"] == [str(tmp_path / "x" / "home" / "notes"), str(work)]
        assert roots["home-notes"] == [str(home)]


def test_a_run_without_a_project_refuses_paths_of_another_project(tmp_path: Path) -> None:
    """Attack round of stop 39: ``sleuth index home/notes x/docs`` (docs a project of its own) filed
    x/docs into the new project home-notes too, its files then in two projects (only warned). Without
    --project a path of another project is refused now, and nothing is written; its own project
    refreshes it, and --project files both into one project on purpose (warned, as before)."""
    from sleuth.errors import ConfigError
    from sleuth.locks import WriteLock
    from sleuth.store.folder import WRITE_LOCK_FILE

    for parent, text in (("work/notes", "alpha"), ("home/notes", "beta"), ("x/docs", "gamma")):
        write(tmp_path / parent, "a.md", f"# A\n\n{text}\n")
    work, home, xdocs = tmp_path / "work" / "notes", tmp_path / "home" / "notes", tmp_path / "x" / "docs"
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([work], embed=False)
        engine.index([xdocs], embed=False)
        before = docs(engine)
        for paths in ([home, xdocs], [home, xdocs / "a.md"], [work, xdocs]):
            with pytest.raises(ConfigError) as refused:
                engine.index(paths, embed=False)
            chosen = "home-notes" if paths[0] == home else "notes"
            assert str(refused.value) == (
                f"{paths[1]} is indexed in project 'docs', and this run's paths go to project {chosen!r} (the first"
                f" path's): filed there too, their files would be in both projects. Index them on their own (`sleuth"
                f" index {paths[1]} --index {tmp_path / 'idx'}` refreshes it in 'docs'), or give --project to put"
                f" every path in one project")
        # the first path given chooses, even inside a later one (it is walked with it): home, not docs
        with pytest.raises(ConfigError, match="go to project 'home-notes'"):
            engine.index([home / "a.md", xdocs, home], embed=False)
        with pytest.raises(ConfigError, match="the project name is empty"):  # it was taken as no project
            engine.index([home, xdocs], project=" ", embed=False)
        assert docs(engine) == before and sorted(engine.catalog.roots()) == ["docs", "notes"]
        # refused before the lock is waited for (another writer holds it: an IndexBusy had it waited)
        other = WriteLock(tmp_path / "idx" / WRITE_LOCK_FILE, 0)
        assert other.acquire()
        try:
            engine.folder.write_lock.timeout_s = 0.5
            with pytest.raises(ConfigError, match="is indexed in project 'docs'"):
                engine.index([home, xdocs], embed=False)
        finally:
            other.release()
            engine.folder.write_lock.timeout_s = 30.0
        joined = engine.index([xdocs, home], embed=False)  # the first path's project takes a new folder
        assert (joined.project, joined.added, joined.joined_roots) == ("docs", 1, [str(home)])  # and says so
        assert engine.index([xdocs, home], embed=False).joined_roots == []  # its root now
        named = engine.index([home, xdocs], project="both", embed=False)
        assert named.shared_roots == [f"docs: {xdocs}", f"docs: {home}"]
    write(tmp_path / "y", "b.md", "# B\n\ndelta\n")
    out = run_cli("index", str(work), str(tmp_path / "y"), "--index", str(tmp_path / "idx"),
                  env={"SLEUTH_MODEL": "none"}).stdout.splitlines()
    assert out[1] == (f"  {tmp_path / 'y'} is a new root of project 'notes', the project of this run's first path"
                      " (so are its files now)")


def test_outermost_keeps_the_first_paths_place_and_other_projects_paths_names_the_deepest(tmp_path: Path) -> None:
    """Attack round of stop 40: ``outermost`` kept a path at its own place, so ``index c/sub b c``
    chose b's project (c joined it); it compared every two paths (1,500 paths: 37 s). The refusal
    named the first project by id holding a path, not the one its own run files it under."""
    for rel in ("c/sub/a.md", "b/a.md", "p/b/sub/a.md"):
        write(tmp_path, rel, "# A\n\nalpha\n")
    c, b = tmp_path / "c", tmp_path / "b"
    assert outermost([c / "sub", b, c, c / "sub"]) == [c, b]
    assert outermost([b, c / "sub" / "a.md", c / "sub"]) == [b, c / "sub"]
    files = [write(tmp_path, f"many/f{i}.md", "# F\n") for i in range(1500)]
    assert outermost([*files, tmp_path / "many"]) == [tmp_path / "many"]
    p = tmp_path / "p"
    roots = {"aaa": [str(p)], "bbb": [str(p / "b")]}
    assert other_projects_paths([p / "b" / "sub"], "new", roots) == [(p / "b" / "sub", "bbb")]
    assert other_projects_paths([p / "b"], "new", roots) == [(p / "b", "bbb")]
    assert other_projects_paths([p / "b" / "sub"], "bbb", roots) == []


def test_the_name_line_is_bounded_and_stale_grants_are_named(tmp_path: Path) -> None:
    """A project made by --project over 40 folders had every one of them listed in the line saying it
    has the folder's name (850 characters); a removed project's users still hold their grant, and a
    new project of that id is theirs to search: both commands say so, and a name made for a
    folder passes such ids over."""
    lexical = {"SLEUTH_MODEL": "none"}
    index = str(tmp_path / "idx")
    folders = [tmp_path / f"d{i}" for i in range(5)]
    for folder in folders:
        write(folder, "a.md", "# A\n\nalpha\n")
    write(tmp_path / "h" / "notes", "b.md", "# B\n\nbeta\n")
    run_cli("index", *map(str, folders), "--project", "notes", "--index", index, env=lexical)
    out = run_cli("index", str(tmp_path / "h" / "notes"), "--index", index, env=lexical).stdout
    assert (f"  (project 'notes' already has this folder's name, with other folders ({folders[0]}, {folders[1]},"
            f" {folders[2]} and 2 more): this one is project 'h-notes'; `--project notes` adds it to 'notes'"
            f" instead)") in out.splitlines()
    run_cli("users", "add", "bob", "--project", "h-notes", "--index", index, env=lexical)
    out = run_cli("projects", "remove", "h-notes", "--index", index, env=lexical).stdout
    assert out.splitlines()[1] == ("  user(s) bob of `sleuth serve --http` still hold a grant on 'h-notes': a project"
                                   " made later under that id is theirs to search too (`sleuth users remove NAME`,"
                                   " then `sleuth users add NAME --project ...`, changes a user's projects)")
    out = run_cli("index", str(tmp_path / "h" / "notes"), "--index", index, env=lexical).stdout
    assert out.startswith("indexed project 'notes-2' into")  # h-notes is bob's: passed over
    write(tmp_path / "other" / "h-notes", "c.md", "# C\n\ngamma\n")  # named so: bob's grant covers it, said
    out = run_cli("index", str(tmp_path / "other" / "h-notes"), "--index", index, env=lexical).stdout
    assert out.startswith("indexed project 'h-notes' into")
    assert ("  warning: user(s) bob of `sleuth serve --http` still hold a grant on 'h-notes' from a project of that"
            " id removed before, so they may search this one: `sleuth users list` shows their grants"
            ) in out.splitlines()


def test_two_runs_at_once_never_file_two_folders_under_one_name(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The project was chosen from the catalog before the write lock was taken: two runs at once,
    each seeing the other's folder missing, filed both under ``notes`` (an attack round, 2 of 3
    tries). The project ``notes`` is made here while the second run waits for the lock: it is
    seen once the lock is taken."""
    import threading

    from sleuth.locks import WriteLock

    write(tmp_path / "a" / "notes", "a.md", "# A\n\nalpha\n")
    write(tmp_path / "b" / "notes", "b.md", "# B\n\nbeta\n")
    waiting = threading.Event()
    acquire = WriteLock.acquire

    def acquire_told(self: WriteLock, blocking: bool = True) -> bool:
        waiting.set()
        return acquire(self, blocking)

    lexical = Config(model="none")
    with Engine(tmp_path / "idx", lexical) as first, Engine(tmp_path / "idx", lexical) as second:
        reports: list[object] = []
        with first.folder.write_lock.held():
            monkeypatch.setattr(WriteLock, "acquire", acquire_told)
            runner = threading.Thread(
                target=lambda: reports.append(second.index([tmp_path / "b" / "notes"], embed=False)))
            runner.start()
            assert waiting.wait(60)
            monkeypatch.setattr(WriteLock, "acquire", acquire)
            first.catalog.upsert_project("notes", "notes", [str(tmp_path / "a" / "notes")],
                                         "2026-01-01T00:00:00.000Z")
        runner.join(120)
        assert [r.project for r in reports] == ["b-notes"]  # type: ignore[attr-defined]


def test_an_unreadable_users_file_is_said_and_never_waited_on(tmp_path: Path) -> None:
    """Grants are read at every `sleuth index` now: a users file that is a FIFO (or a link to
    /dev/stdin) held the run, with the write lock, until something wrote to it; one that could
    not be read (readable by others, malformed) dropped the grant check without a word."""
    lexical = {"SLEUTH_MODEL": "none"}
    index = tmp_path / "idx"
    write(tmp_path / "a" / "notes", "a.md", "# A\n\nalpha\n")
    write(tmp_path / "b" / "notes", "b.md", "# B\n\nbeta\n")
    write(tmp_path / "c" / "..notes", "c.md", "# C\n\ngamma\n")
    run_cli("index", str(tmp_path / "a" / "notes"), "--index", str(index), env=lexical)
    os.mkfifo(index / "users.json")
    out = run_cli("index", str(tmp_path / "b" / "notes"), "--index", str(index), env=lexical).stdout
    assert out.startswith("indexed project 'b-notes' into")
    assert (f"  warning: the users file could not be read ({index / 'users.json'} is not a regular file: the users"
            " file must be one), so whether users of `sleuth serve --http` still hold a grant on the new project"
            " 'b-notes' was not checked") in out.splitlines()
    (index / "users.json").unlink()
    (index / "users.json").symlink_to("/dev/stdin")
    out = run_cli("index", str(tmp_path / "c" / "..notes"), "--index", str(index), env=lexical).stdout
    assert out.startswith("indexed project 'c-..notes' into")  # '..notes' is the id 'notes': taken
    assert "is a symbolic link: the users file must be a regular file" in out
    gone = run_cli("projects", "remove", "c-..notes", "--index", str(index), env=lexical).stdout
    assert "warning: the users file could not be read" in gone
    # a numbered name keeps the folder's id, not its first characters as typed (all dots: "2")
    assert _free_name("." * 150 + "notes", Path("/x"), {"notes": []}) == "notes-2"


def test_a_project_name_not_utf8_is_refused_readably(tmp_path: Path) -> None:
    write(tmp_path / "notes", "a.md", "# A\n\nalpha\n")
    proc = run_cli("index", str(tmp_path / "notes"), "--project", os.fsdecode(b"caf\xe9"), "--index",
                   str(tmp_path / "idx"), check=False, env={"SLEUTH_MODEL": "none"})
    assert (proc.returncode, proc.stderr) == (2, "error: the project name caf\\udce9 is not valid UTF-8: name it in"
                                                 " UTF-8\n")


def test_a_run_cut_short_leaves_the_roots_last_indexed_as_they_were(tmp_path: Path) -> None:
    """A root's "last indexed" is set when the run ends: a run interrupted after walking it (on the
    next root) set it, while its project said "never"."""
    for name in ("one", "two"):
        write(tmp_path / name, "a.md", f"# {name}\n\nalpha\n")
        write(tmp_path / name, "b.md", f"# {name} b\n\nbeta\n")

    def interrupt_in_two(rel: str) -> None:
        if seen.append(rel) or len(seen) > 2:  # the third file: the second root's first
            raise KeyboardInterrupt

    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        seen: list[str] = []
        with pytest.raises(KeyboardInterrupt):
            engine.index([tmp_path / "one", tmp_path / "two"], project="p", progress=interrupt_in_two, embed=False)
        assert engine.catalog.conn.execute("SELECT COUNT(*) FROM meta WHERE key LIKE 'root_walked%'").fetchone()[0] == 0
        engine.index([tmp_path / "one", tmp_path / "two"], project="p", embed=False)
        walked = engine.catalog.conn.execute("SELECT COUNT(*) FROM meta WHERE key LIKE 'root_walked%'").fetchone()[0]
        assert walked == 2


def test_overlapping_projects_are_pairs_whose_roots_hold_the_same_files(tmp_path: Path) -> None:
    """A new user's trial: two projects over the same files left `sleuth doctor` saying ok while every
    search of all projects returned them twice. A root inside another project's folder root counts
    when the walk reaches it (an ignored folder is not shared); only the projects asked about count."""
    from sleuth.ingest.placement import overlapping_projects

    kb = tmp_path / "kb"
    (kb / "notes").mkdir(parents=True)
    (kb / "private").mkdir()
    (kb / ".gitignore").write_text("private/\n")
    (kb / "notes" / "a.md").write_text("# a\n")
    other = tmp_path / "other"
    other.mkdir()
    roots = {"kb": [str(kb)], "mine": [str(kb / "notes" / "a.md")], "secret": [str(kb / "private")],
             "twin": [str(other)], "twin2": [str(other)], "memo": [str(tmp_path / "idx" / "memory" / "memo")]}
    assert overlapping_projects(roots, roots, tmp_path / "idx") == [
        f"kb and mine: {kb / 'notes' / 'a.md'}", f"twin and twin2: {other}"]
    assert overlapping_projects(roots, ["mine", "twin"], tmp_path / "idx") == []  # kb and twin2 not asked about
