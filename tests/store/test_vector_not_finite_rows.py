"""Attack session 3's finding 4: a stored vector of the right size whose values are not finite
(NaN, inf) is skipped by the vector lane, which says its document has no vector yet and that
`sleuth embed` embeds it. The advice holds: such a row counts as not embedded
(:meth:`sleuth.store.vectors.VectorTable.readable_sql`), so `sleuth embed`, `sleuth index` and
the background worker embed the block again, and status does not count it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.store import vector_codes
from sleuth.types import SearchRequest
from tests.test_engine_vector import notes

DIM = 384


def _poison(index: Path, rel_path: str, field: str, value: float) -> None:
    """Set ``field`` (``scale``, or ``ratios`` of the last block) of ``rel_path``'s stored vector to
    ``value``; remove the lane's files, as a catalog copied on its own comes."""
    conn = sqlite3.connect(index / "catalog.sqlite3", isolation_level=None)
    try:
        (embed_hash, blob) = conn.execute(
            "SELECT v.embed_hash, v.vector FROM vectors v JOIN blocks b ON b.embed_hash=v.embed_hash"
            " JOIN documents d ON b.doc_id=d.doc_id WHERE d.rel_path=?", (rel_path,)).fetchone()
        row = np.frombuffer(blob, dtype=vector_codes.row_dtype(DIM)).copy()
        if field == "scale":
            row["scale"] = value
        else:
            row["ratios"][0, -1] = value
        conn.execute("UPDATE vectors SET vector=? WHERE embed_hash=?", (row.tobytes(), embed_hash))
    finally:
        conn.close()
    for lane_file in index.glob("vectors.*"):
        lane_file.unlink()


@pytest.mark.parametrize(("field", "value"), [("scale", np.nan), ("scale", -np.inf), ("ratios", np.inf)])
def test_a_not_finite_vector_row_is_embedded_again_by_sleuth_embed(tmp_path: Path, field: str, value: float) -> None:
    index = tmp_path / "idx"
    with Engine(index) as e:
        assert e.index([notes(tmp_path / "notes")], project="notes").embedded == 3
    _poison(index, "cats.md", field, value)
    with Engine(index) as e:
        model = e.model.get()
        assert model is not None
        assert e.catalog.vector_counts(model.name, dim=DIM) == (2, 3)  # status does not count it
        resp = e.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
        assert [h.path for h in resp.hits] != ["cats.md"]  # the row is skipped
        assert "`sleuth embed` embeds them" in resp.model_dump_json()
        assert e.embed_pending() == 1  # what the advice says: `sleuth embed` (Engine.embed_pending) embeds it
        assert e.catalog.vector_counts(model.name, dim=DIM) == (3, 3)
        resp = e.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
        assert [h.path for h in resp.hits] == ["cats.md"]
        assert "the vector lane does not see" not in resp.model_dump_json()


def test_sleuth_index_embeds_a_not_finite_row_again(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    with Engine(index) as e:
        assert e.index([notes(tmp_path / "notes")], project="notes").embedded == 3
    _poison(index, "cats.md", "scale", np.inf)
    with Engine(index) as e:
        again = e.index([tmp_path / "notes"], project="notes")
        assert (again.unchanged, again.embedded) == (3, 1)
        resp = e.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
        assert [h.path for h in resp.hits] == ["cats.md"]


@pytest.mark.parametrize("dim", [1, 63, 64, 65, 130, 384])
def test_the_sql_check_agrees_with_the_lane_on_every_float(tmp_path: Path, dim: int) -> None:
    """:meth:`readable_sql` counts as readable exactly the rows :meth:`readable_rows` reads: every
    special float16 and float32 bit pattern (both signs, NaN payloads, inf, the largest finite, the
    smallest subnormal) in every ratio and in the scale."""
    model = "test/model"
    f16 = [0x7C00, 0xFC00, 0x7C01, 0x7E00, 0xFFFF, 0x7BFF, 0xFBFF, 0x0001, 0x8000, 0x3C00, 0x7FFF, 0x7D00]
    f32 = [0x7F800000, 0xFF800000, 0x7FC00000, 0x7F800001, 0xFFFFFFFF, 0x7F7FFFFF, 0xFF7FFFFF, 0x00000001,
           0x80000000, 0x3F800000, 0x7FFFFFFF, 0x7F000000, 0x7F7F0000]
    with Engine(tmp_path / "idx", Config(model="none")) as e:
        nb = vector_codes.blocks_of(dim)
        variants: list[tuple[str, int, int]] = [("scale", 0, b) for b in f32]
        variants += [("ratios", i, b) for i in range(nb) for b in f16]
        e.index_records("p", [Record(f"r{i}", f"note {i} about boats") for i in range(len(variants))])
        pending = e.catalog.blocks_without_vectors(model, 10_000)
        vecs = np.random.default_rng(5).standard_normal((len(pending), dim)).astype(np.float32)
        e.catalog.store_vectors(model, [(h, v.tobytes()) for (h, _), v in zip(pending, vecs, strict=True)])
        with e.catalog.write() as conn:
            for (embed_hash, _), (field, i, bits) in zip(pending, variants, strict=True):
                (blob,) = conn.execute("SELECT vector FROM vectors WHERE embed_hash=?", (embed_hash,)).fetchone()
                row = vector_codes.from_blobs([blob], dim).copy()
                if field == "scale":
                    row["scale"] = np.array([bits], dtype="<u4").view("<f4")[0]
                else:
                    row["ratios"][0, i] = np.array([bits], dtype="<u2").view("<f2")[0]
                conn.execute("UPDATE vectors SET vector=? WHERE embed_hash=?", (row.tobytes(), embed_hash))
        blobs = [e.catalog.conn.execute("SELECT vector FROM vectors WHERE embed_hash=?", (h,)).fetchone()[0]
                 for h, _ in pending]
        _, readable = e.catalog.readable_rows(blobs, dim)
        unreadable = {h for (h, _), ok in zip(pending, readable.tolist(), strict=True) if not ok}
        assert len(unreadable) == 6 + 7 * nb  # the patterns that are not finite (6 of f32, 7 of f16)
        assert {h for h, _ in e.catalog.blocks_without_vectors(model, 10_000, dim)} == unreadable
        assert e.catalog.vector_counts(model, dim=dim) == (len(variants) - len(unreadable), len(variants))
