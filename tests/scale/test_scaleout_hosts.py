"""Scaled out (catalog in PostgreSQL, lanes in ``milvus-lite server`` over gRPC), as several serving
hosts use it: a second host with an empty index folder answers the exact and graph lanes (and every
other) exactly as the first, also after the first writes again; closing an engine leaves no
PostgreSQL session and no Milvus connection open; a lane query listing many blocks (a common
quoted phrase) is split over several bounded Milvus expressions, and skipped with a readable
reason above the bound; each host's postings have a lock of their own, so a host catches up while
another host holds the catalog's write lock, and a host building its postings keeps no writer of
another host waiting."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import psycopg
import pytest

import sleuth
from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.lanes.base import LaneQuery
from sleuth.lanes.postings import Postings
from sleuth.store import milvus as milvus_store
from sleuth.store.milvus import MILVUS_FILTER_IDS_MAX, MILVUS_IDS_PER_EXPRESSION, expressions
from sleuth.text import parse_query
from sleuth.types import SearchRequest
from tests.scale.test_milvus_lanes import tie_groups

FILES = {
    "locks.md": "# Write locks\n\nOne writer at a time holds the advisory lock, taken with"
                " `pg_try_advisory_lock`.\n\nSee [generations](gen.md) and [[fusion]].\n",
    "gen.md": "# Generations\n\nEvery committed write bumps the generation number; the advisory lock"
              " guards it.\n",
    "fusion.md": "---\nrelated: [gen.md]\n---\n# Fusion\n\nWeighted reciprocal rank fusion of the lanes.\n",
    "holder.md": "# Holder\n\nThe holder of the write lock is named when a writer waits (see [locks](locks.md)).\n",
}
QUERIES = ('"advisory lock"', "pg_try_advisory_lock", '"write lock" holder', "generation number", "fusion lanes")
LANE_SETS = (["exact"], ["bm25", "exact", "graph"], ["bm25", "index", "exact", "graph"])


def answers(engine: Engine) -> dict[tuple[str, str], list[tuple[str, str, float, tuple[str, ...]]]]:
    out = {}
    for q in QUERIES:
        for lanes in LANE_SETS:
            resp = engine.search(SearchRequest(query=q, limit=10, lanes=lanes, snippets=False))
            out[(q, ",".join(lanes))] = [(h.path, h.best_block_id, round(h.score, 6), tuple(sorted(h.sources)))
                                         for h in resp.hits]
    return out


def pg_sessions(url: str) -> int:
    """Sessions connected to the catalog's database, this probe's own left out."""
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute("SELECT count(*) FROM pg_stat_activity WHERE datname = current_database()"
                           " AND pid <> pg_backend_pid()").fetchone()
    assert row is not None
    return int(row[0])


def sockets_to(port: int) -> int:
    """This process's established TCP connections to 127.0.0.1:``port`` (from /proc)."""
    inodes = set()
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    count = 0
    for table in ("/proc/self/net/tcp", "/proc/self/net/tcp6"):
        with open(table) as fh:
            next(fh)
            for line in fh:
                fields = line.split()
                remote, state, inode = fields[2], fields[3], fields[9]
                if state == "01" and inode in inodes and int(remote.rsplit(":", 1)[1], 16) == port:
                    count += 1
    return count


