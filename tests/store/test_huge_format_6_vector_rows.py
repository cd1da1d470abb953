"""A format-6 catalog with one planted oversized row in its ``WITHOUT ROWID`` vectors table (attack
session 26): a lookup of any vector whose B-tree search compares with that row loaded it whole
(SQLite reads every overflowing row it compares with into one buffer), so the vector counts, the
blocks to embed, the lane's build and a store of vectors each allocated the planted 200 MiB. The
table is now checked once, by a scan that loads no value, and rebuilt without the row (read-only:
read as a copy without it); its block is embedded again."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import numpy as np
import pytest

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.store import vector_cache, vector_codes
from sleuth.store.catalog import Catalog
from sleuth.store.vectors import SCAN_MAX_VALUE_BYTES
from tests.data_limit import run_with_data_headroom

MODEL, DIM = "test/model", 16
#: Records of the catalog: enough for a vectors table of several B-tree pages around the planted row.
RECORDS = 300
#: The planted value, in MiB, and how much more than it starts with the child may allocate, in MiB.
PLANTED_MIB = 200
DATA_HEADROOM_MIB = 100


def _planted(index: Path, value: str) -> str:
    """A format-6 index of ``RECORDS`` records, each with a vector, then the vector of the middle
    one (by key) replaced with ``value`` (``blob``: a 200 MiB blob; ``text``: 200 MiB of text);
    returns that block's embedding-text hash."""
    with Engine(index, Config(model="none")) as e:
        e.index_records("p", [Record(f"r{i:03d}", f"note {i} about boats") for i in range(RECORDS)])
        pending = e.catalog.blocks_without_vectors(MODEL, 1000)
        vectors = np.random.default_rng(3).standard_normal((len(pending), DIM)).astype(np.float32)
        e.catalog.store_vectors(MODEL, [(h, v.tobytes()) for (h, _), v in zip(pending, vectors, strict=True)])
    hashes = sorted(h for h, _ in pending)
    planted = hashes[len(hashes) // 2]
    conn = sqlite3.connect(index / "catalog.sqlite3", isolation_level=None)
    try:
        huge = "zeroblob(?)" if value == "blob" else "CAST(zeroblob(?) AS TEXT)"
        conn.execute(f"UPDATE vectors SET vector={huge} WHERE embed_hash=?", (PLANTED_MIB << 20, planted))
    finally:
        conn.close()
    return planted


def look_up(index: str, first: str, planted: str) -> None:
    """Open the catalog in ``index``, call the lookup ``first`` before any other (``store``: store a
    vector for the ``planted`` block, as embedding it again does), then the others; print what they
    found as JSON (run by :func:`tests.data_limit.run_with_data_headroom`)."""
    cat = Catalog(Path(index) / "catalog.sqlite3")
    try:
        if first == "store":
            cat.store_vectors(MODEL, [(planted, np.ones(DIM, dtype=np.float32).tobytes())])
        found = {
            "counts": list(cat.vector_counts(MODEL, dim=DIM)),
            "without": [h for h, _ in cat.blocks_without_vectors(MODEL, 10, DIM)],
            "docs_without": len(cat.docs_without_vectors(MODEL)),
            "dim": cat.vector_dim(MODEL),
        }
        if first == "build":
            found = {}
        state = vector_cache.build(cat, MODEL, DIM)
        print(json.dumps({**found, "matrix": len(state.matrix), "pending": len(state.pending_docs),
                          "counts": list(cat.vector_counts(MODEL, dim=DIM))}))
    finally:
        cat.close()


@pytest.mark.parametrize("value", ["blob", "text"])
@pytest.mark.parametrize("first", ["counts", "build", "store"])
def test_a_planted_huge_vector_row_is_never_loaded_by_a_lookup(tmp_path: Path, first: str, value: str) -> None:
    """The lookups run in a process that may allocate only 100 MiB more than it starts with: the
    planted row is dropped by a scan and never loaded (before: MemoryError)."""
    planted = _planted(tmp_path / "idx", value)
    done = run_with_data_headroom(f"{__name__}:look_up", DATA_HEADROOM_MIB, str(tmp_path / "idx"), first, planted)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    if first == "store":  # the planted block's vector stored again: every block has one
        assert found == {"counts": [RECORDS, RECORDS], "without": [], "docs_without": 0, "dim": DIM,
                         "matrix": RECORDS, "pending": 0}
    elif first == "counts":
        assert found == {"counts": [RECORDS - 1, RECORDS], "without": [planted], "docs_without": 1, "dim": DIM,
                         "matrix": RECORDS - 1, "pending": 1}
    else:
        assert found == {"counts": [RECORDS - 1, RECORDS], "matrix": RECORDS - 1, "pending": 1}
    assert "1 stored vector(s) could not be read" in done.stderr
    conn = sqlite3.connect(tmp_path / "idx" / "catalog.sqlite3")
    try:
        rows = conn.execute("SELECT count(*), max(length(vector)) FROM vectors").fetchone()
    finally:
        conn.close()
    assert rows == (RECORDS - (first != "store"), vector_codes.blob_bytes(DIM))


def test_a_read_only_catalog_with_a_planted_huge_vector_row_is_read_without_it(tmp_path: Path) -> None:
    """Read-only (a read-only bind mount), the table cannot be rebuilt: each connection reads a
    temporary copy without the planted row, and the file is left as it was."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only bind mount needs root and mount(8); CI runs as root")
    planted = _planted(tmp_path / "rw" / "idx", "blob")
    view = tmp_path / "ro"
    view.mkdir()
    subprocess.run(["mount", "--bind", str(tmp_path / "rw"), str(view)], check=True, timeout=60)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True, timeout=60)
        done = run_with_data_headroom(f"{__name__}:look_up", DATA_HEADROOM_MIB, str(view / "idx"), "counts", planted)
    finally:
        if subprocess.run(["umount", str(view)], capture_output=True, timeout=60).returncode != 0:
            subprocess.run(["umount", "-l", str(view)], capture_output=True, timeout=60)
    assert done.returncode == 0, done.stderr[-2000:]
    assert json.loads(done.stdout) == {"counts": [RECORDS - 1, RECORDS], "without": [planted], "docs_without": 1,
                                       "dim": DIM, "matrix": RECORDS - 1, "pending": 1}
    assert "read as a copy without them" in done.stderr
    conn = sqlite3.connect(tmp_path / "rw" / "idx" / "catalog.sqlite3")
    try:  # the file as it was
        assert conn.execute("SELECT length(vector) FROM vectors WHERE embed_hash=?", (planted,)).fetchone() == (
            PLANTED_MIB << 20,)
    finally:
        conn.close()


@pytest.mark.parametrize("first", ["counts", "build", "store"])
def test_a_planted_huge_key_leaves_the_vectors_out_unread(tmp_path: Path, first: str) -> None:
    """A 200 MiB embedding-text hash (SQLite 3.40 cannot size a text value without loading it), in
    a process that may allocate only 100 MiB more than it starts with: the scan runs under
    ``SCAN_MAX_VALUE_BYTES``, so the key is never loaded; which row holds it is then unknown, so
    every stored vector is left out (reported) and every block is embedded again (before:
    MemoryError)."""
    planted = _planted(tmp_path / "idx", "blob")
    conn = sqlite3.connect(tmp_path / "idx" / "catalog.sqlite3", isolation_level=None)
    try:  # the planted row's vector back to a normal one; another row given a huge key
        conn.execute("UPDATE vectors SET vector=zeroblob(?) WHERE embed_hash=?",
                     (vector_codes.blob_bytes(DIM), planted))
        other = conn.execute("SELECT embed_hash FROM vectors ORDER BY embed_hash LIMIT 1 OFFSET 10").fetchone()[0]
        conn.execute("UPDATE vectors SET embed_hash = embed_hash || CAST(zeroblob(?) AS TEXT) WHERE embed_hash=?",
                     (PLANTED_MIB << 20, other))
    finally:
        conn.close()
    done = run_with_data_headroom(f"{__name__}:look_up", DATA_HEADROOM_MIB, str(tmp_path / "idx"), first, planted)
    assert done.returncode == 0, done.stderr[-2000:]
    found = json.loads(done.stdout)
    if first == "store":  # the one vector stored again after the table was emptied
        assert found == {"counts": [1, RECORDS], "without": sorted(found["without"]), "docs_without": RECORDS - 1,
                         "dim": DIM, "matrix": 1, "pending": RECORDS - 1}
        assert len(found["without"]) == 10 and planted not in found["without"]
    elif first == "counts":
        assert found["counts"] == [0, RECORDS] and found["docs_without"] == RECORDS and found["dim"] is None
        assert (found["matrix"], found["pending"]) == (0, RECORDS)
    else:
        assert found == {"counts": [0, RECORDS], "matrix": 0, "pending": RECORDS}
    assert f"holds a key of more than {SCAN_MAX_VALUE_BYTES} bytes, which is not read; its {RECORDS}" in done.stderr
    conn = sqlite3.connect(tmp_path / "idx" / "catalog.sqlite3")
    try:
        assert conn.execute("SELECT count(*) FROM vectors").fetchone() == (int(first == "store"),)
    finally:
        conn.close()
