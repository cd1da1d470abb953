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
from sleuth.store.vectors import MIGRATE_MAX_KEY_CHARS, SCAN_MAX_VALUE_BYTES
from tests.data_limit import run_with_data_headroom
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


#: The planted value of the huge-blob test, in MiB, and how much more memory than it starts with the
#: migrating process may allocate, in MiB (reading the value once would need more than the blob).
HUGE_BLOB_MIB = 200
MIGRATION_DATA_HEADROOM_MIB = 100

def open_catalog(path: str) -> None:
    """Open (and so migrate) the catalog file ``path`` (run by :func:`tests.data_limit.run_with_data_headroom`)."""
    Catalog(Path(path)).close()


@pytest.mark.parametrize("old_format", [4, 5])
def test_a_planted_huge_vector_blob_is_never_read_by_the_migration(tmp_path: Path, old_format: int) -> None:
    """A format-4 or 5 catalog with a 200 MiB value in its vectors table (and a key over
    ``MIGRATE_MAX_KEY_CHARS``)
    migrates in a process that may allocate only 100 MiB more than it starts with: the value's size
    is read from its record header and the row left out, and the table is scanned, never sought (a
    seek into format 5's WITHOUT ROWID table loads every row it compares with). Before, the
    migration loaded the value: MemoryError."""
    path = _catalog(tmp_path)
    good = np.linspace(-1, 1, DIM, dtype=np.float32)
    (as_format_4 if old_format == 4 else as_format_5)(path, {(MODEL, "good"): good})
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("INSERT INTO vectors VALUES (?, 'huge', zeroblob(?))", (MODEL, HUGE_BLOB_MIB << 20))
        conn.execute("INSERT INTO vectors VALUES (?, ?, ?)", (MODEL, "k" * (2 * MIGRATE_MAX_KEY_CHARS), b"\x00" * 1540))
    finally:
        conn.close()
    done = run_with_data_headroom(f"{__name__}:open_catalog", MIGRATION_DATA_HEADROOM_MIB, str(path))
    assert done.returncode == 0, done.stderr[-2000:]
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
        keys = [r[0] for r in conn.execute("SELECT embed_hash FROM vectors WHERE model=?", (MODEL,))]
    finally:
        conn.close()
    assert (version, keys) == ("6", ["good"])


@pytest.mark.parametrize("old_format", [4, 5])
def test_a_planted_huge_key_is_never_read_by_the_migration(tmp_path: Path, old_format: int) -> None:
    """A format-4 or 5 catalog with a 200 MiB embedding-text hash (SQLite 3.40 cannot size a text
    value without loading it) migrates in a process that may allocate only 100 MiB more than it
    starts with: the migration runs under ``SCAN_MAX_VALUE_BYTES``, so the key is never loaded;
    which row holds it is then unknown, so every stored vector is left out (reported) and every
    block is embedded again, as :meth:`Catalog.bound_vector_rows` does. Before: MemoryError."""
    path = _catalog(tmp_path)
    good = np.linspace(-1, 1, DIM, dtype=np.float32)
    (as_format_4 if old_format == 4 else as_format_5)(path, {(MODEL, "good"): good, (MODEL, "good2"): -good})
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("INSERT INTO vectors VALUES (?, 'huge' || CAST(zeroblob(?) AS TEXT), ?)",
                     (MODEL, HUGE_BLOB_MIB << 20, good.tobytes()))
    finally:
        conn.close()
    done = run_with_data_headroom(f"{__name__}:open_catalog", MIGRATION_DATA_HEADROOM_MIB, str(path))
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"holds a key of more than {SCAN_MAX_VALUE_BYTES} bytes, which is not read; its 3 stored" in done.stderr
    assert "catalog migration: 3 stored vector(s) could not be read" in done.stderr
    conn = sqlite3.connect(path)
    try:
        version = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()[0]
        count = conn.execute("SELECT count(*) FROM vectors").fetchone()[0]
    finally:
        conn.close()
    assert (version, count) == ("6", 0)
