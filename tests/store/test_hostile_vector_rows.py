"""A current-format catalog with one hostile row in its vectors table (found by an attack session:
one wrong-size row turned the whole vector lane off): the lane skips that row, says so once (how
many, which documents) and serves every other vector; the next indexing run embeds the block again."""

from __future__ import annotations

import logging
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.store import vector_cache, vector_codes
from sleuth.types import SearchRequest
from tests.test_engine_vector import notes

DIM = 384


def _vector_hits(engine: Engine, query: str) -> tuple[list[str], dict[str, str]]:
    resp = engine.search(SearchRequest(query=query, lanes=["vector"], limit=1))
    return [h.path for h in resp.hits], resp.unavailable_lanes


def _plant(index: Path, rel_path: str, value: bytes | str) -> str:
    """Replace the stored vector of ``rel_path``'s block by ``value`` (and add a row of no block,
    sorting first, of 3 bytes); remove the lane's files, as a catalog copied on its own comes.
    Returns the model's name."""
    conn = sqlite3.connect(index / "catalog.sqlite3", isolation_level=None)
    try:
        (embed_hash,) = conn.execute("SELECT b.embed_hash FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
                                     " WHERE d.rel_path=?", (rel_path,)).fetchone()
        (model,) = conn.execute("SELECT model FROM vectors WHERE embed_hash=?", (embed_hash,)).fetchone()
        conn.execute("UPDATE vectors SET vector=? WHERE embed_hash=?", (value, embed_hash))
        conn.execute("INSERT INTO vectors VALUES (?, '', ?)", (model, b"abc"))
    finally:
        conn.close()
    for lane_file in index.glob("vectors.*"):
        lane_file.unlink()
    return str(model)


@pytest.mark.parametrize("value", [b"\x01" * (vector_codes.blob_bytes(DIM) - 1), b"abc", b"",
                                   "x" * vector_codes.blob_bytes(DIM)],
                         ids=["one byte short", "3 bytes", "0 bytes", "text of a vector's length"])
def test_one_hostile_vector_row_is_skipped_and_embedded_again(tmp_path: Path, value: bytes | str,
                                                              caplog: pytest.LogCaptureFixture) -> None:
    index = tmp_path / "idx"
    with Engine(index) as e:
        assert e.index([notes(tmp_path / "notes")], project="notes").embedded == 3
        assert _vector_hits(e, "feline naps") == (["cats.md"], {})
    model = _plant(index, "cats.md", value)
    with caplog.at_level(logging.WARNING, logger="sleuth.store.vector_cache"), \
            caplog.at_level(logging.WARNING, logger="sleuth.store.vectors"), Engine(index) as e:
        assert e.catalog.vector_dim(model) == DIM  # the 3-byte row sorting first does not decide it
        # the other vectors are served; the skipped block is not found by the vector lane
        assert _vector_hits(e, "how often do we rotate cryptographic credentials") == (["keys.md"], {})
        assert _vector_hits(e, "shipping software to servers") == (["deploy.md"], {})
        assert _vector_hits(e, "feline naps") != (["cats.md"], {})
        skipped = [r.getMessage() for r in caplog.records if "were skipped" in r.getMessage()]
        if isinstance(value, str):  # never a vector: left out of the table before any lookup, reported then
            dropped = [r.getMessage() for r in caplog.records if "could not be read" in r.getMessage()]
            assert skipped == [] and len(dropped) == 1 and "1 stored vector(s) could not be read" in dropped[0]
        else:
            assert len(skipped) == 1, skipped  # reported once, not at every search
            assert "1 stored vector(s) are not 384-dimension vectors" in skipped[0]
            assert ("(1 of another size or not bytes, 0 not finite): the next `sleuth index` or `sleuth embed`"
                    " embeds") in skipped[0]
            assert skipped[0].endswith("Documents: notes:cats.md")
        # the next indexing run embeds that block again (and only it); the lane then finds it
        again = e.index([tmp_path / "notes"], project="notes")
        assert (again.unchanged, again.embedded) == (3, 1)
        assert _vector_hits(e, "feline naps") == (["cats.md"], {})
    with sqlite3.connect(index / "catalog.sqlite3") as conn:
        sizes = conn.execute("SELECT length(vector), COUNT(*) FROM vectors WHERE embed_hash != ''"
                             " GROUP BY 1").fetchall()
    conn.close()
    assert sizes == [(vector_codes.blob_bytes(DIM), 3)]



