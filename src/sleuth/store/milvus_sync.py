"""The Milvus sync: the catalog's blocks into the lanes' collections, in parts of bounded size.

A sync (under the index's write lock) runs in two passes over the blocks of the documents written
since the last one, each reading, analysing and sending them ``part_blocks`` at a time
(``MILVUS_SYNC_PART_BLOCKS`` by default), so its memory does not grow with the corpus:

1. **Statistics** (:meth:`MilvusSync._sync_stats`): each document's contribution (block count,
   fields' lengths, the term ids of its blocks) goes to ``milvus_doc_stats`` part by part, and the
   collection's totals to ``milvus_df`` and meta ``milvus:stats``, all in one catalog transaction
   (a kill leaves the statistics as they were). The document frequencies are summed in memory up
   to ``MILVUS_SYNC_DF_TERMS_MAX`` distinct term ids, then added to the table, inside the same
   transaction.
2. **Rows** (:meth:`MilvusSync._sync_lex`): the same blocks weighed with the new statistics and
   inserted, one part per insert call, one insert in flight while the next part is weighed. Before
   each insert the catalog's meta ``milvus:state`` records the sync's progress (``lex_sync``: the
   generation it brings Milvus to, the weights, the last block known to be in Milvus and how many
   blocks after it may be): a sync killed between parts is finished by the next one, which starts
   after that block and upserts the blocks that may have arrived, so no block is sent twice and
   none is lost. If the catalog has moved on meanwhile, the next sync starts again (a re-weighting
   from scratch, or the changes since the generation Milvus fully reflects, which include the
   half-sent documents).

Each collection carries a **mark** (the collection property ``MILVUS_MARK_PROPERTY``, a random
token renewed by every sync that changes it) and the catalog's ``milvus:state`` records it
(``lex_mark``, ``dense_mark``; and the mark of a sync under way, which the collection may carry
already when the sync was stopped after its flush). A collection whose mark the catalog does not
know is rebuilt: the Milvus database was emptied or replaced (another index's collections of the
same name, an older copy of the database), since the catalog's progress says nothing about it.
A mark survives another client's deletes and inserts, so the state also records the rows each
collection held after its sync (``lex_rows``, ``dense_rows``: an exact ``count(*)``); a collection
that holds another number is rebuilt too.

The generation Milvus reflects is recorded after its flush, as before. At most two parts of
analysed blocks (:class:`SyncBlock`) are alive at once: the one being weighed and the next being
read; ``on_part`` (tests, benchmarks) sees every part as it is read.
"""

from __future__ import annotations

import contextlib
import itertools
import json
import pickle
import secrets
import tempfile
import threading
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import IO, TYPE_CHECKING, Any

from sleuth.faults import kill_point
from sleuth.lanes import sparse
from sleuth.store import milvus_columns
from sleuth.store.milvus_columns import Columns, SparseColumn
from sleuth.text import analyze

if TYPE_CHECKING:
    from sleuth.store.catalog import Catalog

#: Blocks read, analysed and sent to Milvus per part of a sync (and rows per insert call).
MILVUS_SYNC_PART_BLOCKS = 2_000
#: Distinct term ids whose document frequencies a sync sums in memory before adding them to the
#: catalog's ``milvus_df`` (about 100 bytes each).
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
#: Catalog rows (documents, statistics) per ``IN (...)`` statement.
_IDS_PER_STATEMENT = 500


@dataclass(slots=True, weakref_slot=True, eq=False)
class SyncBlock:
    """One block as a sync holds it: ids, its place in the catalog's order, and its analysed
    fields (``{field: tokens}``), without its text."""

    block_id: str
    doc_id: str
    project_id: str
    ordinal: int
    fields: dict[str, list[str]]


