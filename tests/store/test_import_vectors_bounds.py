"""``import_vectors`` reads another catalog file, as hostile as any (attack session 26: it fetched
every row of that file's vectors table at once, whatever their number and size): it now refuses a
file of more than ``IMPORT_MAX_VECTORS`` rows or ``IMPORT_MAX_BYTES`` of vectors, with a readable
error and nothing copied, leaves out a row of more than ``IMPORT_MAX_DIMENSIONS`` dimensions
unread, and reads the file a batch at a time."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.errors import StorageError
from sleuth.store import vector_codes, vectors
from sleuth.store.catalog import Catalog
from tests.data_limit import run_with_data_headroom

MODEL, DIM = "test/model", 16
#: The planted value of the huge-row test, in MiB, and the child's allowance over its start, in MiB.
PLANTED_MIB = 200
DATA_HEADROOM_MIB = 100


def _source(tmp_path: Path, records: int = 3) -> Path:
    """A format-6 catalog of ``records`` records, each with a vector of ``MODEL``."""
    with Engine(tmp_path / "old", Config(model="none")) as e:
        e.index_records("p", [Record(f"r{i}", f"note {i} about boats") for i in range(records)])
        pending = e.catalog.blocks_without_vectors(MODEL, 100)
        vecs = np.random.default_rng(4).standard_normal((len(pending), DIM)).astype(np.float32)
        e.catalog.store_vectors(MODEL, [(h, v.tobytes()) for (h, _), v in zip(pending, vecs, strict=True)])
    return tmp_path / "old" / "catalog.sqlite3"


def _insert(path: Path, model: str, embed_hash: str, sql_value: str, arg: object) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(f"INSERT INTO vectors VALUES (?, ?, {sql_value})", (model, embed_hash, arg))
    finally:
        conn.close()


def _stored(path: Path) -> list[tuple[str, int]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT model, length(vector) FROM vectors ORDER BY model, embed_hash").fetchall()
    finally:
        conn.close()


def test_a_file_of_more_vectors_than_the_bound_is_not_imported(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    old = _source(tmp_path)
    monkeypatch.setattr(vectors, "IMPORT_MAX_VECTORS", 2)
    cat = Catalog(tmp_path / "new.sqlite3")
    try:
        with pytest.raises(StorageError) as err:
            cat.import_vectors(old)
        assert str(err.value) == (f"{old} holds 3 stored vectors of {3 * vector_codes.blob_bytes(DIM)} bytes: more"
                                  " than an import copies (2 vectors, 4294967296 bytes); nothing was imported")
    finally:
        cat.close()
    assert _stored(tmp_path / "new.sqlite3") == []


def test_a_file_of_more_vector_bytes_than_the_bound_is_not_imported(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    old = _source(tmp_path)
    monkeypatch.setattr(vectors, "IMPORT_MAX_BYTES", 3 * vector_codes.blob_bytes(DIM) - 1)
    cat = Catalog(tmp_path / "new.sqlite3")
    try:
        with pytest.raises(StorageError) as err:
            cat.import_vectors(old)
        assert str(err.value) == (f"{old} holds 3 stored vectors of 66 bytes: more than an import copies"
                                  " (5000000 vectors, 65 bytes); nothing was imported")
        monkeypatch.setattr(vectors, "IMPORT_MAX_BYTES", 3 * vector_codes.blob_bytes(DIM))  # at the bound: imported
        assert cat.import_vectors(old) == 3
    finally:
        cat.close()
    assert _stored(tmp_path / "new.sqlite3") == [(MODEL, vector_codes.blob_bytes(DIM))] * 3


def test_a_row_of_more_dimensions_than_the_bound_is_left_out(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """The only row of its model (so of its model's usual size): 8,192 dimensions are copied,
    8,193 left out and reported."""
    old = _source(tmp_path)
    for model, dim in (("edge", vectors.IMPORT_MAX_DIMENSIONS), ("over", vectors.IMPORT_MAX_DIMENSIONS + 1)):
        blob = vector_codes.encode_blobs(np.ones((1, dim), dtype=np.float32))[0]
        _insert(old, model, "0" * 16, "?", blob)
    cat = Catalog(tmp_path / "new.sqlite3")
    try:
        with caplog.at_level(logging.WARNING, logger="sleuth.store.vectors"):
            assert cat.import_vectors(old) == 4
    finally:
        cat.close()
    assert f"importing vectors from {old}: 1 stored vector(s) could not be read" in caplog.text
    assert _stored(tmp_path / "new.sqlite3") == [("edge", vector_codes.blob_bytes(8192)),
                                                 *[(MODEL, vector_codes.blob_bytes(DIM))] * 3]


def import_into(new: str, old: str) -> None:
    """Import the vectors of ``old`` into a new catalog ``new``; print how many were copied (run
    by :func:`tests.data_limit.run_with_data_headroom`)."""
    cat = Catalog(Path(new))
    try:
        print(cat.import_vectors(Path(old)))
    finally:
        cat.close()


def test_a_planted_huge_row_is_never_loaded_by_an_import(tmp_path: Path) -> None:
    """A 200 MiB value in the file imported, in a process that may allocate only 100 MiB more
    than it starts with: left out unread (before: every row fetched at once, MemoryError)."""
    old = _source(tmp_path)
    _insert(old, MODEL, "f" * 16, "zeroblob(?)", PLANTED_MIB << 20)
    done = run_with_data_headroom(f"{__name__}:import_into", DATA_HEADROOM_MIB, str(tmp_path / "new.sqlite3"),
                                  str(old))
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "3\n" and "1 stored vector(s) could not be read" in done.stderr
    assert _stored(tmp_path / "new.sqlite3") == [(MODEL, vector_codes.blob_bytes(DIM))] * 3


def test_a_planted_huge_key_is_never_loaded_by_an_import(tmp_path: Path) -> None:
    """A 200 MiB embedding-text hash in the file imported (SQLite 3.40 cannot size a text value
    without loading it), in a process that may allocate only 100 MiB more than it starts with: the
    import is refused unread, with a readable error, and nothing is copied (before: MemoryError)."""
    old = _source(tmp_path)
    _insert(old, MODEL, "", "zeroblob(?)", 64)
    conn = sqlite3.connect(old, isolation_level=None)
    try:
        conn.execute("UPDATE vectors SET embed_hash = CAST(zeroblob(?) AS TEXT) WHERE embed_hash=''",
                     (PLANTED_MIB << 20,))
    finally:
        conn.close()
    done = run_with_data_headroom(f"{__name__}:import_into", DATA_HEADROOM_MIB, str(tmp_path / "new.sqlite3"),
                                  str(old))
    assert done.returncode == 1, done.stderr[-2000:]
    assert (f"StorageError: {old} holds a stored vector key of more than {vectors.SCAN_MAX_VALUE_BYTES} bytes,"
            " which is not read; nothing was imported") in done.stderr
    assert "MemoryError" not in done.stderr
    assert _stored(tmp_path / "new.sqlite3") == []
