"""`sleuth get PATH` with a path relative to the current folder, as a shell gives it: ``a.md`` typed
inside ``notes/`` (a new user's trial: only root-relative paths and ids were taken, so ``sleuth get
a.md`` there said "document not found")."""

from __future__ import annotations

import json
from pathlib import Path

from tests.integration.conftest import run_cli

LEXICAL = {"SLEUTH_MODEL": "none"}


def test_a_path_relative_to_the_current_folder_names_its_document(tmp_path: Path) -> None:
    vault = tmp_path / "vault"
    (vault / "notes").mkdir(parents=True)
    (vault / "notes" / "a.md").write_text("# Alpha\n\nThe zephyr note.\n", encoding="utf-8")
    (vault / "notes" / "b.md").write_bytes(b"\0\1\2" * 100)  # binary: skipped at indexing
    (vault / "notes" / "c.ipynb").write_text("{not json", encoding="utf-8")  # cannot be parsed
    (tmp_path / "elsewhere.md").write_text("# Out\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(vault), "--index", str(index), env=LEXICAL)
    here = vault / "notes"

    def get(ref: str, cwd: Path) -> tuple[int, str, str]:
        proc = run_cli("get", ref, "--index", str(index), "--format", "json", cwd=cwd, check=False, env=LEXICAL)
        return proc.returncode, json.loads(proc.stdout)["path"] if proc.returncode == 0 else "", proc.stderr

    assert get("a.md", here) == (0, "notes/a.md", "")
    assert get("./a.md", here) == (0, "notes/a.md", "")
    assert get("../notes/a.md", here) == (0, "notes/a.md", "")
    assert get("notes/a.md", tmp_path) == (0, "notes/a.md", "")  # root-relative, as before
    assert get("b.md", here)[2].startswith(f"error: not indexed: {str(here / 'b.md')!r} was skipped at indexing: ")
    assert get("c.ipynb", here)[2].startswith(
        f"error: not indexed: {str(here / 'c.ipynb')!r} could not be read or parsed at indexing: ")
    # a file outside every root is not found (named by its path), nor is a name that is no file here
    assert get("../../elsewhere.md", here) == (4, "", f"error: document not found: {str(tmp_path / 'elsewhere.md')!r}"
                                               " (give a document id, a block id or a path relative to its root, as"
                                               " `sleuth search` shows them)\n")
    assert get("zz.md", here)[2].startswith("error: document not found: 'zz.md' ")


def test_the_file_here_wins_over_another_projects_path_of_the_same_name(tmp_path: Path) -> None:
    """Attack round of stop 38: `./readme.md` typed in a/notes printed project b's readme.md (its
    root-relative path), not the file in the current folder."""
    (tmp_path / "a" / "notes").mkdir(parents=True)
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "notes" / "readme.md").write_text("# A notes\n\ntango from A\n", encoding="utf-8")
    (tmp_path / "b" / "readme.md").write_text("# B\n\ntango from B\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(tmp_path / "a"), "--project", "a", "--index", str(index), env=LEXICAL)
    run_cli("index", str(tmp_path / "b"), "--project", "b", "--index", str(index), env=LEXICAL)
    for ref in ("readme.md", "./readme.md"):
        out = json.loads(run_cli("get", ref, "--index", str(index), "--format", "json", cwd=tmp_path / "a" / "notes",
                                 env=LEXICAL).stdout)
        assert (out["project"], out["path"]) == ("a", "notes/readme.md")
    # a file here that is not indexed: a path written from here names it only; a bare name is also a
    # root-relative path, with a note that the file here is not the one shown (attack round 2 of stop 38)
    (tmp_path / "a" / "readme.md").write_text("# A new readme\n", encoding="utf-8")
    written = run_cli("get", "./readme.md", "--index", str(index), cwd=tmp_path / "a", check=False, env=LEXICAL)
    assert (written.returncode, written.stdout) == (4, "")
    assert written.stderr.startswith(f"error: document not found: {str(tmp_path / 'a' / 'readme.md')!r}")
    bare = run_cli("get", "readme.md", "--index", str(index), cwd=tmp_path / "a", env=LEXICAL)
    assert bare.stdout.startswith("# B\n(b: readme.md, ") and bare.stderr == (
        f"sleuth get: readme.md here ({tmp_path / 'a' / 'readme.md'}) is not a document of the index; shown"
        " instead: the document whose path in its root is readme.md\n")
    # elsewhere, the root-relative path as before
    out = json.loads(run_cli("get", "readme.md", "--project", "b", "--index", str(index), "--format", "json",
                             cwd=tmp_path, env=LEXICAL).stdout)
    assert (out["project"], out["path"]) == ("b", "readme.md")


def test_a_name_that_is_not_utf8_names_its_document_without_a_traceback(tmp_path: Path) -> None:
    """Attack round of stop 38: `sleuth get` of a file named with a byte that is not UTF-8 (as tab
    completion types it) ended in a UnicodeEncodeError traceback; it names the document indexed
    under its escaped name."""
    import os
    import subprocess

    from tests.integration.conftest import SLEUTH

    vault = tmp_path / "vault"
    vault.mkdir()
    raw = os.fsencode(vault) + b"/od\xffd.md"
    with open(raw, "wb") as f:
        f.write(b"# Odd\n\nquokka\n")
    index = tmp_path / "idx"
    run_cli("index", str(vault), "--index", str(index), env=LEXICAL)
    env = {**os.environ, **LEXICAL}
    for ref, cwd in ((b"od\xffd.md", vault), (raw, tmp_path)):
        proc = subprocess.run([*map(os.fsencode, SLEUTH), b"get", ref, b"--index", os.fsencode(index), b"--format",
                               b"json"], capture_output=True, cwd=cwd, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr
        assert json.loads(proc.stdout)["path"] == "od\\xffd.md"
