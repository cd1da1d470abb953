"""The lanes' blocks in Milvus (``milvus_uri``): two collections kept at the catalog's generation.

``<name>_lex`` holds one row per block with two sparse vectors, ``lex`` (BM25 parts of every field:
the ``bm25`` and ``index`` lanes) and ``tfidf``; ``<name>_dense`` one row per embedded block with
its vector. Both carry the block's filter fields (``project_id``, the partition key, ``doc_id``,
``label``, ``role``, ``family``, ``recorded_ns``), so every filter is part of the search
expression and applies before the top-k cut. Weights come from :mod:`sleuth.lanes.sparse`.

The collection statistics (block count, fields' total lengths, document frequencies by term id)
live in the catalog (tables ``milvus_df`` and ``milvus_doc_stats``, meta ``milvus:stats``), updated
in one catalog transaction per sync, idempotently (each document's last contribution is kept, so a
replay subtracts what it added). Which generation Milvus reflects, and with which mean lengths its
rows were weighted, is in the catalog's meta ``milvus:state``, written after Milvus has flushed:
a process killed during a sync leaves the state behind, and the next sync replays the changes
(deletes by document and inserts are idempotent). Syncs run under the index's write lock.
"""

from __future__ import annotations

import contextlib
import json
import sys
import threading
from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sleuth.errors import ConfigError, StorageError
from sleuth.faults import kill_point
from sleuth.lanes import sparse
from sleuth.lanes.base import DocFilter
from sleuth.text import analyze

if TYPE_CHECKING:
    from sleuth.store.catalog import Catalog

#: Rows sent to Milvus per insert call.
MILVUS_INSERT_BATCH_ROWS = 2_000
#: Ids per ``in [...]`` list of a delete expression, and of a search filter.
MILVUS_DELETE_IDS_PER_EXPRESSION = 1_000
MILVUS_IDS_PER_EXPRESSION = 1_000
#: Most ids a lane query lists in its filter (quoted phrases' blocks, or documents), over several
#: expressions of ``MILVUS_IDS_PER_EXPRESSION`` ids, one search each; above it the Milvus lane is
#: skipped with a readable reason (a phrase that common is the exact lane's to answer).
MILVUS_FILTER_IDS_MAX = 20_000
#: Milvus returns at most this many hits per search (its topk limit).
MILVUS_TOPK_MAX = 16_384
#: Placeholder key of a block without terms (Milvus refuses an empty sparse vector); no query has it.
EMPTY_SPARSE = {sparse.TERM_ID_LIMIT - 1: 1e-30}
#: Dense index types by backend: what the backend builds (milvus-lite 3.2 accepts IVF_RABITQ and
#: then fails at search; other types it accepts were not checked, so they are refused).
DENSE_INDEXES_LITE = ("FLAT", "HNSW", "IVF_FLAT")
DENSE_INDEXES_SERVER = ("FLAT", "HNSW", "HNSW_SQ", "HNSW_PQ", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "IVF_RABITQ",
                        "DISKANN", "AUTOINDEX")
CONSISTENCY_LEVELS = ("Strong", "Bounded", "Session", "Eventually")
_FILTER_FIELDS = ("project_id", "doc_id", "label", "role", "family")


@dataclass(frozen=True)
class MilvusSettings:
    """Where and how the lanes live in Milvus.

    Attributes:
        uri: a local ``.db`` path (milvus-lite in this process) or ``http://host:19530``.
        collection: the collections' name prefix (``<collection>_lex``, ``<collection>_dense``).
        dense_index: the dense index type (``FLAT``: exact, as the local lane up to 50k blocks).
        consistency: the collections' consistency level.
        partitions: partitions of the partition key (None: the backend's default).
    """

    uri: str
    collection: str = "sleuth"
    dense_index: str = "FLAT"
    consistency: str = "Strong"
    partitions: int | None = None


