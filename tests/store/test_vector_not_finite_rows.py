"""Attack session 3: a stored vector of the right size whose scale is not finite (NaN). The lane
skips it and counts its document as having "no vector yet", telling the user that `sleuth embed`
embeds it; but `sleuth embed` (and `sleuth index`) embed only blocks with no row or a row of the
wrong size, so the advice never helps and the document stays out of the vector lane until its
text changes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np

from sleuth.engine import Engine
from sleuth.store import vector_codes
from sleuth.types import SearchRequest
from tests.test_engine_vector import notes

DIM = 384


def test_a_not_finite_vector_row_is_embedded_again_by_sleuth_embed(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    with Engine(index) as e:
        assert e.index([notes(tmp_path / "notes")], project="notes").embedded == 3
    conn = sqlite3.connect(index / "catalog.sqlite3", isolation_level=None)
    try:
        (embed_hash, blob) = conn.execute(
            "SELECT v.embed_hash, v.vector FROM vectors v JOIN blocks b ON b.embed_hash=v.embed_hash"
            " JOIN documents d ON b.doc_id=d.doc_id WHERE d.rel_path='cats.md'").fetchone()
        row = np.frombuffer(blob, dtype=vector_codes.row_dtype(DIM)).copy()
        row["scale"] = np.nan
        conn.execute("UPDATE vectors SET vector=? WHERE embed_hash=?", (row.tobytes(), embed_hash))
    finally:
        conn.close()
    for lane_file in index.glob("vectors.*"):
        lane_file.unlink()
    with Engine(index) as e:
        resp = e.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
        assert [h.path for h in resp.hits] != ["cats.md"]  # the row is skipped
        # what the response advises: `sleuth embed` (Engine.embed_pending) embeds the document
        assert "`sleuth embed` embeds them" in resp.model_dump_json()
        e.embed_pending()
        resp = e.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
        assert [h.path for h in resp.hits] == ["cats.md"]
        assert "have no vector yet" not in resp.model_dump_json()
