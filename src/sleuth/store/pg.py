"""The catalog in PostgreSQL (``SLEUTH_CATALOG_URL=postgresql://...``), with psycopg 3.

The same tables, rows and generations as the SQLite catalog (:mod:`sleuth.store.catalog`), so that
several serving processes on several hosts share one index. The seam is narrow: :class:`PgCatalog`
is the SQLite :class:`~sleuth.store.catalog.Catalog` with another connection. Its statements are
the SQLite catalog's own, translated once each (:func:`pg_sql`: placeholders, ``INSERT OR
REPLACE`` as ``ON CONFLICT ... DO UPDATE``, ``rowid`` as a ``seq`` column); the few that have no
translation are overridden here. The write lock is a PostgreSQL advisory lock (:class:`PgWriteLock`),
held by a session: a writer killed with ``kill -9`` drops its connection and so the lock.

Reads run in ``REPEATABLE READ`` transactions (one snapshot, as SQLite's read transactions); writes
in ``READ COMMITTED`` under the advisory lock, one writer at a time.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import os
import re
import sys
import threading
import weakref
from collections.abc import Callable, Generator, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from sleuth.errors import IndexBusy, IndexFormatError, StorageError, scale_package_missing
from sleuth.locks import LOCK_POLL_S, WRITE_LOCK_TIMEOUT_ENV, once_waiting, retry_until
from sleuth.store.catalog import _SCHEMA, SCHEMA_VERSION, Catalog
from sleuth.store.rows import embedding_text, sync_block_query
from sleuth.store.urls import redact_driver_message, redact_url
from sleuth.store.vector_codes import from_format_5
from sleuth.store.vectors import (
    MIGRATE_MAX_VECTOR_BYTES,
    MIGRATE_VECTORS_PER_BATCH,
    convert_rows,
    float32_blobs_to_codes,
    report_dropped,
)

#: The environment variable naming the PostgreSQL catalog (a libpq connection URL).
CATALOG_URL_ENV = "SLEUTH_CATALOG_URL"
#: How long a statement may wait for a row lock held by another transaction, in milliseconds.
PG_LOCK_TIMEOUT_MS = 30_000
#: How long connecting to the server may take, in seconds.
PG_CONNECT_TIMEOUT_S = 10

#: The primary key of each table ``INSERT OR REPLACE`` writes to, and its other columns.
_UPSERT_KEYS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "documents": (("doc_id",), ("project_id", "root", "rel_path", "title", "tags", "kind", "front_matter",
                                "mtime_ns", "size_bytes", "content_hash", "revision", "text", "generation",
                                "indexed_at", "role", "label", "family", "recorded_ns")),
    "vectors": (("model", "embed_hash"), ("vector",)),
    "skipped": (("project_id", "root", "path"), ("reason", "at")),
    "meta": (("key",), ("value",)),
    "milvus_doc_stats": (("doc_id",), ("stats",)),
}

_REWRITES: tuple[tuple[str, str], ...] = (
    ("BEGIN IMMEDIATE", "BEGIN"),
    ("CAST(value AS INTEGER) + 1", "(CAST(meta.value AS BIGINT) + 1)::text"),
    ("length(CAST(b.text AS BLOB))", "octet_length(b.text)"),
    ("typeof(v.vector)='blob' AND length(v.vector)", "octet_length(v.vector)"),  # bytea: always bytes
    ("b.rowid", "b.seq"),
)


@functools.lru_cache(maxsize=512)
def pg_sql(sql: str) -> str:
    """The SQLite catalog statement ``sql`` in PostgreSQL's dialect.

    ``?`` placeholders become ``%s``; ``INSERT OR REPLACE INTO t`` becomes an upsert on ``t``'s
    primary key (every table it is used on is in ``_UPSERT_KEYS``); ``INSERT OR IGNORE`` becomes
    ``ON CONFLICT DO NOTHING``; the SQLite functions and ``rowid`` of ``_REWRITES`` their equivalents.

    Raises:
        ValueError: an ``INSERT OR REPLACE`` into a table this module does not know.
    """
    for old, new in _REWRITES:
        sql = sql.replace(old, new)
    sql = sql.replace("%", "%%").replace("?", "%s")
    m = re.match(r"\s*INSERT OR REPLACE INTO (\w+)", sql)
    if m:
        table = m.group(1)
        if table not in _UPSERT_KEYS:
            raise ValueError(f"no upsert key known for table {table}")
        keys, others = _UPSERT_KEYS[table]
        sets = ", ".join(f"{c}=EXCLUDED.{c}" for c in others)
        sql = f"INSERT INTO {table}{sql[m.end():]} ON CONFLICT ({', '.join(keys)}) DO UPDATE SET {sets}"
    elif re.match(r"\s*INSERT OR IGNORE INTO", sql):
        sql = sql.replace("INSERT OR IGNORE INTO", "INSERT INTO", 1) + " ON CONFLICT DO NOTHING"
    return sql


def pg_schema() -> str:
    """The catalog's tables in PostgreSQL: SQLite's, with 64-bit integers, ``BYTEA`` vectors and a
    ``seq`` column on blocks (SQLite's ``rowid``: insertion order)."""
    schema = _SCHEMA.replace("INTEGER", "BIGINT").replace("BLOB", "BYTEA").replace(") WITHOUT ROWID;", ");")
    return schema.replace("    embed_hash TEXT NOT NULL\n);", "    embed_hash TEXT NOT NULL,\n    seq BIGSERIAL\n);", 1)


def _text(value: str) -> str:
    """``value`` as PostgreSQL stores it: no NUL characters, no lone surrogates (names that are
    not UTF-8 come escaped with surrogates; they are kept as backslash escapes)."""
    if "\x00" in value:
        value = value.replace("\x00", "\ufffd")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        value = value.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    return value


def _params(args: Sequence[object] | None) -> Sequence[object] | None:
    if args is None:
        return None
    return [_text(a) if isinstance(a, str) else a for a in args]


class _Cursor:
    """What the catalog uses of a sqlite3 cursor: ``fetchone``, ``fetchall`` and iteration."""

    def __init__(self, cur: Any) -> None:
        self._cur = cur

    def fetchone(self) -> tuple[Any, ...] | None:
        return self._cur.fetchone() if self._cur.description is not None else None

    def fetchall(self) -> list[tuple[Any, ...]]:
        return self._cur.fetchall() if self._cur.description is not None else []

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return iter(self.fetchall())


def _psycopg() -> Any:
    """The psycopg module.

    Raises:
        ConfigError: it is not installed (``pip install 'sleuth[scale]'``).
    """
    try:
        import psycopg
    except ImportError as exc:
        raise scale_package_missing("psycopg", CATALOG_URL_ENV) from exc
    return psycopg


class PgConnection:
    """A psycopg connection that takes the SQLite catalog's statements (see :func:`pg_sql`), in
    autocommit mode with explicit ``BEGIN``/``COMMIT`` as the catalog issues them."""

    def __init__(self, url: str) -> None:
        import psycopg

        self._psycopg = psycopg
        self.raw = psycopg.connect(url, autocommit=True, connect_timeout=PG_CONNECT_TIMEOUT_S,
                                   application_name=_application_name())
        self.raw.execute(f"SET lock_timeout = {PG_LOCK_TIMEOUT_MS}")  # pyright: ignore[reportCallIssue, reportArgumentType] -- a constant statement; psycopg's stubs want a LiteralString

    @property
    def in_transaction(self) -> bool:
        return self.raw.info.transaction_status != self._psycopg.pq.TransactionStatus.IDLE

    def execute(self, sql: str, args: Sequence[object] | None = None) -> _Cursor:
        if sql == "BEGIN":  # a read snapshot (see Catalog.read)
            sql = "BEGIN ISOLATION LEVEL REPEATABLE READ"
        cur = self.raw.cursor()
        cur.execute(pg_sql(sql), _params(args))  # pyright: ignore[reportArgumentType] -- the catalog's own statements, translated (pg_sql), never user text
        return _Cursor(cur)

    def executemany(self, sql: str, rows: Sequence[Sequence[object]]) -> None:
        rows = list(rows)
        if rows:
            with self.raw.cursor() as cur:
                cur.executemany(pg_sql(sql), [_params(r) for r in rows])  # pyright: ignore[reportArgumentType] -- as execute

    def copy_rows(self, table: str, columns: Sequence[str], rows: Iterable[Sequence[object]],
                  on_conflict: str | None = None) -> None:
        """``rows`` into ``table`` by ``COPY`` (one stream instead of a statement per row), inside
        the caller's transaction. With ``on_conflict`` (``ON CONFLICT (...) DO ...``) they go to a
        temporary table first and then in with one ``INSERT ... SELECT``. ``table``, ``columns``
        and ``on_conflict`` are the catalog's own constants, never user text."""
        with self._copy_into(table, columns, on_conflict, "") as copy:
            for row in rows:
                copy.write_row([_text(a) if isinstance(a, str) else a for a in row])

    def copy_int64_columns(self, table: str, columns: Sequence[str], values: Sequence[np.ndarray],
                           on_conflict: str | None = None) -> None:
        """One BIGINT column of ``table`` from each array of ``values`` (int64, of equal lengths),
        by one binary ``COPY`` whose bytes NumPy packs (no Python per row), inside the caller's
        transaction; ``on_conflict`` as :meth:`copy_rows`.

        Raises:
            ValueError: arrays of unequal lengths, or not as many as ``columns``.
        """
        if len(values) != len(columns) or len({v.size for v in values}) > 1:
            raise ValueError("one array per column, all of one length")
        with self._copy_into(table, columns, on_conflict, " (FORMAT BINARY)") as copy:
            copy.write(binary_copy_int64(values))

    @contextmanager
    def _copy_into(self, table: str, columns: Sequence[str], on_conflict: str | None, options: str) -> Iterator[Any]:
        """A ``COPY ... FROM STDIN`` into ``table`` (through a temporary table and one ``INSERT ...
        SELECT ... on_conflict`` when ``on_conflict`` is given); constants only, as :meth:`copy_rows`."""
        cols = ", ".join(columns)
        target = table
        if on_conflict is not None:
            target = f"sleuth_copy_{table}"
            self.raw.execute(f"CREATE TEMP TABLE {target} (LIKE {table}) ON COMMIT DROP")  # pyright: ignore[reportCallIssue, reportArgumentType] -- constants
        with self.raw.cursor() as cur, cur.copy(f"COPY {target} ({cols}) FROM STDIN{options}") as copy:  # pyright: ignore[reportArgumentType] -- constants
            yield copy
        if on_conflict is not None:
            self.raw.execute(f"INSERT INTO {table} ({cols}) SELECT {cols} FROM {target} {on_conflict}")  # pyright: ignore[reportCallIssue, reportArgumentType] -- constants
            self.raw.execute(f"DROP TABLE {target}")  # pyright: ignore[reportCallIssue, reportArgumentType] -- constants

    def close(self) -> None:
        self.raw.close()


#: The header of PostgreSQL's binary ``COPY`` format: its signature, flags (none) and the length
#: of the header extension (none); the trailer is a field count of -1.
_BINARY_COPY_HEADER = b"PGCOPY\n\xff\r\n\x00" + bytes(8)
_BINARY_COPY_TRAILER = b"\xff\xff"


def binary_copy_int64(values: Sequence[np.ndarray]) -> bytes:
    """Rows of BIGINT columns in PostgreSQL's binary ``COPY`` format: for each row the field
    count (int16), then per field its length (int32, 8) and value (int64), all big-endian;
    ``values``: one int64 array per column, of equal lengths (row ``i`` takes element ``i`` of each)."""
    fields: list[tuple[str, str]] = [("count", ">i2")]
    for i in range(len(values)):
        fields += [(f"len{i}", ">i4"), (f"value{i}", ">i8")]
    rows = np.empty(values[0].size if values else 0, dtype=np.dtype(fields))
    rows["count"] = len(values)
    for i, column in enumerate(values):
        rows[f"len{i}"] = 8
        rows[f"value{i}"] = np.asarray(column, dtype=np.int64)
    return _BINARY_COPY_HEADER + rows.tobytes() + _BINARY_COPY_TRAILER


def _application_name() -> str:
    """``sleuth PID command``: what a writer that waits for the lock reports as its holder. ASCII,
    escaped (``\\udce9``: a path in argv that is not UTF-8 could not be sent to the server)."""
    name = f"sleuth {os.getpid()} {' '.join(os.path.basename(a) for a in sys.argv[:3])}"
    return name.encode("ascii", "backslashreplace").decode("ascii")[:63]


class PgCatalog(Catalog):
    """The catalog in a PostgreSQL database (one catalog per database, or per ``search_path``).

    Args:
        url: a libpq connection URL (``postgresql://user@host:port/db``).
        index_dir: the local index folder (lane files live there; nothing of the catalog does).
    Raises:
        StorageError: the server cannot be reached.
        IndexFormatError: the database holds a catalog of another format.
    """

    def __init__(self, url: str, index_dir: Path) -> None:
        self.url = url
        self.path = index_dir / "catalog.postgresql"  # never a file: names the catalog in messages
        self._local = threading.local()
        #: Every open connection of this catalog, of every thread (:meth:`close` closes them all).
        self._connections: weakref.WeakSet[PgConnection] = weakref.WeakSet()
        self._connections_lock = threading.Lock()
        self.read_only = None
        if self._schema_version() is None:
            conn = self.conn
            conn.execute("BEGIN")
            try:
                conn.execute("SELECT pg_advisory_xact_lock(?)", (_lock_key(url, "schema"),))
                if self._schema_version_or_none(conn) is None:
                    for statement in pg_schema().split(";"):
                        if statement.strip():
                            conn.execute(statement)
                    conn.execute("INSERT OR IGNORE INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                    conn.execute("INSERT OR IGNORE INTO meta VALUES ('generation', '0')")
                conn.execute("COMMIT")
            except BaseException:
                with contextlib.suppress(Exception):
                    conn.execute("ROLLBACK")
                raise
        version = self._schema_version()
        if version in (4, 5):
            version = self._migrate_from_4()
        if version != SCHEMA_VERSION:
            raise IndexFormatError(f"{redact_url(url)} holds index format {version}; this sleuth reads format"
                                   f" {SCHEMA_VERSION}: drop its tables and run `sleuth index` again")

    def _migrate_from_4(self) -> int:
        """Format 4 or 5 -> 6 in one transaction (as :meth:`Catalog._migrate`): format 4's float32
        vectors encoded and documents given ``elided_chars`` (0: their whole text); format 5's rows
        given their blocks' steps (decoded the same). Returns the format after."""
        conn = self.conn
        conn.execute("BEGIN")
        try:
            conn.execute("SELECT pg_advisory_xact_lock(?)", (_lock_key(self.url, "schema"),))
            version = self._schema_version_or_none(conn)
            if version in (4, 5):
                if version == 4:
                    conn.execute("ALTER TABLE documents ADD COLUMN elided_chars BIGINT NOT NULL DEFAULT 0")
                convert = float32_blobs_to_codes if version == 4 else from_format_5
                report_dropped(self._migrate_vectors(conn, convert), "catalog migration")
                conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(SCHEMA_VERSION),))
                version = SCHEMA_VERSION
            conn.execute("COMMIT")
        except BaseException:
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
            raise
        return version if version is not None else 4

    @staticmethod
    def _migrate_vectors(conn: Any, convert: Any) -> int:
        """Format 4's or 5's vector rows turned into this format's by ``convert`` (inside the
        caller's transaction), ``MIGRATE_VECTORS_PER_BATCH`` rows at a time; a value over
        ``MIGRATE_MAX_VECTOR_BYTES`` is never fetched (its size is read, not its bytes). Rows that
        cannot be converted are deleted (embedded again, rather than the catalog never opening);
        returns how many."""
        last, dropped = ("", ""), 0
        while rows := conn.execute(
                "SELECT model, embed_hash, CASE WHEN octet_length(vector)<=? THEN vector END FROM vectors"
                " WHERE (model, embed_hash) > (?, ?) ORDER BY model, embed_hash LIMIT ?",
                (MIGRATE_MAX_VECTOR_BYTES, *last, MIGRATE_VECTORS_PER_BATCH)).fetchall():
            coded, bad = convert_rows(rows, convert)
            for model, embed_hash, blob in coded:
                conn.execute("UPDATE vectors SET vector=? WHERE model=? AND embed_hash=?", (blob, model, embed_hash))
            for model, embed_hash in bad:
                conn.execute("DELETE FROM vectors WHERE model=? AND embed_hash=?", (model, embed_hash))
            dropped += len(bad)
            last = (rows[-1][0], rows[-1][1])
        return dropped

    @staticmethod
    def _schema_version_or_none(conn: Any) -> int | None:  # a PgConnection (the catalog types it Connection)
        row = conn.execute("SELECT to_regclass('meta')").fetchone()
        if row is None or row[0] is None:
            return None
        found = conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        return None if found is None else int(found[0])

    def _schema_version(self) -> int | None:
        return self._schema_version_or_none(self.conn)

    def _connect(self) -> Any:
        _psycopg()  # not installed: a configuration error, not "cannot reach the catalog"
        try:
            conn = PgConnection(self.url)
        except Exception as exc:  # psycopg.OperationalError: refused, unknown host, bad password
            raise StorageError(f"cannot reach the catalog at {redact_url(self.url)}:"
                               f" {_connect_problem(exc, self.url)}") from exc
        with self._connections_lock:
            self._connections.add(conn)
        return conn

    def close(self) -> None:
        """Close every connection this catalog opened, in every thread (the search pool's too):
        the engine is done with the catalog. A later use opens a new connection."""
        with self._connections_lock:
            connections = list(self._connections)
            self._connections = weakref.WeakSet()
            self._local = threading.local()
        for conn in connections:
            with contextlib.suppress(Exception):
                conn.close()

    @contextmanager
    def write(self) -> Iterator[Any]:
        """A write transaction (``BEGIN ... COMMIT``, rolled back on error)."""
        conn = self.conn
        conn.execute("BEGIN READ WRITE")
        try:
            yield conn
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                with contextlib.suppress(Exception):
                    conn.execute("ROLLBACK")
            raise

    def bound_vector_rows(self) -> None:
        """Nothing to bound: PostgreSQL's index of the vectors table holds only its keys, and a
        large value lives out of line (TOAST), fetched only when selected (sized in SQL)."""

    # -------------------------------------------------------------- statements without a translation

    def sync_block_pages(self, min_generation: int, after: tuple[str, int] | None,
                         size: int) -> Generator[list[tuple[Any, ...]], None, None]:
        """As :meth:`sleuth.store.reads.DocumentReads.sync_block_pages`, with one query: a
        server-side cursor (``DECLARE``, then ``FETCH`` of ``size`` rows a page) on a connection of
        its own, in one ``REPEATABLE READ READ ONLY`` snapshot, closed when the pages end (or the
        caller closes the iterator). The sync commits the catalog meanwhile (its progress) on the
        catalog's own connection, which would end a cursor declared there."""
        size = max(1, int(size))
        sql, args = sync_block_query(min_generation, after)
        conn = self._connect()
        try:
            conn.raw.execute("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY")
            with conn.raw.cursor(name="sleuth_sync_blocks") as cur:
                cur.itersize = size
                cur.execute(pg_sql(sql), args)  # pyright: ignore[reportArgumentType] -- the catalog's own statement
                while rows := cur.fetchmany(size):
                    yield rows
            conn.raw.execute("COMMIT")
        finally:
            with self._connections_lock:
                self._connections.discard(conn)
            conn.close()

    def blocks_without_vectors(self, model: str, limit: int = 10_000, dim: int | None = None) -> list[tuple[str, str]]:
        sized, size = self._readable_condition(dim)
        rows = self.conn.execute(
            "SELECT DISTINCT ON (b.embed_hash) b.embed_hash, d.title, b.text FROM blocks b JOIN documents d"
            " ON b.doc_id=d.doc_id WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model=? AND"
            f" v.embed_hash=b.embed_hash{sized}) ORDER BY b.embed_hash LIMIT ?",
            (model, *size, limit),
        ).fetchall()
        return [(h, embedding_text(title, text)) for h, title, text in rows]




