"""The SQLite catalog: the source of truth for projects, documents, blocks and skipped files.

One database file (``catalog.sqlite3``, WAL mode) per index directory. Every committed write bumps
a monotonically increasing *generation*; each document row records the generation that wrote it
and every deletion leaves a tombstone, so a lane index that reflects generation ``g`` can catch up
by replaying what changed after ``g`` (see ``changes_since``). Readers in other processes see
either the state before a write transaction or after it, never half of it.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

from sleuth.errors import IndexFormatError, storage_error, storage_errors
from sleuth.types import Block

SCHEMA_VERSION = 3
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
    terms TEXT NOT NULL,
    embed_hash TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS blocks_doc ON blocks(doc_id, ordinal);
CREATE INDEX IF NOT EXISTS blocks_embed ON blocks(embed_hash);
CREATE TABLE IF NOT EXISTS vectors (
    model TEXT NOT NULL,
    embed_hash TEXT NOT NULL,
    vector BLOB NOT NULL,
    PRIMARY KEY (model, embed_hash)
);
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


def embedding_text(title: str, text: str) -> str:
    """What is embedded for a block: its text, preceded by its document title unless it starts with it."""
    return text if not title or text.lstrip().startswith(title) else f"{title}\n{text}"


def embed_key(title: str, text: str) -> str:
    """The vector-cache key of a block: 16 hex digits of SHA-1 over its embedding text."""
    return hashlib.sha1(embedding_text(title, text).encode("utf-8", "surrogatepass")).hexdigest()[:16]


@dataclass(frozen=True)
class DocumentRow:
    """A document as stored (``text`` is the whole decoded file)."""

    doc_id: str
    project_id: str
    root: str
    rel_path: str
    title: str
    tags: list[str]
    kind: str
    front_matter: dict[str, object]
    mtime_ns: int
    size_bytes: int
    content_hash: str
    revision: str
    text: str
    generation: int
    indexed_at: str
    role: str = "other"
    label: str = "document"
    family: str = "document"
    recorded_ns: int = 0
    #: ``(target, relation, label)`` of each outgoing link, in document order.
    links: tuple[tuple[str, str, str], ...] = ()
    entities: tuple[str, ...] = ()


class HitBlock(NamedTuple):
    """What a search hit shows of a block and of its document: one row of a join, without the
    document's text and front matter (a plain tuple: a search builds ten or more of these)."""

    block_id: str
    doc_id: str
    heading_path: tuple[str, ...]
    text: str
    start_line: int
    end_line: int
    project_id: str
    rel_path: str
    title: str
    tags: list[str]
    kind: str
    start_char: int
    end_char: int
    root: str
    role: str
    label: str
    family: str
    recorded_ns: int
    revision: str
    mtime_ns: int
    size_bytes: int
    content_hash: str
    indexed_at: str


@dataclass(frozen=True)
class IndexedBlock:
    """A block with what the lanes index: its analysed terms and its document's fields."""

    block: Block
    terms: str
    title: str
    tags: list[str]
    rel_path: str


@dataclass(frozen=True)
class FileState:
    """What the catalog knows of an indexed file, for change detection."""

    doc_id: str
    mtime_ns: int
    size_bytes: int
    content_hash: str