def literal(value: str) -> str:
    """``value`` as a Milvus expression string literal (double-quoted, ``\\`` and ``"`` escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def in_list(field: str, values: Iterable[str]) -> str:
    """``field in ["a", "b"]``, every value a :func:`literal`."""
    return f"{field} in [{', '.join(literal(v) for v in values)}]"


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

    def write(self, part: list[SyncBlock]) -> None:
        if self.file is None:
            return
        data = pickle.dumps([(b.block_id, b.doc_id, b.project_id, b.ordinal, b.fields) for b in part],
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

    def parts(self) -> Iterator[list[SyncBlock]]:
        assert self.file is not None
        self.file.seek(0)
        while header := self.file.read(8):
            data = self.file.read(int.from_bytes(header, "little"))
            yield [SyncBlock(*fields) for fields in pickle.loads(data)]  # this process's own file

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

    def df(self, df: Counter[int]) -> None:
        """Add ``df`` (``{term_id: change}``) to ``milvus_df``, then empty it."""
        rows = [(k, v) for k, v in df.items() if v]
        if self.copy_rows is not None:
            self.copy_rows("milvus_df", ("term_id", "df"), rows, "ON CONFLICT (term_id) DO UPDATE SET"
                           " df = milvus_df.df + excluded.df" if self.df_rows_in_table else None)
        else:
            self.conn.executemany("INSERT INTO milvus_df VALUES (?, ?) ON CONFLICT(term_id) DO UPDATE SET"
                                  " df = milvus_df.df + excluded.df", rows)
        df.clear()
        self.df_rows_in_table = True

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
    _lock: threading.RLock
    _spill: _Spill
    #: Blocks per part of a sync.
    part_blocks: int = MILVUS_SYNC_PART_BLOCKS
    #: Called with ``("stats" | "lex", part)`` for every part a sync reads (tests, benchmarks).
    on_part: Callable[[str, list[SyncBlock]], None] | None = None

    def state(self) -> dict[str, Any]:
        raise NotImplementedError

    def stats(self) -> dict[str, Any]:
        raise NotImplementedError

    def document_frequencies(self, term_ids: Iterable[int]) -> dict[int, int]:
        raise NotImplementedError

    def _create_lex(self) -> None:
        raise NotImplementedError

    def _create_dense(self, dim: int) -> None:
        raise NotImplementedError

    def rows(self, collection: str) -> int:
        """Rows ``collection`` holds now (an exact count; it exists)."""
        raise NotImplementedError

    def _set_state(self, state: dict[str, Any]) -> None:
        self.catalog.set_meta("milvus:state", json.dumps(state))

    # -------------------------------------------------------------- marks

    def _known(self, collection: str, *marks: object) -> bool:
        """Whether ``collection`` exists and carries one of ``marks`` (None and non-strings never match)."""
        if not self.client.has_collection(collection):
            return False
        found = (self.client.describe_collection(collection).get("properties") or {}).get(MILVUS_MARK_PROPERTY)
        return isinstance(found, str) and found in {m for m in marks if isinstance(m, str) and m}

    def _whole(self, collection: str, rows: object) -> bool:
        """Whether ``collection`` (known by its mark) holds the ``rows`` the last sync left in it
        (None: not recorded, by an older sleuth: not checked). A mark survives rows deleted or
        added by another client; the count does not, and the collection is rebuilt."""
        return not isinstance(rows, int) or self.rows(collection) == rows

    def _set_mark(self, collection: str, mark: str) -> None:
        self.client.alter_collection_properties(collection, properties={MILVUS_MARK_PROPERTY: mark})

    # -------------------------------------------------------------- reading in parts

    def _parts(self, phase: str, since: int, after: tuple[str, int] | None = None) -> Iterator[list[SyncBlock]]:
        """The blocks of documents written after ``since`` (after the block ``after``), analysed,
        ``part_blocks`` at a time in the catalog's order (document id, ordinal)."""
        from sleuth.lanes.postings import analyze_heading

        doc_fields: tuple[str, tuple[list[str], list[str], list[str]]] = ("", ([], [], []))
        size = max(1, int(self.part_blocks))
        while True:
            page = self.catalog.indexed_blocks_page(since, after, size)
            if not page:
                return
            part: list[SyncBlock] = []
            for ib in page:
                b = ib.block
                if b.doc_id != doc_fields[0]:
                    doc_fields = (b.doc_id, (analyze(ib.title), analyze(ib.rel_path.replace("/", " / ")),
                                             analyze(" ; ".join(ib.tags))))
                title, path, tags = doc_fields[1]
                fields = sparse.block_fields(ib.terms, title, analyze_heading(b.heading_path), tags, path)
                part.append(SyncBlock(b.block_id, b.doc_id, b.project_id, b.ordinal, fields))
            after = (page[-1].block.doc_id, page[-1].block.ordinal)
            full = len(page) == size
            del page
            if self.on_part is not None:
                self.on_part(phase, part)
            yield part
            del part
            if not full:
                return

    # -------------------------------------------------------------- sync

    def behind(self, model: str | None = None) -> bool:
        """Whether Milvus lags the catalog (its generation, or the vectors of ``model``)."""
        state = self.state()
        if state.get("generation") != self.catalog.generation():
            return True
        if not self._known(self.lex, state.get("lex_mark"), _progress_mark(state)):
            return True  # emptied or replaced: rebuilt
        if "lex_sync" not in state and not self._whole(self.lex, state.get("lex_rows")):
            return True  # rows deleted or added by another client: rebuilt
        return model is not None and (state.get("dense_generation") != state.get("generation")
                                      or state.get("dense_vectors") != self.catalog.get_meta(f"vectors:{model}")
                                      or not self._known(self.dense, state.get("dense_mark"),
                                                         state.get("dense_sync_mark"))
                                      or not self._whole(self.dense, state.get("dense_rows")))

    def sync(self, model: str | None = None, dim: int = 0) -> bool:
        """Bring statistics and collections up to the catalog (the caller holds the write lock);
        True when anything changed. ``model``/``dim``: the embedding model whose vectors go to the
        dense collection (None: no dense collection)."""
        with self._lock:
            self._spill = _Spill()
            try:
                gen = self.catalog.generation()
                changed = self._sync_stats(gen)
                changed |= self._sync_lex(gen)
            finally:
                self._spill.close()
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
        df: Counter[int] = Counter()
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
            # (doc_id, blocks, lengths, term ids' block counts) of the document being counted: a
            # document's blocks may span two parts.
            doc: tuple[str, int, Counter[str], Counter[int]] | None = None

            def finish(doc: tuple[str, int, Counter[str], Counter[int]]) -> tuple[str, str]:
                nonlocal n
                doc_id, bn, blen, bdf = doc
                n += bn
                lengths.update(blen)
                if bn == 1:  # every count is 1: counted as a set of ids, in C
                    df.update(bdf.keys())
                else:
                    df.update(bdf)
                return doc_id, json.dumps({"n": bn, "len": dict(blen), "df": {str(k): v for k, v in bdf.items()}})

            self._spill.start(since)
            for part in self._parts("stats", since):
                self._spill.write(part)
                finished: list[tuple[str, str]] = []
                for doc_id, blocks in itertools.groupby(part, key=lambda b: b.doc_id):
                    bn, blen, bdf = sparse.block_stats(b.fields for b in blocks)
                    if doc is not None and doc[0] == doc_id:
                        doc[2].update(blen)
                        doc[3].update(bdf)
                        doc = (doc_id, doc[1] + bn, doc[2], doc[3])
                        continue
                    if doc is not None:
                        finished.append(finish(doc))
                    doc = (doc_id, bn, Counter(blen), bdf)
                out.doc_stats(finished)
                if len(df) > MILVUS_SYNC_DF_TERMS_MAX:
                    out.df(df)
            if doc is not None:
                out.doc_stats([finish(doc)])
            self._spill.complete = True
            out.df(df)
            conn.execute("DELETE FROM milvus_df WHERE df <= 0")
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('milvus:stats', ?)",
                         (json.dumps({"generation": gen, "n": n, "lengths": dict(lengths)}),))
        kill_point("milvus:stats-committed")
        return True

    def _take_out(self, conn: Any, since: int, n: int, lengths: Counter[str], df: Counter[int]) -> int | None:
        """Subtract what the documents changed since ``since`` added last time (their
        ``milvus_doc_stats`` rows, deleted) from the totals; returns the block count left, or None
        when a row cannot be read (:data:`sleuth.store.milvus_state.DOC_STATS`: the totals are then
        unknown, and the caller counts everything again)."""
        from sleuth.store.milvus_state import DOC_STATS, parse

        written, deleted = self.catalog.changes_since(since)
        for part in chunks(sorted({*written, *deleted}), _IDS_PER_STATEMENT):
            marks = ",".join("?" * len(part))
            for _, raw in conn.execute(f"SELECT doc_id, stats FROM milvus_doc_stats WHERE doc_id IN ({marks})",
                                       list(part)).fetchall():
                old = parse(raw if isinstance(raw, str) else None, DOC_STATS, "a milvus_doc_stats row")
                if old is None:
                    return None
                n -= old["n"]
                lengths.subtract(old["len"])
                df.subtract({int(k): v for k, v in old["df"].items()})
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
        exists = self._known(self.lex, state.get("lex_mark"), _progress_mark(state))
        if exists and progress is None and state.get("generation") is not None:
            exists = self._whole(self.lex, state.get("lex_rows"))  # another client's deletes: rebuilt
        if (progress is not None and exists and progress.get("target") == gen and progress.get("n") == n
                and progress.get("avgdl") == avgdl):  # a sync stopped between parts: finish it
            since, changed = int(progress["since"]), int(progress["changed"])
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
            if rebuild:
                self._create_lex()
                self._set_mark(self.lex, mark)
                since, changed = 0, 0
            else:
                assert since is not None  # no rebuild: the rows were weighted at a generation
                self._delete(self.lex, sorted({*written, *deleted}))
            progress = {"target": gen, "since": since, "rebuild": rebuild, "n": n, "avgdl": avgdl,
                        "changed": changed, "done": None, "sent": 0, "mark": mark}
            state["lex_sync"] = progress
            self._set_state(state)
        self._insert_lex(state, since, n, avgdl)
        self.client.flush(self.lex)
        self._set_mark(self.lex, str(progress["mark"]))
        kill_point("milvus:lex-flushed")
        state.pop("lex_sync", None)
        state.update(generation=gen, n=n, avgdl=avgdl, changed=changed, lex_mark=progress["mark"],
                     lex_rows=self.rows(self.lex))
        self._set_state(state)
        return True

    def _delete(self, collection: str, doc_ids: Sequence[str]) -> None:
        for part in chunks(list(doc_ids), MILVUS_DELETE_IDS_PER_EXPRESSION):
            self.client.delete(collection, filter=in_list("doc_id", part))

    def _insert_lex(self, state: dict[str, Any], since: int, n: int, avgdl: dict[str, float]) -> int:
        """Insert the rows of the blocks of documents written after ``since``, from where the
        sync's progress (``state["lex_sync"]``) says, recording it before each insert; returns how
        many rows were sent."""
        catalog = self.catalog
        progress = state["lex_sync"]
        done: tuple[str, int] | None = None  # the last block known to be in Milvus
        if progress.get("done"):
            done = (str(progress["done"][0]), int(progress["done"][1]))
        resend = int(progress.get("sent", 0))  # blocks after `done` that may be in Milvus already
        count = 0
        with _Inserter(self.client, self.lex) as inserter:
            for i, part in enumerate(self._lex_parts(since, done)):
                docs = catalog.documents(sorted({b.doc_id for b in part}))
                body: set[str] = set()
                for b in part:
                    body.update(b.fields["body"])
                df = self.document_frequencies(map(sparse.field_term_ids("body").__getitem__, body))
                idf = {tid: sparse.tfidf_idf(d, n) for tid, d in df.items()}
                missing_idf = sparse.tfidf_idf(1, n)
                columns = Columns()
                for b in part:
                    columns.add_scalars(b.block_id, b.project_id, b.doc_id, docs[b.doc_id])
                lex, tfidf = sparse.part_vectors([b.fields for b in part], avgdl, idf, missing_idf)
                columns.sparse.update(lex=SparseColumn(lex), tfidf=SparseColumn(tfidf))
                last = (part[-1].doc_id, part[-1].ordinal)
                rows = len(part)
                del part
                inserter.wait()  # every part before this one is in Milvus
                progress.update(done=list(done) if done else None, sent=rows)
                self._set_state(state)
                inserter.submit(columns, upsert=resend > 0)
                resend = max(0, resend - rows)
                count += rows
                done = last
                kill_point(f"milvus:lex-part:{i + 1}.")
        return count

    def _lex_parts(self, since: int, done: tuple[str, int] | None) -> Iterator[list[SyncBlock]]:
        """The parts of the rows pass: the statistics pass's, from its spill, when it read the
        same blocks; otherwise read from the catalog again (after the block ``done``)."""
        if done is not None or not self._spill.covers(since):
            yield from self._parts("lex", since, done)
            return
        for part in self._spill.parts():
            if self.on_part is not None:
                self.on_part("lex", part)
            yield part
            del part

    def _sync_dense(self, gen: int, model: str, dim: int) -> bool:
        state = self.state()
        vectors = self.catalog.get_meta(f"vectors:{model}")
        since = state.get("dense_generation")
        rebuild = (since is None or since > gen or state.get("dense_model") != [model, dim]
                   or not self._known(self.dense, state.get("dense_mark"), state.get("dense_sync_mark"))
                   or not self._whole(self.dense, state.get("dense_rows")))
        if not rebuild and since == gen and state.get("dense_vectors") == vectors:
            return False
        catalog = self.catalog
        mark = secrets.token_hex(8)
        if rebuild:
            self._create_dense(dim)
            self._set_mark(self.dense, mark)  # the catalog records it at the end: killed before, rebuilt again
            docs_to_write = [d.doc_id for p in catalog.roots() for d in catalog.documents_for_projects([p])]
        else:
            assert since is not None  # no rebuild: the vectors were written at a generation
            written, deleted = catalog.changes_since(since)
            pending = [d for d in state.get("pending", []) if d not in set(deleted)]
            docs_to_write = sorted({*written, *pending})
            self._delete(self.dense, sorted({*written, *deleted, *pending}))
        still_pending: set[str] = set()
        from sleuth.store.vector_codes import decode

        schema = self.client.describe_collection(self.dense)
        for part in chunks(docs_to_write, 500):
            docs = catalog.documents(list(part))
            found = catalog.doc_block_vectors(model, list(part), dim)
            for batch in chunks(found, MILVUS_INSERT_BATCH_ROWS):
                # none yet, or one that cannot be read: left out (as the vector lane does), pending
                stored, readable = catalog.readable_rows([row[4] for row in batch], dim)
                columns = Columns(dense_field="dense")
                for (block_id, doc_id, project_id, _, _), ok in zip(batch, readable.tolist(), strict=True):
                    if ok:
                        columns.add_scalars(block_id, project_id, doc_id, docs[doc_id])
                    else:
                        still_pending.add(doc_id)
                columns.dense = decode(stored)
                milvus_columns.send(self.client, self.dense, columns, schema=schema)
        self.client.flush(self.dense)
        state = self.state()
        if not rebuild:  # the new mark recorded before the collection carries it
            state["dense_sync_mark"] = mark
            self._set_state(state)
            self._set_mark(self.dense, mark)
        state.pop("dense_sync_mark", None)
        state.update(dense_generation=gen, dense_vectors=vectors, dense_model=[model, dim],
                     pending=sorted(still_pending), dense_mark=mark, dense_rows=self.rows(self.dense))
        self._set_state(state)
        return True


def _progress_mark(state: dict[str, Any]) -> object:
    """The mark of the rows sync under way (``lex_sync``), if any."""
    progress = state.get("lex_sync")
    return progress.get("mark") if isinstance(progress, dict) else None