def write_files(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    for name, text in FILES.items():
        (root / name).write_text(text)


def test_a_second_host_with_an_empty_folder_answers_like_the_first(tmp_path: Path, catalog_url: str,
                                                                   milvus_server) -> None:  # type: ignore[no-untyped-def]
    write_files(tmp_path / "src")
    cfg = Config(model="none", milvus_uri=milvus_server.uri, milvus_collection="hosts")
    first = Engine(tmp_path / "host-a", cfg)
    first.index([tmp_path / "src"], project="alpha")
    second = Engine(tmp_path / "host-b", cfg)  # another host: its own, empty, index folder
    expected = answers(first)
    assert expected[('"advisory lock"', "exact")][0][0] in ("locks.md", "gen.md")
    assert any("graph" in hit[3] for hits in expected.values() for hit in hits)  # the graph lane took part
    assert answers(second) == expected
    assert second.postings.generation() == second.catalog.generation()  # caught up from the shared catalog
    # The first host writes again: the second catches up by generation before it answers.
    (tmp_path / "src" / "gen.md").write_text("# Generations\n\nEvery write bumps the generation; the advisory"
                                            " lock and the `pg_try_advisory_lock` call guard it.\n")
    (tmp_path / "src" / "holder.md").unlink()
    first.index([tmp_path / "src"], project="alpha")
    expected = answers(first)
    assert all(hit[0] != "holder.md" for hits in expected.values() for hit in hits)
    assert answers(second) == expected
    first.close()
    second.close()


#: A second process that takes the catalog's write lock (the PostgreSQL advisory lock), says so, and
#: holds it until its stdin closes: another host in the middle of a write.
HOLD_CATALOG_LOCK = """
import sys
from sleuth.store.pg import PgWriteLock
lock = PgWriteLock(sys.argv[1], 0)
if not lock.acquire(blocking=False):
    sys.exit("the catalog's write lock is taken")
print("held", flush=True)
sys.stdin.read()
lock.release()
"""
#: A safety net only (seconds): how long a test waits for a process or thread it started.
WAIT_S = 120


@contextlib.contextmanager
def catalog_lock_held_elsewhere(url: str) -> Iterator[None]:
    env = {**os.environ, "PYTHONPATH": str(Path(sleuth.__file__).resolve().parents[1])}
    proc = subprocess.Popen([sys.executable, "-c", HOLD_CATALOG_LOCK, url], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, env=env)
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"held\n"
        yield
    finally:
        assert proc.stdin is not None
        proc.stdin.close()
        proc.wait(timeout=WAIT_S)


LEASE = "# Leases\n\nA lease renewal keeps the writer's session alive past the lock timeout.\n"


def test_a_host_catches_up_while_another_host_holds_the_catalog_lock(tmp_path: Path, catalog_url: str,
                                                                     milvus_server) -> None:  # type: ignore[no-untyped-def]
    write_files(tmp_path / "src")
    cfg = Config(model="none", milvus_uri=milvus_server.uri, milvus_collection="catchup")
    first = Engine(tmp_path / "host-a", cfg)
    first.index([tmp_path / "src"], project="alpha")
    second = Engine(tmp_path / "host-b", cfg)
    behind = second.postings.generation()
    (tmp_path / "src" / "lease.md").write_text(LEASE)
    first.index([tmp_path / "src"], project="alpha")  # committed: a generation the second host has not seen
    committed = first.catalog.generation()
    assert committed > behind == second.postings.generation()
    with catalog_lock_held_elsewhere(catalog_url):  # a writer of a third host, in the middle of a write
        assert not first.folder.write_lock.acquire(blocking=False)  # the catalog's lock is really taken
        resp = second.search(SearchRequest(query='"lease renewal"', limit=5, lanes=["exact"], snippets=False))
        assert [h.path for h in resp.hits] == ["lease.md"]
        assert second.postings.generation() == committed
        assert second.postings_behind is None
        assert (tmp_path / "host-b" / "postings.lock").exists()
    first.close()
    second.close()


def test_a_host_building_its_postings_keeps_no_writer_of_another_host_waiting(
        tmp_path: Path, catalog_url: str, milvus_server, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    write_files(tmp_path / "src")
    cfg = Config(model="none", milvus_uri=milvus_server.uri, milvus_collection="building")
    first = Engine(tmp_path / "host-a", cfg)
    first.index([tmp_path / "src"], project="alpha")
    building, resume = threading.Event(), threading.Event()
    apply = Postings.apply

    def paused_apply(self: Postings, *args, **kwargs):  # type: ignore[no-untyped-def]
        if self.path.parent == tmp_path / "host-b" and not resume.is_set():
            building.set()  # the second host is building its postings from the catalog: it pauses here
            assert resume.wait(WAIT_S)
        return apply(self, *args, **kwargs)

    monkeypatch.setattr(Postings, "apply", paused_apply)
    opened: list[Engine] = []
    errors: list[Exception] = []

    def open_second() -> None:
        try:
            opened.append(Engine(tmp_path / "host-b", cfg))  # an empty folder: opening builds its postings
        except Exception as exc:  # noqa: BLE001 -- whatever it is, the test reports it below
            errors.append(exc)

    builder = threading.Thread(target=open_second)
    builder.start()
    try:
        assert building.wait(WAIT_S)
        (tmp_path / "src" / "lease.md").write_text(LEASE)
        report = first.index([tmp_path / "src"], project="alpha")  # the first host writes meanwhile
        assert report.added == 1
    finally:
        resume.set()
        builder.join(WAIT_S)
    assert errors == []
    second = opened[0]
    assert second.postings.generation() < first.catalog.generation()  # it built the generation it had read
    assert answers(second) == answers(first)  # and catches up with the write before it answers
    assert second.postings.generation() == first.catalog.generation()
    first.close()
    second.close()


def test_closing_an_engine_closes_its_postgresql_sessions_and_milvus_client(tmp_path: Path, catalog_url: str,
                                                                             milvus_server) -> None:  # type: ignore[no-untyped-def]
    write_files(tmp_path / "src")
    sessions, sockets = pg_sessions(catalog_url), sockets_to(milvus_server.port)
    cfg = Config(model="none", milvus_uri=milvus_server.uri, milvus_collection="closing")
    with Engine(tmp_path / "idx", cfg) as engine:
        engine.index([tmp_path / "src"], project="alpha")
        answers(engine)  # searches run on the pool's threads: each opens its own catalog connection
        assert pg_sessions(catalog_url) > sessions
        assert sockets_to(milvus_server.port) > sockets
    assert pg_sessions(catalog_url) == sessions
    assert sockets_to(milvus_server.port) == sockets
    engine = Engine(tmp_path / "idx", cfg)  # and again, closed explicitly
    answers(engine)
    engine.close()
    assert pg_sessions(catalog_url) == sessions
    assert sockets_to(milvus_server.port) == sockets


def test_filter_lists_are_split_into_bounded_expressions() -> None:
    blocks = [f"notes/{i:05d}.md:{i:012x}" for i in range(12_345)]
    exprs = expressions(("alpha",), None, None, blocks)
    assert len(exprs) == -(-12_345 // MILVUS_IDS_PER_EXPRESSION)
    listed = [e.split("block_id in [", 1)[1].rstrip("]").split(", ") for e in exprs]
    assert all(len(ids) <= MILVUS_IDS_PER_EXPRESSION for ids in listed)
    assert sorted(i.strip('"') for ids in listed for i in ids) == sorted(blocks)
    assert all(e.startswith('project_id in ["alpha"] and block_id in [') for e in exprs)
    # Listed blocks are narrowed to the listed documents: one list, not two.
    docs = {f"notes/{i:05d}.md" for i in range(0, 12_345, 3)}
    narrowed = expressions(None, None, docs, blocks)
    assert all("doc_id" not in e for e in narrowed)
    assert sum(e.count('"') // 2 for e in narrowed) == len(docs)
    assert expressions(None, None, set(), blocks) == []
    with pytest.raises(ValueError, match="20,001 blocks to list, at most 20,000"):
        expressions(None, None, None, [f"d:{i:012x}" for i in range(MILVUS_FILTER_IDS_MAX + 1)])


def test_a_phrase_in_many_blocks_is_searched_in_parts_and_skipped_above_the_bound(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    root = tmp_path / "src"
    root.mkdir()
    for i in range(60):
        (root / f"n{i:02d}.md").write_text(f"# Note {i}\n\nThe write lock is held by writer {i}"
                                           f" {'and the holder' * (i % 4)}.\n")
    local = Engine(tmp_path / "local", Config(model="none"))
    local.index([root], project="alpha")
    scaled = Engine(tmp_path / "milvus", Config(model="none", milvus_uri=str(tmp_path / "lanes.db")))
    scaled.index([root], project="alpha")
    query = LaneQuery(parse_query('"write lock" holder'), 100, None, None)  # all 60: no tie cut
    monkeypatch.setattr(milvus_store, "MILVUS_IDS_PER_EXPRESSION", 7)  # 60 blocks: 9 expressions
    for lane in ("bm25", "index"):
        want, got = local.lanes[lane].search(query), scaled.lanes[lane].search(query)
        assert len(want.block_ids) == 60
        # Ties compared as sets (tantivy breaks them by insertion order, Milvus by block id).
        assert tie_groups(list(zip(got.block_ids, got.scores, strict=True))) == \
            tie_groups(list(zip(want.block_ids, want.scores, strict=True)))
        assert got.scores == pytest.approx(want.scores, rel=2e-3)
    monkeypatch.setattr(milvus_store, "MILVUS_FILTER_IDS_MAX", 50)
    resp = scaled.search(SearchRequest(query='"write lock" holder', limit=5, lanes=["bm25", "exact"], snippets=False))
    assert resp.skipped_lanes["bm25"] == ("the quoted phrase is too common for the bm25 lane in Milvus (60 blocks to"
                                          " list, at most 50): the other lanes answer")
    assert [h.path for h in resp.hits] == [h.path for h in local.search(SearchRequest(
        query='"write lock" holder', limit=5, lanes=["exact"], snippets=False)).hits]
    local.close()
    scaled.close()
