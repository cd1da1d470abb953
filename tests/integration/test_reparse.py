"""An index written by an older parser is parsed again by the next `sleuth index`, unchanged files
too: its notebook blocks get their cell numbers and its adr-tools record its date and status
(sleuth.ingest.PARSER_VERSION, kept per root in the catalog). Without the old marker, unchanged
files are left alone as before."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from sleuth.ingest import PARSER_VERSION
from tests.integration.conftest import run_cli

NOTEBOOK = {
    "nbformat": 4, "nbformat_minor": 5, "metadata": {"kernelspec": {"language": "python"}},
    "cells": [
        {"cell_type": "markdown", "source": ["# Experiments\n"], "metadata": {}},
        {"cell_type": "markdown", "source": ["## Loading\n", "We load the pangolinset corpus here and check "
                                             "that every row of it parses as the schema says.\n"], "metadata": {}},
        {"cell_type": "code", "source": ["corpus = load('pangolinset')\n" * 8], "metadata": {}, "outputs": [],
         "execution_count": 1},
    ],
}
ADR = """# 2. Use SQLite for the catalog

Date: 2020-01-01

## Status

Accepted

## Context

The catalog must survive crashes.
"""


def get(index: Path, path: str) -> dict[str, Any]:
    return json.loads(run_cli("get", path, "--index", str(index), "--format", "json").stdout)  # type: ignore[no-any-return]


def headings(doc: dict[str, Any]) -> list[list[str]]:
    return [b["heading_path"] for b in doc["blocks"]]


def index_json(folder: Path, index: Path) -> dict[str, Any]:
    out = run_cli("index", str(folder), "--project", "lab", "--index", str(index), "--format", "json").stdout
    return json.loads(out)  # type: ignore[no-any-return]


def as_an_old_parser_wrote_it(index: Path, marker: int | None) -> None:
    """The catalog as a parser before version 2 left it: notebook blocks without their cells, the
    decision record without the date and status read from its body, and the given marker."""
    conn = sqlite3.connect(index / "catalog.sqlite3")
    with conn:
        for block_id, heading in conn.execute(
                "SELECT b.block_id, b.heading_path FROM blocks b JOIN documents d USING (doc_id) "
                "WHERE d.rel_path = 'experiments.ipynb'").fetchall():
            path = [h for h in json.loads(heading) if not h.startswith("cell")]
            conn.execute("UPDATE blocks SET heading_path=? WHERE block_id=?", (json.dumps(path), block_id))
        conn.execute("UPDATE documents SET front_matter='{}', recorded_ns=mtime_ns, label='document' "
                     "WHERE rel_path = 'doc/adr/0002-use-sqlite.md'")
        conn.execute("DELETE FROM meta WHERE key LIKE 'parser_version%'")
        if marker is not None:
            (root,) = conn.execute("SELECT DISTINCT root FROM documents").fetchone()
            conn.execute("INSERT INTO meta VALUES (?, ?)", (f"parser_version\x1flab\x1f{root}", str(marker)))
    conn.close()


def test_an_old_parser_version_reparses_unchanged_files(tmp_path: Path) -> None:
    folder = tmp_path / "lab"
    (folder / "doc" / "adr").mkdir(parents=True)
    (folder / "experiments.ipynb").write_text(json.dumps(NOTEBOOK), encoding="utf-8")
    (folder / "doc" / "adr" / "0002-use-sqlite.md").write_text(ADR, encoding="utf-8")
    (folder / "notes.md").write_text("# Notes\n\nNothing about notebooks.\n", encoding="utf-8")
    index = tmp_path / "idx"
    index_json(folder, index)
    notebook, adr = get(index, "experiments.ipynb"), get(index, "doc/adr/0002-use-sqlite.md")
    assert headings(notebook) == [["Experiments", "cell 1"], ["Experiments", "Loading", "cell 2"],
                                  ["Experiments", "Loading", "cell 3"]]
    assert [b["location"] for b in notebook["blocks"]] == ["cell 1", "cell 2", "cell 3"]
    assert (adr["status"], adr["recorded_at"], adr["kind"]) == ("accepted", "2020-01-01T00:00:00Z", "decision")

    # The current marker: unchanged files are not parsed again (what was stored stays).
    as_an_old_parser_wrote_it(index, PARSER_VERSION)
    report = index_json(folder, index)
    assert (report["unchanged"], report["updated"]) == (3, 0)
    assert headings(get(index, "experiments.ipynb")) == [["Experiments"], ["Experiments", "Loading"],
                                                         ["Experiments", "Loading"]]
    assert get(index, "doc/adr/0002-use-sqlite.md")["status"] is None

    # The old marker (1, or none: catalogs of before the marker): every file of the root is parsed again.
    for marker in (1, None):
        as_an_old_parser_wrote_it(index, marker)
        report = index_json(folder, index)
        assert (report["unchanged"], report["updated"]) == (0, 3), marker
        assert get(index, "experiments.ipynb") == notebook
        assert get(index, "doc/adr/0002-use-sqlite.md") == adr
        # ... and once: the root is recorded as parsed by this version.
        again = index_json(folder, index)
        assert (again["unchanged"], again["updated"]) == (3, 0)
    conn = sqlite3.connect(index / "catalog.sqlite3")
    assert conn.execute("SELECT value FROM meta WHERE key LIKE 'parser_version%'").fetchall() == [
        (str(PARSER_VERSION),)]
    conn.close()


def test_a_first_pass_cut_short_leaves_its_files_unchanged(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The first pass over a root is interrupted after two of its three files are committed (one
    # document a batch): the next pass finds those two unchanged (not parsed again as if an older
    # parser had written them, and counted as updated) and adds the third.
    import sleuth.indexer
    from sleuth.engine import Engine

    folder = tmp_path / "lab"
    folder.mkdir()
    for name in ("a.md", "b.md", "c.md"):
        (folder / name).write_text(f"# {name}\n\nThe pangolinset notes of {name}.\n", encoding="utf-8")
    index = tmp_path / "idx"
    monkeypatch.setattr(sleuth.indexer, "FLUSH_DOCUMENTS", 1)
    staged: list[str] = []

    def interrupt_at_the_second(rel: str) -> None:
        staged.append(rel)
        if len(staged) == 2:
            raise KeyboardInterrupt

    engine = Engine(index)
    try:
        engine.index([folder], "lab", progress=interrupt_at_the_second, embed=False)
    except KeyboardInterrupt:
        pass
    else:
        raise AssertionError("the pass was not interrupted")
    finally:
        engine.close()
    assert len(staged) == 2
    report = index_json(folder, index)
    assert (report["added"], report["updated"], report["unchanged"]) == (1, 0, 2)
