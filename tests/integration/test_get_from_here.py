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
    # a file outside every root, and a name that is no file here, are not found, named as typed
    assert get("../../elsewhere.md", here) == (4, "", "error: document not found: '../../elsewhere.md' (give a"
                                               " document id, a block id or a path relative to its root, as"
                                               " `sleuth search` shows them)\n")
    assert get("zz.md", here)[2].startswith("error: document not found: 'zz.md' ")