class Catalog:
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
        if version != SCHEMA_VERSION:
            raise IndexFormatError(
                f"{path} has index format {version}; this sleuth reads format {SCHEMA_VERSION}: delete the index"
                " folder and run `sleuth index` again"
            )

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
        """A read transaction: every query inside sees one consistent snapshot."""
        conn = self.conn
        conn.execute("BEGIN")
        try:
            yield conn
        finally:
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
                merged = list(dict.fromkeys([*json.loads(row[0]), *roots]))
                conn.execute("UPDATE projects SET roots=? WHERE project_id=?", (json.dumps(merged), project_id))

    def mark_indexed(self, project_id: str, now: str) -> None:
        with self.write() as conn:
            conn.execute("UPDATE projects SET last_indexed=? WHERE project_id=?", (now, project_id))

    def roots(self) -> dict[str, list[str]]:
        """``{project_id: roots}`` of every project (cheap: no counting)."""
        return {r[0]: json.loads(r[1]) for r in self.conn.execute("SELECT project_id, roots FROM projects")}

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
                "roots": json.loads(r[2]),
                "last_indexed": r[3],
                "documents": r[4],
                "blocks": r[5],
            }
            for r in rows
        ]

    # ------------------------------------------------------------------ documents

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
        self, docs: Sequence[tuple[DocumentRow, Sequence[tuple[Block, str]]]], now: str
    ) -> int:
        """Insert or replace documents with their blocks (``(Block, terms)`` pairs) in one transaction.

        Returns the new generation, which every written document row records.
        """
        with self.write() as conn:
            gen = self._bump(conn)
            for doc, blocks in docs:
                for table in ("blocks", "links", "entities"):
                    conn.execute(f"DELETE FROM {table} WHERE doc_id=?", (doc.doc_id,))
                conn.execute(
                    "INSERT OR REPLACE INTO documents VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                    (
                        doc.doc_id, doc.project_id, doc.root, doc.rel_path, doc.title,
                        json.dumps(doc.tags), doc.kind, json.dumps(doc.front_matter, default=str),
                        doc.mtime_ns, doc.size_bytes, doc.content_hash, doc.revision, doc.text,
                        gen, now, doc.role, doc.label, doc.family, doc.recorded_ns,
                    ),
                )
                conn.executemany("INSERT INTO links VALUES (?,?,?,?)",
                                 [(doc.doc_id, t, r, lab) for t, r, lab in doc.links])
                conn.executemany("INSERT INTO entities VALUES (?,?)", [(doc.doc_id, e) for e in doc.entities])
                conn.executemany(
                    "INSERT INTO blocks VALUES (?,?,?,?,?,?,?,?,?,?,?,?)",
                    [
                        (
                            b.block_id, b.doc_id, b.ordinal, json.dumps(list(b.heading_path)), b.text,
                            b.start_line, b.end_line, b.start_char, b.end_char, b.content_hash, terms,
                            embed_key(doc.title, b.text),
                        )
                        for b, terms in blocks
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

    def record_problems(self, project_id: str, root: str, problems: Sequence[tuple[str, str]], now: str) -> None:
        """Record ``[(path, problem)]`` of files indexed with a warning in this run of ``root``.

        A file re-read in this run loses its earlier problems; files not re-read keep theirs.
        """
        with self.write() as conn:
            conn.executemany(
                "DELETE FROM problems WHERE project_id=? AND root=? AND path=?",
                [(project_id, root, p) for p in dict.fromkeys(p for p, _ in problems)],
            )
            conn.executemany(
                "INSERT INTO problems VALUES (?,?,?,?,?)", [(project_id, root, p, m, now) for p, m in problems]
            )
            conn.execute(
                "DELETE FROM problems WHERE project_id=? AND root=? AND path NOT IN"
                " (SELECT rel_path FROM documents WHERE project_id=? AND root=?)",
                (project_id, root, project_id, root),
            )

    def problems(self) -> list[dict[str, str]]:
        """Files indexed with a warning: ``[{project, root, path, problem, at}]``."""
        return [
            {"project": r[0], "root": r[1], "path": r[2], "problem": r[3], "at": r[4]}
            for r in self.conn.execute("SELECT * FROM problems ORDER BY project_id, root, path")
        ]

    def skipped(self, project_id: str | None = None) -> list[dict[str, str]]:
        return [
            {"project": r[0], "root": r[1], "path": r[2], "reason": r[3], "at": r[4]}
            for r in self._per_file("SELECT project_id, root, path, reason, at FROM skipped", "path", project_id)
        ]

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
        """``[(project, root, documents, last indexed_at)]`` per root holding documents."""
        return [
            (str(r[0]), str(r[1]), int(r[2]), str(r[3]))
            for r in self.conn.execute(
                "SELECT project_id, root, COUNT(*), MAX(indexed_at) FROM documents GROUP BY project_id, root"
                " ORDER BY project_id, root"
            )
        ]

    def document(self, doc_id: str) -> DocumentRow | None:
        cols = ", ".join(_DOCUMENT_COLUMNS)
        row = self.conn.execute(f"SELECT {cols} FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
        return None if row is None else _document_row(row)

    def documents(self, doc_ids: Sequence[str]) -> dict[str, DocumentRow]:
        """``{doc_id: DocumentRow}`` for the ids that exist (missing ids are left out), without
        their text (``text`` is ``""``; use :meth:`document` for the whole document)."""
        out: dict[str, DocumentRow] = {}
        cols = _DOCUMENT_COLUMNS_WITHOUT_TEXT
        for i in range(0, len(doc_ids), 500):
            part = doc_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(f"SELECT {cols} FROM documents WHERE doc_id IN ({marks})", part):
                doc = _document_row(row)
                out[doc.doc_id] = doc
        return out

    def filter_documents(self, projects: Sequence[str] | None, labels: Sequence[str] = (),
                         roles: Sequence[str] = (), families: Sequence[str] = (),
                         recorded_after_ns: int | None = None, recorded_before_ns: int | None = None) -> set[str]:
        """Ids of the documents matching every given filter (empty sequences and None: no filter).

        ``labels`` match the document kind label (lowercase), ``roles`` its role, ``families`` its
        source family; the recorded-time bounds are inclusive, in nanoseconds since the epoch.
        """
        where: list[str] = []
        args: list[object] = []
        for column, values in (("project_id", projects), ("label", labels), ("role", roles), ("family", families)):
            if values is not None and (values or column == "project_id"):
                where.append(f"{column} IN ({','.join('?' * len(values))})")
                args.extend(values)
        if recorded_after_ns is not None:
            where.append("recorded_ns >= ?")
            args.append(recorded_after_ns)
        if recorded_before_ns is not None:
            where.append("recorded_ns <= ?")
            args.append(recorded_before_ns)
        sql = "SELECT doc_id FROM documents" + (" WHERE " + " AND ".join(where) if where else "")
        return {r[0] for r in self.conn.execute(sql, args)}

    def kind_labels(self, projects: Sequence[str] | None = None) -> list[str]:
        """The distinct document kind labels of the index, or of ``projects`` (what ``filters.kinds`` can match)."""
        if projects is None:
            return [r[0] for r in self.conn.execute("SELECT DISTINCT label FROM documents ORDER BY label")]
        marks = ",".join("?" * len(projects))
        return [r[0] for r in self.conn.execute(
            f"SELECT DISTINCT label FROM documents WHERE project_id IN ({marks}) ORDER BY label", tuple(projects))]

    def graph_rows(self) -> Iterator[tuple[str, str, str, str, list[tuple[str, str, str]], list[str]]]:
        """``(doc_id, project_id, rel_path, title, links, entities)`` of every document, in one
        snapshot (links as ``(target, relation, label)``)."""
        with self.read() as conn:
            links: dict[str, list[tuple[str, str, str]]] = {}
            for doc_id, target, relation, label in conn.execute("SELECT doc_id, target, relation, label FROM links"):
                links.setdefault(doc_id, []).append((target, relation, label))
            entities: dict[str, list[str]] = {}
            for doc_id, entity in conn.execute("SELECT doc_id, entity FROM entities"):
                entities.setdefault(doc_id, []).append(entity)
            rows = conn.execute("SELECT doc_id, project_id, rel_path, title FROM documents").fetchall()
        for doc_id, project_id, rel_path, title in rows:
            yield doc_id, project_id, rel_path, title, links.get(doc_id, []), entities.get(doc_id, [])

    def body_extents(self, doc_ids: Sequence[str]) -> dict[str, tuple[int, int, int]]:
        """``{doc_id: (text length, first block start, last block end)}`` in code points: the
        document's length and the span its blocks cover (its body, front matter excluded)."""
        out: dict[str, tuple[int, int, int]] = {}
        for i in range(0, len(doc_ids), 500):
            part = list(doc_ids[i : i + 500])
            marks = ",".join("?" * len(part))
            for doc_id, length, start, end in self.conn.execute(
                f"SELECT d.doc_id, length(d.text), MIN(b.start_char), MAX(b.end_char) FROM documents d"
                f" JOIN blocks b ON b.doc_id = d.doc_id WHERE d.doc_id IN ({marks}) GROUP BY d.doc_id",
                part,
            ):
                out[doc_id] = (int(length), int(start), int(end))
        return out

    def first_blocks(self, doc_ids: Sequence[str]) -> dict[str, Block]:
        """``{doc_id: its first block}`` for the documents that exist."""
        out: dict[str, Block] = {}
        for i in range(0, len(doc_ids), 500):
            part = list(doc_ids[i : i + 500])
            marks = ",".join("?" * len(part))
            for r in self.conn.execute(
                f"SELECT {_BLOCK_COLUMNS}, d.project_id FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
                f" WHERE b.doc_id IN ({marks}) AND b.ordinal = (SELECT MIN(ordinal) FROM blocks WHERE doc_id=b.doc_id)",
                part,
            ):
                block = _block(r)
                out[block.doc_id] = block
        return out

    def documents_for_projects(self, project_ids: Sequence[str]) -> Iterator[DocumentRow]:
        """Every document of the projects, without its text (``text`` is ``""``)."""
        cols = _DOCUMENT_COLUMNS_WITHOUT_TEXT
        marks = ",".join("?" * len(project_ids))
        rows = self.conn.execute(f"SELECT {cols} FROM documents WHERE project_id IN ({marks})",
                                 list(project_ids)).fetchall()
        for row in rows:
            yield _document_row(row)

    def blocks_of(self, doc_id: str) -> list[Block]:
        rows = self.conn.execute(
            f"SELECT {_BLOCK_COLUMNS}, d.project_id FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
            " WHERE b.doc_id=? ORDER BY ordinal",
            (doc_id,),
        ).fetchall()
        return [_block(r) for r in rows]

    def blocks(self, block_ids: Sequence[str]) -> dict[str, Block]:
        """``{block_id: Block}`` for the ids that exist."""
        out: dict[str, Block] = {}
        for i in range(0, len(block_ids), 500):
            part = block_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(
                f"SELECT {_BLOCK_COLUMNS}, d.project_id FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
                f" WHERE b.block_id IN ({marks})",
                part,
            ):
                block = _block(row)
                out[block.block_id] = block
        return out

    def hit_blocks(self, block_ids: Sequence[str]) -> dict[str, HitBlock]:
        """``{block_id: HitBlock}`` for the ids that exist (one indexed join per 500 ids)."""
        out: dict[str, HitBlock] = {}
        for i in range(0, len(block_ids), 500):
            part = block_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(f"{_HIT_BLOCK_SELECT} WHERE b.block_id IN ({marks})", part):
                out[row[0]] = _hit_block(row)
        return out

    def first_hit_block(self, doc_id: str) -> HitBlock | None:
        """The first block of ``doc_id`` as a :class:`HitBlock`; None when it has none (or is gone)."""
        row = self.conn.execute(f"{_HIT_BLOCK_SELECT} WHERE b.doc_id=? ORDER BY b.ordinal LIMIT 1",
                                (doc_id,)).fetchone()
        return None if row is None else _hit_block(row)

    def indexed_blocks(self, min_generation: int = 0) -> Iterator[IndexedBlock]:
        """Every block of documents written after ``min_generation``, with its index fields."""
        cur = self.conn.execute(
            f"SELECT {_BLOCK_COLUMNS}, d.project_id, b.terms, d.title, d.tags, d.rel_path FROM blocks b"
            " JOIN documents d ON b.doc_id=d.doc_id WHERE d.generation > ? ORDER BY b.doc_id, b.ordinal",
            (min_generation,),
        )
        for row in cur:
            yield IndexedBlock(_block(row[:11]), row[11], row[12], json.loads(row[13]), row[14])

    def block_terms(self, doc_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """``(block_id, project_id, terms)`` of every block of ``doc_ids`` (for a tfidf update)."""
        out: list[tuple[str, str, str]] = []
        for i in range(0, len(doc_ids), 500):
            part = doc_ids[i : i + 500]
            out += self.conn.execute(
                "SELECT b.block_id, d.project_id, b.terms FROM documents d JOIN blocks b ON b.doc_id = d.doc_id"
                f" WHERE d.doc_id IN ({','.join('?' * len(part))}) ORDER BY b.doc_id, b.ordinal",
                part,
            ).fetchall()
        return out

    # ------------------------------------------------------------------ vectors

    def blocks_without_vectors(self, model: str, limit: int = 10_000) -> list[tuple[str, str]]:
        """Up to ``limit`` ``(embed_hash, embedding text)`` of blocks with no vector for ``model``."""
        rows = self.conn.execute(
            "SELECT b.embed_hash, d.title, b.text FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
            " WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash)"
            " GROUP BY b.embed_hash LIMIT ?",
            (model, limit),
        ).fetchall()
        return [(h, embedding_text(title, text)) for h, title, text in rows]

    def store_vectors(self, model: str, items: Sequence[tuple[str, bytes]]) -> None:
        """Cache ``(embed_hash, float32 vector bytes)`` for ``model`` (no new generation: derived data)."""
        with self.write() as conn:
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?)", [(model, h, v) for h, v in items])
            conn.execute(
                "INSERT INTO meta VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
                (f"vectors:{model}",),
            )

    def import_vectors(self, other: Path) -> int:
        """Copy every cached vector of the catalog file ``other`` (any format that has a ``vectors``
        table) into this one; returns how many rows were copied. Vectors depend only on the model
        and the embedded text, so they survive a change of index format."""
        conn = self.conn
        conn.execute("ATTACH DATABASE ? AS other", (str(other),))
        try:
            with self.write():
                before = conn.total_changes
                conn.execute("INSERT OR IGNORE INTO vectors SELECT model, embed_hash, vector FROM other.vectors")
                return conn.total_changes - before
        finally:
            conn.execute("DETACH DATABASE other")

    def block_vectors_with_keys(self, model: str) -> Iterator[tuple[str, str, str, bytes]]:
        """``(block_id, project_id, embed_hash, vector bytes)`` of every block with a vector for ``model``."""
        return iter(self.conn.execute(
            "SELECT b.block_id, d.project_id, b.embed_hash, v.vector FROM blocks b JOIN documents d"
            " ON b.doc_id=d.doc_id JOIN vectors v ON v.model=? AND v.embed_hash=b.embed_hash ORDER BY b.rowid",
            (model,),
        ))

    def doc_block_vectors(self, model: str, doc_ids: Sequence[str]) -> list[tuple[str, str, str, str, bytes | None]]:
        """``(block_id, doc_id, project_id, embed_hash, vector bytes or None)`` of every block of ``doc_ids``."""
        marks = ",".join("?" * len(doc_ids))
        return self.conn.execute(
            "SELECT b.block_id, b.doc_id, d.project_id, b.embed_hash, v.vector FROM blocks b JOIN documents d"
            " ON b.doc_id=d.doc_id LEFT JOIN vectors v ON v.model=? AND v.embed_hash=b.embed_hash"
            f" WHERE b.doc_id IN ({marks}) ORDER BY b.rowid",
            (model, *doc_ids),
        ).fetchall()

    def docs_without_vectors(self, model: str) -> list[str]:
        """Documents with at least one block that has no vector for ``model``."""
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT b.doc_id FROM blocks b WHERE NOT EXISTS"
            " (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash)",
            (model,),
        )]

    def vector_counts(self, model: str, projects: Sequence[str] | None = None) -> tuple[int, int]:
        """``(blocks with a vector for model, all blocks)``, of the ``projects`` only when given."""
        if projects is None:
            with_vec = self.conn.execute(
                "SELECT COUNT(*) FROM blocks b WHERE EXISTS"
                " (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash)",
                (model,),
            ).fetchone()[0]
            return int(with_vec), int(self.conn.execute("SELECT COUNT(*) FROM blocks").fetchone()[0])
        marks = ",".join("?" * len(projects))
        of_projects = f"FROM blocks b JOIN documents d ON b.doc_id = d.doc_id WHERE d.project_id IN ({marks})"
        with_vec = self.conn.execute(
            f"SELECT COUNT(*) {of_projects} AND EXISTS"
            " (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash)",
            (*projects, model),
        ).fetchone()[0]
        total = self.conn.execute(f"SELECT COUNT(*) {of_projects}", tuple(projects)).fetchone()[0]
        return int(with_vec), int(total)

    def vector_dim(self, model: str) -> int | None:
        """Dimensions of the vectors stored for ``model`` (None when it has none)."""
        row = self.conn.execute("SELECT length(vector) FROM vectors WHERE model=? LIMIT 1", (model,)).fetchone()
        return None if row is None else int(row[0]) // 4

    def has_blocks(self) -> bool:
        """True when at least one block is stored (O(1))."""
        return self.conn.execute("SELECT 1 FROM blocks LIMIT 1").fetchone() is not None

    def get_meta(self, key: str) -> str | None:
        row = self.conn.execute("SELECT value FROM meta WHERE key=?", (key,)).fetchone()
        return None if row is None else str(row[0])

    def set_meta(self, key: str, value: str) -> None:
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


_DOCUMENT_COLUMNS = (
    "doc_id", "project_id", "root", "rel_path", "title", "tags", "kind", "front_matter", "mtime_ns",
    "size_bytes", "content_hash", "revision", "text", "generation", "indexed_at", "role", "label", "family",
    "recorded_ns",
)
#: The SELECT list of every document column, with ``text`` left empty (listings, hit fields).
_DOCUMENT_COLUMNS_WITHOUT_TEXT = ", ".join("'' AS text" if c == "text" else c for c in _DOCUMENT_COLUMNS)


def _document_row(r: Sequence[object]) -> DocumentRow:
    return DocumentRow(
        doc_id=str(r[0]), project_id=str(r[1]), root=str(r[2]), rel_path=str(r[3]), title=str(r[4]),
        tags=json.loads(str(r[5])), kind=str(r[6]), front_matter=json.loads(str(r[7])),
        mtime_ns=int(r[8]), size_bytes=int(r[9]), content_hash=str(r[10]), revision=str(r[11]),  # type: ignore[arg-type]
        text=str(r[12]), generation=int(r[13]), indexed_at=str(r[14]),  # type: ignore[arg-type]
        role=str(r[15]), label=str(r[16]), family=str(r[17]), recorded_ns=int(r[18]),  # type: ignore[arg-type]
    )


_BLOCK_COLUMNS = (
    "b.block_id, b.doc_id, b.ordinal, b.heading_path, b.text, b.start_line, b.end_line, b.start_char,"
    " b.end_char, b.content_hash"
)


def _block(r: Sequence[object]) -> Block:
    # r: the ten _BLOCK_COLUMNS followed by the document's project_id.
    return Block(
        block_id=str(r[0]), doc_id=str(r[1]), ordinal=int(r[2]),  # type: ignore[arg-type]
        heading_path=tuple(json.loads(str(r[3]))), text=str(r[4]),
        start_line=int(r[5]), end_line=int(r[6]), start_char=int(r[7]), end_char=int(r[8]),  # type: ignore[arg-type]
        content_hash=str(r[9]), project_id=str(r[10]),
    )


_HIT_BLOCK_SELECT = (
    "SELECT b.block_id, b.doc_id, b.heading_path, b.text, b.start_line, b.end_line,"
    " d.project_id, d.rel_path, d.title, d.tags, d.kind, b.start_char, b.end_char, d.root, d.role, d.label,"
    " d.family, d.recorded_ns, d.revision, d.mtime_ns, d.size_bytes, d.content_hash, d.indexed_at"
    " FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
)


def _json_list(raw: str) -> list[str]:
    return [] if raw == "[]" else json.loads(raw)  # most blocks have no headings, most documents no tags


def _hit_block(r: tuple) -> HitBlock:  # type: ignore[type-arg]
    # r: the columns of _HIT_BLOCK_SELECT, typed by the schema (TEXT and INTEGER NOT NULL).
    return HitBlock(r[0], r[1], tuple(_json_list(r[2])), r[3], r[4], r[5], r[6], r[7], r[8], _json_list(r[9]), *r[10:])
