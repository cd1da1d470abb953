"""The Milvus sync in bounded parts (``milvus_sync_part_blocks``), on real PostgreSQL and a real
``milvus-lite server``: parts of a few blocks give the rows, statistics and ranks of one part;
at most two parts of analysed blocks are alive at once; a sync killed between parts is finished
by the next one (which starts where it stopped), and one the catalog has moved past is redone."""

from __future__ import annotations

import base64
import gc
import json
import os
import random
import subprocess
import sys
import weakref
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from sleuth.config import load_config
from sleuth.engine import Engine
from sleuth.errors import ConfigError
from sleuth.store import milvus_columns
from sleuth.store.milvus import MilvusSettings
from sleuth.store.milvus_sync import MILVUS_SYNC_PART_BLOCKS, SyncBlock
from sleuth.store.pg import PgWriteLock
from tests.scale.test_milvus_lanes import lane_answers

PART_BLOCKS = 3
FILES_PER_PROJECT = 80
PROJECTS = ("alpha", "beta", "gamma")
LANES = ("bm25", "index", "tfidf")
WORDS = [a + b for a in ("ba", "ko", "ti", "ru", "me", "sa", "lo", "ve", "di", "nu") for b in
         ("ran", "mek", "sol", "tiv", "pur", "gal", "dox", "fen")]
QUERIES = ("baran komek", "tisol rupur meran", "sagal lodox", "vefen dinu", "nutiv kosol")


def text_of(project: str, i: int, variant: int = 0) -> str:
    """A small markdown file (one block); ``variant`` changes its words, not how many there are."""
    rng = random.Random(f"{project}/{i}/{variant}")
    title = " ".join(rng.choice(WORDS) for _ in range(2))
    body = " ".join(rng.choice(WORDS) for _ in range(12 + i % 7))
    return f"# {title}\n\n{body}\n"


def write_files(root: Path, project: str, variants: dict[int, int] | None = None) -> None:
    for i in range(FILES_PER_PROJECT):
        path = root / project / f"f{i:03d}.md"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text_of(project, i, (variants or {}).get(i, 0)))


def make_index(folder: Path, milvus_uri: str, collection: str, part_blocks: int) -> Path:
    folder.mkdir(parents=True)
    (folder / "config.toml").write_text(f'model = "none"\nmilvus_uri = "{milvus_uri}"\nmilvus_collection ='
                                        f' "{collection}"\nmilvus_sync_part_blocks = {part_blocks}\n')
    return folder


def milvus_rows(engine: Engine) -> list[dict[str, Any]]:
    index = engine.lanes["bm25"].shared.index  # type: ignore[attr-defined]
    rows = index.client.query(index.lex, filter='block_id != ""', output_fields=["*"], limit=16_384)
    return sorted((dict(r) for r in rows), key=lambda r: r["block_id"])


def catalog_stats(engine: Engine) -> tuple[Any, ...]:
    conn = engine.catalog.conn
    doc_stats = conn.execute("SELECT doc_id, stats FROM milvus_doc_stats").fetchall()
    return (sorted(conn.execute("SELECT term_id, df FROM milvus_df").fetchall()),
            sorted((d, json.loads(s)) for d, s in doc_stats),
            {k: v for k, v in json.loads(engine.catalog.get_meta("milvus:stats") or "{}").items()
             if k != "generation"})  # the catalogs' generations differ when their histories do


def answers(engine: Engine) -> dict[tuple[str, str], list[tuple[str, float]]]:
    return lane_answers(engine, lanes=LANES, queries=QUERIES, digits=5)


class PartWatch:
    """``on_part`` of a sync: how many blocks each part had, and how many :class:`SyncBlock`
    were alive (after a collection) each time a part was read, this one included."""

    def __init__(self) -> None:
        self.alive: weakref.WeakSet[SyncBlock] = weakref.WeakSet()
        self.parts: list[tuple[str, int, int]] = []  # (phase, blocks in the part, blocks alive)

    def __call__(self, phase: str, part: list[SyncBlock]) -> None:
        gc.collect()
        self.alive.update(part)
        self.parts.append((phase, len(part), len(self.alive)))

    def blocks(self, phase: str) -> int:
        return sum(n for p, n, _ in self.parts if p == phase)


def watch(engine: Engine) -> PartWatch:
    hook = PartWatch()
    engine.lanes["bm25"].shared.index.on_part = hook  # type: ignore[attr-defined]
    return hook


