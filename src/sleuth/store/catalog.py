"""The SQLite catalog: the source of truth for projects, documents, blocks and skipped files.

One database file (``catalog.sqlite3``, WAL mode) per index directory. Every committed write bumps
a monotonically increasing *generation*; each document row records the generation that wrote it
and every deletion leaves a tombstone, so a lane index that reflects generation ``g`` can catch up
by replaying what changed after ``g`` (see ``changes_since``). Readers in other processes see
either the state before a write transaction or after it, never half of it.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path

from sleuth.errors import IndexFormatError, storage_error, storage_errors
from sleuth.store import doc_text
from sleuth.store.reads import DocumentReads
from sleuth.store.rows import (
    DocumentRow,
    FailedFile,
    FileState,
    HitBlock,
    IndexedBlock,
    embed_key,
    embedding_text,
)
from sleuth.store.vector_codes import from_format_5
from sleuth.store.vectors import (
    BOUNDED_ROW_PARAMS,
    BOUNDED_ROW_SQL,
    VectorTable,
    encode_vector_table,
    length_limit,
    report_dropped,
    rows_behind_unread_key,
)
from sleuth.types import Block

log = logging.getLogger(__name__)

__all__ = ["Catalog", "DocumentRow", "FileState", "HitBlock", "IndexedBlock", "embed_key", "embedding_text"]

#: The catalog's format. 4: blocks keep no ``terms`` column (the analysed terms are computed from
#: the block's text and its document's title when the postings or the tfidf lane need them: they
#: were 14 % of the Hugo docs' catalog), new catalogs use ``CATALOG_PAGE_BYTES`` pages. A format-3
#: catalog is migrated on its first writable open (:meth:`Catalog._migrate`); read-only, it is read
#: as it is. 5: block vectors are stored as 8-bit codes with a scale (:mod:`sleuth.store.vector_codes`:
#: a quarter of float32's bytes), in a ``WITHOUT ROWID`` table (no separate index of its key); a
#: document's ``text`` keeps only what its blocks do not hold, ``elided_chars`` code points fewer
#: (:mod:`sleuth.store.doc_text`; 0: the whole text, as every document of a migrated catalog).
#: 6: the 8-bit codes have one step per block of 64 dimensions instead of one per vector.
SCHEMA_VERSION = 6
#: Formats this code reads: older ones it can also migrate to ``SCHEMA_VERSION``.
READABLE_SCHEMA_VERSIONS = (3, 4, 5, 6)
#: Page size of a new catalog, in bytes. A block vector (384 float32: 1,536 bytes) fills pages of
#: 4,096 bytes only to 76 % (two a page), of 8,192 bytes to 95 % (five): the Hugo docs' catalog is
#: 9 % smaller. (An existing catalog keeps its page size.)
CATALOG_PAGE_BYTES = 8192
#: How long a connection waits for another writer's lock before failing, in milliseconds.
BUSY_TIMEOUT_MS = 30_000
#: Largest part of the catalog file a connection memory-maps for reads, in bytes (address space,
#: not memory: pages are loaded on first touch and shared with the OS page cache).
CATALOG_MMAP_BYTES = 1 << 30

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS projects (
    project_id TEXT PRIMARY KEY,
    name TEXT NOT NULL,
    roots TEXT NOT NULL,
    created_at TEXT NOT NULL,
    last_indexed TEXT
);
CREATE TABLE IF NOT EXISTS documents (
    doc_id TEXT PRIMARY KEY,
    project_id TEXT NOT NULL REFERENCES projects(project_id),
    root TEXT NOT NULL,
    rel_path TEXT NOT NULL,
    title TEXT NOT NULL,
    tags TEXT NOT NULL,
    kind TEXT NOT NULL,
    front_matter TEXT NOT NULL,
    mtime_ns INTEGER NOT NULL,
    size_bytes INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    revision TEXT NOT NULL,
    text TEXT NOT NULL,
    generation INTEGER NOT NULL,
    indexed_at TEXT NOT NULL,
    role TEXT NOT NULL DEFAULT 'other',
    label TEXT NOT NULL DEFAULT 'document',
    family TEXT NOT NULL DEFAULT 'document',
    recorded_ns INTEGER NOT NULL DEFAULT 0,
    elided_chars INTEGER NOT NULL DEFAULT 0,
    UNIQUE (project_id, root, rel_path)
);
CREATE INDEX IF NOT EXISTS documents_generation ON documents(generation);
CREATE TABLE IF NOT EXISTS blocks (
    block_id TEXT PRIMARY KEY,
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    ordinal INTEGER NOT NULL,
    heading_path TEXT NOT NULL,
    text TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    start_char INTEGER NOT NULL,
    end_char INTEGER NOT NULL,
    content_hash TEXT NOT NULL,
    embed_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS blocks_doc ON blocks(doc_id, ordinal);
CREATE INDEX IF NOT EXISTS blocks_embed ON blocks(embed_hash);
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, embed_hash)
) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS links (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    target TEXT NOT NULL,
    relation TEXT NOT NULL,
    label TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS links_doc ON links(doc_id);
CREATE TABLE IF NOT EXISTS entities (
    doc_id TEXT NOT NULL REFERENCES documents(doc_id) ON DELETE CASCADE,
    entity TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS entities_doc ON entities(doc_id);
CREATE TABLE IF NOT EXISTS tombstones (
    doc_id TEXT NOT NULL,
    project_id TEXT NOT NULL,
    generation INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS tombstones_generation ON tombstones(generation);
CREATE TABLE IF NOT EXISTS problems (
    project_id TEXT NOT NULL,
    root TEXT NOT NULL,
    path TEXT NOT NULL,
    problem TEXT NOT NULL,
    at TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS skipped (
    project_id TEXT NOT NULL,
    root TEXT NOT NULL,
    path TEXT NOT NULL,
    reason TEXT NOT NULL,
    at TEXT NOT NULL,
    PRIMARY KEY (project_id, root, path)
);
"""


