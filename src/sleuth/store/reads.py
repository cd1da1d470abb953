"""The catalog's reads of documents and blocks: hit rows, filters, graph rows, extents."""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Generator, Iterator, Sequence
from typing import Any

from sleuth.store import doc_text
from sleuth.store.rows import (
    BLOCK_COLUMNS,
    DOCUMENT_COLUMNS,
    DOCUMENT_COLUMNS_WITHOUT_TEXT,
    HIT_BLOCK_SELECT,
    Connected,
    DocumentRow,
    HitBlock,
    IndexedBlock,
    block_of_row,
    document_of_row,
    hit_block_of_row,
    sync_block_query,
)
from sleuth.text import analyze, block_terms
from sleuth.types import Block


class DocumentReads(Connected):
    """Reads of documents and blocks (a part of :class:`sleuth.store.catalog.Catalog`)."""

    def document(self, doc_id: str) -> DocumentRow | None:
        """The document with its whole text (put back together from its blocks: ``sleuth.store.doc_text``)."""
        cols = ", ".join(DOCUMENT_COLUMNS) + (", 0" if self.old_format else ", elided_chars")
        with self.read() as conn:
            row = conn.execute(f"SELECT {cols} FROM documents WHERE doc_id=?", (doc_id,)).fetchone()
            if row is None:
                return None
            doc = document_of_row(row)
            if not row[-1]:
                return doc
            spans = conn.execute("SELECT start_char, end_char, text FROM blocks WHERE doc_id=?"
                                 " ORDER BY start_char, ordinal", (doc_id,)).fetchall()
        return dataclasses.replace(doc, text=doc_text.join(doc.text, int(row[-1]), spans))

    def documents(self, doc_ids: Sequence[str]) -> dict[str, DocumentRow]:
        """``{doc_id: DocumentRow}`` for the ids that exist (missing ids are left out), without
        their text (``text`` is ``""``; use :meth:`document` for the whole document)."""
        out: dict[str, DocumentRow] = {}
        cols = DOCUMENT_COLUMNS_WITHOUT_TEXT
        for i in range(0, len(doc_ids), 500):
            part = doc_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(f"SELECT {cols} FROM documents WHERE doc_id IN ({marks})", part):
                doc = document_of_row(row)
                out[doc.doc_id] = doc
        return out

    def existing_doc_ids(self, doc_ids: Sequence[str]) -> set[str]:
        """The ids of ``doc_ids`` that the catalog holds a document of."""
        out: set[str] = set()
        for i in range(0, len(doc_ids), 500):
            part = doc_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            out.update(r[0] for r in self.conn.execute(f"SELECT doc_id FROM documents WHERE doc_id IN ({marks})", part))
        return out

    def filter_documents(self, projects: Sequence[str] | None, labels: Sequence[str] = (),
                         roles: Sequence[str] = (), families: Sequence[str] = (),
                         recorded_after_ns: int | None = None, recorded_before_ns: int | None = None,
                         paths: Sequence[str] = (), tags: Sequence[str] = ()) -> set[str]:
        """Ids of the documents matching every given filter (empty sequences and None: no filter).

        ``labels`` match the document kind label (lowercase), ``roles`` its role, ``families`` its
        source family; the recorded-time bounds are inclusive, in nanoseconds since the epoch;
        ``tags``: documents with at least one of them (case-insensitive); ``paths``: gitignore-style
        globs (:class:`sleuth.pathglob.PathFilter`).

        Raises:
            QueryError: a path glob that is not valid.
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
        if tags:
            wanted = list(dict.fromkeys(t.strip().lower() for t in tags))
            where.append("tags != '[]' AND EXISTS (SELECT 1 FROM json_each(documents.tags) WHERE lower(value) IN "
                         f"({','.join('?' * len(wanted))}))")
            args.extend(wanted)
        clause = " WHERE " + " AND ".join(where) if where else ""
        if not paths:
            return {r[0] for r in self.conn.execute("SELECT doc_id FROM documents" + clause, args)}
        from sleuth.pathglob import PathFilter

        selected = PathFilter(paths)
        rows = self.conn.execute("SELECT doc_id, root, rel_path FROM documents" + clause, args)
        return {doc_id for doc_id, root, rel in rows if selected.matches(root, rel)}

    def documents_at(self, rel_path: str) -> list[tuple[str, str, str, str]]:
        """``(doc_id, project_id, root, rel_path)`` of every document whose path relative to its
        root is ``rel_path`` (one per project and root holding such a file)."""
        return [tuple(r) for r in self.conn.execute(  # type: ignore[misc]
            "SELECT doc_id, project_id, root, rel_path FROM documents WHERE rel_path = ? ORDER BY project_id, root",
            (rel_path,))]

    def kind_labels(self, projects: Sequence[str] | None = None) -> list[str]:
        """The distinct document kind labels of the index, or of ``projects`` (what ``filters.kinds`` can match)."""
        if projects is None:
            return [r[0] for r in self.conn.execute("SELECT DISTINCT label FROM documents ORDER BY label")]
        marks = ",".join("?" * len(projects))
        return [r[0] for r in self.conn.execute(
            f"SELECT DISTINCT label FROM documents WHERE project_id IN ({marks}) ORDER BY label", tuple(projects))]

    def graph_rows(self) -> Iterator[tuple[str, str, str, str, list[tuple[str, str, str]], list[str]]]:
        """``(doc_id, project_id, rel_path, title, links, entities)`` of every document, in one
        snapshot (links as ``(target, relation, label)``); when no document has a link, of the
        documents that declare an entity only (the others add nothing to the link graph, and with
        no link to resolve their paths are not needed: 1,000,000 such rows are read in seconds)."""
        with self.read() as conn:
            links: dict[str, list[tuple[str, str, str]]] = {}
            for doc_id, target, relation, label in conn.execute("SELECT doc_id, target, relation, label FROM links"):
                links.setdefault(doc_id, []).append((target, relation, label))
            entities: dict[str, list[str]] = {}
            for doc_id, entity in conn.execute("SELECT doc_id, entity FROM entities"):
                entities.setdefault(doc_id, []).append(entity)
            sql = "SELECT doc_id, project_id, rel_path, title FROM documents"
            if not links:
                sql += " WHERE EXISTS (SELECT 1 FROM entities e WHERE e.doc_id = documents.doc_id)"
            rows = conn.execute(sql).fetchall()
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
                f"SELECT d.doc_id, length(d.text){'' if self.old_format else ' + d.elided_chars'},"
                f" MIN(b.start_char), MAX(b.end_char) FROM documents d"
                f" JOIN blocks b ON b.doc_id = d.doc_id WHERE d.doc_id IN ({marks}) GROUP BY d.doc_id",
                part,
            ):
                out[doc_id] = (int(length), int(start), int(end))
        return out

    def documents_for_projects(self, project_ids: Sequence[str]) -> Iterator[DocumentRow]:
        """Every document of the projects, without its text (``text`` is ``""``)."""
        cols = DOCUMENT_COLUMNS_WITHOUT_TEXT
        marks = ",".join("?" * len(project_ids))
        rows = self.conn.execute(f"SELECT {cols} FROM documents WHERE project_id IN ({marks})",
                                 list(project_ids)).fetchall()
        for row in rows:
            yield document_of_row(row)

    def blocks_of(self, doc_id: str) -> list[Block]:
        rows = self.conn.execute(
            f"SELECT {BLOCK_COLUMNS}, d.project_id FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
            " WHERE b.doc_id=? ORDER BY ordinal",
            (doc_id,),
        ).fetchall()
        return [block_of_row(r) for r in rows]

    def block_ids_of(self, doc_ids: Sequence[str]) -> dict[str, list[str]]:
        """``{doc_id: [block_id, ...]}`` of the documents of ``doc_ids`` that have blocks (one
        indexed lookup per 500 documents), ids in block order."""
        out: dict[str, list[str]] = {}
        for i in range(0, len(doc_ids), 500):
            part = list(doc_ids[i : i + 500])
            marks = ",".join("?" * len(part))
            for doc_id, block_id in self.conn.execute(
                    f"SELECT doc_id, block_id FROM blocks WHERE doc_id IN ({marks}) ORDER BY doc_id, ordinal", part):
                out.setdefault(str(doc_id), []).append(str(block_id))
        return out

    def blocks(self, block_ids: Sequence[str]) -> dict[str, Block]:
        """``{block_id: Block}`` for the ids that exist."""
        out: dict[str, Block] = {}
        for i in range(0, len(block_ids), 500):
            part = block_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(
                f"SELECT {BLOCK_COLUMNS}, d.project_id FROM blocks b JOIN documents d ON b.doc_id=d.doc_id"
                f" WHERE b.block_id IN ({marks})",
                part,
            ):
                block = block_of_row(row)
                out[block.block_id] = block
        return out

    def block_texts(self, block_ids: Sequence[str]) -> dict[str, str]:
        """``{block_id: text}`` for the ids that exist (one indexed lookup per 500 ids; no join: the
        rm3 lane reads its feedback blocks' texts on every search)."""
        out: dict[str, str] = {}
        for i in range(0, len(block_ids), 500):
            part = block_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            out.update(self.conn.execute(f"SELECT block_id, text FROM blocks WHERE block_id IN ({marks})", part))
        return out

    def hit_blocks(self, block_ids: Sequence[str]) -> dict[str, HitBlock]:
        """``{block_id: HitBlock}`` for the ids that exist (one indexed join per 500 ids)."""
        out: dict[str, HitBlock] = {}
        for i in range(0, len(block_ids), 500):
            part = block_ids[i : i + 500]
            marks = ",".join("?" * len(part))
            for row in self.conn.execute(f"{HIT_BLOCK_SELECT} WHERE b.block_id IN ({marks})", part):
                out[row[0]] = hit_block_of_row(row)
        return out

    def first_hit_block(self, doc_id: str) -> HitBlock | None:
        """The first block of ``doc_id`` as a :class:`HitBlock`; None when it has none (or is gone)."""
        row = self.conn.execute(f"{HIT_BLOCK_SELECT} WHERE b.doc_id=? ORDER BY b.ordinal LIMIT 1",
                                (doc_id,)).fetchone()
        return None if row is None else hit_block_of_row(row)

    def indexed_blocks(self, min_generation: int = 0) -> Iterator[IndexedBlock]:
        """Every block of documents written after ``min_generation``, with its index fields (its
        terms computed from its text and its document's title: :func:`sleuth.text.block_terms`)."""
        cur = self.conn.execute(
            f"SELECT {BLOCK_COLUMNS}, d.project_id, d.title, d.tags, d.rel_path FROM blocks b"
            " JOIN documents d ON b.doc_id=d.doc_id WHERE d.generation > ? ORDER BY b.doc_id, b.ordinal",
            (min_generation,),
        )
        title_of: tuple[str, list[str]] = ("", [])
        for row in cur:
            title = row[11]
            if title != title_of[0]:
                title_of = (title, analyze(title))
            block = block_of_row(row[:11])
            yield IndexedBlock(block, block_terms(block.text, title_of[1]), title, json.loads(row[12]), row[13])

    def sync_block_pages(self, min_generation: int, after: tuple[str, int] | None,
                         size: int) -> Generator[list[tuple[Any, ...]], None, None]:
        """The rows a Milvus sync reads (:data:`SYNC_BLOCK_SELECT`) of every block of documents
        written after ``min_generation``, starting after the block ``after`` (``(doc_id, ordinal)``;
        None: from the first), in the catalog's order (document id, then ordinal), ``size`` rows a
        page. Keyset paging on the ``blocks_doc`` index: each page one bounded query, so a reader
        holds one page at a time. :class:`sleuth.store.pg.PgCatalog` reads them with one query
        through a server-side cursor instead."""
        size = max(1, int(size))
        while True:
            sql, args = sync_block_query(min_generation, after)
            rows = self.conn.execute(sql + " LIMIT ?", [*args, size]).fetchall()
            if rows:
                yield rows
            if len(rows) < size:
                return
            after = (str(rows[-1][1]), int(rows[-1][2]))

    def block_terms(self, doc_ids: Sequence[str]) -> list[tuple[str, str, str]]:
        """``(block_id, project_id, terms)`` of every block of ``doc_ids`` (for a tfidf update)."""
        out: list[tuple[str, str, str]] = []
        for i in range(0, len(doc_ids), 500):
            part = doc_ids[i : i + 500]
            rows = self.conn.execute(
                "SELECT b.block_id, d.project_id, b.text, d.title FROM documents d JOIN blocks b ON b.doc_id = d.doc_id"
                f" WHERE d.doc_id IN ({','.join('?' * len(part))}) ORDER BY b.doc_id, b.ordinal",
                part,
            ).fetchall()
            out += [(block_id, project_id, block_terms(text, analyze(title)))
                    for block_id, project_id, text, title in rows]
        return out

