"""The Milvus sync's records in the catalog planted or damaged (attack session 24): a
``milvus:state`` that is not a JSON object (a list, a number, null, not JSON, nested 50,000 deep)
or has a field of the wrong type (a generation as text) failed every Milvus lane at every search
(AttributeError, JSONDecodeError, RecursionError, TypeError); a damaged ``milvus:stats`` or
``milvus_doc_stats`` row failed the sync the same way. Now such a record counts as absent
(:mod:`sleuth.store.milvus_state`) and the next sync rebuilds what it described: the lanes answer
as before. milvus-lite in this process."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
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