def _vectors_table_sql() -> str:
    """Format 5's ``CREATE TABLE vectors`` statement (from ``_SCHEMA``)."""
    table = _SCHEMA[_SCHEMA.index("CREATE TABLE IF NOT EXISTS vectors ("):]
    return table[: table.index(";") + 1]



def _within(path: str, rel_paths: Sequence[str]) -> bool:
    """Whether ``path`` (relative to its root) is one of ``rel_paths`` or under one ("": the whole root)."""
    return any(not r or path == r or path.startswith(r + "/") for r in rel_paths)


def _root_list(text: object) -> list[str]:
    """A project's roots as the ``projects.roots`` column keeps them (a JSON list of real paths);
    what sleuth never writes there (a hand-edited or planted catalog: not JSON, not a list, an entry
    that is not an absolute, normalised path: ``relative/x``, ``/a/../b``, ``~/x``, a number) reads
    as no root, or is left out: no walk, confinement or label ever sees it."""
    try:
        roots = json.loads(text) if isinstance(text, (str, bytes)) else None
    except ValueError:
        return []
    if not isinstance(roots, list):
        return []
    return [r for r in roots if isinstance(r, str) and os.path.isabs(r) and os.path.normpath(r) == r]


class Catalog(DocumentReads, VectorTable):
    """Thread-safe access to one catalog database (one connection per thread).

    Args:
        path: the SQLite file; created with the schema when missing.
    Raises:
        sqlite3.DatabaseError: the file exists but is not a sleuth catalog.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self._local = threading.local()
        #: Why the catalog could only be opened read-only (see :meth:`_connect`), else None.
        self.read_only: str | None = None
        if self._schema_version() is None:  # a new catalog; an existing one is opened without writing
            # One transaction: a process killed while creating the catalog leaves none or all of it.
            with storage_errors(path.parent, "the catalog"):
                try:
                    self.conn.executescript(
                        f"BEGIN IMMEDIATE;\n{_SCHEMA}\nINSERT OR IGNORE INTO meta VALUES ('schema_version', "
                        f"'{SCHEMA_VERSION}');\nINSERT OR IGNORE INTO meta VALUES ('generation', '0');\nCOMMIT;"
                    )
                except BaseException:
                    if self.conn.in_transaction:
                        self.conn.execute("ROLLBACK")
                    raise
        version = self._schema_version()
        if version in READABLE_SCHEMA_VERSIONS and version != SCHEMA_VERSION and self.read_only is None:
            version = self._migrate(version)
        self.old_format = version is not None and version < 5
        self.vector_format = 4 if self.old_format else 5 if version == 5 else 6
        if version not in READABLE_SCHEMA_VERSIONS or (version != SCHEMA_VERSION and self.read_only is None):
            raise IndexFormatError(
                f"{path} has index format {version}; this sleuth reads format {SCHEMA_VERSION}: delete the index"
                " folder and run `sleuth index` again"
            )

    def _migrate(self, version: int) -> int:
        """Bring a catalog of an older readable format to ``SCHEMA_VERSION`` in one transaction (a
        process killed meanwhile leaves the old format, migrated again on the next open); returns
        the format the catalog has after. 3 -> 4: the blocks' ``terms`` column is dropped (SQLite
        rewrites the table). 4 -> 6: the float32 vectors are encoded
        (:func:`sleuth.store.vectors.float32_blobs_to_codes`) into a new ``WITHOUT ROWID`` table,
        documents get ``elided_chars`` (0: they keep their whole text until written again).
        5 -> 6: each vector's codes and scale kept, every block's step that of the whole vector
        (:func:`sleuth.store.vector_codes.from_format_5`: decoded the same, so it ranks the same).
        The pages freed are reused by later writes (the file keeps its size)."""
        with storage_errors(self.path.parent, "the catalog"):
            conn = self.conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                current = self._schema_version()  # another process may have migrated it meanwhile
                if current == 3:
                    conn.execute("ALTER TABLE blocks DROP COLUMN terms")
                    current = 4
                if current == 4:
                    encode_vector_table(conn, _vectors_table_sql())
                    conn.execute("ALTER TABLE documents ADD COLUMN elided_chars INTEGER NOT NULL DEFAULT 0")
                    current = 6
                if current == 5:
                    encode_vector_table(conn, _vectors_table_sql(), from_format_5)
                    current = 6
                conn.execute("UPDATE meta SET value=? WHERE key='schema_version'", (str(current),))
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return current if current is not None else version

    #: Whether :meth:`bound_vector_rows` found (or left) no oversized row in the catalog file.
    _vector_rows_bounded = False

    def bound_vector_rows(self) -> None:
        """Leave out every row of the ``vectors`` table that is too large to be a vector (its value
        not a blob of at most ``MIGRATE_MAX_VECTOR_BYTES``, or a key over ``MIGRATE_MAX_KEY_CHARS``:
        :data:`sleuth.store.vectors.BOUNDED_ROW_SQL`) before a query looks a vector up. A search of
        a ``WITHOUT ROWID`` table's B-tree (formats 5 and 6: every lookup or insert of a vector)
        loads the whole of every row it compares with that spills onto overflow pages, whatever
        the query selects, so one planted row of a gigabyte would be loaded by the lookups of its
        neighbours. Checked once per opened catalog (a scan, which loads no value; 75 ms at 200k
        rows), only before the vectors are used, never by a search that loads the lane's saved
        files. Rows over the bounds are reported (stderr) and left out, so their blocks are
        embedded again: writable, the table is rebuilt without them (as a migration, in one
        transaction); read-only or inside a caller's read transaction, this connection reads a
        temporary copy without them. (A format-4 table has a rowid: its key index holds no value.)"""
        if self._vector_rows_bounded or self.vector_format < 5:
            return
        conn = self.conn
        if getattr(self._local, "vectors_copied", False):
            if self.read_only is not None or conn.in_transaction:
                return
            conn.execute("DROP TABLE temp.vectors")  # writable, out of the read transaction: rebuilt below
            self._local.vectors_copied = False
        bad_rows = f"FROM main.vectors WHERE NOT ({BOUNDED_ROW_SQL})"
        try:
            with length_limit(conn):
                bad = int(conn.execute(f"SELECT count(*) {bad_rows}", BOUNDED_ROW_PARAMS).fetchone()[0])
            key_unread = False
        except sqlite3.DataError:  # a key too long to load: which row is unknown unread, so none is kept
            bad = rows_behind_unread_key(conn, "main.vectors", str(self.path))
            key_unread = True
        keep, params = ("WHERE 0", ()) if key_unread else (f"WHERE {BOUNDED_ROW_SQL}", BOUNDED_ROW_PARAMS)
        if bad and (self.read_only is not None or conn.in_transaction):
            conn.execute(_vectors_table_sql().replace("TABLE IF NOT EXISTS vectors (", "TEMP TABLE vectors (", 1))
            conn.execute(f"INSERT INTO temp.vectors SELECT * FROM main.vectors {keep}", params)
            self._local.vectors_copied = True
            report_dropped(bad, f"{self.path} (read as a copy without them)")
            return
        if bad:
            with self.write() as w:
                if not key_unread:  # (another thread or process may have rebuilt it meanwhile)
                    with length_limit(w):
                        bad = int(w.execute(f"SELECT count(*) {bad_rows}", BOUNDED_ROW_PARAMS).fetchone()[0])
                if bad:
                    w.execute("DROP TABLE IF EXISTS vectors_v5")
                    w.execute(_vectors_table_sql().replace("IF NOT EXISTS vectors (", "vectors_v5 (", 1))
                    w.execute(f"INSERT INTO vectors_v5 SELECT * FROM vectors {keep}", params)
                    w.execute("DROP TABLE vectors")
                    w.execute("ALTER TABLE vectors_v5 RENAME TO vectors")
            report_dropped(bad, str(self.path))
        self._vector_rows_bounded = True

    def _schema_version(self) -> int | None:
        try:
            row = self.conn.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
        except sqlite3.OperationalError as exc:
            if "no such table" in str(exc):
                return None
            raise
        return None if row is None else int(row[0])

    # ------------------------------------------------------------------ connections

    @property
    def conn(self) -> sqlite3.Connection:
        conn = getattr(self._local, "conn", None)
        if conn is None:
            conn = self._local.conn = self._connect()
        return conn

    def _connect(self) -> sqlite3.Connection:
        """A new connection: read-write, else (the folder cannot be written or is full, and the
        catalog exists) read-only, so that such an index still answers searches.

        Read-only, the catalog is opened with ``mode=ro`` (which needs SQLite's ``-shm`` file, or
        room to make it); failing that, as ``immutable``: the state last checkpointed into the
        database file, all of it committed. (Without a usable ``-shm`` file no other process can be
        writing; one that committed more into the ``-wal`` file keeps a ``-shm`` file of its size.)
        """
        try:
            return self._configured(sqlite3.connect(self.path, timeout=BUSY_TIMEOUT_MS / 1000, isolation_level=None))
        except sqlite3.OperationalError as exc:
            code = getattr(exc, "sqlite_errorcode", 0) & 0xFF
            # SQLITE_READONLY, SQLITE_IOERR (no space for the -shm file), SQLITE_CANTOPEN
            if code not in (8, 10, 14) or not self.path.is_file():
                raise
            first = exc
        uri = self.path.resolve().as_uri()
        for flags in ("mode=ro", "mode=ro&immutable=1"):
            try:
                conn = self._configured(sqlite3.connect(f"{uri}?{flags}", uri=True, timeout=BUSY_TIMEOUT_MS / 1000,
                                                        isolation_level=None), read_only=True)
                conn.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
            except sqlite3.OperationalError:
                continue
            problem = storage_error(first, self.path.parent, "the catalog")
            self.read_only = str(problem) if problem else f"{self.path} opened read-only: {first}"
            self._local.read_only = problem  # what a write through this connection reports
            return conn
        raise first

    @staticmethod
    def _configured(conn: sqlite3.Connection, read_only: bool = False) -> sqlite3.Connection:
        try:
            if not read_only:  # a read-only connection keeps the file's journal mode (WAL) as it is
                # Before anything is written: a new database takes this page size, an existing one
                # keeps its own (the pragma changes nothing then).
                conn.execute(f"PRAGMA page_size={CATALOG_PAGE_BYTES}")
                conn.execute("PRAGMA journal_mode=WAL")
            conn.execute("PRAGMA synchronous=NORMAL")
            conn.execute("PRAGMA foreign_keys=ON")
            conn.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
            # Reads map the database file instead of copying pages through read(): the hits' rows
            # of a search are scattered over the file (12 document rows: 420 -> 180 us at 200k).
            conn.execute(f"PRAGMA mmap_size={CATALOG_MMAP_BYTES}")
        except BaseException:
            conn.close()
            raise
        return conn

    def close(self) -> None:
        """Close this thread's connection (others close when their threads end)."""
        conn = getattr(self._local, "conn", None)
        if conn is not None:
            conn.close()
            self._local.conn = self._local.read_only = None

    @contextmanager
    def write(self) -> Iterator[sqlite3.Connection]:
        """A write transaction (BEGIN IMMEDIATE ... COMMIT, rolled back on error).

        Raises:
            StorageFull, IndexReadOnly, IndexGone: the disk is full, the folder cannot be written or
                is gone (:func:`sleuth.errors.storage_error`); the transaction was rolled back.
        """
        with storage_errors(self.path.parent, "the catalog"):
            conn = self.conn
            problem = getattr(self._local, "read_only", None)
            if problem is not None:  # opened read-only: why, rather than SQLite's "readonly database"
                raise type(problem)(str(problem))
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:  # SQLite may have rolled back already (e.g. after SQLITE_FULL)
                    with suppress(sqlite3.Error):  # the error that made it roll back is the one to report
                        conn.execute("ROLLBACK")
                raise

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A read transaction: every query inside sees one consistent snapshot (inside a
        transaction already, that one's)."""
        conn = self.conn
        if conn.in_transaction:
            yield conn
            return
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
            if conn.in_transaction:  # an error (SQLITE_NOMEM, ...) may have ended it: that one is reported
                conn.execute("COMMIT")

    # ------------------------------------------------------------------ generation

    def generation(self) -> int:
        """The number of committed writes so far (0 for a new catalog)."""
        return int(self.conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])

    @staticmethod
    def _bump(conn: sqlite3.Connection) -> int:
        conn.execute("UPDATE meta SET value = CAST(value AS INTEGER) + 1 WHERE key='generation'")
        return int(conn.execute("SELECT value FROM meta WHERE key='generation'").fetchone()[0])

    # ------------------------------------------------------------------ projects

    def upsert_project(self, project_id: str, name: str, roots: Sequence[str], now: str) -> None:
        """Create a project or add ``roots`` to its root list (order kept, no repeats)."""
        with self.write() as conn:
            row = conn.execute("SELECT roots FROM projects WHERE project_id=?", (project_id,)).fetchone()
            if row is None:
                conn.execute(
                    "INSERT INTO projects VALUES (?, ?, ?, ?, NULL)",
                    (project_id, name, json.dumps(list(roots)), now),
                )
            else:
                merged = list(dict.fromkeys([*_root_list(row[0]), *roots]))
                conn.execute("UPDATE projects SET roots=? WHERE project_id=?", (json.dumps(merged), project_id))

    def project_doc_ids(self, project_id: str) -> list[str]:
        """Every document id of ``project_id`` (empty for an unknown project)."""
        return [r[0] for r in self.conn.execute("SELECT doc_id FROM documents WHERE project_id=?", (project_id,))]

    def delete_project(self, project_id: str) -> None:
        """Remove the project's row, its skipped files, problems and parser versions (its documents
        must be deleted first: :meth:`delete_documents`). No new generation: nothing a lane holds
        changes here."""
        prefixes = (self._parser_key(project_id, ""), self._failed_key(project_id, ""),
                    self._walked_key(project_id, ""))
        with self.write() as conn:
            for table in ("skipped", "problems"):
                conn.execute(f"DELETE FROM {table} WHERE project_id=?", (project_id,))
            for prefix in prefixes:
                conn.execute("DELETE FROM meta WHERE substr(key, 1, ?)=?", (len(prefix), prefix))
            conn.execute("DELETE FROM projects WHERE project_id=?", (project_id,))

    def remove_root(self, project_id: str, root: str) -> None:
        """Take ``root`` out of the project's roots, with its skipped files, problems, parser
        version and failed files (its documents must be deleted first: :meth:`delete_documents`).
        No new generation: nothing a lane holds changes here."""
        with self.write() as conn:
            row = conn.execute("SELECT roots FROM projects WHERE project_id=?", (project_id,)).fetchone()
            if row is None:
                return
            kept = [r for r in _root_list(row[0]) if r != root]
            conn.execute("UPDATE projects SET roots=? WHERE project_id=?", (json.dumps(kept), project_id))
            for table in ("skipped", "problems"):
                conn.execute(f"DELETE FROM {table} WHERE project_id=? AND root=?", (project_id, root))
            for key in (self._parser_key(project_id, root), self._failed_key(project_id, root),
                        self._walked_key(project_id, root)):
                conn.execute("DELETE FROM meta WHERE key=?", (key,))

    def mark_indexed(self, project_id: str, now: str) -> None:
        with self.write() as conn:
            conn.execute("UPDATE projects SET last_indexed=? WHERE project_id=?", (now, project_id))

    @staticmethod
    def _walked_key(project_id: str, root: str) -> str:
        return f"root_walked\x1f{project_id}\x1f{root}"

    def mark_root_walked(self, project_id: str, root: str, now: str) -> None:
        """Record that a run walked the whole of ``root`` at ``now`` (RFC 3339, UTC), changed or not:
        the root's "last indexed" (:meth:`indexed_counts`), which its newest document's time alone
        left behind after runs that changed nothing. Derived bookkeeping: no new generation."""
        with self.write() as conn:
            conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                         (self._walked_key(project_id, root), now))

    def roots(self) -> dict[str, list[str]]:
        """``{project_id: roots}`` of every project (cheap: no counting)."""
        return {r[0]: _root_list(r[1]) for r in self.conn.execute("SELECT project_id, roots FROM projects")}

    def project_with_root(self, root: str) -> str | None:
        """The name of the project that has ``root`` (a resolved path, as the roots are kept) among
        its roots, the first by project id when several do; None when none does."""
        for name, roots in self.conn.execute("SELECT name, roots FROM projects ORDER BY project_id"):
            if root in _root_list(roots):
                return str(name)
        return None

    def projects(self) -> list[dict[str, object]]:
        """Every project with document and block counts: ``[{project_id, name, roots, ...}]``."""
        rows = self.conn.execute(
            """SELECT p.project_id, p.name, p.roots, p.last_indexed,
                      (SELECT COUNT(*) FROM documents d WHERE d.project_id = p.project_id),
                      (SELECT COUNT(*) FROM blocks b JOIN documents d ON b.doc_id = d.doc_id
                        WHERE d.project_id = p.project_id)
               FROM projects p ORDER BY p.project_id"""
        ).fetchall()
        return [
            {
                "project_id": r[0],
                "name": r[1],
                "roots": _root_list(r[2]),
                "last_indexed": r[3],
                "documents": r[4],
                "blocks": r[5],
            }
            for r in rows
        ]

    # ------------------------------------------------------------------ documents

    @staticmethod
    def _parser_key(project_id: str, root: str) -> str:
        return f"parser_version\x1f{project_id}\x1f{root}"

    def parser_version(self, project_id: str, root: str) -> int:
        """The parser version (:data:`sleuth.ingest.PARSER_VERSION`) every document of ``root`` of
        ``project_id`` was parsed with, as the last full pass over it recorded; 1 when none did
        (catalogs written before versions were recorded)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (self._parser_key(project_id, root),)).fetchone()
        try:
            return int(row[0]) if row is not None else 1
        except ValueError:
            return 1

    def set_parser_version(self, project_id: str, root: str, version: int) -> None:
        """Record that every document of ``root`` was parsed with parser ``version`` (after a full
        pass over the root). Derived bookkeeping: no new generation."""
        with self.write() as conn:
            conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                         (self._parser_key(project_id, root), str(version)))

    def file_states(self, project_id: str, roots: Iterable[str],
                    rel_paths: Sequence[str] | None = None) -> dict[tuple[str, str], FileState]:
        """``{(root, rel_path): FileState}`` of the project's documents under ``roots`` (only at or
        under ``rel_paths`` when given)."""
        out: dict[tuple[str, str], FileState] = {}
        sql = "SELECT doc_id, rel_path, mtime_ns, size_bytes, content_hash FROM documents WHERE project_id=? AND root=?"
        for root in roots:
            if rel_paths is None:
                queries = [(sql, (project_id, root))]
            else:
                queries = [(sql + " AND (rel_path=? OR substr(rel_path, 1, ?)=?)",
                            (project_id, root, rel, len(rel) + 1, rel + "/")) for rel in rel_paths]
            for query, args in queries:
                for doc_id, rel, mtime, size, chash in self.conn.execute(query, args):
                    out[(root, rel)] = FileState(doc_id, mtime, size, chash)
        return out

    def write_documents(
        self, docs: Sequence[tuple[DocumentRow, Sequence[tuple[Block, str] | tuple[Block, str, str]]]], now: str
    ) -> int:
        """Insert or replace documents with their blocks (``(Block, terms[, exact])``) in one transaction.

        The terms are not stored (see ``SCHEMA_VERSION``): :meth:`indexed_blocks` computes them
        again from the block's text and the document's title, as the indexer did.

        Returns the new generation, which every written document row records.
        """
        # A document given twice keeps its last version (as when each was written in turn).
        last = {doc.doc_id: i for i, (doc, _) in enumerate(docs)}
        docs = [entry for i, entry in enumerate(docs) if last[entry[0].doc_id] == i]
        ids = [(doc.doc_id,) for doc, _ in docs]
        with self.write() as conn:
            gen = self._bump(conn)
            # One statement of each kind for the whole batch (rows in the same order as document by
            # document: a document's old rows go before any new row is written).
            for table in ("blocks", "links", "entities"):
                conn.executemany(f"DELETE FROM {table} WHERE doc_id=?", ids)
            rows = []
            for doc, blocks in docs:
                spans = sorted(((b.start_char, b.end_char, b.text, b.ordinal) for b, *_fields in blocks),
                               key=lambda s: (s[0], s[3]))
                stored, elided = doc_text.split(doc.text, [s[:3] for s in spans])
                rows.append((
                    doc.doc_id, doc.project_id, doc.root, doc.rel_path, doc.title,
                    json.dumps(doc.tags), doc.kind, json.dumps(doc.front_matter, default=str),
                    doc.mtime_ns, doc.size_bytes, doc.content_hash, doc.revision, stored,
                    gen, now, doc.role, doc.label, doc.family, doc.recorded_ns, elided,
                ))
            conn.executemany("INSERT OR REPLACE INTO documents VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)", rows)
            conn.executemany("INSERT INTO links VALUES (?,?,?,?)",
                             [(doc.doc_id, t, r, lab) for doc, _ in docs for t, r, lab in doc.links])
            conn.executemany("INSERT INTO entities VALUES (?,?)",
                             [(doc.doc_id, e) for doc, _ in docs for e in doc.entities])
            conn.executemany(
                "INSERT INTO blocks (block_id, doc_id, ordinal, heading_path, text, start_line, end_line,"
                " start_char, end_char, content_hash, embed_hash) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
                [
                    (
                        b.block_id, b.doc_id, b.ordinal, json.dumps(list(b.heading_path)), b.text,
                        b.start_line, b.end_line, b.start_char, b.end_char, b.content_hash,
                        embed_key(doc.title, b.text),
                    )
                    for doc, blocks in docs
                    for b, *_fields in blocks
                ],
            )
            return gen

    def touch_documents(self, updates: Sequence[tuple[str, int] | tuple[str, int, int]]) -> None:
        """Record new ``(doc_id, mtime_ns[, size_bytes])`` for files whose content did not change (no
        new generation), so that they count as current again."""
        if updates:
            with self.write() as conn:
                conn.executemany(
                    "UPDATE documents SET mtime_ns=?, size_bytes=COALESCE(?, size_bytes) WHERE doc_id=?",
                    [(u[1], u[2] if len(u) > 2 else None, u[0]) for u in updates],  # type: ignore[misc]
                )

    def mark_verified(self, doc_ids: Sequence[str], now: str) -> None:
        """Set ``indexed_at`` of unchanged documents found again in a re-read archive (no new generation)."""
        if doc_ids:
            with self.write() as conn:
                conn.executemany("UPDATE documents SET indexed_at=? WHERE doc_id=?", [(now, d) for d in doc_ids])

    def delete_documents(self, doc_ids: Sequence[str]) -> int:
        """Remove documents (and their blocks), leaving tombstones; returns the new generation."""
        with self.write() as conn:
            gen = self._bump(conn)
            for doc_id in doc_ids:
                row = conn.execute("SELECT project_id FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
                if row is None:
                    continue
                conn.execute("DELETE FROM documents WHERE doc_id=?", (doc_id,))
                conn.execute("INSERT INTO tombstones VALUES (?,?,?)", (doc_id, row[0], gen))
            return gen

    def record_skips(self, project_id: str, root: str, skips: Sequence[tuple[str, str]], now: str) -> None:
        """Replace the skipped-file list of one root with ``[(path, reason)]``."""
        with self.write() as conn:
            conn.execute("DELETE FROM skipped WHERE project_id=? AND root=?", (project_id, root))
            conn.executemany(
                "INSERT OR REPLACE INTO skipped VALUES (?,?,?,?,?)",
                [(project_id, root, p, r, now) for p, r in skips],
            )

    def replace_skips(self, project_id: str, root: str, rel_paths: Sequence[str], skips: Sequence[tuple[str, str]],
                      now: str) -> None:
        """Replace the skipped files of one root at or under ``rel_paths`` with ``[(path, reason)]``."""
        with self.write() as conn:
            conn.executemany(
                "DELETE FROM skipped WHERE project_id=? AND root=? AND (path=? OR substr(path, 1, ?)=?)",
                [(project_id, root, rel, len(rel) + 1, rel + "/") for rel in rel_paths],
            )
            conn.executemany(
                "INSERT OR REPLACE INTO skipped VALUES (?,?,?,?,?)",
                [(project_id, root, p, r, now) for p, r in skips],
            )

    @staticmethod
    def _failed_key(project_id: str, root: str) -> str:
        return f"failed_files\x1f{project_id}\x1f{root}"

    def failed_files(self, project_id: str, root: str) -> dict[str, FailedFile]:
        """The files of ``root`` of ``project_id`` whose parse failed (an error, its time or memory
        budget), by path relative to the root, as the last pass that tried them recorded them
        (:meth:`record_failed_files`); kept in the meta table (no schema change)."""
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (self._failed_key(project_id, root),)).fetchone()
        if row is None:
            return {}
        try:
            rows = json.loads(row[0])
        except (ValueError, TypeError, RecursionError):  # unreadable: every file is tried again
            return {}
        if not isinstance(rows, dict):
            return {}
        # Read as hostile input: an entry not of the shape written (reason, then three integers) is
        # left out, so its file is tried again (a float, 1e999, a nested object made indexing fail).
        return {path: FailedFile(r[0], r[1], r[2], r[3]) for path, r in rows.items()
                if isinstance(r, list) and len(r) == 4 and isinstance(r[0], str)
                and all(type(x) is int for x in r[1:])}

    def record_failed_files(self, project_id: str, root: str, failed: Mapping[str, FailedFile],
                            rel_paths: Sequence[str] | None = None) -> None:
        """Replace the failed files of ``root`` (only those at or under ``rel_paths`` when given:
        the others are kept) with ``failed`` (path → :class:`FailedFile`). Derived bookkeeping:
        no new generation."""
        with self.write() as conn:
            key = self._failed_key(project_id, root)
            kept: dict[str, FailedFile] = {}
            if rel_paths is not None:
                kept = {p: f for p, f in self.failed_files(project_id, root).items() if not _within(p, rel_paths)}
            merged = {**kept, **failed}
            if not merged:
                conn.execute("DELETE FROM meta WHERE key=?", (key,))
                return
            value = json.dumps({p: [f.reason, f.mtime_ns, f.size_bytes, f.parser_version]
                                for p, f in sorted(merged.items())})
            conn.execute("INSERT INTO meta VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value=excluded.value",
                         (key, value))

    def record_problems(self, project_id: str, root: str, problems: Sequence[tuple[str, str]], now: str,
                        read: Sequence[str] = (), scope: Sequence[str] | None = None) -> None:
        """Record ``[(path, problem)]`` of files indexed with a warning in this run of ``root``.

        A file re-read in this run loses its earlier problems; files not re-read keep theirs.
        ``read``: files read in this run that are no documents (the ``.gitignore`` files: a line left
        out is their problem); they lose their earlier problems too, and keep those given. Any other
        problem of a path that is no document is dropped (a deleted file), within ``scope``, the
        paths the run looked at (None: the whole root).
        """
        kept = set(read)
        with self.write() as conn:
            conn.executemany(
                "DELETE FROM problems WHERE project_id=? AND root=? AND path=?",
                [(project_id, root, p) for p in dict.fromkeys([*read, *(p for p, _ in problems)])],
            )
            conn.executemany(
                "INSERT INTO problems VALUES (?,?,?,?,?)", [(project_id, root, p, m, now) for p, m in problems]
            )
            orphans = [str(r[0]) for r in conn.execute(
                "SELECT DISTINCT path FROM problems WHERE project_id=? AND root=? AND path NOT IN"
                " (SELECT rel_path FROM documents WHERE project_id=? AND root=?)",
                (project_id, root, project_id, root),
            )]
            conn.executemany(
                "DELETE FROM problems WHERE project_id=? AND root=? AND path=?",
                [(project_id, root, p) for p in orphans if p not in kept and (scope is None or _within(p, scope))],
            )

    def problems(self) -> list[dict[str, str]]:
        """Files indexed with a warning: ``[{project, root, path, problem, at}]``."""
        return [
            {"project": r[0], "root": r[1], "path": r[2], "problem": r[3], "at": r[4]}
            for r in self.conn.execute("SELECT * FROM problems ORDER BY project_id, root, path")
        ]

    def skipped(self, project_id: str | None = None) -> list[dict[str, str]]:
        """Files not indexed: ``[{project, root, path, reason, at}]``."""
        return [
            {"project": str(r[0]), "root": str(r[1]), "path": str(r[2]), "reason": str(r[3]), "at": str(r[4])}
            for r in self._per_file("SELECT project_id, root, path, reason, at FROM skipped", "path", project_id)
        ]

    def skipped_at(self, path: str) -> list[tuple[str, str, str, str]]:
        """``(reason, project_id, root, path)`` of every skipped file whose path relative to its root
        is ``path``, by project and root (the shape of :meth:`documents_at`'s rows, a reason where
        those have a document id)."""
        return [(str(r[0]), str(r[1]), str(r[2]), str(r[3])) for r in self.conn.execute(
            "SELECT reason, project_id, root, path FROM skipped WHERE path = ? ORDER BY project_id, root", (path,))]

    def indexed_files(self, project_id: str | None = None) -> list[dict[str, object]]:
        """Every indexed file: ``[{project, root, path, mtime_ns, size_bytes, indexed_at}]``."""
        rows = self._per_file("SELECT project_id, root, rel_path, mtime_ns, size_bytes, indexed_at FROM documents",
                              "rel_path", project_id)
        return [
            {"project": r[0], "root": r[1], "path": r[2], "mtime_ns": r[3], "size_bytes": r[4], "indexed_at": r[5]}
            for r in rows
        ]

    def _per_file(self, select: str, path_column: str, project_id: str | None) -> list[tuple[object, ...]]:
        """The rows of ``select`` (a table with ``project_id`` and ``root`` columns), of one project
        when ``project_id`` is given, ordered by project, root and ``path_column``."""
        where, args = (" WHERE project_id=?", (project_id,)) if project_id is not None else ("", ())
        return self.conn.execute(f"{select}{where} ORDER BY project_id, root, {path_column}", args).fetchall()

    def indexed_counts(self) -> list[tuple[str, str, int, str]]:
        """``[(project, root, documents, last indexed_at)]`` per root holding documents; the last time
        is the later of its newest document's and of the last run that walked all of it
        (:meth:`mark_root_walked`; the same RFC 3339 form, so they compare as strings)."""
        prefix = self._walked_key("", "")[:-1]  # "root_walked<US>"
        walked = {str(k): str(v) for k, v in self.conn.execute(
            "SELECT key, value FROM meta WHERE substr(key, 1, ?)=?", (len(prefix), prefix))}
        return [
            (str(r[0]), str(r[1]), int(r[2]), max(str(r[3]), walked.get(self._walked_key(str(r[0]), str(r[1])), "")))
            for r in self.conn.execute(
                "SELECT project_id, root, COUNT(*), MAX(indexed_at) FROM documents GROUP BY project_id, root"
                " ORDER BY project_id, root"
            )
        ]

    def has_blocks(self) -> bool:
        """True when at least one block is stored (O(1))."""
        return self.conn.execute("SELECT 1 FROM blocks LIMIT 1").fetchone() is not None

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
        """Store ``value`` under ``key`` in the catalog's meta table (e.g. a lane backend's statistics)."""
        with self.write() as conn:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (key, value))

    def text_bytes_since(self, generation: int) -> int:
        """Bytes (UTF-8, about) of the text of the blocks of documents written after ``generation``."""
        row = self.conn.execute("SELECT SUM(length(CAST(b.text AS BLOB))) FROM blocks b JOIN documents d"
                                " ON b.doc_id = d.doc_id WHERE d.generation > ?", (generation,)).fetchone()
        return int(row[0] or 0)

    def changes_since(self, generation: int) -> tuple[list[str], list[str]]:
        """``(written_doc_ids, deleted_doc_ids)`` after ``generation`` (a doc may be in both)."""
        written = [r[0] for r in self.conn.execute("SELECT doc_id FROM documents WHERE generation > ?", (generation,))]
        deleted = [r[0] for r in self.conn.execute("SELECT doc_id FROM tombstones WHERE generation > ?", (generation,))]
        return written, deleted

    def counts(self) -> dict[str, int]:
        c = self.conn
        return {
            "projects": c.execute("SELECT COUNT(*) FROM projects").fetchone()[0],
            "documents": c.execute("SELECT COUNT(*) FROM documents").fetchone()[0],
            "blocks": c.execute("SELECT COUNT(*) FROM blocks").fetchone()[0],
            "skipped": c.execute("SELECT COUNT(*) FROM skipped").fetchone()[0],
        }


