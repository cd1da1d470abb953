"""Attack session 3: vector_dim's vote over the first 64 rows of a model (in primary-key order) can
be decided by planted rows. Rows of another valid size whose embed_hash sorts first outvote every
real vector: the lane then reads the catalog at the wrong dimension."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sleuth.engine import Engine
from sleuth.store import vector_codes
from sleuth.types import SearchRequest
from tests.test_engine_vector import notes

WRONG_DIM = 128


def _indexed(tmp_path: Path) -> tuple[Path, str]:
    index = tmp_path / "idx"
    with Engine(index) as e:
        assert e.index([notes(tmp_path / "notes")], project="notes").embedded == 3
    with sqlite3.connect(index / "catalog.sqlite3") as conn:
        (model,) = conn.execute("SELECT DISTINCT model FROM vectors").fetchone()
    conn.close()
    return index, str(model)


def _drop_lane_files(index: Path) -> None:
    for lane_file in index.glob("vectors.*"):
        lane_file.unlink()


def test_sixty_four_orphan_rows_of_another_size_do_not_turn_the_vector_lane_off(tmp_path: Path) -> None:
    index, model = _indexed(tmp_path)
    conn = sqlite3.connect(index / "catalog.sqlite3", isolation_level=None)
    try:  # rows of no block, of a 128-dimension vector's size, sorting before every real embed_hash
        conn.executemany("INSERT INTO vectors VALUES (?, ?, ?)",
                         [(model, f"!{i:03d}", b"\x01" * vector_codes.blob_bytes(WRONG_DIM)) for i in range(64)])
    finally:
        conn.close()
    _drop_lane_files(index)
    with Engine(index) as e:
        assert e.catalog.vector_dim(model) == 384  # the model's dimension, not the planted rows' vote
        resp = e.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
        assert ([h.path for h in resp.hits], resp.unavailable_lanes) == (["cats.md"], {})
        # and if it is not, re-indexing repairs it
        e.index([tmp_path / "notes"], project="notes")
        resp = e.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
        assert ([h.path for h in resp.hits], resp.unavailable_lanes) == (["cats.md"], {})


def test_every_row_of_another_size_does_not_fail_the_vector_lane_with_a_matmul_error(tmp_path: Path) -> None:
    index, model = _indexed(tmp_path)
    conn = sqlite3.connect(index / "catalog.sqlite3", isolation_level=None)
    try:  # every stored vector replaced by one of 128 dimensions (a catalog of another model's name)
        conn.execute("UPDATE vectors SET vector=?", (b"\x01" * vector_codes.blob_bytes(WRONG_DIM),))
    finally:
        conn.close()
    _drop_lane_files(index)
    with Engine(index) as e:
        resp = e.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
        # the model gives 384 dimensions: the 128-dimension rows are skipped (and embedded again by
        # the next run), so the lane says why it has nothing rather than answering nothing silently
        assert resp.hits == []
        assert resp.failed_lanes == {}  # not a numpy matmul error ("size 384 is different from 128")
        assert "vector" in resp.unavailable_lanes
        e.index([tmp_path / "notes"], project="notes")
        resp = e.search(SearchRequest(query="feline naps", lanes=["vector"], limit=1))
        assert ([h.path for h in resp.hits], resp.unavailable_lanes) == (["cats.md"], {})



def test_planted_rows_of_another_size_do_not_change_what_the_mcp_tool_returns(tmp_path: Path) -> None:
    """The same 64 orphan rows, seen by a real `sleuth serve` stdio session: search_project answers
    as it did before they were planted."""
    from tests.integration.test_mcp_stdio import payload, session_calls

    index, model = _indexed(tmp_path)
    _drop_lane_files(index)
    call = ("search_project", {"project_id": "notes", "query": "feline naps"})
    before = [i["item"]["path"] for i in payload(session_calls(index, [call])["results"][0])["items"]]
    assert before[0] == "cats.md"
    conn = sqlite3.connect(index / "catalog.sqlite3", isolation_level=None)
    try:
        conn.executemany("INSERT INTO vectors VALUES (?, ?, ?)",
                         [(model, f"!{i:03d}", b"\x01" * vector_codes.blob_bytes(WRONG_DIM)) for i in range(64)])
    finally:
        conn.close()
    _drop_lane_files(index)
    after = [i["item"]["path"] for i in payload(session_calls(index, [call])["results"][0])["items"]]
    assert after == before