def _connect_problem(exc: BaseException, url: str) -> str:
    """What connecting to ``url`` failed with, fit for a message (no part of a password:
    :func:`sleuth.store.urls.redact_driver_message`; a UnicodeDecodeError would name a byte of it)."""
    if isinstance(exc, UnicodeError):
        return "a percent-encoded part of the URL is not UTF-8 text"
    return redact_driver_message(str(exc).strip(), url)


def _lock_key(url: str, what: str) -> int:
    """A signed 64-bit advisory-lock key for ``what`` (``write``, ``schema``). PostgreSQL keys
    advisory locks by database too, so each catalog database has its own locks (two catalogs in one
    database, under different ``search_path`` settings, would share them)."""
    return int.from_bytes(hashlib.blake2b(f"sleuth:{what}".encode(), digest_size=8).digest(), "big", signed=True)


class PgWriteLock:
    """The index's write lock as a PostgreSQL session advisory lock (``pg_advisory_lock``), the
    same interface as :class:`sleuth.locks.WriteLock`.

    One connection of its own holds it; the lock is released when the connection ends, so a
    writer killed in the middle of a write never leaves the index locked.

    Args:
        url: the catalog's connection URL.
        timeout_s: how long :meth:`acquire` waits, in seconds.
    """

    def __init__(self, url: str, timeout_s: float) -> None:
        self.url, self.timeout_s = url, timeout_s
        self.key = _lock_key(url, "write")
        self.path = Path(redact_url(url))  # for messages
        self._conn: Any = None
        self._depth_lock = threading.Lock()
        self.on_wait: Callable[[str], None] | None = None  # as WriteLock's
        self.taken = False

    @property
    def held_here(self) -> bool:
        return self._conn is not None

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lock (waiting at most ``timeout_s`` when ``blocking``); False when not taken.

        Raises:
            OSError: the server cannot be reached (as a lock file that cannot be opened).
            ConfigError: psycopg is not installed.
        """
        psycopg = _psycopg()
        try:
            conn = psycopg.connect(self.url, autocommit=True, connect_timeout=PG_CONNECT_TIMEOUT_S,
                                   application_name=_application_name())
        except psycopg.Error as exc:  # OperationalError; ProgrammingError: a URL libpq cannot parse
            raise OSError(f"cannot reach the catalog at {redact_url(self.url)}:"
                          f" {_connect_problem(exc, self.url)}") from exc

        def take() -> bool:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)", (self.key,)).fetchone()
            return bool(row and row[0])

        try:
            if retry_until(take, self.timeout_s if blocking else 0, LOCK_POLL_S, once_waiting(self)):
                self._conn = conn
                return True
        except BaseException:
            conn.close()
            raise
        conn.close()
        return False

    def release(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(Exception):
                self._conn.execute("SELECT pg_advisory_unlock(%s)", (self.key,))
            self._conn.close()
            self._conn = None

    def holder(self) -> str:
        """``sleuth PID command`` of the session holding the lock, or ``""``."""
        import psycopg

        try:
            with psycopg.connect(self.url, autocommit=True, connect_timeout=PG_CONNECT_TIMEOUT_S) as conn:
                row = conn.execute(
                    "SELECT a.application_name, a.client_addr FROM pg_locks l JOIN pg_stat_activity a"
                    " ON a.pid = l.pid WHERE l.locktype = 'advisory' AND l.granted AND"
                    " ((l.classid::bigint << 32) | l.objid::bigint) = (%s::bigint & x'ffffffffffffffff'::bigint)",
                    (self.key,),
                ).fetchone()
        except psycopg.Error:
            return ""
        if row is None:
            return ""
        name, addr = row
        return f"{name or 'a session'}" + (f" on {addr}" if addr else "")

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the block; raises IndexBusy (naming the holder) when it is not free in time."""
        try:
            got = self.acquire()
        except OSError as exc:
            raise StorageError(str(exc)) from exc
        if not got:
            holder = self.holder() or "another process"
            raise IndexBusy(f"{holder} is writing to the index at {self.path}; waited {self.timeout_s:g} s for it:"
                            f" try again when it has finished (or wait longer: ${WRITE_LOCK_TIMEOUT_ENV}=seconds)")
        self.taken = True
        try:
            yield
        finally:
            self.release()

    @contextlib.contextmanager
    def held_or_skip(self) -> Iterator[bool]:
        """See :meth:`sleuth.locks.WriteLock.held_or_skip`."""
        if self._conn is not None:
            yield True
            return
        try:
            got = self.acquire(blocking=False)
        except OSError:
            got = False
        try:
            yield got
        finally:
            if got:
                self.release()
