"""`sleuth index` without PATHS indexes again every root of the index found here (or of --project):
what every "run `sleuth index` again" means (a new user's trial: a bare `sleuth index` said "Missing
argument 'PATHS...'" while each stale hit advised it). Files given one by one (a root per file) read
``notes/a.md``, not ``a.md/a.md``; a project overlapping another is said once, not once a root."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.integration.conftest import run_cli

ENV = {"SLEUTH_MODEL": "none", "SLEUTH_INDEX_WAIT": "0"}


@pytest.fixture
def kb(tmp_path: Path) -> Path:
    """kb/ indexed as project kb (its .sleuth/ inside), and its notes and README given one by one
    as project mine (the same index: they lie in kb's root)."""
    kb = tmp_path / "kb"
    (kb / "notes").mkdir(parents=True)
    for name in ("a", "b", "c"):
        (kb / "notes" / f"{name}.md").write_text(f"# Note {name}\n\nabout dunning {name}\n", encoding="utf-8")
    (kb / "README.md").write_text("# Readme\n\nthe kb readme\n", encoding="utf-8")
    run_cli("index", ".", cwd=kb, env=ENV)
    out = run_cli("index", "notes/a.md", "notes/b.md", "notes/c.md", "README.md", "--project", "mine",
                  cwd=kb, env=ENV).stdout
    overlap = [line for line in out.splitlines() if "overlap" in line]
    assert len(overlap) == 1 and "project 'kb' has a root that overlaps this run's" in overlap[0]
    return kb


def hits(kb: Path, query: str, *args: str) -> list[tuple[str, str, str | None]]:
    resp = json.loads(run_cli("search", query, "--format", "json", *args, cwd=kb, env=ENV).stdout)
    return sorted((h["project"], f"{h['root_label']}/{h['path']}", h["freshness"]) for h in resp["hits"])


def test_index_without_paths_refreshes_every_project_of_the_index_here(kb: Path) -> None:
    (kb / "notes" / "a.md").write_text("# Note a\n\nabout dunning a, changed\n", encoding="utf-8")
    (kb / "notes" / "b.md").unlink()
    assert ("mine", "notes/b.md", "stale") in hits(kb, "dunning")
    done = run_cli("index", cwd=kb / "notes", env=ENV)  # found upwards, as other commands find it
    lines = done.stdout.splitlines()
    index = kb.resolve() / ".sleuth"
    assert [line.split(":")[0] for line in lines if line.startswith("indexed project")] == [
        f"indexed project 'kb' into {index}", f"indexed project 'mine' into {index}"]
    kb_run = next(line for line in lines if line.startswith("indexed project 'kb'"))
    assert "1 updated" in kb_run and "1 removed" in kb_run
    gone = str(kb.resolve() / "notes" / "b.md")
    assert f"  {gone} no longer exists (renamed or deleted): its documents were removed and it is no longer a root " \
           "of project 'mine'" in lines
    assert not any("no longer exists: its documents stay" in line for line in lines)  # forgotten in this command
    assert hits(kb, "dunning") == [("kb", "kb/notes/a.md", "current"), ("kb", "kb/notes/c.md", "current"),
                                   ("mine", "notes/a.md", "current"), ("mine", "notes/c.md", "current")]


def test_index_without_paths_refreshes_one_project_and_says_what_it_cannot(kb: Path, tmp_path: Path) -> None:
    (kb / "notes" / "c.md").unlink()
    report = json.loads(run_cli("index", "--project", "mine", "--format", "json", cwd=kb, env=ENV).stdout)
    assert [(p["project"], p["removed"], p["forgotten_roots"]) for p in report["projects"]] == [
        ("mine", 1, [str(kb.resolve() / "notes" / "c.md")])]
    assert ("kb", "kb/notes/c.md", "stale") in hits(kb, "dunning")  # kb was not indexed again
    missing = run_cli("index", "--project", "nope", cwd=kb, env=ENV, check=False)
    assert missing.returncode != 0 and "project not found: nope" in missing.stderr
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    env = {**ENV, "SLEUTH_INDEX": ""}
    none = run_cli("index", cwd=elsewhere, env=env, check=False)
    assert none.returncode != 0 and "no index in this folder or above it (and no --index): give the PATHS to index" \
        in none.stderr
    assert not (elsewhere / ".sleuth").exists() and os.listdir(elsewhere) == []


def test_get_of_a_file_root_from_its_folder(kb: Path) -> None:
    """A file given as a root is found by its path from here (it said "not a document of the index;
    shown instead ..."), and a file two projects hold is refused naming both, as any such path."""
    got = run_cli("get", "notes/a.md", "--project", "mine", cwd=kb, env=ENV)
    assert got.stderr == "" and got.stdout.startswith("# Note a") and "(mine: notes/a.md, document" in got.stdout
    both = run_cli("get", "a.md", cwd=kb / "notes", env=ENV, check=False)
    assert both.returncode != 0 and "names 2 documents: kb/notes/a.md (project kb" in both.stderr
    assert "notes/a.md (project mine" in both.stderr and "choose one with --project kb or --project mine" in both.stderr


def test_a_path_given_that_is_a_symbolic_link_is_said(tmp_path: Path) -> None:
    """Attack session 41: ``sleuth index notes/*.md`` with a planted ``notes/c.md -> <a folder of
    secrets>`` indexed that folder without a word (a folder's walk never follows the link)."""
    notes, away = tmp_path / "repo" / "notes", tmp_path / "away"
    notes.mkdir(parents=True)
    away.mkdir()
    (notes / "a.md").write_text("# A\n\nwords\n", encoding="utf-8")
    (away / "env.md").write_text("SECRET=x\n", encoding="utf-8")
    (notes / "c.md").symlink_to(away)
    out = run_cli("index", "notes/a.md", "notes/c.md", "--index", str(tmp_path / "idx"), cwd=tmp_path / "repo",
                  env=ENV).stdout
    assert f"  warning: notes/c.md is a symbolic link to {away.resolve()}: indexed as a root of its own" in out
    assert "notes/a.md is a symbolic link" not in out


def test_many_roots_gone_are_said_in_one_line(tmp_path: Path) -> None:
    """A glob's files deleted: one line for the roots forgotten, one for another run's gone roots (a
    line each before: 400 lines for 200 files)."""
    notes = tmp_path / "notes"
    notes.mkdir()
    files = []
    for i in range(8):
        (notes / f"n{i}.md").write_text(f"# n{i}\n\nwords\n", encoding="utf-8")
        files.append(f"notes/n{i}.md")
    index = str(tmp_path / "idx")
    run_cli("index", *files, "--project", "p", "--index", index, cwd=tmp_path, env=ENV)
    for i in range(6):
        (notes / f"n{i}.md").unlink()
    out = run_cli("index", *files[2:], "--project", "p", "--index", index, cwd=tmp_path, env=ENV).stdout
    gone = [line for line in out.splitlines() if "no longer exist" in line]
    n = str(notes.resolve())
    assert gone == [
        f"  4 roots no longer exist (renamed or deleted; {n}/n2.md, {n}/n3.md, {n}/n4.md and 1 more): their documents"
        " were removed and they are no longer roots of project 'p'",
        f"  warning: 2 roots of project 'p' no longer exist ({n}/n0.md, {n}/n1.md): their documents stay (marked"
        f" stale) until `sleuth index --project p --index {index}` (every root of it again) removes them, or"
        " `sleuth projects remove p`"]


def test_doctor_says_two_projects_hold_the_same_files(kb: Path) -> None:
    done = run_cli("doctor", cwd=kb, env=ENV, check=False)
    assert done.returncode == 1 and done.stdout.startswith(f"index {kb.resolve() / '.sleuth'}: needs attention")
    assert f"  overlapping: projects kb and mine both hold {kb.resolve() / 'notes' / 'a.md'}: their files are in both" \
        in done.stdout
    assert run_cli("projects", "remove", "mine", cwd=kb, env=ENV).returncode == 0
    assert run_cli("doctor", cwd=kb, env=ENV, check=False).returncode == 0


def test_an_index_found_upwards_is_refreshed_within_its_folder(tmp_path: Path) -> None:
    """Attack session 41: a `.sleuth/` that came with a folder (a cloned repository) may name any root;
    a bare `sleuth index` found upwards indexes only the roots inside that folder and names the others."""
    repo, outside = tmp_path / "repo", tmp_path / "secrets"
    for folder, text in ((repo, "repo words"), (outside, "TOPSECRET words")):
        folder.mkdir()
        (folder / "n.md").write_text(f"# n\n\n{text}\n", encoding="utf-8")
    run_cli("index", "repo", "secrets", "--project", "p", cwd=tmp_path, env=ENV)
    (outside / "n2.md").write_text("# n2\n\nTOPSECRET more\n", encoding="utf-8")
    out = run_cli("index", cwd=repo, env=ENV).stdout
    index = repo.resolve() / ".sleuth"
    assert f"  warning {outside.resolve()}: outside {repo.resolve()}, the folder of the index found here (which may" \
           f" have come with it): left out; `sleuth index --index {index}` indexes it again" in out
    assert "0 added" in out
    assert "1 added" in run_cli("index", "--index", str(index), cwd=tmp_path, env=ENV).stdout