def check_capabilities(settings: MilvusSettings, server_version: str) -> None:
    """Refuse settings the backend would silently ignore or fail on later.

    milvus-lite (``server_version`` ``milvus_lite-*``) ignores ``consistency_level`` and
    ``num_partitions`` and accepts index types it cannot search (docs: ../shared/notes).

    Raises:
        ConfigError: naming the setting and why it is refused.
    """
    lite = server_version.startswith("milvus_lite")
    if not settings.collection.replace("_", "").isalnum() or not settings.collection.isascii():
        raise ConfigError(f"milvus_collection must be letters, digits and '_', got {settings.collection!r}")
    allowed = DENSE_INDEXES_LITE if lite else DENSE_INDEXES_SERVER
    if settings.dense_index not in allowed:
        raise ConfigError(f"milvus_dense_index {settings.dense_index!r} is not supported by {server_version}:"
                          f" one of {', '.join(allowed)}")
    if settings.consistency not in CONSISTENCY_LEVELS:
        raise ConfigError(f"milvus_consistency must be one of {', '.join(CONSISTENCY_LEVELS)}")
    if lite and settings.consistency != "Strong":
        raise ConfigError(f"milvus_consistency {settings.consistency!r}: {server_version} ignores consistency levels"
                          " (it is always Strong); leave it unset or use a Milvus server")
    if lite and settings.partitions is not None:
        raise ConfigError(f"milvus_partitions: {server_version} ignores partition counts (it always uses 16);"
                          " leave it unset or use a Milvus server")


