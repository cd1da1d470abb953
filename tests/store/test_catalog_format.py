"""The catalog's format: since format 4 it keeps no analysed terms; a format-3 catalog (terms stored
in ``blocks.terms``) is migrated on a writable open and read as it is when it cannot be written.
(Format 5's vectors: tests/store/test_vector_format.py.)"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.errors import IndexFormatError
from sleuth.store.catalog import CATALOG_PAGE_BYTES, SCHEMA_VERSION, Catalog
from sleuth.text import analyze, block_terms
from sleuth.types import SearchRequest
from tests.store.old_formats import as_format_4

RECORDS = [
    Record("a", "The alpha engine indexes blocks of text.", title="Alpha notes"),
    Record("b", "Beta catalogs keep documents; the engine reads them.", title="Beta"),
    Record("c", "Gamma rays and the alpha particle.", title="Gamma"),
]


def _index(folder: Path) -> Path:
    with Engine(folder, Config(model="none")) as e:
        e.index_records("p", RECORDS)
    return folder


def _as_format_3(catalog_file: Path) -> None:
    """Turn a catalog into what format 3 was: format 4's vectors table, the blocks' analysed terms
    in a ``terms`` column, the format recorded as 3."""
    as_format_4(catalog_file)
    conn = sqlite3.connect(catalog_file, isolation_level=None)
    try:
        conn.execute("ALTER TABLE blocks ADD COLUMN terms TEXT NOT NULL DEFAULT ''")
        rows = conn.execute("SELECT b.block_id, b.text, d.title FROM blocks b JOIN documents d USING (doc_id)")
        for block_id, text, title in rows.fetchall():
            conn.execute("UPDATE blocks SET terms=? WHERE block_id=?", (block_terms(text, analyze(title)), block_id))
        conn.execute("UPDATE meta SET value='3' WHERE key='schema_version'")
    finally:
        conn.close()


def _columns(catalog_file: Path) -> list[str]:
    conn = sqlite3.connect(catalog_file)
    try:
        return [r[1] for r in conn.execute("PRAGMA table_info(blocks)")]
    finally:
        conn.close()


def _bm25(folder: Path, query: str) -> list[str]:
    with Engine(folder, Config(model="none")) as e:
        return [h.path for h in e.search(SearchRequest(query=query, lanes=["bm25"], limit=5)).hits]


def test_new_catalog_has_format_6_without_terms_and_large_pages(tmp_path):
    folder = _index(tmp_path / "idx")
    assert SCHEMA_VERSION == 6
    assert "terms" not in _columns(folder / "catalog.sqlite3")
    conn = sqlite3.connect(folder / "catalog.sqlite3")
    try:
        assert conn.execute("PRAGMA page_size").fetchone()[0] == CATALOG_PAGE_BYTES
        assert conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0] == "6"
    finally:
        conn.close()


def test_indexed_blocks_compute_the_terms_the_indexer_wrote(tmp_path):
    folder = _index(tmp_path / "idx")
    cat = Catalog(folder / "catalog.sqlite3")
    try:
        got = {ib.block.block_id: ib.terms for ib in cat.indexed_blocks(0)}
        assert sorted(got.values()) == sorted([
            "alpha note alpha engin index block text", "beta catalog keep document engin read",
            "gamma ray alpha particl"])
        assert sorted(t for _, _, t in cat.block_terms(list({k.split(":")[0] for k in got}))) == sorted(got.values())
    finally:
        cat.close()


def test_format_3_catalog_is_migrated_and_keeps_answering(tmp_path):
    folder = _index(tmp_path / "idx")
    before = _bm25(folder, "alpha engine")
    _as_format_3(folder / "catalog.sqlite3")
    assert "terms" in _columns(folder / "catalog.sqlite3")
    (folder / "postings.generation").write_text("0")  # the postings are replayed from the migrated catalog
    assert _bm25(folder, "alpha engine") == before == ["a", "c", "b"][: len(before)]
    assert "terms" not in _columns(folder / "catalog.sqlite3")
    with Engine(folder, Config(model="none")) as e:  # and it takes new documents
        e.index_records("p", [Record("d", "Delta engine notes about alpha.", title="Delta")])
    assert "d" in _bm25(folder, "delta")


def test_format_3_catalog_that_cannot_be_written_is_read_as_it_is(tmp_path):
    folder = _index(tmp_path / "rw" / "idx")
    before = _bm25(folder, "gamma")
    _as_format_3(folder / "catalog.sqlite3")
    view = tmp_path / "ro"
    view.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only bind mount needs root and mount(8); CI runs as root")
    subprocess.run(["mount", "--bind", str(tmp_path / "rw"), str(view)], check=True, timeout=60)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True, timeout=60)
        assert _bm25(view / "idx", "gamma") == before
        cat = Catalog(view / "idx" / "catalog.sqlite3")
        try:
            assert cat.read_only is not None and len(list(cat.indexed_blocks(0))) == 3
        finally:
            cat.close()
    finally:
        if subprocess.run(["umount", str(view)], capture_output=True, timeout=60).returncode != 0:
            subprocess.run(["umount", "-l", str(view)], capture_output=True, timeout=60)
    assert "terms" in _columns(folder / "catalog.sqlite3")  # not migrated


@pytest.mark.parametrize("version", ["2", "7"])
def test_unknown_format_is_refused_with_a_clear_error(tmp_path, version):
    folder = _index(tmp_path / "idx")
    conn = sqlite3.connect(folder / "catalog.sqlite3", isolation_level=None)
    conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (version,))
    conn.close()
    with pytest.raises(IndexFormatError, match=f"index format {version}; this sleuth reads format 6"):
        Catalog(folder / "catalog.sqlite3")
