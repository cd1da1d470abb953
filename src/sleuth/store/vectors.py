"""The catalog's block vectors, kept by embedding model and embedding-text hash.

Stored as 8-bit codes with a step per block and a scale (:mod:`sleuth.store.vector_codes`, catalog
format 6); a catalog of an older format opened read-only holds float32 blobs (before format 5) or
format 5's rows (one step per vector), turned into format 6's rows as they are read, so that it
ranks as it will once migrated.
"""

from __future__ import annotations

import logging
import sqlite3
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import cast

import numpy as np

from sleuth.errors import StorageError
from sleuth.store import vector_codes
from sleuth.store.rows import Connected, embedding_text

log = logging.getLogger(__name__)


def float32_blobs_to_codes(blobs: Sequence[bytes]) -> list[bytes]:
    """Stored blobs (:mod:`sleuth.store.vector_codes`) of float32 vector blobs of equal size."""
    if not blobs:
        return []
    vectors = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    return vector_codes.encode_blobs(vectors)


def convert_rows(rows: Iterable[tuple[str, str, object]], convert: Callable[[Sequence[bytes]], list[bytes]],
                 ) -> tuple[list[tuple[str, str, bytes]], list[tuple[str, str]]]:
    """``(model, embed_hash, stored blob)`` of old-format rows ``(model, embed_hash, vector)``, and the
    keys of the rows that could not be converted (a value that is not bytes, a blob of another size
    than most of its model's, or too short to hold a vector, a float32 vector with a value that is
    not finite): those are left out, so that their
    blocks are embedded again, instead of one hostile row keeping the whole catalog from opening.
    Blobs of one size are converted together; a group that fails is converted row by row."""
    good: list[tuple[str, str, bytes]] = []
    bad: list[tuple[str, str]] = []
    sizes: dict[str, Counter[int]] = {}
    kept: list[tuple[str, str, bytes]] = []
    for model, embed_hash, value in rows:
        if isinstance(value, bytes | bytearray | memoryview):
            blob = bytes(value)
            kept.append((model, embed_hash, blob))
            sizes.setdefault(model, Counter())[len(blob)] += 1
        else:
            bad.append((model, embed_hash))
    width = {model: counts.most_common(1)[0][0] for model, counts in sizes.items()}  # a model's vectors: one size
    by_size: dict[int, list[tuple[str, str, bytes]]] = {}
    for model, embed_hash, blob in kept:
        if len(blob) == width[model] and len(blob) > vector_codes.FORMAT_5_SCALE_BYTES:
            by_size.setdefault(len(blob), []).append((model, embed_hash, blob))
        else:
            bad.append((model, embed_hash))
    for size in sorted(by_size):
        part = by_size[size]
        try:
            blobs = convert([b for _, _, b in part])
        except (ValueError, TypeError):
            blobs = []
            for _model, _hash, blob in part:
                try:
                    blobs.append(convert([blob])[0])
                except (ValueError, TypeError):
                    blobs.append(b"")
        for (model, embed_hash, _), coded in zip(part, blobs, strict=True):
            if coded:
                good.append((model, embed_hash, coded))
            else:
                bad.append((model, embed_hash))
    return good, bad


def report_dropped(dropped: int, where: str) -> None:
    """Log (stderr, never stdout) how many old vector rows a migration or an import left out."""
    if dropped:
        log.warning("%s: %d stored vector(s) could not be read (wrong size, not bytes, or not finite) and "
                    "were left out; their blocks are embedded again", where, dropped)


