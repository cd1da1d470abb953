"""The Milvus sync: the catalog's blocks into the lanes' collections, in parts of bounded size.

A sync (under the index's write lock) runs in two passes over the blocks of the documents written
since the last one, each reading, analysing and sending them ``part_blocks`` at a time
(``MILVUS_SYNC_PART_BLOCKS`` by default), so its memory does not grow with the corpus:

1. **Statistics** (:meth:`MilvusSync._sync_stats`): each document's contribution (block count,
   fields' lengths, the term ids of its blocks) goes to ``milvus_doc_stats`` part by part, and the
   collection's totals to ``milvus_df`` and meta ``milvus:stats``, all in one catalog transaction
   (a kill leaves the statistics as they were). The document frequencies are summed in memory up
   to ``MILVUS_SYNC_DF_TERMS_MAX`` distinct term ids, then added to the table, inside the same
   transaction. Each block's terms are counted once (:class:`sleuth.lanes.sparse.PartTerms`) and
   the statistics summed from those counts by NumPy; the spill keeps the counts for the rows pass.
2. **Rows** (:meth:`MilvusSync._sync_lex`): the same blocks weighed with the new statistics and
   inserted (upserted by a sync of changes; see **Aliases** below), one part per insert call,
   one insert in flight while the next part is weighed. Before each insert the catalog's meta
   ``milvus:state`` records the sync's progress (``lex_sync``: the generation it brings Milvus
   to, the weights, the collection it writes, the last block known to be in Milvus and how many
   blocks after it may be): a sync killed between parts is finished by the next one, which starts
   after that block and upserts the blocks that may have arrived, so no block is sent twice and
   none is lost. If the catalog has moved on meanwhile, the next sync starts again (a re-weighting
   from scratch, or the changes since the generation Milvus fully reflects, which include the
   half-sent documents).

**Aliases.** Searches read ``<collection>_lex`` and ``<collection>_dense``, two Milvus aliases,
each naming one of two collections, ``<alias>_a`` or ``<alias>_b``. A sync of changes writes into
the collection the alias names: it upserts the rows of the documents written since the last sync,
then deletes the rows those documents no longer have and those of deleted documents, so a search
finds each document in its old or its new version, never missing. A **rebuild** (a collection
emptied or replaced, the statistics drifted past ``sparse.AVGDL_DRIFT_MAX``, another model) fills
the other collection while searches read the first, whole, at the weights of the sync before;
once it is flushed and marked the alias is pointed at it (``alter_alias``) and the first is
dropped (:meth:`MilvusSync._publish`). A kill at any point leaves the alias naming a whole
collection; the next sync finishes the rebuild (or starts it again) in the spare one. A collection
of the layout before aliases (named ``<collection>_lex`` itself) is read and synced as it is until
the first rebuild, which drops it to give its name to the alias.

Each collection carries a **mark** (the collection property ``MILVUS_MARK_PROPERTY``, a random
token renewed by every sync that changes it) and the catalog's ``milvus:state`` records it
(``lex_mark``, ``dense_mark``; and the mark of a sync under way, which the collection may carry
already when the sync was stopped after its flush). A collection whose mark the catalog does not
know is rebuilt: the Milvus database was emptied or replaced (an older copy of the database),
since the catalog's progress says nothing about it. A collection another index made (its property
``MILVUS_INDEX_PROPERTY`` is not this catalog's ``milvus:index_id``: two indexes given the same
``milvus_collection``) is refused with a configuration error instead, and left alone.
A mark survives another client's deletes and inserts, so the state also records the rows each
collection held after its sync (``lex_rows``, ``dense_rows``: an exact ``count(*)``); a collection
that holds another number is rebuilt too.

The generation Milvus reflects is recorded after its flush, as before. At most two parts of
analysed blocks (:class:`SyncBlock`) are alive at once: the one being weighed and the next being
read; ``on_part`` (tests, benchmarks) sees every part as it is read.
"""

from __future__ import annotations

import contextlib
import json
import logging
import pickle
import secrets
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from sleuth import progress as sleuth_progress
from sleuth.errors import ConfigError
from sleuth.faults import kill_point
from sleuth.lanes import sparse
from sleuth.store import milvus_columns
from sleuth.store.milvus_columns import Columns, SparseColumn
from sleuth.text import analyze, block_terms

if TYPE_CHECKING:
    from sleuth.store.catalog import Catalog

log = logging.getLogger(__name__)

#: Blocks read, analysed and sent to Milvus per part of a sync (and rows per insert call).
MILVUS_SYNC_PART_BLOCKS = 2_000
#: Distinct term ids whose document frequencies a sync sums in memory before adding them to the
#: catalog's ``milvus_df`` (16 bytes each, two int64 arrays; at most this many entries plus one
#: part's are held before they are summed).
MILVUS_SYNC_DF_TERMS_MAX = 1_000_000
#: Bytes of analysed blocks the statistics pass keeps in a temporary file for the rows pass (which
#: then reads neither the catalog nor the analyser again); past it the rows pass reads the catalog.
MILVUS_SYNC_SPILL_BYTES_MAX = 4 << 30
#: Rows sent to Milvus per insert call of the dense collection.
MILVUS_INSERT_BATCH_ROWS = 2_000
#: Ids per ``in [...]`` list of a delete expression.
MILVUS_DELETE_IDS_PER_EXPRESSION = 1_000
#: The collection property that holds a collection's mark (see the module docstring).
MILVUS_MARK_PROPERTY = "sleuth.sync_mark"
#: The collection property that names the index (its catalog's meta ``milvus:index_id``) that
#: made the collection: another index's collections are refused, never rebuilt over.
MILVUS_INDEX_PROPERTY = "sleuth.index_id"
#: The vector fields of the lexical and the dense collections.
LEX_FIELDS = frozenset({"lex", "tfidf"})
DENSE_FIELDS = frozenset({"dense"})
#: The two collections an alias takes turns to name (``<alias>_a``, ``<alias>_b``).
_SIDES = ("_a", "_b")
#: Catalog rows (documents, statistics) per ``IN (...)`` statement.
_IDS_PER_STATEMENT = 500


@dataclass(slots=True, weakref_slot=True, eq=False)
class SyncBlock:
    """One block as a sync holds it: ids, its place in the catalog's order and its document's
    filter fields, which its Milvus rows carry (its terms are in its part's
    :class:`sleuth.lanes.sparse.PartTerms`; its text is not held)."""

    block_id: str
    doc_id: str
    project_id: str
    ordinal: int
    label: str = ""
    role: str = ""
    family: str = ""
    #: The document's recorded time, in nanoseconds since the epoch.
    recorded_ns: int = 0


