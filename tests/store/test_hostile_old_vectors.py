"""An older catalog with hostile rows in its vectors table (found by an attack session): the
migration leaves those rows out (their blocks are embedded again) and keeps every good one,
instead of one row keeping the whole catalog from opening."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.store import vector_codes
from sleuth.store.catalog import Catalog
from tests.store.old_formats import as_format_4, as_format_5

MODEL = "hostile-model"
DIM = 384


def _catalog(tmp_path: Path) -> Path:
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# A\n\nalpha beta gamma\n", encoding="utf-8")
    folder = tmp_path / "idx"
    with Engine(folder, Config(model="none")) as e:
        e.index([notes], project="notes")
    return folder / "catalog.sqlite3"


def _insert(path: Path, embed_hash: str, blob: bytes | str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("INSERT INTO vectors VALUES (?,?,?)", (MODEL, embed_hash, blob))
    finally:
        conn.close()


def _opened(path: Path) -> tuple[str, dict[str, bytes]]:
    """Open (and so migrate) the catalog; its schema version and its vector rows of MODEL after."""
    Catalog(path).close()
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
        rows = dict(conn.execute("SELECT embed_hash, vector FROM vectors WHERE model=?", (MODEL,)).fetchall())
    finally:
        conn.close()
    return version, rows


def _decoded(blob: bytes) -> np.ndarray:
    return vector_codes.decode(vector_codes.from_blobs([blob], DIM))[0]


@pytest.mark.parametrize("blob", [b"", b"abc", b"\x00" * 200, "x" * 388],
                         ids=["0 bytes", "3 bytes", "200 bytes", "text"])
def test_a_format_5_catalog_with_a_hostile_vector_row_migrates_without_it(tmp_path: Path, blob: bytes | str,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    path = _catalog(tmp_path)
    good = np.linspace(-1, 1, DIM, dtype=np.float32)
    as_format_5(path, {(MODEL, "good"): good, (MODEL, "good2"): -good})
    _insert(path, "hostile", blob)
    with caplog.at_level(logging.WARNING, logger="sleuth.store.vectors"):
        version, rows = _opened(path)
    assert version == "6"
    assert sorted(rows) == ["good", "good2"]
    assert "1 stored vector(s) could not be read" in caplog.text
    # format 5 -> 6 keeps a good row's codes and scale: the two rows still decode to opposites
    np.testing.assert_allclose(_decoded(rows["good"]), -_decoded(rows["good2"]), rtol=0, atol=0)


@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf], ids=["nan", "inf", "-inf"])
def test_a_format_4_catalog_with_a_non_finite_vector_migrates_without_it(tmp_path: Path, value: float) -> None:
    path = _catalog(tmp_path)
    bad = np.ones(DIM, dtype=np.float32)
    bad[3] = value
    good = np.linspace(-1, 1, DIM, dtype=np.float32)
    as_format_4(path, {(MODEL, "good"): good, (MODEL, "bad"): bad})
    version, rows = _opened(path)
    assert (version, sorted(rows)) == ("6", ["good"])
    assert np.abs(_decoded(rows["good"]) - good).max() < 0.01  # 8-bit codes of the float32 vector


def test_a_format_4_catalog_with_a_truncated_vector_migrates_without_it(tmp_path: Path) -> None:
    path = _catalog(tmp_path)
    as_format_4(path, {(MODEL, "good"): np.ones(DIM, dtype=np.float32)})
    _insert(path, "short", b"12345")
    version, rows = _opened(path)
    assert (version, sorted(rows)) == ("6", ["good"])