#: Float32 vectors encoded per statement while a format-4 catalog is migrated.
MIGRATE_VECTORS_PER_BATCH = 4096
#: Largest old vector value a migration reads, in bytes: float32 of 8,192 dimensions (format 5's
#: rows are a quarter of that), more than any sentence-embedding model. A larger value, or one that is
#: not a blob, is never loaded (SQLite reads a blob's size from its record header) and is left out
#: as unreadable: a planted 1 GB blob costs no memory. A batch holds at most
#: ``MIGRATE_VECTORS_PER_BATCH`` x this (128 MiB).
MIGRATE_MAX_VECTOR_BYTES = 4 * 8192
#: Longest model name and embedding-text hash a migration copies, in characters (hashes are 16 hex
#: digits, model names a few dozen characters); a row with a longer key is left out.
MIGRATE_MAX_KEY_CHARS = 1024
#: An SQL condition that holds for a ``vectors`` row within the bounds above (its value a blob of at
#: most ``MIGRATE_MAX_VECTOR_BYTES``, its keys text of at most ``MIGRATE_MAX_KEY_CHARS``), and its
#: parameters (:meth:`sleuth.store.catalog.Catalog.bound_vector_rows`). The value's type and size
#: come from its record header, so it is never loaded; a key's length in characters needs its text,
#: so the scans that check it run under ``SCAN_MAX_VALUE_BYTES`` (:func:`length_limit`).
#: (``BOUNDED_KEY_SQL``: the keys' part alone, with its parameters.)
BOUNDED_KEY_SQL = ("typeof(model)='text' AND typeof(embed_hash)='text' AND length(model)<=?"
                   " AND length(embed_hash)<=?")
BOUNDED_KEY_PARAMS = (MIGRATE_MAX_KEY_CHARS, MIGRATE_MAX_KEY_CHARS)
BOUNDED_ROW_SQL = f"typeof(vector)='blob' AND length(vector)<=? AND {BOUNDED_KEY_SQL}"
BOUNDED_ROW_PARAMS = (MIGRATE_MAX_VECTOR_BYTES, *BOUNDED_KEY_PARAMS)
#: Largest value, in bytes, that a scan of a ``vectors`` table may load (SQLite's
#: ``SQLITE_LIMIT_LENGTH`` while it runs): far above any vector or key within the bounds above, far
#: below what a planted key could make SQLite allocate (SQLite 3.40 cannot size a text value without
#: loading it; a larger one raises ``sqlite3.DataError`` "string or blob too big" unread).
SCAN_MAX_VALUE_BYTES = 1 << 20


@contextmanager
def length_limit(conn: sqlite3.Connection, max_bytes: int = SCAN_MAX_VALUE_BYTES) -> Iterator[None]:
    """Run the block with SQLite's largest value on ``conn`` lowered to ``max_bytes`` (bytes), then
    restore it: a statement that would load a larger value raises ``sqlite3.DataError`` before
    allocating it (``SQLITE_LIMIT_LENGTH``, https://www.sqlite.org/limits.html)."""
    before = conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, max_bytes)
    try:
        yield
    finally:
        conn.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, before)


def vector_bytes_of(vector_format: int, dim: int) -> int:
    """Bytes of one stored vector of ``dim`` dimensions in catalog format ``vector_format`` (before
    5: float32; 5: codes and a scale; 6: :func:`sleuth.store.vector_codes.blob_bytes`)."""
    if vector_format <= 4:
        return 4 * dim
    if vector_format == 5:
        return dim + vector_codes.FORMAT_5_SCALE_BYTES
    return vector_codes.blob_bytes(dim)


#: Most rows of a ``vectors`` table :meth:`VectorTable.import_vectors` copies: five times a
#: million-block index; a file with more is not imported.
IMPORT_MAX_VECTORS = 5_000_000
#: Most dimensions of an imported vector (as ``MIGRATE_MAX_VECTOR_BYTES``): a larger row is left out
#: as unreadable, never loaded.
IMPORT_MAX_DIMENSIONS = 8192
#: Most bytes of vector values an import reads, in bytes (a million float32 vectors of 1,024
#: dimensions); a file with more is not imported.
IMPORT_MAX_BYTES = 4 << 30


def rows_behind_unread_key(conn: sqlite3.Connection, table: str, source: str) -> int:
    """How many rows ``table`` holds, all to be left out because one of them holds a key over
    ``SCAN_MAX_VALUE_BYTES`` (which row is unknown while it is unread); logs that, naming ``source``.
    ``table`` is a fixed name of the caller's, never input."""
    rows = int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    log.warning("%s: the vectors table holds a key of more than %d bytes, which is not read; its %d"
                " stored vector(s) are left out", source, SCAN_MAX_VALUE_BYTES, rows)
    return rows