def test_a_hostile_row_met_by_an_incremental_refresh_is_skipped_and_reported_once(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    model, dim = "test/model", 16
    rng = np.random.default_rng(7)

    def seeded(e: Engine) -> None:
        pending = e.catalog.blocks_without_vectors(model, 1000)
        vecs = rng.standard_normal((len(pending), dim)).astype(np.float32)
        e.catalog.store_vectors(model, [(h, v.tobytes()) for (h, _), v in zip(pending, vecs, strict=True)])

    with Engine(tmp_path / "idx", Config(model="none")) as e:
        e.index_records("p", [Record(f"r{i}", f"note {i} about boats") for i in range(5)])
        seeded(e)
        state = vector_cache.build(e.catalog, model, dim)
        assert len(state.matrix) == 5 and state.pending_docs == set()
        e.index_records("p", [Record("hostile", "a note whose vector row is too short")])
        (embed_hash, _), = e.catalog.blocks_without_vectors(model, 10)
        with e.catalog.write() as conn:
            conn.execute("INSERT INTO vectors VALUES (?,?,?)", (model, embed_hash, b"\x00" * 7))
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key=?", (f"vectors:{model}",))
        assert [h for h, _ in e.catalog.blocks_without_vectors(model, 10, dim)] == [embed_hash]  # to embed again
        assert e.catalog.blocks_without_vectors(model, 10) == []  # (a row of any size)
        (hostile,) = e.catalog.conn.execute("SELECT doc_id FROM blocks WHERE embed_hash=?", (embed_hash,)).fetchone()
        doc = e.catalog.documents([hostile])[hostile]
        with caplog.at_level(logging.WARNING, logger="sleuth.store.vector_cache"):
            state = vector_cache.refresh(e.catalog, state, dim)
            assert len(state.matrix) == 5 and state.pending_docs == {hostile}
            e.index_records("p", [Record("r9", "one more note about boats")])
            seeded(e)
            state = vector_cache.refresh(e.catalog, state, dim)  # reads the hostile document again
            assert len(state.matrix) == 6 and state.pending_docs == {hostile}
        skipped = [r.getMessage() for r in caplog.records if "were skipped" in r.getMessage()]
        assert len(skipped) == 1 and skipped[0].startswith("vector lane (test/model): 1 stored vector(s) are not"
                                                           " 16-dimension vectors")
        assert skipped[0].endswith(f"Documents: {doc.project_id}:{doc.rel_path}")


def test_a_stored_vector_that_is_not_finite_is_skipped_by_the_build(tmp_path: Path,
                                                                    caplog: pytest.LogCaptureFixture) -> None:
    model, dim = "test/model", 70  # two blocks of dimensions: the second one's ratio is the hostile value
    with Engine(tmp_path / "idx", Config(model="none")) as e:
        e.index_records("p", [Record(f"r{i}", f"note {i} about boats") for i in range(3)])
        pending = e.catalog.blocks_without_vectors(model, 10)
        vecs = np.random.default_rng(3).standard_normal((len(pending), dim)).astype(np.float32)
        e.catalog.store_vectors(model, [(h, v.tobytes()) for (h, _), v in zip(pending, vecs, strict=True)])
        (h0, _), (h1, _), _ = pending
        with e.catalog.write() as conn:
            for embed_hash, field, value in ((h0, "scale", np.inf), (h1, "ratios", np.nan)):
                (blob,) = conn.execute("SELECT vector FROM vectors WHERE embed_hash=?", (embed_hash,)).fetchone()
                row = vector_codes.from_blobs([blob], dim).copy()
                if field == "scale":
                    row["scale"] = value
                else:
                    row["ratios"][0, 1] = value
                conn.execute("UPDATE vectors SET vector=? WHERE embed_hash=?", (row.tobytes(), embed_hash))
        with caplog.at_level(logging.WARNING, logger="sleuth.store.vector_cache"):
            state = vector_cache.build(e.catalog, model, dim)
        assert len(state.matrix) == 1 and np.isfinite(state.matrix.vectors).all()
        assert len(state.pending_docs) == 2
        assert "2 stored vector(s) are not 70-dimension vectors of this catalog and were skipped (0 of another size" \
               " or not bytes, 2 not finite): the next `sleuth index` or `sleuth embed` embeds their blocks again" \
               in caplog.text
        # they count as not embedded, so the next embedding run replaces them (attack session 3's finding 4)
        assert e.catalog.vector_counts(model, dim=dim) == (1, 3)
        assert e.catalog.vector_counts(model, ["p"], dim=dim) == (1, 3)
        assert sorted(h for h, _ in e.catalog.blocks_without_vectors(model, 10, dim)) == sorted([h0, h1])
        with pytest.raises(ValueError, match="not 78 bytes of finite values"):
            e.catalog.stored_rows([e.catalog.conn.execute("SELECT vector FROM vectors WHERE embed_hash=?",
                                                          (h0,)).fetchone()[0]], dim)


def test_a_format_5_catalog_that_cannot_be_written_skips_its_hostile_row(tmp_path: Path,
                                                                         caplog: pytest.LogCaptureFixture) -> None:
    """Read-only, a format-5 catalog is not migrated (the migration would leave the row out): its
    rows are read as format 5's, and the one of the wrong size is skipped the same way."""
    import os
    import shutil
    import subprocess

    from sleuth.store.catalog import Catalog
    from tests.store.old_formats import as_format_5

    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("a read-only bind mount needs root and mount(8); CI runs as root")
    model = "hostile-model"
    index = tmp_path / "rw" / "idx"
    with Engine(index, Config(model="none")) as e:
        e.index([notes(tmp_path / "notes")], project="notes")
    with sqlite3.connect(index / "catalog.sqlite3") as conn:
        hashes = dict(conn.execute("SELECT d.rel_path, b.embed_hash FROM blocks b JOIN documents d"
                                   " ON b.doc_id=d.doc_id").fetchall())
    conn.close()
    rng = np.random.default_rng(11)
    as_format_5(index / "catalog.sqlite3", {(model, hashes[p]): rng.standard_normal(DIM).astype(np.float32)
                                            for p in ("keys.md", "deploy.md")})
    with sqlite3.connect(index / "catalog.sqlite3") as conn:
        conn.execute("INSERT INTO vectors VALUES (?,?,?)", (model, hashes["cats.md"], b"\x00" * (DIM + 3)))
    conn.close()
    view = tmp_path / "ro"
    view.mkdir()
    subprocess.run(["mount", "--bind", str(tmp_path / "rw"), str(view)], check=True, timeout=60)
    try:
        subprocess.run(["mount", "-o", "remount,bind,ro", str(view)], check=True, timeout=60)
        cat = Catalog(view / "idx" / "catalog.sqlite3")
        try:
            assert cat.read_only is not None and cat.vector_format == 5 and cat.vector_dim(model) == DIM
            with caplog.at_level(logging.WARNING, logger="sleuth.store.vector_cache"):
                state = vector_cache.build(cat, model, DIM)
            assert sorted(state.hash_texts().tolist()) == sorted([hashes["keys.md"], hashes["deploy.md"]])
            assert [d.rel_path for d in cat.documents(sorted(state.pending_docs)).values()] == ["cats.md"]
            assert "1 stored vector(s) are not 384-dimension vectors" in caplog.text
            assert caplog.text.rstrip().endswith("Documents: notes:cats.md")
            assert [h for h, _ in cat.blocks_without_vectors(model, 10, DIM)] == [hashes["cats.md"]]
        finally:
            cat.close()
    finally:
        if subprocess.run(["umount", str(view)], capture_output=True, timeout=60).returncode != 0:
            subprocess.run(["umount", "-l", str(view)], capture_output=True, timeout=60)
