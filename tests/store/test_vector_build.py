"""The vector lane's matrix built from the catalog in bounded chunks (``BUILD_CHUNK_BLOCKS``) is the
matrix of one read: same slots, block ids, projects, stored rows and embed hashes."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.store import vector_cache, vector_codes

MODEL, DIM = "test/model", 16


def _index_with_vectors(folder: Path) -> None:
    """Two projects' records and seeded vectors for every block (no model needed)."""
    with Engine(folder, Config(model="none")) as e:
        e.index_records("zeta", [Record(f"z{i}", f"zeta note {i} about boats and rivers") for i in range(7)])
        e.index_records("alpha", [Record(f"a{i}", f"alpha note {i} about tea and cups") for i in range(6)])
        pending = e.catalog.blocks_without_vectors(MODEL, 1000)
        rng = np.random.default_rng(5)
        vecs = rng.standard_normal((len(pending), DIM)).astype(np.float32)
        vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
        e.catalog.store_vectors(MODEL, [(h, v.tobytes()) for (h, _), v in zip(pending, vecs, strict=True)])


@pytest.mark.parametrize("chunk", [1, 4, 13, 50_000])
def test_chunked_build_is_the_matrix_of_one_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int) -> None:
    _index_with_vectors(tmp_path / "idx")
    monkeypatch.setattr(vector_cache, "BUILD_CHUNK_BLOCKS", chunk)
    with Engine(tmp_path / "idx", Config(model="none")) as e:
        rows = list(e.catalog.block_vectors_with_keys(MODEL, DIM))
        state = vector_cache.build(e.catalog, MODEL, DIM)
    m = state.matrix
    assert len(rows) == 13 == len(m)
    assert m.block_ids.dtype.kind == "U" and state.embed_hashes.dtype.kind == "S"  # no object per block
    assert m.block_ids.tolist() == [r[0] for r in rows]
    assert m.project_names == ["alpha", "zeta"]
    assert [m.project_names[c] for c in m.project_of_block] == [r[1] for r in rows]
    assert state.hash_texts().tolist() == [r[2] for r in rows]
    assert m.stored is not None and m.stored.tobytes() == b"".join(r[3] for r in rows)
    assert m._vectors is None  # nothing decoded yet
    np.testing.assert_array_equal(m.vectors, vector_codes.decode(vector_codes.from_blobs([r[3] for r in rows], DIM)))
    assert state.pending_docs == set()


def test_build_of_a_catalog_without_vectors_is_empty(tmp_path: Path) -> None:
    with Engine(tmp_path / "idx", Config(model="none")) as e:
        e.index_records("p", [Record("a", "some text")])
        state = vector_cache.build(e.catalog, MODEL, DIM)
    assert len(state.matrix) == 0 and len(state.embed_hashes) == 0 and len(state.pending_docs) == 1
