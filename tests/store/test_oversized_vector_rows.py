"""A planted vector value far larger than a vector (attack session 3: ``block_vectors_with_keys``
read each value whole before its size was checked): the size is checked in SQL, so the value is
never read into memory, by the full build, the incremental refresh or the vector counts; its
block is skipped and embedded again like any value of the wrong size."""

from __future__ import annotations

import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.store import vector_cache

MODEL, DIM = "test/model", 16
#: The planted value: 48 MiB, far above what reading the three other rows allocates.
PLANTED_BYTES = 48 * 1024 * 1024
#: The most a build or refresh of this tiny catalog may allocate with the planted value in it.
ALLOWED_PEAK_BYTES = 8 * 1024 * 1024


def _seeded(e: Engine) -> None:
    pending = e.catalog.blocks_without_vectors(MODEL, 1000)
    vecs = np.random.default_rng(2).standard_normal((len(pending), DIM)).astype(np.float32)
    e.catalog.store_vectors(MODEL, [(h, v.tobytes()) for (h, _), v in zip(pending, vecs, strict=True)])


def _plant(e: Engine, record: str, value: bytes | str) -> str:
    (embed_hash, doc_id) = e.catalog.conn.execute(
        "SELECT b.embed_hash, b.doc_id FROM blocks b JOIN documents d ON b.doc_id=d.doc_id WHERE d.rel_path=?",
        (record,)).fetchone()
    with e.catalog.write() as conn:
        conn.execute("UPDATE vectors SET vector=? WHERE embed_hash=?", (value, embed_hash))
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key=?", (f"vectors:{MODEL}",))
    return str(doc_id)


def _peak(run: object) -> int:
    tracemalloc.start()
    try:
        run()  # type: ignore[operator]
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("value", [b"\x7f" * PLANTED_BYTES, "v" * PLANTED_BYTES], ids=["blob", "text"])
def test_an_oversized_vector_value_is_never_read_by_the_build(tmp_path: Path, value: bytes | str) -> None:
    with Engine(tmp_path / "idx", Config(model="none")) as e:
        e.index_records("p", [Record(f"r{i}", f"note {i} about boats") for i in range(4)])
        _seeded(e)
        hostile = _plant(e, e.catalog.conn.execute("SELECT rel_path FROM documents ORDER BY rel_path").fetchone()[0],
                         value)
        states: list[vector_cache.VectorState] = []
        assert _peak(lambda: states.append(vector_cache.build(e.catalog, MODEL, DIM))) < ALLOWED_PEAK_BYTES
        (state,) = states
        assert len(state.matrix) == 3 and hostile in state.pending_docs and state.skipped_docs == {hostile}
        assert _peak(lambda: e.catalog.vector_counts(MODEL, dim=DIM)) < ALLOWED_PEAK_BYTES
        assert e.catalog.vector_counts(MODEL, dim=DIM) == (3, 4)


def test_an_oversized_vector_value_is_never_read_by_a_refresh(tmp_path: Path) -> None:
    with Engine(tmp_path / "idx", Config(model="none")) as e:
        e.index_records("p", [Record(f"r{i}", f"note {i} about boats") for i in range(4)])
        _seeded(e)
        state = vector_cache.build(e.catalog, MODEL, DIM)
        e.index_records("p", [Record("late", "a late note about rivers")])
        (embed_hash, _), = e.catalog.blocks_without_vectors(MODEL, 10)
        with e.catalog.write() as conn:
            conn.execute("INSERT INTO vectors VALUES (?,?,?)", (MODEL, embed_hash, b"\x7f" * PLANTED_BYTES))
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key=?", (f"vectors:{MODEL}",))
        (late,) = e.catalog.conn.execute("SELECT doc_id FROM blocks WHERE embed_hash=?", (embed_hash,)).fetchone()
        states: list[vector_cache.VectorState] = []
        assert _peak(lambda: states.append(vector_cache.refresh(e.catalog, state, DIM))) < ALLOWED_PEAK_BYTES
        (after,) = states
        assert len(after.matrix) == 4 and after.pending_docs == {late} and after.skipped_docs == {late}
        assert [h for h, _ in e.catalog.blocks_without_vectors(MODEL, 10, DIM)] == [embed_hash]
