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
    # a file outside every root, and a name that is no file here, are not found, named as typed
    assert get("../../elsewhere.md", here) == (4, "", "error: document not found: '../../elsewhere.md' (give a"
                                               " document id, a block id or a path relative to its root, as"
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
