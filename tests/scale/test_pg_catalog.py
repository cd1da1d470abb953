"""The catalog in PostgreSQL (a real server: tests/scale/conftest.py): the same data, generations
and answers as the SQLite catalog; the write lock as an advisory lock shared by processes."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from sleuth.engine import Engine
from sleuth.errors import IndexBusy
from sleuth.locks import retry_until
from sleuth.store.pg import PgCatalog, PgWriteLock, pg_sql
from tests.data_limit import run_with_data_headroom
from tests.scale.test_scaleout_hosts import pg_sessions

LANES = ["bm25", "index", "tfidf"]


def write_corpus(root: Path) -> None:
    (root / "notes").mkdir(parents=True)
    (root / "notes" / "locks.md").write_text(
        "---\ntags: [storage]\n---\n# Write locks\n\nOne writer at a time holds the advisory lock.\n\n"
        "## Generations\n\nEvery committed write bumps the generation number.\n")
    (root / "notes" / "fusion.md").write_text("# Fusion\n\nWeighted reciprocal rank fusion of the lanes.\n")
    (root / "code.py").write_text('def take_lock(name):\n    """Take the write lock called name."""\n    return name\n')
    (root / "odd \udcff name.md").write_bytes(b"# Odd\n\nA file whose name is not UTF-8 holds a lock too.\n")


def answers(engine: Engine, query: str, lanes: list[str]) -> list[tuple[str, str, float]]:
    resp = engine.search(query, lanes=lanes, limit=10)
    return [(h.path, h.best_block_id, round(h.score, 6)) for h in resp.hits]


def state(engine: Engine) -> tuple[object, ...]:
    counts = engine.catalog.counts()
    files = [(f["path"], f["size_bytes"]) for f in engine.catalog.indexed_files()]
    return counts, engine.catalog.generation(), files, engine.catalog.skipped()


def test_pg_sql_translates_the_sqlite_statements() -> None:
    assert pg_sql("SELECT value FROM meta WHERE key=?") == "SELECT value FROM meta WHERE key=%s"
    assert pg_sql("INSERT OR REPLACE INTO meta VALUES (?, ?)") == (
        "INSERT INTO meta VALUES (%s, %s) ON CONFLICT (key) DO UPDATE SET value=EXCLUDED.value")
    assert pg_sql("INSERT OR IGNORE INTO vectors VALUES (?,?,?)") == (
        "INSERT INTO vectors VALUES (%s,%s,%s) ON CONFLICT DO NOTHING")
    assert pg_sql("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'") == (
        "UPDATE meta SET value = (CAST(meta.value AS BIGINT) + 1)::text WHERE key='generation'")
    assert pg_sql("SELECT 1 FROM blocks b ORDER BY b.rowid") == "SELECT 1 FROM blocks b ORDER BY b.seq"
    with pytest.raises(ValueError, match="no upsert key"):
        pg_sql("INSERT OR REPLACE INTO projects VALUES (?)")


def test_same_data_generations_and_answers_as_sqlite(tmp_path: Path, catalog_url: str,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    write_corpus(tmp_path / "src")
    pg = Engine(tmp_path / "pg-index")
    assert isinstance(pg.catalog, PgCatalog)
    monkeypatch.delenv("SLEUTH_CATALOG_URL")
    local = Engine(tmp_path / "local-index")
    assert not isinstance(local.catalog, PgCatalog)
    queries = ["advisory lock", "generation number", "take_lock", "fusion of lanes", '"write lock"']

    def both(step) -> None:  # type: ignore[no-untyped-def]
        for engine in (pg, local):
            step(engine)
        assert state(pg) == state(local)
        for q in queries:
            assert answers(pg, q, LANES) == answers(local, q, LANES), q

    both(lambda e: e.index([tmp_path / "src"], project="p"))
    assert pg.catalog.generation() >= 1
    assert answers(pg, "advisory lock", LANES)[0][0] == "notes/locks.md"
    # upsert: a changed file; delete; rename
    (tmp_path / "src" / "notes" / "fusion.md").write_text("# Fusion\n\nThe lanes are fused; the lock is not.\n")
    both(lambda e: e.index([tmp_path / "src"], project="p"))
    (tmp_path / "src" / "code.py").unlink()
    both(lambda e: e.index([tmp_path / "src"], project="p"))
    (tmp_path / "src" / "notes" / "locks.md").rename(tmp_path / "src" / "notes" / "writer.md")
    both(lambda e: e.index([tmp_path / "src"], project="p"))
    assert answers(pg, "advisory lock", LANES)[0][0] == "notes/writer.md"
    doc = pg.get(pg.search("advisory lock", lanes=LANES).hits[0].doc_id)
    assert doc.tags == ["storage"] and "advisory lock" in doc.text
    before = state(pg)
    pg.close()
    # reopen: the same catalog from the server
    monkeypatch.setenv("SLEUTH_CATALOG_URL", catalog_url)
    again = Engine(tmp_path / "pg-index")
    assert state(again) == before
    assert answers(again, "advisory lock", LANES) == answers(local, "advisory lock", LANES)
    again.close()
    local.close()


def test_processes_share_one_index_and_one_write_lock(tmp_path: Path, catalog_url: str,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    write_corpus(tmp_path / "src")
    env = {**os.environ, "SLEUTH_MODEL": "none"}
    exe = [sys.executable, "-m", "sleuth"]
    # Another process (another host would do the same) indexes; this one reads its catalog.
    subprocess.run([*exe, "index", str(tmp_path / "src"), "--project", "p", "--index", str(tmp_path / "a")],
                   env=env, check=True, capture_output=True, timeout=300)
    reader = Engine(tmp_path / "b")
    assert reader.catalog.counts()["documents"] == 4
    assert answers(reader, "advisory lock", ["bm25"])[0][0] == "notes/locks.md"
    # While this process holds the advisory lock, a writer elsewhere waits, then names the holder.
    lock = PgWriteLock(catalog_url, 0)
    assert lock.acquire()
    try:
        busy = subprocess.run([*exe, "index", str(tmp_path / "src"), "--project", "p", "--index",
                               str(tmp_path / "a")], env={**env, "SLEUTH_WRITE_LOCK_TIMEOUT_S": "0"},
                              capture_output=True, text=True, timeout=300)
        assert busy.returncode != 0
        assert f"sleuth {os.getpid()}" in busy.stderr and "is writing to the index" in busy.stderr
        # a writer given time to wait says once whom it waits for (the session's application name)
        waited = subprocess.run([*exe, "index", str(tmp_path / "src"), "--project", "p", "--index",
                                 str(tmp_path / "a")], env={**env, "SLEUTH_WRITE_LOCK_TIMEOUT_S": "0.5"},
                                capture_output=True, text=True, timeout=300)
        assert waited.returncode != 0
        waits = [line for line in waited.stderr.splitlines() if "waiting for" in line]
        assert len(waits) == 1 and waits[0].startswith(f"sleuth index: waiting for sleuth {os.getpid()} "), waits
        assert waits[0].endswith(" to finish writing to the index (at most 0.5 s; Ctrl-C stops)"), waits
        with pytest.raises(IndexBusy):
            Engine(tmp_path / "c").index([tmp_path / "src"], project="p")
    finally:
        lock.release()
    assert PgWriteLock(catalog_url, 0).acquire()  # released (and a new session's lock ends with it)
    reader.close()


def test_users_are_added_to_an_index_whose_catalog_is_in_postgresql(tmp_path: Path, catalog_url: str) -> None:
    """New-user trial of stop 31: `sleuth users` looked for catalog.sqlite3 in the index folder, so on
    a scale-out index it said "no index found" (while status and search worked) and `sleuth serve
    --http` could not be given a user."""
    write_corpus(tmp_path / "src")
    env = {**os.environ, "SLEUTH_MODEL": "none"}
    exe = [sys.executable, "-m", "sleuth"]
    index = tmp_path / "src" / ".sleuth"
    subprocess.run([*exe, "index", str(tmp_path / "src"), "--project", "p"], env=env, check=True,
                   capture_output=True, timeout=300)
    assert not (index / "catalog.sqlite3").exists()
    added = subprocess.run([*exe, "users", "add", "alice", "--project", "p", "--index", str(index)],
                           env=env, capture_output=True, text=True, timeout=300)
    assert (added.returncode, added.stdout) == (0, "added alice: projects p; scopes sleuth:read\n"), added.stderr
    # found from a folder under the index's, as every other command finds it
    listed = subprocess.run([*exe, "users", "list"], env=env, capture_output=True, text=True, timeout=300,
                            cwd=tmp_path / "src" / "notes")
    assert (listed.returncode, listed.stdout) == (0, "alice: projects p; scopes sleuth:read\n"), listed.stderr
    unknown = subprocess.run([*exe, "users", "add", "bob", "--project", "q", "--index", str(index)],
                             env=env, capture_output=True, text=True, timeout=300)
    assert unknown.returncode != 0 and "unknown project(s): q" in unknown.stderr


def test_a_killed_writer_leaves_no_lock_and_no_partial_write(tmp_path: Path, catalog_url: str) -> None:
    write_corpus(tmp_path / "src")
    env = {**os.environ, "SLEUTH_MODEL": "none"}
    code = (
        "import os, signal, sys\n"
        "from sleuth.engine import Engine\n"
        "e = Engine(sys.argv[1])\n"
        "e.index([sys.argv[2]], project='p')\n"
        "with e.folder.write_lock.held():\n"
        "    with e.catalog.write() as conn:\n"
        "        conn.execute(\"DELETE FROM blocks\")\n"
        "        conn.execute(\"UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'\")\n"
        "        os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    proc = subprocess.run([sys.executable, "-c", code, str(tmp_path / "a"), str(tmp_path / "src")], env=env,
                          capture_output=True, timeout=300)
    assert proc.returncode == -9
    engine = Engine(tmp_path / "b")
    assert engine.catalog.counts()["blocks"] > 0  # the killed transaction was rolled back
    generation = engine.catalog.generation()
    report = engine.index([tmp_path / "src"], project="p")  # the lock is free at once
    assert report.unchanged == 4 and engine.catalog.generation() == generation
    engine.close()


def test_a_format_4_catalog_is_migrated_to_format_6(tmp_path: Path, catalog_url: str) -> None:
    import numpy as np

    from sleuth.config import Config
    from sleuth.store import vector_codes
    from sleuth.store.catalog import SCHEMA_VERSION

    write_corpus(tmp_path / "src")
    with Engine(tmp_path / "pg-index", Config(model="none")) as e:
        e.index([tmp_path / "src"], project="p")
        doc_id = e.search("advisory lock", lanes=LANES).hits[0].doc_id
        text = e.get(doc_id).text
        cat = e.catalog
        hashes = [h for h, _ in cat.blocks_without_vectors("m", 100)]
        vectors = np.random.default_rng(3).standard_normal((len(hashes), 8)).astype(np.float32)
        with cat.write() as conn:  # format 4: float32 vectors, whole texts, no elided_chars
            conn.executemany("INSERT INTO vectors VALUES (?,?,?)",
                             [("m", h, v.tobytes()) for h, v in zip(hashes, vectors, strict=True)])
            conn.execute("UPDATE documents SET text=? WHERE doc_id=?", (text, doc_id))
            conn.execute("ALTER TABLE documents DROP COLUMN elided_chars")
            conn.execute("UPDATE meta SET value='4' WHERE key='schema_version'")
    with Engine(tmp_path / "pg-index", Config(model="none")) as e:
        assert e.catalog.get_meta("schema_version") == str(SCHEMA_VERSION) == "6"
        assert e.get(doc_id).text == text
        stored = dict((h, bytes(b)) for h, b in e.catalog.conn.execute("SELECT embed_hash, vector FROM vectors"))
        assert stored == dict(zip(hashes, vector_codes.encode_blobs(vectors), strict=True))
        assert e.catalog.vector_dim("m") == 8


@pytest.mark.parametrize("hostile", [(), (("short", b"abc"), ("wide", b"\0" * 300))], ids=["clean", "hostile rows"])
def test_a_format_5_catalog_is_migrated_to_format_6_keeping_its_codes(tmp_path: Path, catalog_url: str,
                                                                      hostile: tuple[tuple[str, bytes], ...]) -> None:
    """Format 5's rows keep their codes; rows no format-5 vector can be (too short, another size than
    the model's) are left out by the migration, so that their blocks are embedded again, instead of
    the catalog never opening."""
    import numpy as np

    from sleuth.config import Config
    from sleuth.store import vector_codes
    from tests.store.old_formats import format_5_blobs, format_5_decoded

    write_corpus(tmp_path / "src")
    with Engine(tmp_path / "pg-index", Config(model="none")) as e:
        e.index([tmp_path / "src"], project="p")
        cat = e.catalog
        hashes = [h for h, _ in cat.blocks_without_vectors("m", 100)]
        old = format_5_blobs(np.random.default_rng(4).standard_normal((len(hashes), 70)).astype(np.float32))
        with cat.write() as conn:  # format 5: one step per vector
            conn.executemany("INSERT INTO vectors VALUES (?,?,?)",
                             [("m", h, b) for h, b in zip(hashes, old, strict=True)])
            conn.executemany("INSERT INTO vectors VALUES (?,?,?)", [("m", h, b) for h, b in hostile])
            conn.execute("UPDATE meta SET value='5' WHERE key='schema_version'")
    with Engine(tmp_path / "pg-index", Config(model="none")) as e:
        assert e.catalog.get_meta("schema_version") == "6"
        stored = dict((h, bytes(b)) for h, b in e.catalog.conn.execute("SELECT embed_hash, vector FROM vectors"))
        assert stored == dict(zip(hashes, vector_codes.from_format_5(old), strict=True))
        assert e.catalog.vector_dim("m") == 70
        decoded = vector_codes.decode(e.catalog.stored_rows([stored[h] for h in hashes], 70))
        np.testing.assert_array_equal(decoded, np.stack([format_5_decoded(b) for b in old]))


#: The planted value of the huge-value test, in MiB, and how much more memory than it starts with
#: the migrating process may allocate, in MiB (fetching the value would need more than it).
HUGE_VECTOR_MIB = 150
MIGRATION_DATA_HEADROOM_MIB = 100

def open_pg_catalog(url: str, index_dir: str) -> None:
    """Open (and so migrate) the catalog at ``url`` (run by :func:`tests.data_limit.run_with_data_headroom`)."""
    PgCatalog(url, Path(index_dir)).close()


@pytest.mark.parametrize("old_format", [4, 5])
def test_a_planted_huge_vector_is_never_fetched_by_the_migration(tmp_path: Path, catalog_url: str,
                                                                  old_format: int) -> None:
    """A format-4 or 5 catalog with a 150 MiB vector value migrates in a process that may allocate
    only 100 MiB more than it starts with: values are fetched in batches and one over the size
    bound never (before, the whole table was fetched at once, this value too: MemoryError)."""
    import numpy as np

    from sleuth.config import Config
    from tests.store.old_formats import format_5_blobs

    write_corpus(tmp_path / "src")
    with Engine(tmp_path / "pg-index", Config(model="none")) as e:
        e.index([tmp_path / "src"], project="p")
        hashes = [h for h, _ in e.catalog.blocks_without_vectors("m", 100)]
        vectors = np.random.default_rng(5).standard_normal((len(hashes), 8)).astype(np.float32)
        blobs = [v.tobytes() for v in vectors] if old_format == 4 else format_5_blobs(vectors)
        with e.catalog.write() as conn:
            conn.executemany("INSERT INTO vectors VALUES (?,?,?)",
                             [("m", h, b) for h, b in zip(hashes, blobs, strict=True)])
            conn.execute("INSERT INTO vectors VALUES ('m', 'huge', convert_to(repeat('x', ?), 'UTF8'))",
                         (HUGE_VECTOR_MIB << 20,))
            if old_format == 4:
                conn.execute("ALTER TABLE documents DROP COLUMN elided_chars")
            conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(old_format),))
    # psycopg loaded before the limit is set: what the migration allocates is measured
    done = run_with_data_headroom(f"{__name__}:open_pg_catalog", MIGRATION_DATA_HEADROOM_MIB, catalog_url,
                                  str(tmp_path / "pg-index"), preload=["psycopg"])
    assert done.returncode == 0, done.stderr[-2000:]
    with Engine(tmp_path / "pg-index", Config(model="none")) as e:
        assert e.catalog.get_meta("schema_version") == "6"
        kept = sorted(h for (h,) in e.catalog.conn.execute("SELECT embed_hash FROM vectors"))
        assert kept == sorted(hashes) and e.catalog.vector_dim("m") == 8


@pytest.mark.parametrize("planted", ["folder", "symlink", "fifo"])
def test_a_planted_postings_lock_of_a_host_is_named_with_what_to_do(tmp_path: Path, catalog_url: str,
                                                                    planted: str) -> None:
    """With a shared catalog a host's postings have a lock file of their own (postings.lock); one
    that is not a regular file is reported by name with what to do, as write.lock is with a local
    catalog (found by an attack session: "<folder> cannot be written"), and its target is untouched."""
    from sleuth.config import Config

    write_corpus(tmp_path / "src")
    with Engine(tmp_path / "host-a", Config(model="none")) as first:
        first.index([tmp_path / "src"], project="p")
    host = tmp_path / "host-b"
    host.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n", encoding="utf-8")
    lock = host / "postings.lock"
    if planted == "folder":
        lock.mkdir()
    elif planted == "symlink":
        lock.symlink_to(victim)
    else:
        os.mkfifo(lock)
    told = ("postings.lock is not a regular file (a symbolic link, a folder, a FIFO or a device): sleuth will not"
            f" use it as a lock; remove it ({lock})")
    with Engine(host, Config(model="none")) as second:  # its postings are empty: opening catches up, or tries
        assert second.postings_behind == told
        resp = second.search("advisory lock", lanes=["bm25"])
        assert resp.notice is not None and resp.notice.endswith(f"whose postings could not be written: {told}")
        with pytest.raises(OSError, match="postings.lock is not a regular file .*: sleuth will not use it as a"
                                          " lock; remove it"):
            second.index([tmp_path / "src"], project="p")
    assert victim.read_text(encoding="utf-8") == "precious\n"


def test_a_vector_row_that_is_not_finite_counts_as_not_embedded(tmp_path: Path, catalog_url: str) -> None:
    """The readable-row check of the vector counts is the same in PostgreSQL's dialect (bytea
    ``substr`` and comparisons): a row of the right size with a NaN scale or an inf ratio counts as
    not embedded and is given to the next embedding run."""
    import numpy as np

    from sleuth.config import Config
    from sleuth.store import vector_codes

    write_corpus(tmp_path / "src")
    dim = 70
    with Engine(tmp_path / "pg-index", Config(model="none")) as e:
        e.index([tmp_path / "src"], project="p")
        cat = e.catalog
        hashes = [h for h, _ in cat.blocks_without_vectors("m", 100)]
        vectors = np.random.default_rng(6).standard_normal((len(hashes), dim)).astype(np.float32)
        cat.store_vectors("m", [(h, v.tobytes()) for h, v in zip(hashes, vectors, strict=True)])
        rows = vector_codes.from_blobs(vector_codes.encode_blobs(vectors[:2]), dim).copy()
        rows["scale"][0] = np.nan
        rows["ratios"][1, 1] = np.inf
        with cat.write() as conn:
            conn.executemany("UPDATE vectors SET vector=? WHERE embed_hash=?",
                             [(rows[i].tobytes(), hashes[i]) for i in range(2)])
        assert cat.vector_counts("m", dim=dim) == (len(hashes) - 2, len(hashes))
        assert cat.vector_counts("m", ["p"], dim=dim) == (len(hashes) - 2, len(hashes))
        assert sorted(h for h, _ in cat.blocks_without_vectors("m", 100, dim)) == sorted(hashes[:2])
        assert cat.blocks_without_vectors("m", 100) == []
        # a value of another size is not read (the size is checked in SQL): None, or b"" per document
        with cat.write() as conn:
            conn.execute("UPDATE vectors SET vector=? WHERE embed_hash=?", (b"\0" * 100_000, hashes[2]))
        by_hash = {h: v for _, _, h, v in cat.block_vectors_with_keys("m", dim)}
        assert by_hash[hashes[2]] is None and all(len(bytes(by_hash[h])) == vector_codes.blob_bytes(dim)
                                                  for h in hashes[3:])
        doc_ids = [d for (d,) in cat.conn.execute("SELECT DISTINCT doc_id FROM blocks")]
        rows = {h: v for _, _, _, h, v in cat.doc_block_vectors("m", doc_ids, dim)}
        assert rows[hashes[2]] is not None and bytes(rows[hashes[2]]) == b""


def test_the_sync_reads_blocks_with_one_cursor_as_the_keyset_pages_and_closes_its_session(
        tmp_path: Path, catalog_url: str) -> None:
    """PostgreSQL's reader of the Milvus sync (one query, a server-side cursor on a session of its
    own) gives the rows, pages and order of the keyset pages every catalog has, from the first block
    and after any block, and ends its session when the pages end or the caller stops early."""
    from sleuth.store.reads import DocumentReads

    write_corpus(tmp_path / "src")
    for i in range(12):
        (tmp_path / "src" / f"many{i:02d}.md").write_text(
            "\n\n".join(f"# Part {k}\n\nBlock {k} of file {i} about locks." for k in range(i % 4 + 1)) + "\n")
    engine = Engine(tmp_path / "index")
    engine.index([tmp_path / "src"], project="p")
    catalog = engine.catalog
    assert isinstance(catalog, PgCatalog)
    baseline = pg_sessions(catalog_url)

    def back_to_baseline() -> bool:  # a closed session leaves pg_stat_activity when its backend exits
        return retry_until(lambda: pg_sessions(catalog_url) == baseline, 30, 0.05)

    every = [r for page in DocumentReads.sync_block_pages(catalog, 0, None, 1000) for r in page]
    assert len(every) == catalog.counts()["blocks"] > 20
    assert [(r[1], r[2]) for r in every] == sorted((r[1], r[2]) for r in every)
    for size in (1, 3, 7, 1000):
        for after in (None, (every[4][1], every[4][2]), (every[-1][1], every[-1][2])):
            cursor_pages = list(catalog.sync_block_pages(0, after, size))
            assert cursor_pages == list(DocumentReads.sync_block_pages(catalog, 0, after, size)), (size, after)
            assert all(len(p) == size for p in cursor_pages[:-1]) and all(cursor_pages)
    assert list(catalog.sync_block_pages(catalog.generation(), None, 5)) == []
    assert back_to_baseline()
    pages = catalog.sync_block_pages(0, None, 2)
    next(pages)
    assert pg_sessions(catalog_url) == baseline + 1
    pages.close()
    assert back_to_baseline()
    engine.close()


def test_int64_columns_go_in_by_one_binary_copy(catalog_url: str, tmp_path: Path) -> None:
    """``copy_int64_columns``: the rows as given (negative and 63-bit values too), and with an
    ``ON CONFLICT`` clause added to the rows already there; none for empty arrays."""
    import numpy as np

    from sleuth.store.pg import binary_copy_int64

    engine = Engine(tmp_path / "index")
    conn = engine.catalog.conn
    conn.execute("CREATE TABLE pairs (k BIGINT PRIMARY KEY, v BIGINT NOT NULL)")
    keys = np.array([5, -3, 2**63 - 1, -(2**63), 0], dtype=np.int64)
    values = np.array([1, -1, 7, 2**62, 0], dtype=np.int64)
    conn.execute("BEGIN")
    conn.copy_int64_columns("pairs", ("k", "v"), (keys, values))
    conn.execute("COMMIT")
    assert sorted(conn.execute("SELECT k, v FROM pairs").fetchall()) == sorted(
        zip(keys.tolist(), values.tolist(), strict=True))
    conn.execute("BEGIN")
    conn.copy_int64_columns("pairs", ("k", "v"), (np.array([5, 9]), np.array([10, 4])),
                            "ON CONFLICT (k) DO UPDATE SET v = pairs.v + excluded.v")
    conn.copy_int64_columns("pairs", ("k", "v"), (np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)))
    conn.execute("COMMIT")
    assert dict(conn.execute("SELECT k, v FROM pairs").fetchall()) == {
        5: 11, -3: -1, 2**63 - 1: 7, -(2**63): 2**62, 0: 0, 9: 4}
    assert binary_copy_int64([np.zeros(0, dtype=np.int64)]) == b"PGCOPY\n\xff\r\n\x00" + bytes(8) + b"\xff\xff"
    with pytest.raises(ValueError, match="one array per column"):
        conn.copy_int64_columns("pairs", ("k", "v"), (np.array([1]), np.array([1, 2])))
    engine.close()


def _engine_whose_catalog_is_lost(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Engine, Any]:
    """An engine (no model) over ``write_corpus`` in project beta, indexed into a PostgreSQL server
    of its own, then stopped under the open engine; and that server (stopped: its port and user)."""
    from sleuth.config import Config
    from tests.scale.servers import PgServer

    write_corpus(tmp_path / "src")
    server = PgServer().start()
    try:
        monkeypatch.setenv("SLEUTH_CATALOG_URL", server.new_database("lost"))
        engine = Engine(tmp_path / "idx", Config(model="none"))
        engine.index([tmp_path / "src"], project="beta")
    finally:
        server.stop()
    return engine, server


def test_a_remote_caller_is_not_told_where_a_lost_catalog_was(tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """search_project, get_notebook and get_projects with the PostgreSQL catalog gone after the
    engine opened: the server's own caller (stdio) reads libpq's words, address and port included;
    a remote one (HTTP, ``per_caller``) reads one fixed line (stop 29's note: these tools passed
    ``str(exc)`` on; get_projects' error went out as the SDK's "Error executing tool")."""
    import asyncio

    from mcp.server.mcpserver.exceptions import ToolError

    from sleuth.mcp.access import CURRENT_CALLER, Caller
    from sleuth.mcp.project_tools import ProjectTools
    from sleuth.scaleout import CATALOG_UNREACHABLE_SHOWN

    engine, server = _engine_whose_catalog_is_lost(tmp_path, monkeypatch)
    calls = {"search_project": {"project_id": "beta", "query": "advisory lock"},
             "get_notebook": {"project_id": "beta", "item_id": "notes/locks.md"}, "get_projects": {}}

    def errors(per_caller: bool) -> dict[str, str]:
        tools, out = ProjectTools(engine, per_caller=per_caller), {}
        token = CURRENT_CALLER.set(Caller("bob", frozenset({"beta"}), frozenset({"read"})))
        try:
            for name, arguments in calls.items():
                with pytest.raises(ToolError) as caught:
                    asyncio.run(getattr(tools, name)(**arguments))
                out[name] = str(caught.value)
        finally:
            CURRENT_CALLER.reset(token)
        return out

    try:
        local, remote = errors(False), errors(True)
        import psycopg

        def lost() -> None:  # a driver's own error, as an open connection's query raises it
            raise psycopg.OperationalError(f'connection to server at "127.0.0.1", port {server.port} failed')

        monkeypatch.setattr(engine, "projects", lost)
        raw = errors(True)["get_projects"]
    finally:
        engine.close()
    assert raw == "OperationalError: connection to server at <catalog> failed (details in the server's log)"
    for name in calls:
        assert local[name].startswith(f"cannot reach the catalog at postgresql://{server.user}@127.0.0.1:{server.port}/lost:")
        assert f'"127.0.0.1", port {server.port} failed' in local[name]
    assert remote == dict.fromkeys(calls, CATALOG_UNREACHABLE_SHOWN)


def test_query_status_tells_a_remote_caller_no_more_of_a_lost_catalog_than_the_search_did(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A search over all projects fails in its scope phase (the catalog is gone): its answer and
    query_status's ``error`` are one fixed line for a remote caller (query_status passed the raw
    message on: the PostgreSQL URL, address and port), the whole message for the server's own."""
    import asyncio

    from sleuth.mcp.access import CURRENT_CALLER, Caller
    from sleuth.mcp.memory_tools import MemoryTools
    from sleuth.scaleout import CATALOG_UNREACHABLE_SHOWN

    engine, server = _engine_whose_catalog_is_lost(tmp_path, monkeypatch)

    def answers(per_caller: bool) -> tuple[str, str, str, str]:
        tools = MemoryTools(engine, per_caller=per_caller)

        async def calls() -> tuple[str, str, str, str]:
            searched = await tools.project_memory_search(query="advisory lock", all_projects=True, request_id="r1")
            status = (await tools.query_status(request_id="r1")).structured_content["query_status"]  # type: ignore[index]
            cancel = (await tools.query_cancel(request_id="r1")).structured_content["query_status"]  # type: ignore[index]
            return searched.structured_content["error"]["message"], status["state"], status["error"], cancel["error"]  # type: ignore[index]

        token = CURRENT_CALLER.set(Caller("bob", frozenset({"beta"}), frozenset({"read"})))
        try:
            return asyncio.run(calls())
        finally:
            CURRENT_CALLER.reset(token)

    try:
        local, remote = answers(False), answers(True)
    finally:
        engine.close()
    assert remote == (CATALOG_UNREACHABLE_SHOWN, "failed", CATALOG_UNREACHABLE_SHOWN, CATALOG_UNREACHABLE_SHOWN)
    assert local[1] == "failed" and local[0] == local[2] == local[3]
    assert local[0].startswith(f"cannot reach the catalog at postgresql://{server.user}@127.0.0.1:{server.port}/lost:")
