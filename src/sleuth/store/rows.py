"""What the catalog stores and returns: document and block rows, and the SQL that reads them.

Also :class:`Connected`, what the catalog's parts (:mod:`sleuth.store.reads`,
:mod:`sleuth.store.vectors`) need of the catalog: a connection per thread and read snapshots.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import NamedTuple

from sleuth.types import Block


class Connected:
    """The catalog's connection (one per thread) and read snapshots: implemented by
    :class:`sleuth.store.catalog.Catalog`."""

    @property
    def conn(self) -> sqlite3.Connection:
        raise NotImplementedError

    def read(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def write(self) -> AbstractContextManager[sqlite3.Connection]:
        raise NotImplementedError

    def bound_vector_rows(self) -> None:
        """Make sure no lookup in the ``vectors`` table loads a row too large to be a vector
        (:meth:`sleuth.store.catalog.Catalog.bound_vector_rows`); called before every one."""
        raise NotImplementedError

    #: True for a catalog of a format before 5 opened read-only (see ``sleuth.store.catalog``):
    #: float32 vector blobs, and documents that keep their whole text (no ``elided_chars`` column).
    old_format = False
    #: The format of the catalog's vector blobs as opened: 6 (this code's), 5 (a format-5 catalog
    #: opened read-only: one step per vector) or 4 (float32, with ``old_format``).
    vector_format = 6


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
    #: The block's surface tokens, whitespace-joined (the exact field), when the indexer computed
    #: them with the terms; None: computed from the text by the postings.
    exact: str | None = None


@dataclass(frozen=True)
class FileState:
    """What the catalog knows of an indexed file, for change detection."""

    doc_id: str
    mtime_ns: int
    size_bytes: int
    content_hash: str

    def same_stat(self, mtime_ns: int, size_bytes: int) -> bool:
        """Whether a file of this modification time (ns) and size (bytes) is taken as the one indexed
        (as git's index does: neither is read; a rewrite keeping both is not seen)."""
        return self.mtime_ns == mtime_ns and self.size_bytes == size_bytes


@dataclass(frozen=True)
class FailedFile:
    """A file whose parse failed, as the catalog remembers it so that an unchanged one is not
    parsed again on every run: the skip reason, the file's time (ns) and size (bytes) when it
    failed, and the parser version (:data:`sleuth.ingest.PARSER_VERSION`) that failed on it."""

    reason: str
    mtime_ns: int
    size_bytes: int
    parser_version: int


DOCUMENT_COLUMNS = (
    "doc_id", "project_id", "root", "rel_path", "title", "tags", "kind", "front_matter", "mtime_ns",
    "size_bytes", "content_hash", "revision", "text", "generation", "indexed_at", "role", "label", "family",
    "recorded_ns",
)
#: The SELECT list of every document column, with ``text`` left empty (listings, hit fields).
DOCUMENT_COLUMNS_WITHOUT_TEXT = ", ".join("'' AS text" if c == "text" else c for c in DOCUMENT_COLUMNS)


def document_of_row(r: Sequence[object]) -> DocumentRow:
    return DocumentRow(
        doc_id=str(r[0]), project_id=str(r[1]), root=str(r[2]), rel_path=str(r[3]), title=str(r[4]),
        tags=json.loads(str(r[5])), kind=str(r[6]), front_matter=json.loads(str(r[7])),
        mtime_ns=int(r[8]), size_bytes=int(r[9]), content_hash=str(r[10]), revision=str(r[11]),  # type: ignore[arg-type]
        text=str(r[12]), generation=int(r[13]), indexed_at=str(r[14]),  # type: ignore[arg-type]
        role=str(r[15]), label=str(r[16]), family=str(r[17]), recorded_ns=int(r[18]),  # type: ignore[arg-type]
    )


BLOCK_COLUMNS = (
    "b.block_id, b.doc_id, b.ordinal, b.heading_path, b.text, b.start_line, b.end_line, b.start_char,"
    " b.end_char, b.content_hash"
)


#: What a Milvus sync reads of each block and its document, in this order: the block's ids and
#: place, heading path (JSON) and text; its document's project, title, tags (JSON), path, and the
#: rows' filter fields (label, role, family, recorded time in ns). Nothing else (no line spans, no
#: hashes, no document text).
SYNC_BLOCK_SELECT = (
    "SELECT b.block_id, b.doc_id, b.ordinal, b.heading_path, b.text, d.project_id, d.title, d.tags,"
    " d.rel_path, d.label, d.role, d.family, d.recorded_ns FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
)


def sync_block_query(min_generation: int, after: tuple[str, int] | None) -> tuple[str, list[object]]:
    """``(sql, args)``: :data:`SYNC_BLOCK_SELECT` of the blocks of documents written after
    ``min_generation``, after the block ``after`` (``(doc_id, ordinal)``; None: from the first),
    ordered by document id and ordinal (the ``blocks_doc`` index), with ``?`` placeholders."""
    sql = SYNC_BLOCK_SELECT + " WHERE d.generation > ?"
    args: list[object] = [int(min_generation)]
    if after is not None:
        sql += " AND (b.doc_id, b.ordinal) > (?, ?)"
        args += [str(after[0]), int(after[1])]
    return sql + " ORDER BY b.doc_id, b.ordinal", args


def block_of_row(r: Sequence[object]) -> Block:
    # r: the ten BLOCK_COLUMNS followed by the document's project_id.
    return Block(
        block_id=str(r[0]), doc_id=str(r[1]), ordinal=int(r[2]),  # type: ignore[arg-type]
        heading_path=tuple(json.loads(str(r[3]))), text=str(r[4]),
        start_line=int(r[5]), end_line=int(r[6]), start_char=int(r[7]), end_char=int(r[8]),  # type: ignore[arg-type]
        content_hash=str(r[9]), project_id=str(r[10]),
    )


HIT_BLOCK_SELECT = (
    "SELECT b.block_id, b.doc_id, b.heading_path, b.text, b.start_line, b.end_line,"
    " d.project_id, d.rel_path, d.title, d.tags, d.kind, b.start_char, b.end_char, d.root, d.role, d.label,"
    " d.family, d.recorded_ns, d.revision, d.mtime_ns, d.size_bytes, d.content_hash, d.indexed_at"
    " FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
)


def json_list(raw: str) -> list[str]:
    return [] if raw == "[]" else json.loads(raw)  # most blocks have no headings, most documents no tags


def hit_block_of_row(r: tuple) -> HitBlock:  # type: ignore[type-arg]
    # r: the columns of HIT_BLOCK_SELECT, typed by the schema (TEXT and INTEGER NOT NULL).
    return HitBlock(r[0], r[1], tuple(json_list(r[2])), r[3], r[4], r[5], r[6], r[7], r[8], json_list(r[9]), *r[10:])
