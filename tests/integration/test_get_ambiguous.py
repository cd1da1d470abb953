"""`sleuth get PATH` when the path names several documents: the error names what tells them apart,
and each thing it names does. A new user's trial: one folder indexed as two projects (p2 and other)
gave two documents both listed as ``p2/a/x.md``, and the hint "pass the root-qualified path" named
a path refused the same way; only ``--project`` (not mentioned first) worked."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.conftest import run_cli

LEXICAL = {"SLEUTH_MODEL": "none"}


def doc_id(index: Path, ref: str, *args: str) -> str:
    """The id of the one document ``sleuth get REF *ARGS`` shows."""
    out = run_cli("get", ref, "--index", str(index), "--format", "json", *args, env=LEXICAL).stdout
    return str(json.loads(out)["doc_id"])


def refusal(index: Path, ref: str) -> tuple[int, str, str]:
    proc = run_cli("get", ref, "--index", str(index), check=False, env=LEXICAL)
    return proc.returncode, proc.stdout, proc.stderr


def test_one_folder_as_two_projects_is_told_apart_by_project(tmp_path: Path) -> None:
    (tmp_path / "p2" / "a").mkdir(parents=True)
    (tmp_path / "p2" / "a" / "x.md").write_text("# X\n", encoding="utf-8")
    index = tmp_path / "idx2"
    run_cli("index", str(tmp_path / "p2"), "--index", str(index), env=LEXICAL)
    run_cli("index", str(tmp_path / "p2"), "--index", str(index), "--project", "other", env=LEXICAL)
    other, p2 = doc_id(index, "a/x.md", "--project", "other"), doc_id(index, "a/x.md", "--project", "p2")
    assert other != p2
    for ref in ("a/x.md", "p2/a/x.md"):  # the root-qualified path names both as well
        assert refusal(index, ref) == (2, "", (
            f"error: {ref!r} names 2 documents: p2/a/x.md (project other, id {other}), p2/a/x.md (project p2,"
            f" id {p2}); choose one with --project other or --project p2, or pass its id\n"))
    assert doc_id(index, other) == other


def test_roots_of_one_project_are_told_apart_by_root_qualified_path(tmp_path: Path) -> None:
    """Project twin has roots en and ja holding x.md, project solo a root en holding x.md too: the
    twin's en/x.md is en/x.md of two projects, so it is told apart by the path with --project."""
    for root in ("twin/en", "twin/ja", "solo/en"):
        (tmp_path / root).mkdir(parents=True)
        (tmp_path / root / "x.md").write_text(f"# {root}\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(tmp_path / "twin" / "en"), str(tmp_path / "twin" / "ja"), "--project", "twin",
            "--index", str(index), env=LEXICAL)
    run_cli("index", str(tmp_path / "solo" / "en"), "--project", "solo", "--index", str(index), env=LEXICAL)
    solo = doc_id(index, "x.md", "--project", "solo")
    twin_en = doc_id(index, "en/x.md", "--project", "twin")
    twin_ja = doc_id(index, "ja/x.md")
    assert len({solo, twin_en, twin_ja}) == 3
    assert refusal(index, "x.md") == (2, "", (
        f"error: 'x.md' names 3 documents: en/x.md (project solo, id {solo}), en/x.md (project twin, id {twin_en}),"
        f" ja/x.md (project twin, id {twin_ja}); choose one with --project solo or the path en/x.md with"
        " --project twin or the path ja/x.md, or pass its id\n"))
    assert refusal(index, "en/x.md")[2] == (
        f"error: 'en/x.md' names 2 documents: en/x.md (project solo, id {solo}), en/x.md (project twin, id"
        f" {twin_en}); choose one with --project solo or --project twin, or pass its id\n")
