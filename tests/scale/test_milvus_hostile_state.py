"""The Milvus sync's records in the catalog planted or damaged (attack session 24): a
``milvus:state`` that is not a JSON object (a list, a number, null, not JSON, nested 50,000 deep)
or has a field of the wrong type (a generation as text) failed every Milvus lane at every search
(AttributeError, JSONDecodeError, RecursionError, TypeError); a damaged ``milvus:stats`` or
``milvus_doc_stats`` row failed the sync the same way. Now such a record counts as absent
(:mod:`sleuth.store.milvus_state`) and the next sync rebuilds what it described: the lanes answer
as before. milvus-lite in this process."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.errors import ConfigError
from tests.scale.test_milvus_lanes import index_all, lane_answers, write_projects

LANES = ("bm25", "index", "tfidf")
QUERIES = ("advisory lock", "generation number of writes", "fusion weights", "lock")


def _answers(engine: Engine) -> dict[tuple[str, str], list[tuple[str, float]]]:
    return lane_answers(engine, lanes=LANES, queries=QUERIES, digits=5)


def _state_with(field: str, value: object):  # type: ignore[no-untyped-def]
    def change(raw: str) -> str:
        state = json.loads(raw)
        state[field] = value
        return json.dumps(state)
    return change


STATES = {
    "a list": lambda raw: "[1, 2]", "a number": lambda raw: "5", "null": lambda raw: "null",
    "not JSON": lambda raw: "{{{", "nested 50,000 deep": lambda raw: "[" * 50_000,
    "generation as text": _state_with("generation", "3"), "avgdl a list": _state_with("avgdl", [1]),
    "progress with since as text": _state_with("lex_sync", {"target": 1, "since": "abc", "rebuild": False, "n": 1,
                                                            "avgdl": {}, "changed": 0, "done": None, "sent": 0}),
    "progress with a negative count": _state_with("lex_sync", {"target": 1, "since": 0, "rebuild": False, "n": 1,
                                                               "avgdl": {}, "changed": 0, "done": ["x", 1],
                                                               "sent": -5}),
    "pending as text": _state_with("pending", "abc"), "a mark that is a number": _state_with("lex_mark", 5),
}


@pytest.mark.parametrize("key,change", [*(("milvus:state", c) for c in STATES.values()),
                                        ("milvus:stats", lambda raw: "[" * 50_000),
                                        ("milvus:stats", lambda raw: '{"generation": 1, "n": "x", "lengths": {}}')],
                         ids=[*(f"state {k}" for k in STATES), "stats nested", "stats n as text"])
def test_a_damaged_sync_record_is_rebuilt_not_failed_on(tmp_path: Path, key: str, change) -> None:  # type: ignore[no-untyped-def]
    write_projects(tmp_path / "src")
    config = Config(model="none", milvus_uri=str(tmp_path / "lanes.db"))
    with Engine(tmp_path / "idx", config) as e:
        index_all(e, tmp_path / "src")
        before = _answers(e)
    assert all(before[("bm25", q)] for q in QUERIES)
    conn = sqlite3.connect(tmp_path / "idx" / "catalog.sqlite3", isolation_level=None)
    try:
        (raw,) = conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        conn.execute("UPDATE meta SET value=? WHERE key=?", (change(raw), key))
        if key == "milvus:stats":  # so that the sync reads the statistics again
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
    finally:
        conn.close()
    with Engine(tmp_path / "idx", config) as e:
        assert _answers(e) == before
        resp = e.search("advisory lock", lanes=list(LANES))
        assert resp.failed_lanes == {} and resp.hits


def _indexed_with_gen(tmp_path: Path) -> tuple[Config, dict[tuple[str, str], list[tuple[str, float]]], str]:
    """The three projects indexed with lanes in a milvus-lite file: the config, every lane's answers
    (:func:`_answers`) and the doc_id of ``gen.md``."""
    write_projects(tmp_path / "src")
    config = Config(model="none", milvus_uri=str(tmp_path / "lanes.db"))
    with Engine(tmp_path / "idx", config) as e:
        index_all(e, tmp_path / "src")
        before = _answers(e)
        (doc_id,) = e.catalog.conn.execute("SELECT doc_id FROM documents WHERE rel_path='gen.md'").fetchone()
    return config, before, str(doc_id)


def test_a_damaged_document_statistics_row_makes_the_sync_count_again(tmp_path: Path) -> None:
    config, before, doc_id = _indexed_with_gen(tmp_path)
    for planted in ("not json", '{"n": 1}', '{"n": "1", "len": {}, "df": {}}', "[" * 50_000,
                    '{"n": 1, "len": {}}', '{"n": 1, "len": {}, "ids": "AAA="}', '{"n": 1, "len": {}, "ids": "?!"}',
                    '{"n": 1, "len": {}, "ids": "AAAAAA==", "counts": "AAAAAAAAAAA="}'):
        conn = sqlite3.connect(tmp_path / "idx" / "catalog.sqlite3", isolation_level=None)
        try:
            conn.execute("UPDATE milvus_doc_stats SET stats=? WHERE doc_id=?", (planted, doc_id))
            conn.execute("INSERT INTO milvus_df VALUES (?, 'many')", (123456789,))
        finally:
            conn.close()
        (tmp_path / "src" / "alpha" / "gen.md").touch()  # the document is read again: its row is taken out
        text = (tmp_path / "src" / "alpha" / "gen.md").read_text()
        (tmp_path / "src" / "alpha" / "gen.md").write_text(text + "\n")
        with Engine(tmp_path / "idx", config) as e:
            index_all(e, tmp_path / "src")
            resp = e.search("advisory lock", lanes=list(LANES))
            assert resp.failed_lanes == {} and resp.hits
            assert {k: [b for b, _ in v] for k, v in _answers(e).items()} == {k: [b for b, _ in v]
                                                                            for k, v in before.items()}


@pytest.mark.parametrize("column,value", [("label", "L" * 300), ("role", "é" * 200), ("family", "f" * 257)],
                         ids=["label of 300 letters", "role of 400 bytes", "family of 257 letters"])
def test_a_document_row_longer_than_milvus_takes_is_left_out_not_failed_on(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, column: str, value: str) -> None:
    """Attack session 25: one document row with a field longer than Milvus' VARCHAR bound (256
    bytes) failed the sync for every project (every lexical lane failed with "field label: a value
    of 300 characters", the ``_lex`` collection left empty). Now that document is left out of the
    collections (logged once), and every other one is synced and found as before."""
    config, before, doc_id = _indexed_with_gen(tmp_path)
    with Engine(tmp_path / "idx", config) as e:
        (blocks,) = e.catalog.conn.execute("SELECT count(*) FROM blocks").fetchone()
        (tampered_blocks,) = e.catalog.conn.execute("SELECT count(*) FROM blocks WHERE doc_id=?",
                                                    (doc_id,)).fetchone()
    assert any(b.startswith(doc_id) for b, _ in before[("bm25", "generation number of writes")])
    conn = sqlite3.connect(tmp_path / "idx" / "catalog.sqlite3", isolation_level=None)
    try:  # the row written at a new generation, as a writer of the catalog would
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
        conn.execute(f"UPDATE documents SET {column}=?, generation=(SELECT CAST(value AS INTEGER) FROM meta"
                     " WHERE key='generation') WHERE doc_id=?", (value, doc_id))
        conn.execute("DELETE FROM meta WHERE key='milvus:state'")  # and every row sent again
    finally:
        conn.close()
    caplog.set_level("WARNING", logger="sleuth.store.milvus_sync")
    with Engine(tmp_path / "idx", config) as e:
        for q in QUERIES:
            resp = e.search(q, lanes=list(LANES))
            assert resp.failed_lanes == {}
        after = _answers(e)
        shared = e.lanes["bm25"].shared  # type: ignore[attr-defined]
        assert shared.index.rows(shared.index.lex) == blocks - tampered_blocks
        assert shared.index.stats()["n"] == blocks - tampered_blocks
        # another folder indexed after it: synced too
        (tmp_path / "src2").mkdir()
        (tmp_path / "src2" / "new.md").write_text("# Quorum\n\nThe quorum decides the advisory lock holder.\n")
        e.index([tmp_path / "src2"], project="delta")
        found = e.search("quorum", lanes=["bm25"])
        assert found.failed_lanes == {} and [h.path for h in found.hits] == ["new.md"]
    assert not any(b.startswith(doc_id) for v in after.values() for b, _ in v)
    assert after[("bm25", "advisory lock")] and after[("bm25", "fusion weights")]
    warned = [r.getMessage() for r in caplog.records if "left out of Milvus" in r.getMessage()]
    assert len(warned) == 1 and doc_id in warned[0] and f"field {column}" in warned[0]


@pytest.mark.parametrize("planted", ["[1, 2]", '{"generation": GEN, "n": 1e308, "lengths": {}}',
                                     '{"generation": GEN, "n": 1' + "0" * 400 + ', "lengths": {}}',
                                     '{"generation": GEN, "n": 8, "lengths": {"body": 1e308}}'],
                         ids=["a list", "n of 1e308", "n of 401 digits", "a length of 1e308"])
def test_a_damaged_statistics_record_is_counted_again_without_a_new_generation(tmp_path: Path, planted: str) -> None:
    """Attack session 25: a ``milvus:stats`` planted at the current generation (no document
    changed) failed every Milvus lane, and re-indexing did not repair it (the sync found Milvus
    up to date). Now such a record counts as absent: the next sync counts the statistics again."""
    write_projects(tmp_path / "src")
    config = Config(model="none", milvus_uri=str(tmp_path / "lanes.db"))
    with Engine(tmp_path / "idx", config) as e:
        index_all(e, tmp_path / "src")
        before = _answers(e)
        gen = e.catalog.generation()
    conn = sqlite3.connect(tmp_path / "idx" / "catalog.sqlite3", isolation_level=None)
    try:
        conn.execute("UPDATE meta SET value=? WHERE key='milvus:stats'", (planted.replace("GEN", str(gen)),))
    finally:
        conn.close()
    with Engine(tmp_path / "idx", config) as e:
        index_all(e, tmp_path / "src")  # nothing changed: no new generation
        assert e.catalog.generation() == gen
        resp = e.search("advisory lock", lanes=list(LANES))
        assert resp.failed_lanes == {} and resp.hits
        assert _answers(e) == before


def _collections(client) -> dict[str, list[str]]:  # type: ignore[no-untyped-def]
    """``{collection: its aliases}`` of the whole Milvus database."""
    return {name: sorted(client.list_aliases(name)["aliases"]) for name in sorted(client.list_collections())}


@pytest.mark.parametrize("planted", ["victim_lex", "victim_lex_a", "victim_lex_b"])
def test_an_alias_another_application_holds_is_refused_before_any_row_is_written(tmp_path: Path,
                                                                                  planted: str) -> None:
    """Attack session 29: an alias ``<collection>_lex`` that another application holds (here
    naming another index's collection) made every sync rebuild the whole collection into
    ``_lex_a`` and then fail on ``create_alias`` (a MilvusException traceback at each ``sleuth
    index`` and each search, a full rebuild each time), and searches run while another process
    held the write lock read the other index's rows. An alias ``_lex_a`` or ``_lex_b`` failed the
    rebuild that makes that collection ("collection already exists"; for ``_lex_b`` only at the
    second rebuild). Now the sync and the lanes refuse them with a ConfigError naming the alias
    before any row is written, and the other application's collection and aliases are left as
    they were."""
    write_projects(tmp_path / "src")
    uri = str(tmp_path / "lanes.db")
    with Engine(tmp_path / "other", Config(model="none", milvus_uri=uri, milvus_collection="other")) as e:
        index_all(e, tmp_path / "src")
        client = e.lanes["bm25"].shared.index.client  # type: ignore[attr-defined]
        client.create_alias("other_lex_a", planted)
        before = _collections(client)
        other_rows = e.lanes["bm25"].shared.index.rows("other_lex_a")  # type: ignore[attr-defined]
    assert before == {"other_lex_a": sorted(["other_lex", planted])}
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "a.md").write_text("# Quorum\n\nThe quorum decides.\n")
    with Engine(tmp_path / "victim", Config(model="none", milvus_uri=uri, milvus_collection="victim")) as e:
        with pytest.raises(ConfigError, match=f"the Milvus alias '{planted}' .*set milvus_collection to another name"):
            e.index([tmp_path / "mine"], project="mine")
        resp = e.search("advisory lock", lanes=list(LANES))
        assert resp.hits == [] and set(resp.failed_lanes) == set(LANES)
        assert all(f"ConfigError: the Milvus alias '{planted}'" in why for why in resp.failed_lanes.values())
        index = e.lanes["bm25"].shared.index  # type: ignore[attr-defined]
        assert _collections(index.client) == before  # nothing made, moved or dropped
        assert index.rows("other_lex_a") == other_rows


def _write_filler(folder: Path, count: int = 150) -> None:
    """``count`` small documents: enough that a few changed ones are a sync of changes, not a
    re-weighting (which needs more than ``sparse.AVGDL_DRIFT_MAX`` of the blocks changed)."""
    folder.mkdir(parents=True)
    for i in range(count):
        (folder / f"f{i:03d}.md").write_text(f"# Filler {i}\n\nsome filler words, number {i}\n")


def test_a_document_left_out_then_repaired_is_synced_by_the_same_process(tmp_path: Path) -> None:
    """Attack session 29: a document left out of Milvus (a planted over-long label) stayed in the
    client's set of left-out documents, so once repaired (its file indexed again) a sync of
    changes in the same process upserted its rows and then trimmed them all away: the document
    was missing from every Milvus lane for good (the state said up to date, and doctor no longer
    listed it). Now the rows a sync of changes keeps are read from the catalog as it is."""
    write_projects(tmp_path / "src")
    _write_filler(tmp_path / "filler")
    config = Config(model="none", milvus_uri=str(tmp_path / "lanes.db"))
    gen_md = tmp_path / "src" / "alpha" / "gen.md"

    def found(e: Engine) -> bool:
        resp = e.search("generation number of writes", lanes=list(LANES), limit=50)
        assert resp.failed_lanes == {}
        return "gen.md" in {h.path for h in resp.hits}

    with Engine(tmp_path / "idx", config) as e:
        index_all(e, tmp_path / "src")
        e.index([tmp_path / "filler"], project="filler")
        (doc_id,) = e.catalog.conn.execute("SELECT doc_id FROM documents WHERE rel_path='gen.md'").fetchone()
        assert found(e)
        conn = sqlite3.connect(tmp_path / "idx" / "catalog.sqlite3", isolation_level=None)
        try:  # the row written at a new generation, as a writer of the catalog would
            conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
            conn.execute("UPDATE documents SET label=?, generation=(SELECT CAST(value AS INTEGER) FROM meta"
                         " WHERE key='generation') WHERE doc_id=?", ("L" * 300, doc_id))
        finally:
            conn.close()
        assert not found(e)  # left out
        gen_md.write_text(gen_md.read_text().replace("writes", "writes!"))  # the same lengths
        e.index([tmp_path / "src" / "alpha"], project="alpha")  # read again: the label repaired
        index = e.lanes["bm25"].shared.index  # type: ignore[attr-defined]
        assert index.state()["changed"] > 0  # a sync of changes (a rebuild counts from 0 again)
        assert found(e)
        rows = index.client.query(index.lex, filter=f'doc_id == "{doc_id}"', output_fields=["block_id"])
        blocks = e.catalog.block_ids_of([doc_id])[doc_id]
        assert sorted(r["block_id"] for r in rows) == sorted(blocks) and blocks
    with Engine(tmp_path / "idx", config) as e:
        assert found(e)


def _rename_document(conn: sqlite3.Connection, rel_path: str, doc_id: str) -> None:
    """The document at ``rel_path`` (and its blocks) given the id ``doc_id`` at a new generation,
    its old id deleted, as a writer of the catalog would (block ids unchanged)."""
    conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
    (old,) = conn.execute("SELECT doc_id FROM documents WHERE rel_path=?", (rel_path,)).fetchone()
    conn.execute("PRAGMA foreign_keys=OFF")
    conn.execute("INSERT INTO tombstones SELECT doc_id, project_id, (SELECT CAST(value AS INTEGER) FROM meta"
                 " WHERE key='generation') FROM documents WHERE doc_id=?", (old,))
    conn.execute("UPDATE documents SET doc_id=?, generation=(SELECT CAST(value AS INTEGER) FROM meta"
                 " WHERE key='generation') WHERE doc_id=?", (doc_id, old))
    conn.execute("UPDATE blocks SET doc_id=? WHERE doc_id=?", (doc_id, old))


def test_document_ids_with_a_line_feed_or_a_carriage_return_are_matched_exactly(tmp_path: Path) -> None:
    """Attack session 29: ``literal`` wrote a line feed as a space, and left a carriage return as
    it was. A catalog's document id holding a carriage return then failed every sync of changes
    (the trim's expression does not parse: every Milvus lexical lane failed at every search, for
    every project), and deleting a document whose id holds a line feed deleted the rows of the
    document whose id has a space there instead. Both are now escaped (``\\n``, ``\\r``), which
    Milvus reads back as the character."""
    write_projects(tmp_path / "src")
    _write_filler(tmp_path / "filler", 500)  # 7 documents written or deleted below
    config = Config(model="none", milvus_uri=str(tmp_path / "lanes.db"))
    with Engine(tmp_path / "idx", config) as e:
        index_all(e, tmp_path / "src")
        e.index([tmp_path / "filler"], project="filler")
    conn = sqlite3.connect(tmp_path / "idx" / "catalog.sqlite3", isolation_level=None)
    try:
        _rename_document(conn, "gen.md", "x\ry")
        _rename_document(conn, "f000.md", "p q")
        _rename_document(conn, "f001.md", "p\nq")
    finally:
        conn.close()

    def milvus_docs(e: Engine) -> set[str]:
        index = e.lanes["bm25"].shared.index  # type: ignore[attr-defined]
        rows = index.client.query(index.lex, filter='block_id != ""', output_fields=["doc_id"], limit=16_384)
        return {r["doc_id"] for r in rows}

    with Engine(tmp_path / "idx", config) as e:
        resp = e.search("advisory lock", lanes=list(LANES))
        assert resp.failed_lanes == {}
        assert e.lanes["bm25"].shared.index.state()["changed"] > 0  # type: ignore[attr-defined]  # no rebuild
        assert {"x\ry", "p q", "p\nq"} <= milvus_docs(e)
    conn = sqlite3.connect(tmp_path / "idx" / "catalog.sqlite3", isolation_level=None)
    try:  # "p\nq" deleted, as a writer of the catalog would
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
        conn.execute("INSERT INTO tombstones SELECT doc_id, project_id, (SELECT CAST(value AS INTEGER) FROM meta"
                     " WHERE key='generation') FROM documents WHERE doc_id=?", ("p\nq",))
        conn.execute("DELETE FROM blocks WHERE doc_id=?", ("p\nq",))
        conn.execute("DELETE FROM documents WHERE doc_id=?", ("p\nq",))
    finally:
        conn.close()
    with Engine(tmp_path / "idx", config) as e:
        assert e.search("advisory lock", lanes=list(LANES)).failed_lanes == {}
        docs = milvus_docs(e)
        assert "p\nq" not in docs and {"x\ry", "p q"} <= docs
        index = e.lanes["bm25"].shared.index  # type: ignore[attr-defined]
        (blocks,) = e.catalog.conn.execute("SELECT count(*) FROM blocks").fetchone()
        assert index.rows(index.lex) == blocks


def test_a_document_deleted_then_written_again_before_a_sync_keeps_its_rows(  # type: ignore[no-untyped-def]
        tmp_path: Path, milvus_server, monkeypatch: pytest.MonkeyPatch) -> None:
    """Attack session 29: a sync of changes trimmed every row of a document that was both deleted
    and written again since the last sync (a file removed, then restored, while a sync did not run
    or did not end): the catalog keeps its tombstone, and the rows it keeps were those of the
    documents written and not deleted. Its new rows were upserted, then deleted, and the state
    recorded Milvus up to date: the document was missing from every lexical Milvus lane for good.
    Now the rows kept are those of the documents the catalog holds."""
    write_projects(tmp_path / "src")
    _write_filler(tmp_path / "filler")
    index = tmp_path / "idx"
    index.mkdir()
    (index / "config.toml").write_text('model = "none"\n')
    # the killed process below opens the Milvus this one has open: a milvus-lite server
    monkeypatch.setenv("SLEUTH_MILVUS_URI", milvus_server.uri)
    monkeypatch.setenv("SLEUTH_MILVUS_COLLECTION", "deleted_then_written")
    gen_md = tmp_path / "src" / "alpha" / "gen.md"

    def found(e: Engine) -> bool:
        resp = e.search("generation number of writes", lanes=list(LANES), limit=50)
        assert resp.failed_lanes == {}
        return "gen.md" in {h.path for h in resp.hits}

    with Engine(index) as e:
        index_all(e, tmp_path / "src")
        e.index([tmp_path / "filler"], project="filler")
        assert found(e)
    text = gen_md.read_text()
    gen_md.unlink()  # deleted, and the sync of that killed once the statistics are in
    env = {**os.environ, "SLEUTH_FAULT_KILL_AT": "milvus:stats-committed"}
    proc = subprocess.run([sys.executable, "-m", "sleuth", "index", str(tmp_path / "src" / "alpha"), "--project",
                           "alpha", "--index", str(index)], env=env, capture_output=True, timeout=600)
    assert proc.returncode == -9, proc.stderr
    gen_md.write_text(text)  # restored: written again under the same document id
    with Engine(index) as e:
        e.index([tmp_path / "src" / "alpha"], project="alpha")
        shared = e.lanes["bm25"].shared  # type: ignore[attr-defined]
        assert shared.index.state()["changed"] > 0  # a sync of changes, not a rebuild
        assert found(e)
        (blocks,) = e.catalog.conn.execute("SELECT count(*) FROM blocks").fetchone()
        assert shared.index.rows(shared.index.lex) == blocks