def literal(value: str) -> str:
    """``value`` as a Milvus expression string literal (double-quoted, ``\\`` and ``"`` escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", " ") + '"'


def in_list(field: str, values: Iterable[str]) -> str:
    return f"{field} in [{', '.join(literal(v) for v in values)}]"


def expression(projects: Sequence[str] | None, doc_filter: DocFilter | None, doc_ids: Iterable[str] | None,
               block_ids: Iterable[str] | None) -> str:
    """The Milvus filter of a lane query: every restriction ANDed (``""``: none). ``doc_ids`` are
    used only when ``doc_filter`` is None (the filter says the same, without listing documents)."""
    parts: list[str] = []
    if projects is not None:
        parts.append(in_list("project_id", projects))
    if doc_filter is not None:
        for field, values in (("label", doc_filter.labels), ("role", doc_filter.roles),
                              ("family", doc_filter.families)):
            if values:
                parts.append(in_list(field, values))
        if doc_filter.recorded_after_ns is not None:
            parts.append(f"recorded_ns >= {int(doc_filter.recorded_after_ns)}")
        if doc_filter.recorded_before_ns is not None:
            parts.append(f"recorded_ns <= {int(doc_filter.recorded_before_ns)}")
    elif doc_ids is not None:
        parts.append(in_list("doc_id", sorted(doc_ids)))
    if block_ids is not None:
        parts.append(in_list("block_id", sorted(block_ids)))
    return " and ".join(parts)


def doc_of(block_id: str) -> str:
    """The document id of a block id (``<doc_id>:<12 hex>``, see :mod:`sleuth.indexer`)."""
    return block_id.rsplit(":", 1)[0]


def expressions(projects: Sequence[str] | None, doc_filter: DocFilter | None, doc_ids: Iterable[str] | None,
                block_ids: Iterable[str] | None) -> list[str]:
    """The filter of a lane query as one or more expressions (see :func:`expression`), each listing
    at most ``MILVUS_IDS_PER_EXPRESSION`` ids, whose searches' hits together are the query's (the
    caller merges the top k of each: :meth:`MilvusIndex.search_any`). Listed blocks are first
    narrowed to the listed documents, so one list remains. ``[]``: nothing can match.

    Raises:
        ValueError: more than ``MILVUS_FILTER_IDS_MAX`` ids to list (the caller skips the lane,
            saying why; the message says how many).
    """
    ids_per_expression, ids_max = MILVUS_IDS_PER_EXPRESSION, MILVUS_FILTER_IDS_MAX
    listed_docs = None if doc_filter is not None or doc_ids is None else set(doc_ids)
    if block_ids is not None and listed_docs is not None:
        block_ids = [b for b in block_ids if doc_of(b) in listed_docs]
        listed_docs = None
    if block_ids is None and listed_docs is None:
        return [expression(projects, doc_filter, None, None)]
    ids = sorted(block_ids) if block_ids is not None else sorted(listed_docs or ())
    if len(ids) > ids_max:
        raise ValueError(f"{len(ids):,} {'blocks' if block_ids is not None else 'documents'} to list,"
                         f" at most {ids_max:,}")
    return [expression(projects, doc_filter, chunk, None) if block_ids is None else
            expression(projects, doc_filter, None, chunk) for chunk in _chunks(ids, ids_per_expression)]


_STATS_DDL = (
    "CREATE TABLE IF NOT EXISTS milvus_df (term_id BIGINT PRIMARY KEY, df BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS milvus_doc_stats (doc_id TEXT PRIMARY KEY, stats TEXT NOT NULL)",
)


def _chunks(items: Sequence[Any], size: int) -> Iterator[Sequence[Any]]:
    for i in range(0, len(items), size):
        yield items[i : i + size]


class _Inserter:
    """Milvus inserts into one collection, one batch in flight on a thread of its own while the
    caller builds the next (the server works while sleuth weighs), in order. :meth:`wait` returns
    once every batch put is in Milvus (raising the first insert's error); leaving the ``with``
    block waits too, so no insert outlives the sync that started it."""

    def __init__(self, client: Any, collection: str) -> None:
        self.client, self.collection = client, collection
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sleuth-milvus-insert")
        self._pending: Future[Any] | None = None

    def put(self, rows: list[dict[str, Any]]) -> None:
        self.wait()
        self._pending = self._pool.submit(self.client.insert, self.collection, rows)

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


class MilvusIndex:
    """The Milvus side of one index: a client, the two collections, the statistics and the sync.

    Args:
        settings: where and how (checked by :func:`check_capabilities`).
        catalog: the catalog (statistics and sync state live there).
    Raises:
        ConfigError: a setting the backend would ignore.
        StorageError: Milvus cannot be reached.
    """

    def __init__(self, settings: MilvusSettings, catalog: Catalog) -> None:
        from pymilvus import MilvusClient

        self.settings, self.catalog = settings, catalog
        try:
            # A connection of its own (pymilvus shares one per address by default and keeps it
            # open after close): close() then really closes it.
            self.client = MilvusClient(settings.uri, dedicated=True)
            self.server_version = str(self.client.get_server_version())
        except Exception as exc:  # pymilvus.MilvusException, grpc errors
            raise StorageError(f"cannot reach Milvus at {settings.uri}: {exc}") from exc
        check_capabilities(settings, self.server_version)
        self.lex = f"{settings.collection}_lex"
        self.dense = f"{settings.collection}_dense"
        self._lock = threading.RLock()
        #: ``{since: _doc_fields(indexed_blocks(since))}`` during one :meth:`sync` (under the write
        #: lock, so the catalog does not move): the statistics and the rows analyse blocks once.
        self._fields: dict[int, dict[str, list[tuple[Any, dict[str, list[str]]]]]] = {}
        with catalog.write() as conn:
            for ddl in _STATS_DDL:
                conn.execute(ddl)

    def close(self) -> None:
        self.client.close()

    # -------------------------------------------------------------- state kept in the catalog

    def _meta(self, key: str) -> dict[str, Any]:
        raw = self.catalog.get_meta(key)
        return json.loads(raw) if raw else {}

    def state(self) -> dict[str, Any]:
        """``milvus:state``: ``{generation, avgdl, n, dense_generation, dense_vectors, dense_model, pending}``."""
        return self._meta("milvus:state")

    def stats(self) -> dict[str, Any]:
        """``milvus:stats``: ``{generation, n, lengths}`` (the collection statistics' totals)."""
        return self._meta("milvus:stats")

    def document_frequencies(self, term_ids: Iterable[int]) -> dict[int, int]:
        """``{term_id: df}`` of the ids some block has."""
        ids = sorted(set(term_ids))
        out: dict[int, int] = {}
        conn = self.catalog.conn
        if hasattr(conn, "copy_rows"):  # PostgreSQL: the ids as arrays, not 500 per statement
            for part in _chunks(ids, 50_000):
                for tid, df in conn.execute("SELECT term_id, df FROM milvus_df WHERE term_id = ANY(?::bigint[])",
                                            [list(part)]):
                    out[int(tid)] = int(df)
            return out
        for part in _chunks(ids, 500):
            marks = ",".join("?" * len(part))
            for tid, df in self.catalog.conn.execute(f"SELECT term_id, df FROM milvus_df WHERE term_id IN ({marks})",
                                                     list(part)):
                out[int(tid)] = int(df)
        return out

    # -------------------------------------------------------------- collections

    def _scalar_fields(self, schema: Any) -> None:
        from pymilvus import DataType

        schema.add_field("block_id", DataType.VARCHAR, max_length=64, is_primary=True)
        schema.add_field("project_id", DataType.VARCHAR, max_length=256, is_partition_key=True)
        for name in ("doc_id", "label", "role", "family"):
            schema.add_field(name, DataType.VARCHAR, max_length=256)
        schema.add_field("recorded_ns", DataType.INT64)

    def _create_kwargs(self) -> dict[str, Any]:
        kwargs: dict[str, Any] = {}
        if not self.server_version.startswith("milvus_lite"):
            kwargs["consistency_level"] = self.settings.consistency
            if self.settings.partitions is not None:
                kwargs["num_partitions"] = self.settings.partitions
        return kwargs

    def _create_lex(self) -> None:
        from pymilvus import DataType

        if self.client.has_collection(self.lex):
            self.client.drop_collection(self.lex)
        schema = self.client.create_schema(auto_id=False)
        self._scalar_fields(schema)
        schema.add_field("lex", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("tfidf", DataType.SPARSE_FLOAT_VECTOR)
        index = self.client.prepare_index_params()
        for name in ("lex", "tfidf"):
            index.add_index(name, index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
        self.client.create_collection(self.lex, schema=schema, index_params=index, **self._create_kwargs())

    def _create_dense(self, dim: int) -> None:
        from pymilvus import DataType

        if self.client.has_collection(self.dense):
            self.client.drop_collection(self.dense)
        schema = self.client.create_schema(auto_id=False)
        self._scalar_fields(schema)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
        index = self.client.prepare_index_params()
        params = {"M": 16, "efConstruction": 128} if self.settings.dense_index.startswith("HNSW") else {}
        index.add_index("dense", index_type=self.settings.dense_index, metric_type="IP", params=params)
        self.client.create_collection(self.dense, schema=schema, index_params=index, **self._create_kwargs())

    # -------------------------------------------------------------- sync

    def behind(self, model: str | None = None) -> bool:
        """Whether Milvus lags the catalog (its generation, or the vectors of ``model``)."""
        state = self.state()
        if state.get("generation") != self.catalog.generation():
            return True
        return model is not None and (state.get("dense_generation") != state.get("generation")
                                      or state.get("dense_vectors") != self.catalog.get_meta(f"vectors:{model}"))

    def sync(self, model: str | None = None, dim: int = 0) -> bool:
        """Bring statistics and collections up to the catalog (the caller holds the write lock);
        True when anything changed. ``model``/``dim``: the embedding model whose vectors go to the
        dense collection (None: no dense collection)."""
        with self._lock:
            self._fields = {}
            try:
                gen = self.catalog.generation()
                changed = self._sync_stats(gen)
                changed |= self._sync_lex(gen)
                if model is not None and dim > 0:
                    changed |= self._sync_dense(gen, model, dim)
                return changed
            finally:
                self._fields = {}

    def _fields_since(self, since: int) -> dict[str, list[tuple[Any, dict[str, list[str]]]]]:
        """:meth:`_doc_fields` of the blocks of documents written after ``since`` (read once per sync)."""
        if since not in self._fields:
            self._fields[since] = self._doc_fields(self.catalog.indexed_blocks(since))
        return self._fields[since]

    def _sync_stats(self, gen: int) -> bool:
        stats = self.stats()
        since = int(stats.get("generation", 0))
        if since == gen and stats:
            return False
        catalog = self.catalog
        with catalog.read():
            if since > gen or not stats:  # a new catalog (or none yet): count everything again
                written, deleted, since = [], [], 0
                fresh = True
            else:
                written, deleted = catalog.changes_since(since)
                fresh = False
            docs = self._fields_since(since)
            old = {} if fresh else self._doc_stats(sorted({*written, *deleted}))
        n = 0 if fresh else int(stats.get("n", 0))
        lengths: Counter[str] = Counter() if fresh else Counter(stats.get("lengths", {}))
        df: Counter[int] = Counter()
        for doc_stats in old.values():
            n -= doc_stats["n"]
            lengths.subtract(doc_stats["len"])
            df.subtract({int(k): v for k, v in doc_stats["df"].items()})
        new: dict[str, str] = {}  # {doc_id: its statistics as JSON}
        for doc_id, blocks in docs.items():
            bn, blen, bdf = sparse.block_stats(f for _, f in blocks)
            new[doc_id] = json.dumps({"n": bn, "len": blen, "df": {str(k): v for k, v in bdf.items()}})
            n += bn
            lengths.update(blen)
            df.update(bdf)
        with catalog.write() as conn:
            if fresh:
                conn.execute("DELETE FROM milvus_df")
                conn.execute("DELETE FROM milvus_doc_stats")
            changes = [(k, v) for k, v in df.items() if v]
            gone = [d for d in old if d not in new]
            stats_rows = list(new.items())
            copy_rows = getattr(conn, "copy_rows", None)
            if copy_rows is not None:  # PostgreSQL: COPY, not a statement per row
                copy_rows("milvus_df", ("term_id", "df"), changes, None if fresh else
                          "ON CONFLICT (term_id) DO UPDATE SET df = milvus_df.df + excluded.df")
                conn.execute("DELETE FROM milvus_df WHERE df <= 0")
                if gone:
                    conn.execute("DELETE FROM milvus_doc_stats WHERE doc_id = ANY(?::text[])", (gone,))
                copy_rows("milvus_doc_stats", ("doc_id", "stats"), stats_rows, None if fresh else
                          "ON CONFLICT (doc_id) DO UPDATE SET stats = excluded.stats")
            else:
                conn.executemany("INSERT INTO milvus_df VALUES (?, ?) ON CONFLICT(term_id) DO UPDATE SET"
                                 " df = milvus_df.df + excluded.df", changes)
                conn.execute("DELETE FROM milvus_df WHERE df <= 0")
                conn.executemany("DELETE FROM milvus_doc_stats WHERE doc_id = ?", [(d,) for d in gone])
                conn.executemany("INSERT OR REPLACE INTO milvus_doc_stats VALUES (?, ?)", stats_rows)
            conn.execute("INSERT OR REPLACE INTO meta VALUES ('milvus:stats', ?)",
                         (json.dumps({"generation": gen, "n": n, "lengths": dict(lengths)}),))
        kill_point("milvus:stats-committed")
        return True

    def _doc_stats(self, doc_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        out: dict[str, dict[str, Any]] = {}
        for part in _chunks(list(doc_ids), 500):
            marks = ",".join("?" * len(part))
            for doc_id, raw in self.catalog.conn.execute(
                    f"SELECT doc_id, stats FROM milvus_doc_stats WHERE doc_id IN ({marks})", list(part)):
                out[doc_id] = json.loads(raw)
        return out

    @staticmethod
    def _doc_fields(blocks: Iterable[Any]) -> dict[str, list[tuple[Any, dict[str, list[str]]]]]:
        """``{doc_id: [((block_id, project_id), {field: tokens})]}`` in catalog order. Tokens are
        interned and the block's text is not kept: a sync holds every written block this way (a
        few KB each instead of about 20)."""
        from sleuth.lanes.postings import analyze_heading

        out: dict[str, list[tuple[Any, dict[str, list[str]]]]] = {}
        per_doc: dict[str, tuple[list[str], list[str], list[str]]] = {}
        for ib in blocks:
            doc_id = ib.block.doc_id
            if doc_id not in per_doc:
                per_doc = {doc_id: (analyze(ib.title), analyze(ib.rel_path.replace("/", " / ")),
                                    analyze(" ; ".join(ib.tags)))}
            title, path, tags = per_doc[doc_id]
            fields = sparse.block_fields(ib.terms, title, analyze_heading(ib.block.heading_path), tags, path)
            fields["body"] = [sys.intern(t) for t in fields["body"]]
            out.setdefault(doc_id, []).append(((ib.block.block_id, ib.block.project_id), fields))
        return out

    def _weights(self) -> tuple[int, dict[str, float]]:
        stats = self.stats()
        n = int(stats.get("n", 0))
        lengths = stats.get("lengths", {})
        return n, {f: (lengths.get(f, 0) / n if n else 0.0) for f in sparse.FIELDS}

    def _sync_lex(self, gen: int) -> bool:
        state = self.state()
        n, avgdl = self._weights()
        since = state.get("generation")
        if since == gen and self.client.has_collection(self.lex):
            return False
        catalog = self.catalog
        old_avgdl = state.get("avgdl", {})
        written, deleted = catalog.changes_since(since) if since is not None and since <= gen else ([], [])
        # Documents written or deleted since the rows were weighted, counting these: once more
        # than AVGDL_DRIFT_MAX of the collection, every row is weighted again (tfidf's idf).
        changed = int(state.get("changed", 0)) + len({*written, *deleted})
        rebuild = (since is None or since > gen or not self.client.has_collection(self.lex)
                   or sparse.drifted(float(state.get("n", 0)), float(n)) or changed > sparse.AVGDL_DRIFT_MAX * n
                   or any(sparse.drifted(float(old_avgdl.get(f, 0.0)), avgdl[f]) for f in sparse.FIELDS))
        if rebuild:
            self._create_lex()
            since, changed = 0, 0
        else:
            assert since is not None  # no rebuild: the rows were weighted at a generation
            self._delete(self.lex, sorted({*written, *deleted}))
        self._insert_lex(since, n, avgdl)
        self.client.flush(self.lex)
        kill_point("milvus:lex-flushed")
        state.update(generation=gen, n=n, avgdl=avgdl, changed=changed)
        self.catalog.set_meta("milvus:state", json.dumps(state))
        return True

    def _delete(self, collection: str, doc_ids: Sequence[str]) -> None:
        for part in _chunks(list(doc_ids), MILVUS_DELETE_IDS_PER_EXPRESSION):
            self.client.delete(collection, filter=in_list("doc_id", part))

    def _scalars(self, docs: dict[str, Any], block_id: str, doc_id: str, project_id: str) -> dict[str, Any]:
        doc = docs[doc_id]
        return {"block_id": block_id, "project_id": project_id, "doc_id": doc_id, "label": doc.label,
                "role": doc.role, "family": doc.family, "recorded_ns": int(doc.recorded_ns)}

    def _insert_lex(self, since: int, n: int, avgdl: dict[str, float]) -> int:
        """Insert the rows of the blocks of documents written after ``since``; returns how many."""
        catalog = self.catalog
        rows: list[dict[str, Any]] = []
        count = 0
        with catalog.read():
            by_doc = self._fields_since(since)
            docs = catalog.documents(list(by_doc))
        body_ids = {sparse.term_id("body", t) for blocks in by_doc.values() for _, f in blocks for t in f["body"]}
        df = self.document_frequencies(body_ids)
        with _Inserter(self.client, self.lex) as inserter:
            for doc_id, blocks in by_doc.items():
                for (block_id, project_id), fields in blocks:
                    lex = sparse.bm25_vector(fields, avgdl) or EMPTY_SPARSE
                    tfidf = sparse.tfidf_vector(fields["body"], df, n) or EMPTY_SPARSE
                    rows.append({**self._scalars(docs, block_id, doc_id, project_id),
                                 "lex": lex, "tfidf": tfidf})
                    count += 1
                    if len(rows) >= MILVUS_INSERT_BATCH_ROWS:
                        inserter.put(rows)
                        rows = []
            if rows:
                inserter.put(rows)
        return count

    def _sync_dense(self, gen: int, model: str, dim: int) -> bool:
        state = self.state()
        vectors = self.catalog.get_meta(f"vectors:{model}")
        since = state.get("dense_generation")
        rebuild = (since is None or since > gen or state.get("dense_model") != [model, dim]
                   or not self.client.has_collection(self.dense))
        if not rebuild and since == gen and state.get("dense_vectors") == vectors:
            return False
        catalog = self.catalog
        if rebuild:
            self._create_dense(dim)
            docs_to_write = [d.doc_id for p in catalog.roots() for d in catalog.documents_for_projects([p])]
        else:
            assert since is not None  # no rebuild: the vectors were written at a generation
            written, deleted = catalog.changes_since(since)
            pending = [d for d in state.get("pending", []) if d not in set(deleted)]
            docs_to_write = sorted({*written, *pending})
            self._delete(self.dense, sorted({*written, *deleted, *pending}))
        still_pending: set[str] = set()
        for part in _chunks(docs_to_write, 500):
            docs = catalog.documents(list(part))
            rows = []
            for block_id, doc_id, project_id, _, vector in catalog.doc_block_vectors(model, list(part)):
                stored, readable = catalog.readable_rows([vector], dim)
                if not readable[0]:  # none yet, or one that cannot be read (left out, as the vector lane does)
                    still_pending.add(doc_id)
                    continue
                from sleuth.store.vector_codes import decode

                rows.append({**self._scalars(docs, block_id, doc_id, project_id),
                             "dense": decode(stored)[0].tolist()})
            for batch in _chunks(rows, MILVUS_INSERT_BATCH_ROWS):
                self.client.insert(self.dense, list(batch))
        self.client.flush(self.dense)
        state = self.state()
        state.update(dense_generation=gen, dense_vectors=vectors, dense_model=[model, dim],
                     pending=sorted(still_pending))
        self.catalog.set_meta("milvus:state", json.dumps(state))
        return True

    # -------------------------------------------------------------- search

    def search(self, collection: str, field: str, query: Any, k: int, expr: str) -> tuple[list[str], list[float]]:
        """Top ``k`` block ids by inner product of ``field`` with ``query``, restricted by ``expr``
        (before the cut); only hits with a positive score (sparse) are kept."""
        if k <= 0:
            return [], []
        params = {"metric_type": "IP", "params": {"drop_ratio_search": 0.0} if field != "dense" else {"ef": 128}}
        hits = self.client.search(collection, data=[query], anns_field=field, limit=min(k, MILVUS_TOPK_MAX),
                                  filter=expr, search_params=params, output_fields=["block_id"])[0]
        pairs = [(str(h["block_id"] if "block_id" in h else h["id"]), float(h["distance"])) for h in hits]
        if field != "dense":
            pairs = [p for p in pairs if p[1] > 0]
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return [b for b, _ in pairs], [s for _, s in pairs]

    def search_any(self, collection: str, field: str, query: Any, k: int,
                   exprs: Sequence[str]) -> tuple[list[str], list[float]]:
        """:meth:`search` under each of ``exprs`` (the parts of one filter, see :func:`expressions`),
        merged: the top ``k`` of the union, by score then block id."""
        if len(exprs) == 1:
            return self.search(collection, field, query, k, exprs[0])
        pairs: list[tuple[str, float]] = []
        for expr in exprs:
            ids, scores = self.search(collection, field, query, k, expr)
            pairs.extend(zip(ids, scores, strict=True))
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return [b for b, _ in pairs[:k]], [s for _, s in pairs[:k]]

    def count(self, collection: str) -> int:
        """Rows of ``collection`` (0 when it does not exist)."""
        if not self.client.has_collection(collection):
            return 0
        return int(self.client.get_collection_stats(collection).get("row_count", 0))