def encode_vector_table(conn: sqlite3.Connection, create_sql: str,
                        convert: Callable[[Sequence[bytes]], list[bytes]] = float32_blobs_to_codes) -> int:
    """Replace the ``vectors`` table of an older catalog by this format's (``create_sql``, its
    ``CREATE TABLE IF NOT EXISTS vectors`` statement: stored rows, ``WITHOUT ROWID``), inside the
    caller's transaction; ``convert`` turns equal-sized old blobs into stored rows (default: float32
    vectors of format 4; :func:`sleuth.store.vector_codes.from_format_5` for format 5's rows).
    Returns how many rows could not be converted and were left out (:func:`convert_rows`; a value
    over ``MIGRATE_MAX_VECTOR_BYTES`` or a key over ``MIGRATE_MAX_KEY_CHARS`` is never read).
    The scans run under ``SCAN_MAX_VALUE_BYTES`` (:func:`length_limit`): a key larger than that
    is never loaded, and since which row holds it is then unknown, every row is left out (reported
    on stderr; their blocks are embedded again), as
    :meth:`sleuth.store.catalog.Catalog.bound_vector_rows` does."""
    conn.execute("DROP TABLE IF EXISTS vectors_v5")
    conn.execute(create_sql.replace("IF NOT EXISTS vectors (", "vectors_v5 (", 1))
    try:
        with length_limit(conn):
            dropped = _encode_rows(conn, convert)
    except sqlite3.DataError:  # a key too long to load: which row is unknown unread, so none is kept
        conn.execute("DELETE FROM vectors_v5")
        dropped = rows_behind_unread_key(conn, "vectors", "catalog migration")
    conn.execute("DROP TABLE vectors")
    conn.execute("ALTER TABLE vectors_v5 RENAME TO vectors")
    report_dropped(dropped, "catalog migration")
    return dropped


def _encode_rows(conn: sqlite3.Connection, convert: Callable[[Sequence[bytes]], list[bytes]]) -> int:
    """Copy the convertible rows of ``vectors`` into ``vectors_v5`` (:func:`encode_vector_table`);
    returns how many were left out. Raises ``sqlite3.DataError`` on a value over the length limit."""
    dropped = int(conn.execute(f"SELECT count(*) FROM vectors WHERE NOT ({BOUNDED_KEY_SQL})",
                               BOUNDED_KEY_PARAMS).fetchone()[0])
    # One scan, read a batch at a time: a seek into a WITHOUT ROWID table (format 5's) loads the
    # whole of every row its search compares with, a planted huge one included; a scan does not.
    rows_of = conn.execute(
        "SELECT model, embed_hash, CASE WHEN typeof(vector)='blob' AND length(vector)<=? THEN vector END"
        f" FROM vectors WHERE {BOUNDED_KEY_SQL} ORDER BY model, embed_hash",
        (MIGRATE_MAX_VECTOR_BYTES, *BOUNDED_KEY_PARAMS))
    try:
        while rows := rows_of.fetchmany(MIGRATE_VECTORS_PER_BATCH):
            coded, bad = convert_rows(rows, convert)
            dropped += len(bad)
            conn.executemany("INSERT INTO vectors_v5 VALUES (?,?,?)", coded)
    finally:
        rows_of.close()
    return dropped


#: The stored value ``v.vector`` when it is a blob of the size bound, else NULL: SQLite reads a
#: value's type and size from its record header, so the value itself is loaded only when it has the
#: right size (PostgreSQL: ``octet_length``, :func:`sleuth.store.pg.pg_sql`).
_SIZED_VECTOR = "CASE WHEN typeof(v.vector)='blob' AND length(v.vector)=? THEN v.vector END"

#: Embedding-text hashes per ``IN (...)`` list of :meth:`VectorTable.blocks_of_texts` (within
#: SQLite's and PostgreSQL's limits on bound parameters).
EMBED_HASHES_PER_QUERY = 500
#: Rows of a model whose sizes decide its vectors' dimensions (:meth:`VectorTable.vector_dim`).
VECTOR_DIM_SAMPLE_ROWS = 64