@pytest.fixture
def scale(tmp_path: Path, pg_server, milvus_server, monkeypatch: pytest.MonkeyPatch):  # type: ignore[no-untyped-def]
    """``open(name, part_blocks)``: an engine on a PostgreSQL catalog of its own (database
    ``name``) and the collections ``name_*`` of the shared milvus-lite server."""
    engines: list[Engine] = []
    urls: dict[str, str] = {}

    def open_engine(name: str, part_blocks: int) -> Engine:
        if name not in urls:
            urls[name] = pg_server.new_database(f"sleuth_parts_{name}_{os.getpid()}")
            make_index(tmp_path / name, milvus_server.uri, name, part_blocks)
        monkeypatch.setenv("SLEUTH_CATALOG_URL", urls[name])
        # a network Milvus named in config.toml is used only when the environment names one too
        monkeypatch.setenv("SLEUTH_MILVUS_URI", milvus_server.uri)
        monkeypatch.setenv("SLEUTH_MILVUS_COLLECTION", name)  # and its collection name (config.toml's refused)
        engine = Engine(tmp_path / name)
        engines.append(engine)
        return engine

    open_engine.urls = urls  # type: ignore[attr-defined]
    yield open_engine
    for engine in engines:
        engine.close()


def test_parts_of_a_few_blocks_give_the_rows_and_ranks_of_one_part_holding_two_parts_at_most(  # type: ignore[no-untyped-def]
        tmp_path: Path, scale) -> None:
    src = tmp_path / "src"
    for project in PROJECTS:
        write_files(src, project)
    parts, whole = scale("parts", PART_BLOCKS), scale("whole", 1_000_000)
    hook = watch(parts)
    read: list[int] = []  # blocks each catalog page had
    pages = parts.catalog.sync_block_pages

    def counted_pages(*args: Any) -> Any:
        for page in pages(*args):
            read.append(len(page))
            yield page

    parts.catalog.sync_block_pages = counted_pages  # type: ignore[method-assign]
    for project in PROJECTS:
        mark = len(hook.parts)
        for engine in (parts, whole):
            engine.index([src / project], project=project)
        if project == "alpha":  # the first sync: its rows pass weighs the statistics pass's parts
            assert sum(read) == FILES_PER_PROJECT and hook.blocks("lex") == FILES_PER_PROJECT
    blocks = parts.catalog.counts()["blocks"]
    assert blocks == len(PROJECTS) * FILES_PER_PROJECT == whole.catalog.counts()["blocks"]
    rows = milvus_rows(parts)
    assert len(rows) == blocks and len({r["block_id"] for r in rows}) == blocks
    assert rows == milvus_rows(whole)
    assert catalog_stats(parts) == catalog_stats(whole)
    assert answers(parts) == answers(whole)
    assert all(answers(parts).values())
    # Every sync read its blocks PART_BLOCKS at a time and never held more than two parts; the
    # last one counted gamma's new blocks and weighed every row again (a re-weighting).
    assert max(n for _, n, _ in hook.parts) == PART_BLOCKS
    assert max(alive for _, _, alive in hook.parts) <= 2 * PART_BLOCKS
    last = PartWatch()
    last.parts = hook.parts[mark:]
    assert (last.blocks("stats"), last.blocks("lex")) == (FILES_PER_PROJECT, blocks)
    assert len(last.parts) == -(-FILES_PER_PROJECT // PART_BLOCKS) + -(-blocks // PART_BLOCKS)


def test_rows_sent_as_columns_are_the_rows_pymilvus_packs_itself(tmp_path: Path, scale,  # type: ignore[no-untyped-def]
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The column requests (milvus_columns) and pymilvus' public row ``insert`` (the fallback for
    a client without column requests) leave the same rows and answers, first sync and re-weighting."""
    src = tmp_path / "src"
    for project in PROJECTS[:2]:
        write_files(src, project)
    handlers: list[bool] = []
    real = milvus_columns.column_handler

    def seen(client: Any) -> Any:
        handler = real(client)
        handlers.append(handler is not None)
        return handler

    monkeypatch.setattr(milvus_columns, "column_handler", seen)
    columns = scale("columns", 50)
    for project in PROJECTS[:2]:
        columns.index([src / project], project=project)
    assert handlers and all(handlers)  # every part went as columns
    monkeypatch.setattr(milvus_columns, "column_handler", lambda client: None)
    rows = scale("rows", 50)
    for project in PROJECTS[:2]:
        rows.index([src / project], project=project)
    assert len(milvus_rows(columns)) == 2 * FILES_PER_PROJECT
    assert milvus_rows(columns) == milvus_rows(rows)
    assert answers(columns) == answers(rows) and all(answers(rows).values())


def kill_during_index(src: Path, project: str, folder: Path, url: str, point: str) -> None:
    env = {**os.environ, "SLEUTH_CATALOG_URL": url, "SLEUTH_FAULT_KILL_AT": point}
    proc = subprocess.run([sys.executable, "-m", "sleuth", "index", str(src / project), "--project", project,
                           "--index", str(folder)], env=env, capture_output=True, timeout=600)
    assert proc.returncode == -9, proc.stderr


def test_a_sync_killed_between_parts_is_finished_by_the_next_one(tmp_path: Path, scale) -> None:  # type: ignore[no-untyped-def]
    src = tmp_path / "src"
    for project in PROJECTS:
        write_files(src, project)
    ref = scale("ref", 1_000_000)
    # 1. The first sync (every row weighed from scratch) killed after its fifth part was sent.
    first = scale("killed", PART_BLOCKS)
    first.close()
    kill_during_index(src, "alpha", tmp_path / "killed", scale.urls["killed"], "milvus:lex-part:5.")
    ref.index([src / "alpha"], project="alpha")
    engine = scale("killed", PART_BLOCKS)
    progress = engine.lanes["bm25"].shared.index.state()["lex_sync"]  # type: ignore[attr-defined]
    assert progress["rebuild"] and progress["sent"] == PART_BLOCKS and progress["done"]
    hook = watch(engine)
    assert answers(engine) == answers(ref)  # the first search finishes the sync
    assert hook.blocks("stats") == 0  # the statistics were committed before the kill
    assert hook.blocks("lex") == FILES_PER_PROJECT - 4 * PART_BLOCKS  # from the fifth part on, not from scratch
    assert milvus_rows(engine) == milvus_rows(ref) and len(milvus_rows(ref)) == FILES_PER_PROJECT
    assert "lex_sync" not in engine.lanes["bm25"].shared.index.state()  # type: ignore[attr-defined]
    for project in ("beta", "gamma"):
        engine.index([src / project], project=project)
        ref.index([src / project], project=project)
    # 2. A sync of a few changed documents (the same lengths: no re-weighting) killed in its second part.
    write_files(src, "beta", {i: 1 for i in range(4)})
    engine.close()
    kill_during_index(src, "beta", tmp_path / "killed", scale.urls["killed"], "milvus:lex-part:2.")
    ref.index([src / "beta"], project="beta")
    engine = scale("killed", PART_BLOCKS)
    progress = engine.lanes["bm25"].shared.index.state()["lex_sync"]  # type: ignore[attr-defined]
    assert not progress["rebuild"] and progress["sent"] == 1
    hook = watch(engine)
    assert answers(engine) == answers(ref)
    assert hook.blocks("lex") == 1  # only the part that was in flight
    assert milvus_rows(engine) == milvus_rows(ref)
    assert catalog_stats(engine) == catalog_stats(ref)
    # 3. Killed again, and the catalog moves on before the next sync: that sync starts over.
    write_files(src, "beta", {i: 2 for i in range(4, 10)})
    engine.close()
    kill_during_index(src, "beta", tmp_path / "killed", scale.urls["killed"], "milvus:lex-part:1.")
    write_files(src, "gamma", {0: 1})
    engine = scale("killed", PART_BLOCKS)
    assert engine.lanes["bm25"].shared.index.state()["lex_sync"]["rebuild"]  # type: ignore[attr-defined]
    engine.index([src / "gamma"], project="gamma")
    fresh = scale("fresh", 1_000_000)  # the same files indexed without a kill
    for project in PROJECTS:
        fresh.index([src / project], project=project)
    assert answers(engine) == answers(fresh)
    # (recorded_ns is when a document was first indexed: later in the fresh catalog)
    rows = [{k: v for k, v in r.items() if k != "recorded_ns"} for r in milvus_rows(engine)]
    assert rows == [{k: v for k, v in r.items() if k != "recorded_ns"} for r in milvus_rows(fresh)]
    assert len(rows) == len(PROJECTS) * FILES_PER_PROJECT
    assert catalog_stats(engine) == catalog_stats(fresh)
    assert "lex_sync" not in engine.lanes["bm25"].shared.index.state()  # type: ignore[attr-defined]


def test_the_part_size_is_a_checked_setting(tmp_path: Path) -> None:
    assert load_config(None).milvus_sync_part_blocks is None  # MILVUS_SYNC_PART_BLOCKS
    assert MilvusSettings("x.db").sync_part_blocks == MILVUS_SYNC_PART_BLOCKS
    (tmp_path / "config.toml").write_text("milvus_sync_part_blocks = 5\n")
    assert load_config(tmp_path).milvus_sync_part_blocks == 5
    for bad in ("0", "true", '"5"', "1000001"):
        (tmp_path / "config.toml").write_text(f"milvus_sync_part_blocks = {bad}\n")
        with pytest.raises(ConfigError, match="milvus_sync_part_blocks must be an integer from 1 to 1000000"):
            load_config(tmp_path)


def doc_terms(engine: Engine) -> dict[str, tuple[int, dict[str, int], dict[int, int]]]:
    """Every ``milvus_doc_stats`` row, either format, as ``{doc_id: (blocks, lengths, {term id: blocks})}``
    (read here, not by the code under test)."""
    out = {}
    for doc_id, raw in engine.catalog.conn.execute("SELECT doc_id, stats FROM milvus_doc_stats").fetchall():
        record = json.loads(raw)
        if "df" in record:  # the format before
            df = {int(k): v for k, v in record["df"].items()}
        else:
            ids = np.frombuffer(base64.b64decode(record["ids"]), dtype="<u4").tolist()
            counts = (np.frombuffer(base64.b64decode(record["counts"]), dtype="<u4").tolist() if "counts" in record
                      else [1] * len(ids))
            df = dict(zip(ids, counts, strict=True))
        out[doc_id] = (record["n"], record["len"], df)
    return out


def test_document_statistics_in_the_format_before_are_taken_out_without_counting_again(  # type: ignore[no-untyped-def]
        tmp_path: Path, scale) -> None:
    """``milvus_doc_stats`` rows written before the packed ids (``df``: a JSON object of term ids)
    are read by the next sync of changes: the changed documents' old contributions are taken out
    of the totals (no count from scratch), and the totals, rows and answers are those of an index
    that never had the old format."""
    src = tmp_path / "src"
    for project in PROJECTS[:2]:
        write_files(src, project)
    sections = "\n\n".join(f"## part {k}\n\nbaran komek {WORDS[k]} {WORDS[k + 1]}" for k in range(5))
    (src / "alpha" / "long.md").write_text(f"# long\n\n{sections}\n")  # one document, several blocks
    old = scale("before", PART_BLOCKS)
    for project in PROJECTS[:2]:
        old.index([src / project], project=project)
    with old.catalog.write() as conn:  # the rows as the sync before this format wrote them
        for doc_id, (n, lengths, df) in doc_terms(old).items():
            conn.execute("UPDATE milvus_doc_stats SET stats=? WHERE doc_id=?",
                         (json.dumps({"n": n, "len": lengths, "df": {str(k): v for k, v in df.items()}}), doc_id))
    assert max(n for n, _, _ in doc_terms(old).values()) > 1  # long.md: ids held by several blocks
    assert any(c > 1 for _, _, df in doc_terms(old).values() for c in df.values())
    write_files(src, "alpha", {i: 1 for i in range(4)})
    (src / "alpha" / "long.md").write_text(f"# long\n\n{sections}\n\n## more\n\nsagal lodox\n")
    hook = watch(old)
    old.index([src / "alpha"], project="alpha")
    paths = [f"f{i:03d}.md" for i in range(4)] + ["long.md"]
    (changed,) = old.catalog.conn.execute(
        "SELECT count(*) FROM blocks b JOIN documents d ON d.doc_id = b.doc_id WHERE d.rel_path IN (?, ?, ?, ?, ?)"
        " AND d.root LIKE ?", [*paths, "%alpha"]).fetchone()
    assert changed > 5 and hook.blocks("stats") == changed, "the statistics were counted from scratch"
    fresh = scale("after", 1_000_000)
    for project in PROJECTS[:2]:
        fresh.index([src / project], project=project)
    assert catalog_stats(old)[0] == catalog_stats(fresh)[0]  # milvus_df
    assert catalog_stats(old)[2] == catalog_stats(fresh)[2]  # the totals
    assert doc_terms(old).keys() == doc_terms(fresh).keys()
    assert sorted(doc_terms(old).values(), key=repr) == sorted(doc_terms(fresh).values(), key=repr)
    assert answers(old) == answers(fresh) and all(answers(old).values())


def lex_collections(engine: Engine) -> tuple[list[str], str | None]:
    """``(collections of the index's prefix, the one its ``_lex`` alias names)``, read with pymilvus."""
    index = engine.lanes["bm25"].shared.index  # type: ignore[attr-defined]
    prefix = index.settings.collection
    names = sorted(n for n in index.client.list_collections() if n.startswith(f"{prefix}_"))
    named = [n for n in names if index.lex in index.client.list_aliases(n)["aliases"]]
    return names, (named[0] if named else None)


def test_searches_during_a_rebuild_read_the_whole_collection_before_it(tmp_path: Path, scale) -> None:  # type: ignore[no-untyped-def]
    """Attack session 28: a re-weighting emptied ``<collection>_lex`` and filled it again, so a
    search during it (another process's, or any while a killed writer's sync was unfinished and
    the lock was held) answered from the rows written so far. A rebuild now fills the spare
    collection (``_lex_b``) while the alias ``_lex`` names the whole one before it, and names the
    new one once it is flushed; the old one is then dropped."""
    src = tmp_path / "src"
    write_files(src, "alpha")
    engine = scale("swap", PART_BLOCKS)
    engine.index([src / "alpha"], project="alpha")
    rows_before = milvus_rows(engine)
    assert len(rows_before) == FILES_PER_PROJECT
    assert lex_collections(engine) == (["swap_lex_a"], "swap_lex_a")
    engine.close()
    write_files(src, "beta")  # twice the blocks: every row is weighed again
    kill_during_index(src, "beta", tmp_path / "swap", scale.urls["swap"], "milvus:lex-part:5.")
    lock = PgWriteLock(scale.urls["swap"], 60)
    assert lock.acquire()  # another process writes: the searches below cannot finish the sync
    try:
        engine = scale("swap", PART_BLOCKS)
        progress = engine.lanes["bm25"].shared.index.state()["lex_sync"]  # type: ignore[attr-defined]
        assert progress["rebuild"] and progress["collection"] == "swap_lex_b" and progress["sent"] == PART_BLOCKS
        assert lex_collections(engine) == (["swap_lex_a", "swap_lex_b"], "swap_lex_a")
        assert milvus_rows(engine) == rows_before  # the whole collection before the rebuild, unchanged
        resp = engine.search("baran komek", lanes=list(LANES), limit=100)
        assert resp.failed_lanes == {} and len({h.path for h in resp.hits}) > 3 * PART_BLOCKS
        assert "as the sync before it left it" in (resp.notice or "")
        engine.close()
    finally:
        lock.release()
    engine = scale("swap", PART_BLOCKS)
    ref = scale("swapref", 1_000_000)
    for project in ("alpha", "beta"):
        ref.index([src / project], project=project)
    assert answers(engine) == answers(ref)  # the first search finishes the rebuild
    assert lex_collections(engine) == (["swap_lex_b"], "swap_lex_b")
    assert len(milvus_rows(engine)) == 2 * FILES_PER_PROJECT
    # Killed after the alias names the new collection, before the old one is dropped: the next
    # sync drops it and answers as before.
    write_files(src, "gamma")
    engine.close()
    scale("swap", PART_BLOCKS).close()  # the environment names this index's collections again
    kill_during_index(src, "gamma", tmp_path / "swap", scale.urls["swap"], "milvus:lex-aliased")
    engine = scale("swap", PART_BLOCKS)
    assert lex_collections(engine) == (["swap_lex_a", "swap_lex_b"], "swap_lex_a")
    ref.index([src / "gamma"], project="gamma")
    assert answers(engine) == answers(ref)
    assert lex_collections(engine) == (["swap_lex_a"], "swap_lex_a")
    assert "lex_sync" not in engine.lanes["bm25"].shared.index.state()  # type: ignore[attr-defined]


def test_a_sync_of_changes_never_leaves_a_document_out(tmp_path: Path, scale) -> None:  # type: ignore[no-untyped-def]
    """Before, a sync of changed documents deleted their rows first and inserted the new ones part
    by part, so until it ended (or for good while a killed writer's sync stayed unfinished) a
    search did not find them. Now their new rows are upserted first and only the rows they no
    longer have are deleted: a search finds each document, old or new (a block the catalog no
    longer has is dropped from the results: :mod:`sleuth.pipeline.results`)."""
    src = tmp_path / "src"
    ref = scale("changesref", 1_000_000)  # the same history, never killed
    engine = scale("changes", PART_BLOCKS)
    for project in PROJECTS:
        write_files(src, project)
        engine.index([src / project], project=project)
        ref.index([src / project], project=project)
    engine.close()
    write_files(src, "alpha", {i: 1 for i in range(4)})  # four documents of 240, the same lengths: no re-weighting
    kill_during_index(src, "alpha", tmp_path / "changes", scale.urls["changes"], "milvus:lex-part:1.")
    ref.index([src / "alpha"], project="alpha")
    lock = PgWriteLock(scale.urls["changes"], 60)
    assert lock.acquire()
    try:
        engine = scale("changes", PART_BLOCKS)
        progress = engine.lanes["bm25"].shared.index.state()["lex_sync"]  # type: ignore[attr-defined]
        assert not progress["rebuild"] and progress["collection"] == "changes_lex_a"
        # The four documents' new rows not all sent: each found, by its old rows or its new ones
        # (block ids follow the content: those sent sit beside the old ones until the trim).
        rows = milvus_rows(engine)
        assert len({r["doc_id"] for r in rows}) == len(PROJECTS) * FILES_PER_PROJECT
        assert len(PROJECTS) * FILES_PER_PROJECT <= len(rows) <= len(PROJECTS) * FILES_PER_PROJECT + PART_BLOCKS
        engine.close()
    finally:
        lock.release()
    engine = scale("changes", PART_BLOCKS)
    assert answers(engine) == answers(ref)
    assert milvus_rows(engine) == milvus_rows(ref)
    # A document that loses a block, and a deleted one: their rows go after the sync.
    (src / "alpha" / "f001.md").write_text("# two parts\n\nbaran komek\n\n## second\n\ntisol rupur\n")
    engine.index([src / "alpha"], project="alpha")
    (src / "alpha" / "f001.md").write_text("# one part\n\nbaran komek tisol\n")
    (src / "alpha" / "f002.md").unlink()
    engine.index([src / "alpha"], project="alpha")
    ref.index([src / "alpha"], project="alpha")
    assert [r["block_id"] for r in milvus_rows(engine)] == [r["block_id"] for r in milvus_rows(ref)]
    assert len(milvus_rows(engine)) == len(PROJECTS) * FILES_PER_PROJECT - 1


def test_a_collection_of_the_layout_before_aliases_is_synced_then_replaced(tmp_path: Path, scale) -> None:  # type: ignore[no-untyped-def]
    """An index synced by a sleuth before the aliases has a collection named ``<collection>_lex``
    itself: syncs of changes write into it, and the first rebuild gives its name to the alias."""
    src = tmp_path / "src"
    write_files(src, "alpha")
    ref = scale("legacyref", 1_000_000)  # the same history in the layout of today
    ref.index([src / "alpha"], project="alpha")
    engine = scale("legacy", PART_BLOCKS)
    engine.index([src / "alpha"], project="alpha")
    client = engine.lanes["bm25"].shared.index.client  # type: ignore[attr-defined]
    client.drop_alias("legacy_lex")
    client.rename_collection("legacy_lex_a", "legacy_lex")  # as a sleuth before the aliases left it
    engine.close()
    write_files(src, "alpha", {3: 1})  # a sync of changes
    engine = scale("legacy", PART_BLOCKS)
    engine.index([src / "alpha"], project="alpha")
    ref.index([src / "alpha"], project="alpha")
    assert answers(engine) == answers(ref)
    assert lex_collections(engine) == (["legacy_lex"], None)
    write_files(src, "beta")  # a rebuild
    engine.index([src / "beta"], project="beta")
    ref.index([src / "beta"], project="beta")
    assert answers(engine) == answers(ref)
    assert lex_collections(engine) == (["legacy_lex_a"], "legacy_lex_a")
