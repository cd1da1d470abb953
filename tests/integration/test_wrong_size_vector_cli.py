"""Attack session 3: a stored vector of the wrong size (3 bytes) for one block, seen by the real
command line. docs/RANKING.md: "the next `sleuth index` (or `sleuth embed`) embeds a block whose vector is of
the wrong size again". But `sleuth index` (without SLEUTH_INDEX_WAIT) decides whether to start the
background embedding from the catalog's counts (``vector_counts``), which count any row as a
vector: it starts none, and `sleuth status` reports every block embedded."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from tests.integration.conftest import run_cli
from tests.test_engine_vector import notes


def _plant_three_bytes(index: Path) -> None:
    conn = sqlite3.connect(index / "catalog.sqlite3", isolation_level=None)
    try:
        (embed_hash,) = conn.execute("SELECT b.embed_hash FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
                                     " WHERE d.rel_path='cats.md'").fetchone()
        conn.execute("UPDATE vectors SET vector=? WHERE embed_hash=?", (b"abc", embed_hash))
    finally:
        conn.close()


def test_sleuth_index_starts_embedding_a_wrong_size_vector_again(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    run_cli("index", str(notes(tmp_path / "notes")), "--index", str(index), env={"SLEUTH_INDEX_WAIT": "1"})
    _plant_three_bytes(index)
    # the default `sleuth index`: keyword search at once, the embedding in a background worker
    out = json.loads(run_cli("index", str(tmp_path / "notes"), "--index", str(index), "--format", "json",
                             env={"SLEUTH_INDEX_WAIT": "0"}).stdout)
    pending = out.get("embedding", {}).get("pending_blocks")
    run_cli("embed", "--index", str(index))  # waits for a worker it started (none is left running)
    assert pending == 1, out
    status = json.loads(run_cli("status", "--index", str(index), "--format", "json").stdout)
    assert (status["vector_lane"]["blocks_with_vectors"], status["vector_lane"]["blocks"]) == (3, 3)


def test_sleuth_status_does_not_count_a_wrong_size_vector_as_embedded(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    run_cli("index", str(notes(tmp_path / "notes")), "--index", str(index), env={"SLEUTH_INDEX_WAIT": "1"})
    _plant_three_bytes(index)
    status = json.loads(run_cli("status", "--index", str(index), "--format", "json").stdout)
    assert (status["vector_lane"]["blocks_with_vectors"], status["vector_lane"]["blocks"]) == (2, 3)