class VectorTable(Connected):
    """Block vectors by model (a part of :class:`sleuth.store.catalog.Catalog`)."""

    def vector_bytes(self, dim: int) -> int:
        """Bytes of one stored vector of ``dim`` dimensions in this catalog's format (before 5:
        float32; 5: codes and a scale; 6: :func:`sleuth.store.vector_codes.blob_bytes`)."""
        return vector_bytes_of(self.vector_format, dim)

    def readable_rows(self, values: Sequence[object], dim: int) -> tuple[np.ndarray, np.ndarray]:
        """``(rows, readable)`` of vector values as read from this catalog: ``readable`` (bool,
        shape (n,)) says which are vectors of ``dim`` dimensions (bytes of :meth:`vector_bytes`
        each, with finite values: format 4's floats, the steps and scale of 5 and 6); ``rows``
        (shape (readable.sum(),), :func:`sleuth.store.vector_codes.row_dtype`) are their stored
        rows, in order. An unreadable value (a hostile or damaged row) is left for the caller to
        skip: its block is then embedded again (:meth:`blocks_without_vectors` with ``dim``)."""
        width = self.vector_bytes(dim)
        n = len(values)
        as_bytes = cast("Sequence[bytes]", values)  # when every one is bytes (tested first)
        good: Sequence[bytes]
        if set(map(type, values)) <= {bytes} and set(map(len, as_bytes)) <= {width}:  # every row as written
            good = as_bytes
            readable = np.ones(n, dtype=bool)
        else:
            blobs = [bytes(v) if isinstance(v, bytes | bytearray | memoryview) else b"" for v in values]
            readable = np.fromiter((len(b) == width for b in blobs), dtype=bool, count=n)
            good = [b for b, ok in zip(blobs, readable.tolist(), strict=True) if ok]
        if self.vector_format == 4:
            vectors = np.frombuffer(b"".join(good), dtype=np.float32).reshape(len(good), dim)
            finite = np.isfinite(vectors).all(axis=1)
            rows = vector_codes.encode(vectors if finite.all() else vectors[finite])
        else:
            blobs6 = vector_codes.from_format_5(good) if self.vector_format == 5 else good
            rows = np.frombuffer(b"".join(blobs6), dtype=vector_codes.row_dtype(dim))
            finite = np.isfinite(rows["scale"]) & np.isfinite(rows["ratios"]).all(axis=1)
            if not finite.all():
                rows = rows[finite]
        readable[np.flatnonzero(readable)[~finite]] = False
        return rows, readable

    def readable_sql(self, dim: int) -> tuple[str, tuple[object, ...]]:
        """``(condition, parameters)``: an SQL condition on ``v.vector`` (the ``vectors`` row of a
        query) that holds for exactly the values :meth:`readable_rows` reads in formats 5 and 6 (a
        blob of :meth:`vector_bytes` whose steps and scale are finite), in SQLite's and PostgreSQL's
        dialects (:func:`sleuth.store.pg.pg_sql`); in format 4 (read-only; migrating it drops rows
        that are not finite) it checks the size only.

        A little-endian float is not finite when its exponent bits are all ones: a float16 whose
        high byte ``h`` has ``h & 0x7C == 0x7C``, a float32 whose high byte has ``h & 0x7F == 0x7F``
        and whose next byte has its top bit set (IEEE 754-2008, binary16 and binary32). SQLite and
        PostgreSQL compare blobs byte by byte (``memcmp``), so one-byte ``substr`` comparisons test them.
        """
        parts = ["typeof(v.vector)='blob' AND length(v.vector)=?"]
        params: list[object] = [self.vector_bytes(dim)]
        if self.vector_format == 4:
            return parts[0], tuple(params)
        ratios = 0 if self.vector_format == 5 else vector_codes.blocks_of(dim)
        for i in range(ratios):  # substr counts from 1: block i's float16 is bytes dim+2i+1, dim+2i+2
            high = f"substr(v.vector,{dim + vector_codes.RATIO_BYTES * i + 2},1)"
            parts.append(f"NOT ({high} BETWEEN ? AND ? OR {high} >= ?)")
            params += [b"\x7c", b"\x7f", b"\xfc"]
        top = dim + vector_codes.RATIO_BYTES * ratios + vector_codes.SCALE_BYTES  # the scale's high byte
        parts.append(f"NOT (substr(v.vector,{top},1) IN (?, ?) AND substr(v.vector,{top - 1},1) >= ?)")
        params += [b"\x7f", b"\xff", b"\x80"]
        return " AND ".join(parts), tuple(params)

    def stored_rows(self, blobs: Sequence[bytes], dim: int) -> np.ndarray:
        """The stored rows (shape (n,), :func:`sleuth.store.vector_codes.row_dtype`) of vector blobs
        read from this catalog (:meth:`readable_rows`, every one readable).

        Raises:
            ValueError: a blob that is not a vector of ``dim`` dimensions of this format.
        """
        rows, readable = self.readable_rows(blobs, dim)
        if not readable.all():
            raise ValueError(f"a stored vector is not {self.vector_bytes(dim)} bytes of finite values ({dim}"
                             f" dimensions, format {self.vector_format})")
        return rows

    def blocks_without_vectors(self, model: str, limit: int = 10_000, dim: int | None = None) -> list[tuple[str, str]]:
        """Up to ``limit`` ``(embed_hash, embedding text)`` of blocks with no vector for ``model``;
        with ``dim``, also those whose stored vector the vector lane cannot read (not a blob of
        this format's size for ``dim`` dimensions, or one with a step or scale that is not finite:
        :meth:`readable_sql`; a hostile or damaged row, which the lane skips): embedding them again
        replaces the row."""
        self.bound_vector_rows()
        sized, size = self._readable_condition(dim)
        rows = self.conn.execute(
            "SELECT b.embed_hash, d.title, b.text FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
            f" WHERE NOT EXISTS (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash{sized})"
            " GROUP BY b.embed_hash LIMIT ?",
            (model, *size, limit),
        ).fetchall()
        return [(h, embedding_text(title, text)) for h, title, text in rows]

    def store_vectors(self, model: str, items: Sequence[tuple[str, bytes]]) -> None:
        """Cache ``(embed_hash, float32 vector bytes)`` for ``model`` (no new generation: derived
        data), stored as codes and scale (:mod:`sleuth.store.vector_codes`)."""
        blobs = float32_blobs_to_codes([v for _, v in items])
        self.bound_vector_rows()
        with self.write() as conn:
            conn.executemany("INSERT OR REPLACE INTO vectors VALUES (?,?,?)",
                             [(model, h, b) for (h, _), b in zip(items, blobs, strict=True)])
            conn.execute(
                "INSERT INTO meta VALUES (?, '1') ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1",
                (f"vectors:{model}",),
            )

    def import_vectors(self, other: Path) -> int:
        """Copy every cached vector of the catalog file ``other`` (any format that has a ``vectors``
        table: float32 blobs before format 5 are encoded, format 5's rows given their blocks' steps) into
        this one; returns how many rows were
        copied. Vectors depend only on the model and the embedded text, so they survive a change of
        index format. ``other`` is read a batch at a time (``MIGRATE_VECTORS_PER_BATCH`` rows); a
        row of more than ``IMPORT_MAX_DIMENSIONS`` dimensions or a key over ``MIGRATE_MAX_KEY_CHARS``
        characters is left out unread (reported, as every row that cannot be converted).

        Raises:
            StorageError: ``other`` holds more than ``IMPORT_MAX_VECTORS`` rows, or more than
                ``IMPORT_MAX_BYTES`` of vectors (counted from the record headers, before any is
                read); nothing is copied then.
                A key of more than ``SCAN_MAX_VALUE_BYTES`` is refused the same way, unread.
            sqlite3.DatabaseError: ``other`` is not a catalog.
        """
        src = sqlite3.connect(f"{other.resolve().as_uri()}?mode=ro", uri=True)
        src.setlimit(sqlite3.SQLITE_LIMIT_LENGTH, SCAN_MAX_VALUE_BYTES)  # a planted huge key: DataError, unread
        try:
            meta = src.execute("SELECT value FROM meta WHERE key='schema_version'").fetchone()
            version = 4 if meta is None else min(int(meta[0]), 6)
            row_max = vector_bytes_of(version, IMPORT_MAX_DIMENSIONS)
            sized = "CASE WHEN typeof(vector)='blob' AND length(vector)<=? THEN {} END"
            try:
                count, nbytes, dropped = src.execute(
                    f"SELECT count(*), total({sized.format('length(vector)')}),"
                    f" total(NOT ({BOUNDED_KEY_SQL})) FROM vectors",
                    (row_max, *BOUNDED_KEY_PARAMS)).fetchone()
            except sqlite3.DataError:
                raise StorageError(f"{other} holds a stored vector key of more than {SCAN_MAX_VALUE_BYTES} bytes,"
                                   " which is not read; nothing was imported") from None
            if count > IMPORT_MAX_VECTORS or nbytes > IMPORT_MAX_BYTES:
                raise StorageError(f"{other} holds {count} stored vectors of {int(nbytes)} bytes: more than an import"
                                   f" copies ({IMPORT_MAX_VECTORS} vectors, {IMPORT_MAX_BYTES} bytes); nothing was"
                                   " imported")
            convert = float32_blobs_to_codes if version < 5 else vector_codes.from_format_5 if version == 5 else list
            dropped = int(dropped)
            rows_of = src.execute(f"SELECT model, embed_hash, {sized.format('vector')} FROM vectors"
                                  f" WHERE {BOUNDED_KEY_SQL}",
                                  (row_max, *BOUNDED_KEY_PARAMS))
            self.bound_vector_rows()
            with self.write() as conn:
                before = int(conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0])
                while batch := rows_of.fetchmany(MIGRATE_VECTORS_PER_BATCH):
                    coded, bad = convert_rows(batch, convert)
                    dropped += len(bad)
                    conn.executemany("INSERT OR IGNORE INTO vectors VALUES (?,?,?)", coded)
                copied = int(conn.execute("SELECT COUNT(*) FROM vectors").fetchone()[0]) - before
        finally:
            src.close()
        report_dropped(dropped, f"importing vectors from {other}")
        return copied

    def block_vectors_with_keys(self, model: str, dim: int) -> Iterator[tuple[str, str, str, bytes | None]]:
        """``(block_id, project_id, embed_hash, vector bytes)`` of every block with a vector for
        ``model``; the vector is None when the stored value is not a blob of :meth:`vector_bytes`
        ``(dim)`` (the size is checked in SQL, so a planted value of any size is never read into
        memory: :meth:`readable_rows` then skips it)."""
        self.bound_vector_rows()
        return iter(self.conn.execute(
            f"SELECT b.block_id, d.project_id, b.embed_hash, {_SIZED_VECTOR} FROM blocks b JOIN documents d"
            " ON b.doc_id=d.doc_id JOIN vectors v ON v.model=? AND v.embed_hash=b.embed_hash ORDER BY b.rowid",
            (self.vector_bytes(dim), model),
        ))

    def count_block_vectors(self, model: str) -> int:
        """How many rows :meth:`block_vectors_with_keys` gives (in the same read transaction: as many)."""
        self.bound_vector_rows()
        return int(self.conn.execute(
            "SELECT COUNT(*) FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
            " JOIN vectors v ON v.model=? AND v.embed_hash=b.embed_hash",
            (model,),
        ).fetchone()[0])

    def doc_block_vectors(self, model: str, doc_ids: Sequence[str],
                          dim: int) -> list[tuple[str, str, str, str, bytes | None]]:
        """``(block_id, doc_id, project_id, embed_hash, vector bytes or None)`` of every block of
        ``doc_ids``: None when the block has no vector for ``model``, ``b""`` when its stored value
        is not a blob of :meth:`vector_bytes` ``(dim)`` (checked in SQL: such a value is never read
        into memory; :meth:`readable_rows` skips it)."""
        self.bound_vector_rows()
        marks = ",".join("?" * len(doc_ids))
        return self.conn.execute(
            "SELECT b.block_id, b.doc_id, d.project_id, b.embed_hash, CASE WHEN v.embed_hash IS NULL THEN NULL"
            " WHEN typeof(v.vector)='blob' AND length(v.vector)=? THEN v.vector ELSE ? END"
            " FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
            " LEFT JOIN vectors v ON v.model=? AND v.embed_hash=b.embed_hash"
            f" WHERE b.doc_id IN ({marks}) ORDER BY b.rowid",
            (self.vector_bytes(dim), b"", model, *doc_ids),
        ).fetchall()

    def blocks_of_texts(self, embed_hashes: Sequence[str]) -> int:
        """How many blocks have one of these embedding-text hashes: the blocks a batch of vectors
        covers (blocks of the same text, such as a heading repeated across pages, share one vector).
        Uses the ``blocks(embed_hash)`` index; ``EMBED_HASHES_PER_QUERY`` hashes a statement."""
        count = 0
        for i in range(0, len(embed_hashes), EMBED_HASHES_PER_QUERY):
            part = embed_hashes[i:i + EMBED_HASHES_PER_QUERY]
            count += int(self.conn.execute(
                f"SELECT COUNT(*) FROM blocks WHERE embed_hash IN ({','.join('?' * len(part))})", tuple(part),
            ).fetchone()[0])
        return count

    def docs_without_vectors(self, model: str) -> list[str]:
        """Documents with at least one block that has no vector for ``model``."""
        self.bound_vector_rows()
        return [r[0] for r in self.conn.execute(
            "SELECT DISTINCT b.doc_id FROM blocks b WHERE NOT EXISTS"
            " (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash)",
            (model,),
        )]

    def vector_counts(self, model: str, projects: Sequence[str] | None = None,
                      dim: int | None = None) -> tuple[int, int]:
        """``(blocks with a vector for model, all blocks)``, of the ``projects`` only when given;
        with ``dim``, a stored row counts only when the vector lane can read it (:meth:`readable_sql`:
        the rows :meth:`blocks_without_vectors` with ``dim`` embeds again do not)."""
        self.bound_vector_rows()
        sized, size = self._readable_condition(dim)
        if projects is None:
            with_vec = self.conn.execute(
                "SELECT COUNT(*) FROM blocks b WHERE EXISTS"
                f" (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash{sized})",
                (model, *size),
            ).fetchone()[0]
            return int(with_vec), int(self.conn.execute("SELECT COUNT(*) FROM blocks").fetchone()[0])
        marks = ",".join("?" * len(projects))
        of_projects = f"FROM blocks b JOIN documents d ON b.doc_id = d.doc_id WHERE d.project_id IN ({marks})"
        with_vec = self.conn.execute(
            f"SELECT COUNT(*) {of_projects} AND EXISTS"
            f" (SELECT 1 FROM vectors v WHERE v.model=? AND v.embed_hash=b.embed_hash{sized})",
            (*projects, model, *size),
        ).fetchone()[0]
        total = self.conn.execute(f"SELECT COUNT(*) {of_projects}", tuple(projects)).fetchone()[0]
        return int(with_vec), int(total)

    def _readable_condition(self, dim: int | None) -> tuple[str, tuple[object, ...]]:
        """`` AND`` :meth:`readable_sql` and its parameters, or nothing without ``dim``."""
        if dim is None:
            return "", ()
        sql, params = self.readable_sql(dim)
        return f" AND {sql}", params

    def vector_dim(self, model: str) -> int | None:
        """Dimensions of the vectors stored for ``model`` (None when it has none): the most common
        of the sizes of up to ``VECTOR_DIM_SAMPLE_ROWS`` of its rows that are a vector's size in
        this format, so that one hostile row does not decide it. Only rows of the catalog's blocks
        are sampled (rows no block uses, planted or left over, cannot outvote them); once the model
        is loaded its own dimensions decide (:meth:`sleuth.lanes.model.SharedModel.identity`)."""
        found: Counter[int] = Counter()
        self.bound_vector_rows()
        for (nbytes,) in self.conn.execute(
                "SELECT length(v.vector) FROM vectors v WHERE v.model=?"
                " AND EXISTS (SELECT 1 FROM blocks b WHERE b.embed_hash=v.embed_hash) LIMIT ?",
                (model, VECTOR_DIM_SAMPLE_ROWS)):
            dim = self._dim_of_bytes(int(nbytes or 0))
            if dim:
                found[dim] += 1
        return found.most_common(1)[0][0] if found else None

    def _dim_of_bytes(self, nbytes: int) -> int | None:
        if self.vector_format == 4:
            return nbytes // 4 if nbytes % 4 == 0 else None
        if self.vector_format == 5:
            return nbytes - vector_codes.FORMAT_5_SCALE_BYTES if nbytes > vector_codes.FORMAT_5_SCALE_BYTES else None
        try:
            return vector_codes.dim_of_blob(nbytes)
        except ValueError:
            return None