@dataclass(slots=True, eq=False)
class SyncPart:
    """A part of a sync: its blocks, in the catalog's order, and their terms counted once
    (:func:`sleuth.lanes.sparse.count_part`), which both passes read."""

    blocks: list[SyncBlock]
    terms: sparse.PartTerms


class _DfSum:
    """Document frequencies being summed: ``(ids, changes)`` arrays appended, summed by NumPy
    (a sort) once more than ``MILVUS_SYNC_DF_TERMS_MAX`` entries are held, so at most that many
    plus one part's."""

    def __init__(self) -> None:
        self._ids: list[np.ndarray] = []
        self._changes: list[np.ndarray] = []
        self._entries = 0
        self._summed = True  # the arrays held are one, each id once

    def add(self, ids: np.ndarray, changes: np.ndarray) -> None:
        self._ids.append(ids)
        self._changes.append(changes)
        self._entries += ids.size
        self._summed = False
        if self._entries > MILVUS_SYNC_DF_TERMS_MAX:
            self.items()

    def items(self) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, changes)``: each id once (sorted), its changes summed (int64)."""
        if not self._summed or not self._ids:
            ids = np.concatenate(self._ids) if self._ids else np.zeros(0, dtype=np.int64)
            changes = np.concatenate(self._changes) if self._changes else np.zeros(0, dtype=np.int64)
            order = np.argsort(ids, kind="stable")
            ids, changes = ids[order], changes[order]
            starts = np.flatnonzero(np.concatenate([[True], ids[1:] != ids[:-1]])) if ids.size else ids
            self._ids = [ids[starts]]
            self._changes = [np.add.reduceat(changes, starts) if ids.size else changes]
            self._entries, self._summed = int(starts.size), True
        return self._ids[0], self._changes[0]

    def full(self) -> bool:
        """Whether more than ``MILVUS_SYNC_DF_TERMS_MAX`` distinct ids are held (summed first)."""
        return self._entries > MILVUS_SYNC_DF_TERMS_MAX and self.items()[0].size > MILVUS_SYNC_DF_TERMS_MAX

    def clear(self) -> None:
        self._ids, self._changes, self._entries, self._summed = [], [], 0, True


class _DocTerms:
    """One document's statistics being counted (its blocks may span two parts): blocks, fields'
    token counts (``FIELDS`` order and after) and term ids with the blocks holding each."""

    __slots__ = ("counts", "doc_id", "ids", "lengths", "n")

    def __init__(self, doc_id: str, n: int, lengths: np.ndarray, ids: np.ndarray, counts: np.ndarray) -> None:
        self.doc_id, self.n, self.lengths, self.ids, self.counts = doc_id, n, lengths, ids, counts

    def merge(self, other: _DocTerms) -> None:
        """Add ``other`` (the same document's blocks in the next part)."""
        self.n += other.n
        width = max(self.lengths.size, other.lengths.size)
        self.lengths = np.pad(self.lengths, (0, width - self.lengths.size)) + np.pad(other.lengths,
                                                                                  (0, width - other.lengths.size))
        both = _DfSum()
        both.add(self.ids, self.counts)
        both.add(other.ids, other.counts)
        self.ids, self.counts = both.items()

    def record(self, fields: tuple[str, ...]) -> tuple[str, str]:
        """Its ``milvus_doc_stats`` row (:func:`sleuth.store.milvus_state.doc_stats_record`)."""
        from sleuth.store.milvus_state import doc_stats_record

        lengths = dict.fromkeys(sparse.FIELDS, 0)
        lengths.update(zip(fields, self.lengths.tolist(), strict=False))
        return self.doc_id, doc_stats_record(self.n, lengths, self.ids, self.counts)


#: Characters a Milvus string literal cannot hold as they are, and their escapes (Milvus' grammar
#: refuses a raw line feed or carriage return; ``\\n`` and ``\\r`` are read back as the character).
_LITERAL_ESCAPES = str.maketrans({"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r"})


def literal(value: str) -> str:
    """``value`` as a Milvus expression string literal: double-quoted, ``\\``, ``"``, line feed and
    carriage return escaped, so it matches exactly ``value`` (a line feed was written as a space:
    it matched another id; a carriage return failed the expression)."""
    return '"' + value.translate(_LITERAL_ESCAPES) + '"'


def in_list(field: str, values: Iterable[str], negate: bool = False) -> str:
    """``field in ["a", "b"]`` (``field not in [...]`` when ``negate``), every value a :func:`literal`."""
    return f"{field} {'not in' if negate else 'in'} [{', '.join(literal(v) for v in values)}]"


def chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class _Inserter:
    """Milvus inserts (or upserts) into one collection, one part in flight on a thread of its own
    while the caller builds the next (the server works while sleuth weighs), in order. :meth:`wait`
    returns once every part put is in Milvus (raising the first insert's error); leaving the
    ``with`` block waits too, so no insert outlives the sync that started it. Parts go as columns
    (:func:`sleuth.store.milvus_columns.send`), packed in one NumPy pass each."""

    def __init__(self, client: Any, collection: str) -> None:
        self.client, self.collection = client, collection
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sleuth-milvus-insert")
        self._pending: Future[Any] | None = None
        self._schema: dict[str, Any] | None = None

    def put(self, columns: Columns, upsert: bool = False) -> None:
        self.wait()
        self.submit(columns, upsert)

    def submit(self, columns: Columns, upsert: bool = False) -> None:
        """Send ``columns`` (the caller has waited for the part before)."""
        assert self._pending is None
        if self._schema is None:
            self._schema = self.client.describe_collection(self.collection)
        self._pending = self._pool.submit(milvus_columns.send, self.client, self.collection, columns, upsert,
                                          self._schema)

    def wait(self) -> None:
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.result()

    def __enter__(self) -> _Inserter:
        return self

    def __exit__(self, *exc: object) -> None:
        try:
            if exc[0] is None:
                self.wait()
            else:  # the caller failed: let the batch in flight end, its error is not the news
                with contextlib.suppress(Exception):
                    self.wait()
        finally:
            self._pool.shutdown(wait=True)


class _Spill:
    """The statistics pass's analysed parts on disk, for a rows pass over the same blocks (the
    same ``since``, from the first block). An unnamed temporary file of this process (unlinked at
    once, gone with it), written and read back only by it; at most ``MILVUS_SYNC_SPILL_BYTES_MAX``."""

    def __init__(self) -> None:
        self.file: IO[bytes] | None = None
        self.since: int | None = None
        self.complete = False
        self.bytes = 0

    def start(self, since: int) -> None:
        self.close()
        self.file, self.since = tempfile.TemporaryFile(prefix="sleuth-milvus-sync."), since

    def write(self, part: SyncPart) -> None:
        if self.file is None:
            return
        data = pickle.dumps(([(b.block_id, b.doc_id, b.project_id, b.ordinal, b.label, b.role, b.family,
                               b.recorded_ns) for b in part.blocks], part.terms),
                            protocol=pickle.HIGHEST_PROTOCOL)
        if self.bytes + len(data) > MILVUS_SYNC_SPILL_BYTES_MAX:
            self.close()
            return
        self.file.write(len(data).to_bytes(8, "little"))
        self.file.write(data)
        self.bytes += len(data) + 8

    def covers(self, since: int) -> bool:
        """Whether the parts of a pass from the first block of documents written after ``since`` are here."""
        return self.file is not None and self.complete and self.since == since

    def parts(self) -> Iterator[SyncPart]:
        assert self.file is not None
        self.file.seek(0)
        while header := self.file.read(8):
            data = self.file.read(int.from_bytes(header, "little"))
            blocks, terms = pickle.loads(data)  # this process's own file
            yield SyncPart([SyncBlock(*fields) for fields in blocks], terms)

    def close(self) -> None:
        if self.file is not None:
            self.file.close()
        self.file, self.since, self.complete, self.bytes = None, None, False, 0


class _StatsWriter:
    """The statistics' rows into the catalog, inside the caller's transaction (PostgreSQL:
    ``COPY``, not a statement per row)."""

    def __init__(self, conn: Any, fresh: bool) -> None:
        self.conn = conn
        self.copy_rows = getattr(conn, "copy_rows", None)
        self.df_rows_in_table = not fresh  # milvus_df may hold a term id already: add, do not insert

    def df(self, df: _DfSum) -> tuple[np.ndarray, np.ndarray]:
        """Add ``df`` (each term id's change) to ``milvus_df``, then empty it; returns the ids
        (sorted) and changes added, zeros left out."""
        ids, changes = df.items()
        kept = changes != 0
        ids, changes = ids[kept], changes[kept]
        copy_columns = getattr(self.conn, "copy_int64_columns", None)
        if copy_columns is not None:  # PostgreSQL: one binary COPY packed by NumPy
            if ids.size:
                copy_columns("milvus_df", ("term_id", "df"), (ids, changes), "ON CONFLICT (term_id) DO UPDATE SET"
                             " df = milvus_df.df + excluded.df" if self.df_rows_in_table else None)
        else:
            self.conn.executemany("INSERT INTO milvus_df VALUES (?, ?) ON CONFLICT(term_id) DO UPDATE SET"
                                  " df = milvus_df.df + excluded.df",
                                  list(zip(ids.tolist(), changes.tolist(), strict=True)))
        df.clear()
        self.df_rows_in_table = True
        return ids, changes

    def doc_stats(self, rows: list[tuple[str, str]]) -> None:
        """New ``milvus_doc_stats`` rows (their documents' old rows are deleted already)."""
        if not rows:
            return
        if self.copy_rows is not None:
            self.copy_rows("milvus_doc_stats", ("doc_id", "stats"), rows)
        else:
            self.conn.executemany("INSERT INTO milvus_doc_stats VALUES (?, ?)", rows)


class MilvusSync:
    """The sync of :class:`sleuth.store.milvus.MilvusIndex` (a part of it)."""

    client: Any
    catalog: Catalog
    lex: str
    dense: str
    #: This index's identity (catalog meta ``milvus:index_id``), stamped on its collections.
    index_id: str
    _lock: threading.RLock
    _spill: _Spill
    #: ``milvus_df`` as the statistics pass of the sync under way counted it from scratch, held
    #: in one piece (``(ids sorted, dfs)``); None: read the catalog.
    _df_counted: tuple[np.ndarray, np.ndarray] | None = None
    #: Blocks per part of a sync.
    part_blocks: int = MILVUS_SYNC_PART_BLOCKS
    #: Called with ``("stats" | "lex", blocks)`` for every part a sync reads (tests, benchmarks).
    on_part: Callable[[str, list[SyncBlock]], None] | None = None
    #: Documents whose rows this client's syncs left out of Milvus (a field longer than Milvus
    #: takes: :func:`sleuth.store.milvus_columns.too_long`), each logged once.
    skipped: set[str]
    #: The documents the sync under way left out (``{doc_id: why}``, at most
    #: ``LEFT_OUT_LISTED_MAX``), and whether it left out others; recorded at its end
    #: (:meth:`_record_left_out`). None: no sync under way.
    _left_out: dict[str, str] | None = None
    _left_out_more: bool = False

    def state(self) -> dict[str, Any]:
        raise NotImplementedError

    def stats(self) -> dict[str, Any]:
        raise NotImplementedError

    def document_frequencies(self, term_ids: Iterable[int]) -> dict[int, int]:
        raise NotImplementedError

    def _create_lex(self, name: str) -> None:
        raise NotImplementedError

    def _create_dense(self, name: str, dim: int) -> None:
        raise NotImplementedError

    def _foreign(self, collection: str, vector_fields: frozenset[str]) -> bool:
        raise NotImplementedError

    def _drop_own(self, collection: str, vector_fields: frozenset[str]) -> None:
        raise NotImplementedError

    def rows(self, collection: str) -> int:
        """Rows ``collection`` holds now (an exact count; it exists)."""
        raise NotImplementedError

    def _set_state(self, state: dict[str, Any]) -> None:
        self.catalog.set_meta("milvus:state", json.dumps(state))

    # -------------------------------------------------------------- marks

    def _known(self, collection: str | None, *marks: object) -> bool:
        """Whether ``collection`` (None: none) exists and carries one of ``marks`` (None and
        non-strings never match)."""
        if collection is None or not self.client.has_collection(collection):
            return False
        found = (self.client.describe_collection(collection).get("properties") or {}).get(MILVUS_MARK_PROPERTY)
        return isinstance(found, str) and found in {m for m in marks if isinstance(m, str) and m}

    def _whole(self, collection: str | None, rows: object) -> bool:
        """Whether ``collection`` (known by its mark) holds the ``rows`` the last sync left in it
        (None: not recorded, by an older sleuth: not checked). A mark survives rows deleted or
        added by another client; the count does not, and the collection is rebuilt."""
        return not isinstance(rows, int) or (collection is not None and self.rows(collection) == rows)

    def _set_mark(self, collection: str, mark: str) -> None:
        self.client.alter_collection_properties(collection, properties={MILVUS_MARK_PROPERTY: mark,
                                                                        MILVUS_INDEX_PROPERTY: self.index_id})

    def _check_index(self, alias: str, names: Iterable[str]) -> None:
        """Refuse collections of ``names`` that another sleuth index made (their
        ``MILVUS_INDEX_PROPERTY`` is not this catalog's ``index_id``; a collection without it, made
        before the property, is this index's to sync).

        Raises:
            ConfigError: naming the collections, and what to do.
        """
        for name in names:
            found = (self.client.describe_collection(name).get("properties") or {}).get(MILVUS_INDEX_PROPERTY)
            if isinstance(found, str) and found and found != self.index_id:
                raise ConfigError(
                    f"the Milvus collection {name!r} belongs to another sleuth index (another catalog) using"
                    f" the same milvus_collection: it is left alone. Set milvus_collection (or"
                    f" SLEUTH_MILVUS_COLLECTION) to another name; if that index is gone for good, drop its"
                    f" collections first (pymilvus: drop_alias({alias!r}), then drop_collection of"
                    f" {alias + _SIDES[0]!r} and {alias + _SIDES[1]!r})")

    # -------------------------------------------------------------- aliases

    def _live(self, alias: str) -> str | None:
        """The collection searches of ``alias`` reach: ``<alias>_a`` or ``<alias>_b`` when the alias
        names it; ``alias`` itself when a collection has that name (made by a sleuth before the
        aliases, or another application's); None when neither.

        Raises:
            ConfigError: ``alias`` is an alias naming another collection than ``<alias>_a`` and
                ``<alias>_b`` (searches would read it and the rebuild could not take the name),
                or ``<alias>_a`` or ``<alias>_b`` is an alias (a rebuild could not make it): names
                another application holds, left alone, checked before any row is written.
        """
        names = set(self.client.list_collections())
        aliases = set(self.client.list_aliases().get("aliases") or [])  # every alias of the database
        for name in (alias + side for side in _SIDES):
            if name in aliases:
                raise ConfigError(f"the Milvus alias {name!r} exists and was not made by sleuth (sleuth makes a"
                                  " collection of that name): it is left alone; set milvus_collection to another name")
        self._check_index(alias, sorted(n for n in names if n in {alias, *(alias + side for side in _SIDES)}))
        for name in (alias + side for side in _SIDES):
            if name in names and alias in (self.client.list_aliases(name).get("aliases") or []):
                return name
        if alias in aliases:
            raise ConfigError(f"the Milvus alias {alias!r} names a collection sleuth did not make (neither"
                              f" {alias + _SIDES[0]!r} nor {alias + _SIDES[1]!r}): it is left alone and not searched;"
                              " set milvus_collection to another name")
        return alias if alias in names else None

    def _spare(self, alias: str, live: str | None, fields: frozenset[str]) -> str:
        """The collection a rebuild of ``alias`` fills while searches read ``live``: the side of
        ``alias`` that is not live.

        Raises:
            ConfigError: a collection named ``alias`` exists and is not sleuth's (it would be
                dropped when the alias takes its name), checked before any row is written.
        """
        if live == alias and self._foreign(alias, fields):
            self._drop_own(alias, fields)  # raises: refused before the rebuild, not after it
        return alias + (_SIDES[1] if live == alias + _SIDES[0] else _SIDES[0])

    def _publish(self, alias: str, target: str, fields: frozenset[str]) -> None:
        """Point ``alias`` at ``target`` (filled, flushed and marked), then drop the collection it
        named before. A search reads the old collection or the new one, whole, never one being
        filled. Run again after a kill, it does what is left."""
        live = self._live(alias)
        if live != target:
            if live == alias:  # a collection holds the alias's name (sleuth before aliases): gone first
                self._drop_own(alias, fields)
                live = None
            if live is None:
                self.client.create_alias(target, alias)
            else:
                self.client.alter_alias(target, alias)
        kill_point(f"milvus:{alias.rsplit('_', 1)[-1]}-aliased")
        other = alias + (_SIDES[1] if target.endswith(_SIDES[0]) else _SIDES[0])
        if other in self.client.list_collections():
            self._drop_own(other, fields)

    # -------------------------------------------------------------- reading in parts

    def _parts(self, phase: str, since: int, after: tuple[str, int] | None = None) -> Iterator[SyncPart]:
        """The blocks of documents written after ``since`` (after the block ``after``), analysed
        and counted, ``part_blocks`` at a time in the catalog's order (document id, ordinal):
        the catalog's pages (:meth:`sleuth.store.reads.DocumentReads.sync_block_pages`, only the
        columns the sync needs; one query on PostgreSQL), one part each."""
        from sleuth.lanes.postings import analyze_heading

        doc_id = ""
        title: list[str] = []
        path: list[str] = []
        tags: list[str] = []
        counts = sleuth_progress.current() if phase == "stats" else None  # the rows pass counts what it sends
        if counts is not None:  # an indexing run's: a line or a bar for this pass (a whole one: of every block)
            whole = since == 0 and after is None
            counts.start("milvus terms", total=self.catalog.counts()["blocks"] if whole else None)
        with contextlib.closing(self.catalog.sync_block_pages(since, after, max(1, int(self.part_blocks)))) as pages:
            for page in pages:
                blocks: list[SyncBlock] = []
                fields: list[dict[str, list[str]]] = []
                for (block_id, block_doc, ordinal, heading, text, project_id, doc_title, doc_tags, rel_path, label,
                     role, family, recorded_ns) in page:
                    if self._too_long(block_id, project_id, block_doc, label, role, family):
                        continue
                    if block_doc != doc_id:
                        doc_id, title = block_doc, analyze(doc_title)
                        path = analyze(rel_path.replace("/", " / "))
                        tags = analyze(" ; ".join(json.loads(doc_tags)))
                    fields.append(sparse.block_fields(block_terms(str(text), title), title,
                                                      analyze_heading(json.loads(heading)), tags, path))
                    blocks.append(SyncBlock(block_id, block_doc, project_id, int(ordinal), label, role, family,
                                            int(recorded_ns)))
                del page
                if not blocks:
                    continue
                part = SyncPart(blocks, sparse.count_part(fields))
                del fields, blocks
                if self.on_part is not None:
                    self.on_part(phase, part.blocks)
                yield part
                if counts is not None:
                    counts.advance("milvus terms", len(part.blocks))
                del part

    def _too_long(self, block_id: str, project_id: str, doc_id: str, label: str, role: str, family: str) -> bool:
        """Whether the block's row cannot go to Milvus (a field longer than it takes: only a
        damaged or hostile catalog has one); the block is then left out of the collections and
        the statistics, and its document logged once by this client (stderr), so the others are synced."""
        why = milvus_columns.too_long(str(block_id), str(project_id), str(doc_id), str(label), str(role),
                                      str(family))
        if why is None:
            return False
        self._note_left_out(str(doc_id), why)
        if doc_id not in self.skipped:
            self.skipped.add(doc_id)
            log.warning("document %r left out of Milvus (%s; a damaged or hostile catalog row): the other"
                        " documents are synced", str(doc_id)[:80], why)
        return True

    def _note_left_out(self, doc_id: str, why: str) -> None:
        """Count ``doc_id`` among the documents the sync under way leaves out (:meth:`_too_long`)."""
        from sleuth.store.milvus_state import LEFT_OUT_ID_CHARS_MAX, LEFT_OUT_LISTED_MAX

        if self._left_out is None or doc_id in self._left_out:
            return
        if len(self._left_out) < LEFT_OUT_LISTED_MAX and len(doc_id) <= LEFT_OUT_ID_CHARS_MAX:
            self._left_out[doc_id] = why
        else:
            self._left_out_more = True

    def _record_left_out(self, from_scratch: bool) -> None:
        """Record in the catalog's meta ``LEFT_OUT_KEY`` (:data:`sleuth.store.milvus_state.LEFT_OUT`)
        the documents the sync that ended left out, with those recorded before that the catalog
        still holds with a row Milvus cannot take (a document repaired or deleted since is no
        longer listed); after a sync ``from_scratch`` (every block read), only its own. Written
        only when it changes. A sync killed before its end records nothing: the documents it left
        out are listed by the next sync that reads them."""
        from sleuth.store.milvus_state import LEFT_OUT, LEFT_OUT_KEY, LEFT_OUT_LISTED_MAX, parse

        found, more = dict(self._left_out or {}), self._left_out_more
        raw = self.catalog.get_meta(LEFT_OUT_KEY)
        parsed = parse(raw, LEFT_OUT, LEFT_OUT_KEY)
        before = parsed or {"docs": [], "more": False}
        if not from_scratch:
            more = more or bool(before["more"])
            earlier = {str(d): str(why) for d, why in before["docs"] if d not in found}
            for doc_id, why in self._still_too_long(sorted(earlier)).items():
                if len(found) < LEFT_OUT_LISTED_MAX:
                    found[doc_id] = why
                else:
                    more = True
        docs = [[d, found[d]] for d in sorted(found)]
        if (raw is None and not docs and not more) or (parsed is not None and parsed["docs"] == docs
                                                       and parsed["more"] == more):
            return
        self.catalog.set_meta(LEFT_OUT_KEY, json.dumps({"docs": docs, "more": more}))

    def _still_too_long(self, doc_ids: Sequence[str]) -> dict[str, str]:
        """``{doc_id: why}`` of the documents of ``doc_ids`` the catalog holds with a row Milvus
        cannot take (their document's fields, or one of their blocks' ids:
        :func:`sleuth.store.milvus_columns.too_long`): the first such block's reason."""
        out: dict[str, str] = {}
        for doc_id, _, why in self._block_rows(doc_ids):
            if why is not None:
                out.setdefault(doc_id, why)
        return out

    def _block_rows(self, doc_ids: Sequence[str]) -> Iterator[tuple[str, str, str | None]]:
        """``(doc_id, block_id, why)`` for every block the catalog holds of the documents of
        ``doc_ids``, in block order: ``why`` is the reason its row cannot go to Milvus
        (:func:`sleuth.store.milvus_columns.too_long`), None when it can. One part of
        ``_IDS_PER_STATEMENT`` documents read at a time."""
        for part in chunks(list(doc_ids), _IDS_PER_STATEMENT):
            docs = self.catalog.documents(list(part))
            for doc_id, block_ids in self.catalog.block_ids_of(list(part)).items():
                doc = docs.get(doc_id)
                if doc is None:
                    continue
                for block_id in block_ids:
                    yield doc_id, block_id, milvus_columns.too_long(block_id, str(doc.project_id), doc_id,
                                                                    str(doc.label), str(doc.role), str(doc.family))

    # -------------------------------------------------------------- sync

    def behind(self, model: str | None = None) -> bool:
        """Whether Milvus lags the catalog (its generation, or the vectors of ``model``)."""
        state = self.state()
        if state.get("generation") != self.catalog.generation():
            return True
        if self.stats().get("generation") != state.get("generation"):
            return True  # the statistics unreadable (planted, damaged): counted again
        lex = self._live(self.lex)
        if not self._known(lex, state.get("lex_mark"), _progress_mark(state)):
            return True  # emptied or replaced: rebuilt
        if "lex_sync" not in state and not self._whole(lex, state.get("lex_rows")):
            return True  # rows deleted or added by another client: rebuilt
        if model is None:
            return False
        dense = self._live(self.dense)
        return (state.get("dense_generation") != state.get("generation")
                or state.get("dense_vectors") != self.catalog.get_meta(f"vectors:{model}")
                or not self._known(dense, state.get("dense_mark"), state.get("dense_sync_mark"))
                or not self._whole(dense, state.get("dense_rows")))

    def sync(self, model: str | None = None, dim: int = 0) -> bool:
        """Bring statistics and collections up to the catalog (the caller holds the write lock);
        True when anything changed. ``model``/``dim``: the embedding model whose vectors go to the
        dense collection (None: no dense collection). The documents it leaves out are recorded
        (:meth:`_record_left_out`)."""
        with self._lock:
            stats = self.stats()
            from_scratch = not stats or int(stats.get("generation", 0)) > self.catalog.generation()
            self._left_out, self._left_out_more = {}, False
            try:
                changed = self._sync_passes(model, dim)
                self._record_left_out(from_scratch)
            finally:
                self._left_out, self._left_out_more = None, False
            return changed

    def _sync_passes(self, model: str | None, dim: int) -> bool:
        """:meth:`sync`'s passes: statistics, rows, vectors."""
        with self._lock:
            self._spill, self._df_counted = _Spill(), None
            try:
                gen = self.catalog.generation()
                changed = self._sync_stats(gen)
                changed |= self._sync_lex(gen)
            finally:
                self._spill.close()
                self._df_counted = None
            if model is not None and dim > 0:
                changed |= self._sync_dense(gen, model, dim)
            return changed

    def _sync_stats(self, gen: int) -> bool:
        stats = self.stats()
        since = int(stats.get("generation", 0))
        if since == gen and stats:
            return False
        fresh = since > gen or not stats  # a new catalog (or none yet): count everything again
        n = 0 if fresh else int(stats.get("n", 0))
        lengths: Counter[str] = Counter() if fresh else Counter(stats.get("lengths", {}))
        df = _DfSum()
        with self.catalog.write() as conn:
            if not fresh:
                taken = self._take_out(conn, since, n, lengths, df)
                fresh = taken is None  # a document's statistics row cannot be read: count everything again
                n = taken or 0
            out = _StatsWriter(conn, fresh)
            if fresh:
                since, n = 0, 0
                lengths.clear()
                df.clear()
                conn.execute("DELETE FROM milvus_df")
                conn.execute("DELETE FROM milvus_doc_stats")
            doc: _DocTerms | None = None  # the last document counted: its blocks may go on in the next part
            fields: tuple[str, ...] = sparse.FIELDS
            self._spill.start(since)
            for part in self._parts("stats", since):
                self._spill.write(part)
                docs, ids, counts = self._part_docs(part)
                fields = part.terms.fields
                n += len(part.blocks)
                lengths.update(dict(zip(fields, part.terms.field_lengths(np.zeros(part.terms.n, dtype=np.int64),
                                                                         1)[0].tolist(), strict=True)))
                df.add(ids, counts)
                if doc is not None and doc.doc_id == docs[0].doc_id:
                    doc.merge(docs[0])
                    docs[0] = doc
                elif doc is not None:
                    docs.insert(0, doc)
                doc = docs.pop()
                out.doc_stats([d.record(fields) for d in docs])
                if df.full():
                    out.df(df)
            if doc is not None:
                out.doc_stats([doc.record(fields)])
            self._spill.complete = True
            whole = fresh and not out.df_rows_in_table  # every sum is here, none in the table yet
            counted = out.df(df)
            conn.execute("DELETE FROM milvus_df WHERE df <= 0")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('milvus:stats', ?)",
                         (json.dumps({"generation": gen, "n": n, "lengths": {k: v for k, v in lengths.items()}}),))
        if whole:  # the table now holds exactly these (the transaction committed)
            self._df_counted = counted
        kill_point("milvus:stats-committed")
        return True

    @staticmethod
    def _part_docs(part: SyncPart) -> tuple[list[_DocTerms], np.ndarray, np.ndarray]:
        """The statistics of each document of ``part`` (its blocks there), in order: blocks,
        fields' token counts, and the term ids of its blocks with how many hold each; and those
        ids and counts of every document, one after the other (the part's document frequencies)."""
        doc_ids = [b.doc_id for b in part.blocks]
        firsts = [0, *(i for i in range(1, len(doc_ids)) if doc_ids[i] != doc_ids[i - 1])]
        group = np.zeros(len(doc_ids), dtype=np.int64)
        group[firsts[1:]] = 1
        group = np.cumsum(group)
        terms = part.terms
        lengths = terms.field_lengths(group, len(firsts))
        rows, ids = terms.block_term_ids()
        if len(firsts) == len(doc_ids):  # one block per document: each id counts once
            of_doc, counts = rows, np.ones(ids.size, dtype=np.int64)
        else:
            keys, counts = sparse.unique_counts((group[rows] << 32) | ids)
            of_doc, ids = keys >> 32, keys & 0xFFFFFFFF
        ends = np.searchsorted(of_doc, np.arange(1, len(firsts) + 1)).tolist()
        ends_blocks = [*firsts[1:], len(doc_ids)]
        out, a = [], 0
        for g, (first, b) in enumerate(zip(firsts, ends, strict=True)):
            out.append(_DocTerms(doc_ids[first], ends_blocks[g] - first, lengths[g], ids[a:b], counts[a:b]))
            a = b
        return out, ids, counts

    def _take_out(self, conn: Any, since: int, n: int, lengths: Counter[str], df: _DfSum) -> int | None:
        """Subtract what the documents changed since ``since`` added last time (their
        ``milvus_doc_stats`` rows, deleted) from the totals; returns the block count left, or None
        when a row cannot be read (:data:`sleuth.store.milvus_state.DOC_STATS`: the totals are then
        unknown, and the caller counts everything again). Rows of either format are read."""
        from sleuth.store.milvus_state import DOC_STATS, doc_stats_terms, parse

        written, deleted = self.catalog.changes_since(since)
        for part in chunks(sorted({*written, *deleted}), _IDS_PER_STATEMENT):
            marks = ",".join("?" * len(part))
            for _, raw in conn.execute(f"SELECT doc_id, stats FROM milvus_doc_stats WHERE doc_id IN ({marks})",
                                       list(part)).fetchall():
                old = parse(raw if isinstance(raw, str) else None, DOC_STATS, "a milvus_doc_stats row")
                terms = None if old is None else doc_stats_terms(old)
                if old is None or terms is None:
                    return None
                n -= old["n"]
                lengths.subtract(old["len"])
                df.add(terms[0], -terms[1])
            conn.execute(f"DELETE FROM milvus_doc_stats WHERE doc_id IN ({marks})", list(part))
        return n

    def _weights(self) -> tuple[int, dict[str, float]]:
        stats = self.stats()
        n = int(stats.get("n", 0))
        lengths = stats.get("lengths", {})
        return n, {f: (lengths.get(f, 0) / n if n else 0.0) for f in sparse.FIELDS}

    def _sync_lex(self, gen: int) -> bool:
        state = self.state()
        n, avgdl = self._weights()
        progress = state.get("lex_sync")
        live = self._live(self.lex)
        exists = self._known(live, state.get("lex_mark"), _progress_mark(state))
        if exists and progress is None and state.get("generation") is not None:
            exists = self._whole(live, state.get("lex_rows"))  # another client's deletes: rebuilt
        if progress is not None and self._resumable(progress, gen, n, avgdl, live if exists else None):
            since, changed = int(progress["since"]), int(progress["changed"])  # stopped between parts: finished
        else:
            since = state.get("generation")
            if since == gen and exists and progress is None:
                return False
            old_avgdl = state.get("avgdl", {})
            written, deleted = (self.catalog.changes_since(since) if since is not None and since <= gen
                                else ([], []))
            # Documents written or deleted since the rows were weighted, counting these: once more
            # than AVGDL_DRIFT_MAX of the collection, every row is weighted again (tfidf's idf).
            changed = int(state.get("changed", 0)) + len({*written, *deleted})
            # A sync stopped between parts that cannot be finished as it was (the catalog moved on)
            # and was re-weighting from scratch: start that again (a sync of changes needs no
            # more: the half-sent documents are among the changes since `since`).
            rebuild = (since is None or since > gen or not exists
                       or bool(progress and (progress.get("rebuild") or progress.get("target") == gen))
                       or sparse.drifted(float(state.get("n", 0)), float(n))
                       or changed > sparse.AVGDL_DRIFT_MAX * n
                       or any(sparse.drifted(float(old_avgdl.get(f, 0.0)), avgdl[f]) for f in sparse.FIELDS))
            mark = secrets.token_hex(8)  # the collection's mark once this sync is done
            if rebuild:  # into the spare collection; searches read the live one until it is whole
                target = self._spare(self.lex, live, LEX_FIELDS)
                self._create_lex(target)
                self._set_mark(target, mark)
                since, changed = 0, 0
            else:
                assert since is not None and live is not None  # the rows were weighted at a generation
                target = live
            progress = {"target": gen, "since": since, "rebuild": rebuild, "n": n, "avgdl": avgdl,
                        "changed": changed, "done": None, "sent": 0, "mark": mark, "collection": target}
            state["lex_sync"] = progress
            self._set_state(state)
        target = str(progress["collection"])
        self._insert_lex(state, since, n, avgdl, target)
        if not progress["rebuild"]:  # the new rows are in: the documents' other rows go
            written, deleted = self.catalog.changes_since(since)
            # the catalog's rows of the documents written (one deleted and written again since
            # has a tombstone too: it keeps its rows); the deleted ones have none. A part of
            # documents at a time: the block ids held are those of one part.
            for part in chunks(sorted({*written, *deleted}), _IDS_PER_STATEMENT):
                self._trim(target, self._rows_of(part), part)
        self.client.flush(target)
        self._set_mark(target, str(progress["mark"]))
        kill_point("milvus:lex-flushed")
        if progress["rebuild"]:
            self._publish(self.lex, target, LEX_FIELDS)
        state.pop("lex_sync", None)
        state.update(generation=gen, n=n, avgdl=avgdl, changed=changed, lex_mark=progress["mark"],
                     lex_rows=self.rows(target))
        self._set_state(state)
        return True

    def _resumable(self, progress: dict[str, Any], gen: int, n: int, avgdl: dict[str, float],
                   live: str | None) -> bool:
        """Whether the rows sync of ``progress`` (stopped between parts) can be finished as it was:
        the catalog and its statistics are where it started, and its collection is the live one
        (known by its mark: ``live``, None when not) for a sync of changes, or, for a rebuild, a
        side of the alias carrying the sync's mark (the spare one; the live one when the alias was
        pointed at it before the kill)."""
        if progress.get("target") != gen or progress.get("n") != n or progress.get("avgdl") != avgdl:
            return False
        target = progress.get("collection")
        if not progress.get("rebuild"):
            return live is not None and target == live
        return target in {self.lex + side for side in _SIDES} and self._known(target, progress.get("mark"))

    def _rows_of(self, doc_ids: Sequence[str]) -> dict[str, list[str]]:
        """``{doc_id: [block_id, ...]}``: the blocks of ``doc_ids`` the catalog holds now whose rows
        Milvus takes (:func:`sleuth.store.milvus_columns.too_long`, the rule the rows pass
        follows), documents without one left out: the rows a sync of changes keeps. Read from
        the catalog, not from the documents this client left out before (a document repaired
        since is kept), and block by block (a document with one over-long block id keeps the
        others, as a rebuild writes them)."""
        out: dict[str, list[str]] = {}
        for doc_id, block_id, why in self._block_rows(doc_ids):
            if why is None:
                out.setdefault(doc_id, []).append(block_id)
        return out

    def _delete(self, collection: str, doc_ids: Sequence[str]) -> None:
        for part in chunks(list(doc_ids), MILVUS_DELETE_IDS_PER_EXPRESSION):
            self.client.delete(collection, filter=in_list("doc_id", part))

    def _trim(self, collection: str, keep: dict[str, list[str]], doc_ids: Sequence[str]) -> None:
        """Delete from ``collection`` every row of the documents ``doc_ids`` whose block id is not
        in ``keep[doc_id]`` (every row of a document ``keep`` lacks). Run after the documents' new
        rows are upserted, so a search never finds a synced document missing."""
        self._delete(collection, [d for d in doc_ids if not keep.get(d)])
        groups: list[tuple[list[str], list[str]]] = [([], [])]  # (documents, the block ids they keep)
        for doc_id in sorted(d for d in set(doc_ids) if keep.get(d)):
            if groups[-1][0] and len(groups[-1][1]) + len(keep[doc_id]) > MILVUS_DELETE_IDS_PER_EXPRESSION:
                groups.append(([], []))
            groups[-1][0].append(doc_id)
            groups[-1][1].extend(keep[doc_id])
        for docs, ids in groups:
            if docs:
                self.client.delete(collection, filter=f"{in_list('doc_id', docs)} and {in_list('block_id', ids, True)}")

    def _insert_lex(self, state: dict[str, Any], since: int, n: int, avgdl: dict[str, float], target: str) -> int:
        """Insert the rows of the blocks of documents written after ``since`` into ``target``
        (upserted by a sync of changes, whose documents may have rows there), from where the
        sync's progress (``state["lex_sync"]``) says, recording it before each insert; returns how
        many rows were sent."""
        progress = state["lex_sync"]
        done: tuple[str, int] | None = None  # the last block known to be in Milvus
        if progress.get("done"):
            done = (str(progress["done"][0]), int(progress["done"][1]))
        resend = int(progress.get("sent", 0))  # blocks after `done` that may be in Milvus already
        upsert = not progress["rebuild"]
        count = 0
        counts = sleuth_progress.current()
        if counts is not None:  # a rebuild sends every block; else those the statistics pass counted
            terms = counts.phases.get("milvus terms")
            total = None
            if done is None and not upsert:
                total = self.catalog.counts()["blocks"]
            elif done is None and terms is not None and self._spill.covers(since):
                total = terms.done
            counts.start("milvus rows", total=total)
        with _Inserter(self.client, target) as inserter:
            for i, part in enumerate(self._lex_parts(since, done)):
                blocks = part.blocks
                ids, dfs = self._body_dfs(part.terms.body_term_ids())
                idf = (ids, sparse.tfidf_idfs(dfs, n))
                missing_idf = sparse.tfidf_idf(1, n)
                columns = Columns()
                for b in blocks:
                    columns.add_scalars(b.block_id, b.project_id, b.doc_id, b)  # the document's fields, read with it
                lex, tfidf = sparse.weigh_part(part.terms, avgdl, idf, missing_idf)
                columns.sparse.update(lex=SparseColumn(lex), tfidf=SparseColumn(tfidf))
                last = (blocks[-1].doc_id, blocks[-1].ordinal)
                rows = len(blocks)
                del part, blocks
                inserter.wait()  # every part before this one is in Milvus
                progress.update(done=list(done) if done else None, sent=rows)
                self._set_state(state)
                inserter.submit(columns, upsert=upsert or resend > 0)
                resend = max(0, resend - rows)
                count += rows
                done = last
                if counts is not None:
                    counts.advance("milvus rows", rows)
                kill_point(f"milvus:lex-part:{i + 1}.")
        return count

    def _body_dfs(self, body: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(ids, dfs)``: the document frequencies of the ids of ``body`` (sorted, int64) that
        some block has, ids sorted: from the statistics pass's sums when it counted everything in
        this sync (``_df_counted``), otherwise read from the catalog."""
        if self._df_counted is not None:
            known, dfs = self._df_counted
            at = np.minimum(np.searchsorted(known, body), max(known.size - 1, 0))
            found = known[at] == body if known.size else np.zeros(body.size, dtype=bool)
            return body[found], dfs[at[found]]
        df = self.document_frequencies(body.tolist())
        ids = np.fromiter(df.keys(), dtype=np.int64, count=len(df))
        dfs = np.fromiter(df.values(), dtype=np.int64, count=len(df))
        order = np.argsort(ids)
        return ids[order], dfs[order]

    def _lex_parts(self, since: int, done: tuple[str, int] | None) -> Iterator[SyncPart]:
        """The parts of the rows pass: the statistics pass's, from its spill, when it read the
        same blocks; otherwise read from the catalog again (after the block ``done``)."""
        if done is not None or not self._spill.covers(since):
            yield from self._parts("lex", since, done)
            return
        for part in self._spill.parts():
            if self.on_part is not None:
                self.on_part("lex", part.blocks)
            yield part
            del part

    def _sync_dense(self, gen: int, model: str, dim: int) -> bool:
        state = self.state()
        vectors = self.catalog.get_meta(f"vectors:{model}")
        since = state.get("dense_generation")
        live = self._live(self.dense)
        rebuild = (since is None or since > gen or state.get("dense_model") != [model, dim]
                   or not self._known(live, state.get("dense_mark"), state.get("dense_sync_mark"))
                   or not self._whole(live, state.get("dense_rows")))
        if not rebuild and since == gen and state.get("dense_vectors") == vectors:
            return False
        catalog = self.catalog
        mark = secrets.token_hex(8)
        deleted: list[str] = []
        if rebuild:  # into the spare collection; searches read the live one until it is whole
            target = self._spare(self.dense, live, DENSE_FIELDS)
            self._create_dense(target, dim)
            self._set_mark(target, mark)  # the catalog records it at the end: killed before, rebuilt again
            docs_to_write = [d.doc_id for p in catalog.roots() for d in catalog.documents_for_projects([p])]
        else:
            assert since is not None and live is not None  # no rebuild: the vectors were written at a generation
            target = live
            written, deleted = catalog.changes_since(since)
            pending = [d for d in state.get("pending", []) if d not in set(deleted)]
            docs_to_write = sorted({*written, *pending})
        still_pending: set[str] = set()
        sent: dict[str, list[str]] = {}  # a sync of changes: the rows each document of the part has now
        from sleuth.store.vector_codes import decode

        schema = self.client.describe_collection(target)
        if not rebuild:  # deleted documents have no rows now (one written again is among docs_to_write)
            self._delete(target, sorted(set(deleted) - set(docs_to_write)))
        counts = sleuth_progress.current()
        if counts is not None:
            counts.start("milvus vectors", total=len(docs_to_write))
        for part in chunks(docs_to_write, 500):
            docs = catalog.documents(list(part))
            found = catalog.doc_block_vectors(model, list(part), dim)
            for batch in chunks(found, MILVUS_INSERT_BATCH_ROWS):
                # none yet, or one that cannot be read: left out (as the vector lane does), pending
                stored, readable = catalog.readable_rows([row[4] for row in batch], dim)
                columns = Columns(dense_field="dense")
                kept = []  # of the readable rows (those of ``stored``): which go to Milvus
                for (block_id, doc_id, project_id, _, _), ok in zip(batch, readable.tolist(), strict=True):
                    doc = docs[doc_id]
                    if not ok:
                        still_pending.add(doc_id)
                        continue
                    fits = not self._too_long(block_id, project_id, doc_id, doc.label, doc.role, doc.family)
                    kept.append(fits)
                    if fits:
                        columns.add_scalars(block_id, project_id, doc_id, doc)
                        if not rebuild:
                            sent.setdefault(doc_id, []).append(block_id)
                columns.dense = decode(stored if all(kept) else stored[np.asarray(kept, dtype=bool)])
                milvus_columns.send(self.client, target, columns, upsert=not rebuild, schema=schema)
            if not rebuild:  # the part's new rows are in: its documents' other rows go
                self._trim(target, sent, list(part))
                sent.clear()
            if counts is not None:
                counts.advance("milvus vectors", len(part))
        self.client.flush(target)
        state = self.state()
        if not rebuild:  # the new mark recorded before the collection carries it
            state["dense_sync_mark"] = mark
            self._set_state(state)
        self._set_mark(target, mark)
        state.pop("dense_sync_mark", None)
        state.update(dense_generation=gen, dense_vectors=vectors, dense_model=[model, dim],
                     pending=sorted(still_pending), dense_mark=mark, dense_rows=self.rows(target))
        self._set_state(state)
        if rebuild:  # recorded first: a kill after the alias moved leaves nothing to rebuild
            self._publish(self.dense, target, DENSE_FIELDS)
        return True


def _progress_mark(state: dict[str, Any]) -> object:
    """The mark of the rows sync under way (``lex_sync``), if any."""
    progress = state.get("lex_sync")
    return progress.get("mark") if isinstance(progress, dict) else None
