"""What `sleuth search` / `sleuth get` print of hostile names and text: bidi and C1 controls
escaped in JSON too (the data read back unchanged), and a path shown in its escaped index form
finds its own file, never another whose name looks like the unescaped form."""

from __future__ import annotations

import json
import os
from pathlib import Path

from tests.integration.conftest import run_cli


def test_json_output_escapes_bidi_and_c1_controls(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    notes.mkdir()
    title = "Quarterly \u202ereport\u202c \u2066isolated\u2069 csi\u009bx"
    (notes / "q.md").write_text(f"# {title}\n\nThe quarterly ledger figures.\n", encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(notes), "--project", "n", "--index", str(index), env={"SLEUTH_INDEX_WAIT": "0"})
    for args in (["search", "quarterly ledger", "--lanes", "bm25"], ["get", "q.md"]):
        out = run_cli(*args, "--index", str(index), "--format", "json").stdout
        assert not any(c in out for c in "\u202e\u202c\u2066\u2069\u009b"), args
        assert title in json.dumps(json.loads(out), ensure_ascii=False), args  # the same data once parsed


def test_get_finds_a_file_by_its_escaped_name_not_a_look_alike(tmp_path: Path) -> None:
    notes = tmp_path / "notes"
    (notes / "latin").mkdir(parents=True)
    (notes / "latin" / "xe9.md").write_text("# Look-alike\n\nnot this one\n", encoding="utf-8")
    with open(os.path.join(os.fsencode(notes), b"latin\xe9.md"), "wb") as f:
        f.write(b"# Latin one\n\nthe right file\n")
    index = tmp_path / "idx"
    run_cli("index", str(notes), "--project", "n", "--index", str(index), env={"SLEUTH_INDEX_WAIT": "0"})
    shown = json.loads(run_cli("get", "latin\\xe9.md", "--index", str(index), "--format", "json").stdout)
    assert shown["title"] == "Latin one"
    other = json.loads(run_cli("get", "latin/xe9.md", "--index", str(index), "--format", "json").stdout)
    assert other["title"] == "Look-alike"


def test_an_error_naming_a_folder_with_a_newline_is_one_line(tmp_path: Path) -> None:
    """Attack round of stop 38: a folder named with a newline, given to --index, split the `error:` line."""
    folder = tmp_path / "we\nird\x1b[31m"
    folder.mkdir()
    proc = run_cli("status", "--index", str(folder), check=False)
    assert proc.returncode == 3 and proc.stderr.count("\n") == 1 and "\x1b" not in proc.stderr
    assert proc.stderr.startswith(f"error: {tmp_path}/we\\x0aird\\x1b[31m is not a sleuth index")
