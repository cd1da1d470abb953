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
a process killed during a sync leaves the state behind, and the next sync finishes or replays it
(deletes by document, inserts and upserts are idempotent). Syncs run under the index's write lock,
in bounded parts: :mod:`sleuth.store.milvus_sync`.
"""

from __future__ import annotations

import json
import logging
import os
import re
import secrets
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sleuth.errors import ConfigError, StorageError, scale_package_missing
from sleuth.lanes.base import DocFilter
from sleuth.store import milvus_state
from sleuth.store.milvus_sync import (
    DENSE_FIELDS,
    LEX_FIELDS,
    MILVUS_MARK_PROPERTY,
    MILVUS_SYNC_PART_BLOCKS,
    MilvusSync,
    chunks,
    in_list,
)
from sleuth.store.milvus_sync import literal as literal  # re-exported: the lanes' filters use it
from sleuth.store.urls import redact_url

if TYPE_CHECKING:
    import sqlite3
    from pathlib import Path

    from sleuth.store.catalog import Catalog

log = logging.getLogger(__name__)

#: The catalog's meta keys of the index's identity for Milvus (stamped on its collections) and,
#: for a SQLite catalog, of where the catalog file was when it was last opened: ``[path, device, inode]``.
INDEX_ID_KEY, INDEX_HOME_KEY = "milvus:index_id", "milvus:index_home"
#: What an index id looks like (``secrets.token_hex(8)``); another value is damaged and replaced.
_INDEX_ID = re.compile(r"[0-9a-f]{16}")


def own_index_id(conn: sqlite3.Connection, catalog_file: Path | None) -> str:
    """This index's identity (meta ``INDEX_ID_KEY``), in a write transaction ``conn``: made by the
    first writer (a second host sharing a PostgreSQL catalog reads the same one); a new one when
    the stored one is damaged (not 16 hex digits), or when ``catalog_file`` (a SQLite catalog's)
    is a copy: the file it was last opened as (``INDEX_HOME_KEY``) is still there, the same file
    as then, and another file than this one. A moved catalog keeps its identity.

    Returns:
        the id, 16 hex digits.
    """
    conn.execute("INSERT OR IGNORE INTO meta VALUES (?, ?)", (INDEX_ID_KEY, secrets.token_hex(8)))
    row = conn.execute("SELECT value FROM meta WHERE key=?", (INDEX_ID_KEY,)).fetchone()
    found = str(row[0]) if row is not None else ""
    renew = _INDEX_ID.fullmatch(found) is None
    if renew:
        log.warning("the catalog's %s was damaged (%r...): this index takes a new identity", INDEX_ID_KEY, found[:40])
    try:
        here = os.stat(catalog_file) if catalog_file is not None else None
    except OSError:  # not a file of its own: nothing to tell a copy by
        here = None
    if catalog_file is not None and here is not None:
        home = [str(catalog_file.resolve()), here.st_dev, here.st_ino]
        row = conn.execute("SELECT value FROM meta WHERE key=?", (INDEX_HOME_KEY,)).fetchone()
        try:
            was = json.loads(str(row[0])) if row is not None else None
        except ValueError:
            was = None
        if isinstance(was, list) and len(was) == 3 and isinstance(was[0], str) and was[0] != home[0]:
            try:
                there = os.stat(was[0])
            except OSError:  # moved (or the original deleted): the same index
                there = None
            same = None if there is None else [there.st_dev, there.st_ino]
            if same is not None and same == was[1:] and same != home[1:]:
                log.warning("the catalog %s is a copy of %s: it is another index for Milvus (a new identity)",
                            home[0], was[0])
                renew = True
        if was != home:
            conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (INDEX_HOME_KEY, json.dumps(home)))
    if renew:
        found = secrets.token_hex(8)
        conn.execute("INSERT OR REPLACE INTO meta VALUES (?, ?)", (INDEX_ID_KEY, found))
    return found

#: Ids per ``in [...]`` list of a search filter.
MILVUS_IDS_PER_EXPRESSION = 1_000
#: Most ids a lane query lists in its filter (quoted phrases' blocks, or documents), over several
#: expressions of ``MILVUS_IDS_PER_EXPRESSION`` ids, one search each; above it the Milvus lane is
#: skipped with a readable reason (a phrase that common is the exact lane's to answer).
MILVUS_FILTER_IDS_MAX = 20_000
#: Milvus's error code for a search of a collection that is not loaded (milvus-lite releases every
#: collection when its database is opened again, by a new process or a restarted server).
MILVUS_NOT_LOADED_CODE = 101
#: Milvus returns at most this many hits per search (its topk limit).
MILVUS_TOPK_MAX = 16_384
#: Dense index types by backend: what the backend builds (milvus-lite 3.2 accepts IVF_RABITQ and
#: then fails at search; other types it accepts were not checked, so they are refused).
DENSE_INDEXES_LITE = ("FLAT", "HNSW", "IVF_FLAT")
DENSE_INDEXES_SERVER = ("FLAT", "HNSW", "HNSW_SQ", "HNSW_PQ", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "IVF_RABITQ",
                        "DISKANN", "AUTOINDEX")
CONSISTENCY_LEVELS = ("Strong", "Bounded", "Session", "Eventually")
#: Milvus' longest collection name, in characters (its ``proxy.maxNameLength`` default); sleuth's
#: names add ``_lex`` or ``_dense`` to ``milvus_collection`` (the aliases searches use), then ``_a``
#: or ``_b`` (the collections they name: :mod:`sleuth.store.milvus_sync`).
MILVUS_NAME_CHARS_MAX = 255
#: How long a report (status, doctor) waits for Milvus to say its version before it says Milvus is
#: unreachable, in seconds.
MILVUS_PING_TIMEOUT_S = 5.0
#: The longest ``milvus_collection``: room for the longest suffix, ``_dense_b``.
COLLECTION_PREFIX_CHARS_MAX = MILVUS_NAME_CHARS_MAX - len("_dense_b")
_FILTER_FIELDS = ("project_id", "doc_id", "label", "role", "family")


#: The scalar fields of every collection sleuth makes (:meth:`MilvusIndex._scalar_fields`).
_SLEUTH_SCALAR_FIELDS = frozenset({"block_id", "project_id", "doc_id", "label", "role", "family", "recorded_ns"})

@dataclass(frozen=True)
class MilvusSettings:
    """Where and how the lanes live in Milvus.

    Attributes:
        uri: a local ``.db`` path (milvus-lite in this process) or ``http://host:19530``.
        collection: the collections' name prefix (the aliases ``<collection>_lex`` and
            ``<collection>_dense``, each naming ``<alias>_a`` or ``<alias>_b``).
        dense_index: the dense index type (``FLAT``: exact, as the local lane up to 50k blocks).
        consistency: the collections' consistency level.
        partitions: partitions of the partition key (None: the backend's default).
        sync_part_blocks: blocks a sync reads, analyses and sends at a time (its memory bound).
    """

    uri: str
    collection: str = "sleuth"
    dense_index: str = "FLAT"
    consistency: str = "Strong"
    partitions: int | None = None
    sync_part_blocks: int = MILVUS_SYNC_PART_BLOCKS


def _drop_start_failure(record: logging.LogRecord) -> bool:
    """A logging filter: False for milvus-lite's "Failed to start MilvusLite server" record, whose
    traceback it prints to stderr; :class:`MilvusIndex` raises a StorageError saying why instead."""
    return not str(record.msg).startswith("Failed to start MilvusLite server")


logging.getLogger("milvus_lite.server_manager").addFilter(_drop_start_failure)


def unreachable_message(uri: str, exc: BaseException) -> str:
    """``cannot reach Milvus at <uri>: <the client's error>``, a password redacted in both."""
    return f"cannot reach Milvus at {redact_url(uri)}: {redact_url(str(exc))}"


def _one_line(record: logging.LogRecord) -> bool:
    """A logging filter keeping a record without its traceback: the record's own, and the one
    pymilvus writes into an RPC error's message after ``"\nTraceback"`` (always True)."""
    record.exc_info, record.exc_text, record.stack_info = None, None, None
    message = record.getMessage()
    head = message.split("\nTraceback", 1)[0].rstrip()
    if head != message:
        record.msg, record.args = head, None
    return True


def _quiet_pymilvus_tracebacks() -> None:
    """pymilvus' log records go out as one line each, without their traceback: while Milvus is
    down, each call it retries logs a traceback (a new-user trial of stop 31: 50 tracebacks on
    the server's stderr for two tool calls). The error itself reaches the lane's failure. The
    filter goes on the handlers pymilvus installs on its loggers (records of their children reach
    those handlers without passing a parent logger's filters); idempotent."""
    for name in ("pymilvus", "pymilvus.milvus_client", "pymilvus.bulk_writer"):
        for handler in logging.getLogger(name).handlers:
            if _one_line not in handler.filters:
                handler.addFilter(_one_line)


def check_capabilities(settings: MilvusSettings, server_version: str) -> None:
    """Refuse settings the backend would silently ignore or fail on later.

    milvus-lite (``server_version`` ``milvus_lite-*``) ignores ``consistency_level`` and
    ``num_partitions`` and accepts index types it cannot search (docs: ../shared/notes).
    ``server_version`` ``""``: what no backend takes, checked before connecting (an unreachable
    Milvus does not hide a refused setting from a search or a server that opens without it).

    Raises:
        ConfigError: naming the setting and why it is refused.
    """
    lite = server_version.startswith("milvus_lite")
    if not settings.collection.replace("_", "").isalnum() or not settings.collection.isascii():
        raise ConfigError(f"milvus_collection must be letters, digits and '_', got {settings.collection[:80]!r}")
    if len(settings.collection) > COLLECTION_PREFIX_CHARS_MAX:
        raise ConfigError(f"milvus_collection is {len(settings.collection)} characters, at most"
                          f" {COLLECTION_PREFIX_CHARS_MAX} (Milvus names take {MILVUS_NAME_CHARS_MAX}, with sleuth's"
                          " '_dense_b' after it): choose a shorter name")
    allowed = DENSE_INDEXES_LITE if lite else DENSE_INDEXES_SERVER
    if settings.dense_index not in allowed:
        raise ConfigError(f"milvus_dense_index {settings.dense_index!r} is not supported by"
                          f" {server_version or 'Milvus'}: one of {', '.join(allowed)}")
    if settings.consistency not in CONSISTENCY_LEVELS:
        raise ConfigError(f"milvus_consistency must be one of {', '.join(CONSISTENCY_LEVELS)}")
    if lite and settings.consistency != "Strong":
        raise ConfigError(f"milvus_consistency {settings.consistency!r}: {server_version} ignores consistency levels"
                          " (it is always Strong); leave it unset or use a Milvus server")
    if lite and settings.partitions is not None:
        raise ConfigError(f"milvus_partitions: {server_version} ignores partition counts (it always uses 16);"
                          " leave it unset or use a Milvus server")


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
            expression(projects, doc_filter, None, chunk) for chunk in chunks(ids, ids_per_expression)]


#: Why a local milvus-lite ``.db`` most often fails to open: milvus-lite locks it for one process,
#: and sleuth's background embedding worker is a second process that holds it while it embeds.
LOCAL_DB_HINT = (" (a local milvus-lite .db is opened by one process at a time: another process may have it"
                 " open, such as the embedding worker that `sleuth index` starts, which holds it until it has"
                 " embedded every block: `sleuth status` shows its progress; `sleuth index --wait` embeds before"
                 " it returns; for several processes at once use `milvus-lite server` or a Milvus server:"
                 " docs/SCALE.md)")


_STATS_DDL = (
    "CREATE TABLE IF NOT EXISTS milvus_df (term_id BIGINT PRIMARY KEY, df BIGINT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS milvus_doc_stats (doc_id TEXT PRIMARY KEY, stats TEXT NOT NULL)",
)


class MilvusIndex(MilvusSync):
    """The Milvus side of one index: a client, the two collections, the statistics and the sync.

    Args:
        settings: where and how (checked by :func:`check_capabilities`).
        catalog: the catalog (statistics and sync state live there).
    Raises:
        ConfigError: a setting the backend would ignore; pymilvus is not installed.
        StorageError: Milvus cannot be reached.
    """

    def __init__(self, settings: MilvusSettings, catalog: Catalog) -> None:
        try:
            from pymilvus import MilvusClient
        except ImportError as exc:
            raise scale_package_missing("pymilvus", "milvus_uri (or SLEUTH_MILVUS_URI)") from exc
        self.settings, self.catalog = settings, catalog
        check_capabilities(settings, "")  # what no backend takes, whether or not Milvus answers
        _quiet_pymilvus_tracebacks()  # pymilvus sets its handlers up when imported
        try:
            # A connection of its own (pymilvus shares one per address by default and keeps it
            # open after close): close() then really closes it.
            self.client = MilvusClient(settings.uri, dedicated=True)
            self.server_version = str(self.client.get_server_version())
        except Exception as exc:  # pymilvus.MilvusException, grpc errors
            raise StorageError(unreachable_message(settings.uri, exc)
                               + ("" if "://" in settings.uri else LOCAL_DB_HINT)) from exc
        check_capabilities(settings, self.server_version)
        self.lex = f"{settings.collection}_lex"
        self.dense = f"{settings.collection}_dense"
        self._lock = threading.RLock()
        self._loaded: set[str] = set()  # collections found loaded by this client
        self.skipped = set()
        self.part_blocks = settings.sync_part_blocks
        with catalog.write() as conn:
            for ddl in _STATS_DDL:
                conn.execute(ddl)
            # this index's identity, stamped on every collection it makes (first writer's wins)
            self.index_id = own_index_id(conn, None if isinstance(getattr(catalog, "url", None), str)
                                         else catalog.path)

    def close(self) -> None:
        self.client.close()

    # -------------------------------------------------------------- state kept in the catalog

    def state(self) -> dict[str, Any]:
        """``milvus:state``: ``{generation, avgdl, n, dense_generation, dense_vectors, dense_model,
        pending, lex_mark, dense_mark, lex_sync}``; ``{}`` when absent or unreadable
        (:mod:`sleuth.store.milvus_state`: the collections are then rebuilt)."""
        return milvus_state.parse(self.catalog.get_meta("milvus:state"), milvus_state.STATE, "milvus:state") or {}

    def stats(self) -> dict[str, Any]:
        """``milvus:stats``: ``{generation, n, lengths}`` (the collection statistics' totals); ``{}``
        when absent or unreadable (counted again from scratch)."""
        return milvus_state.parse(self.catalog.get_meta("milvus:stats"), milvus_state.STATS, "milvus:stats") or {}

    def document_frequencies(self, term_ids: Iterable[int]) -> dict[int, int]:
        """``{term_id: df}`` of the ids some block has."""
        ids = sorted(set(term_ids))
        out: dict[int, int] = {}
        conn = self.catalog.conn
        if hasattr(conn, "copy_rows"):  # PostgreSQL: the ids as arrays, not 500 per statement
            for part in chunks(ids, 50_000):
                for tid, df in conn.execute("SELECT term_id, df FROM milvus_df WHERE term_id = ANY(?::bigint[])",
                                            [list(part)]):
                    out[int(tid)] = int(df)  # BIGINT columns: integers
            return out
        for part in chunks(ids, 500):
            marks = ",".join("?" * len(part))
            rows = self.catalog.conn.execute(f"SELECT term_id, df FROM milvus_df WHERE term_id IN ({marks})",
                                             list(part))
            # SQLite keeps a planted text as text: such a row is left out
            out.update((tid, df) for tid, df in rows if isinstance(tid, int) and isinstance(df, int))
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

    def _foreign(self, collection: str, vector_fields: frozenset[str]) -> bool:
        """Whether ``collection`` exists and is not one sleuth made: neither its mark property nor
        the fields sleuth gives it (a sync killed before its mark). ``collection`` is a name, never
        an alias."""
        if collection not in self.client.list_collections():
            return False
        described = self.client.describe_collection(collection)
        fields = {str(f.get("name")) for f in described.get("fields") or [] if isinstance(f, dict)}
        marked = MILVUS_MARK_PROPERTY in (described.get("properties") or {})
        return not marked and not (_SLEUTH_SCALAR_FIELDS | vector_fields) <= fields

    def _drop_own(self, collection: str, vector_fields: frozenset[str]) -> None:
        """Drop ``collection`` (a name, never an alias) to make it again, when it is one sleuth made
        (:meth:`_foreign`). Another application's collection of that name is never dropped.

        Raises:
            ConfigError: ``collection`` exists and is not sleuth's.
        """
        if self._foreign(collection, vector_fields):
            raise ConfigError(f"the Milvus collection {collection!r} exists and was not made by sleuth (no sync"
                              " mark, other fields): it is left alone; set milvus_collection to another name")
        if collection in self.client.list_collections():
            self.client.drop_collection(collection)

    def _create_lex(self, name: str) -> None:
        from pymilvus import DataType

        self._drop_own(name, LEX_FIELDS)
        schema = self.client.create_schema(auto_id=False)
        self._scalar_fields(schema)
        schema.add_field("lex", DataType.SPARSE_FLOAT_VECTOR)
        schema.add_field("tfidf", DataType.SPARSE_FLOAT_VECTOR)
        index = self.client.prepare_index_params()
        for field in sorted(LEX_FIELDS):
            index.add_index(field, index_type="SPARSE_INVERTED_INDEX", metric_type="IP")
        self.client.create_collection(name, schema=schema, index_params=index, **self._create_kwargs())

    def _create_dense(self, name: str, dim: int) -> None:
        from pymilvus import DataType

        self._drop_own(name, DENSE_FIELDS)
        schema = self.client.create_schema(auto_id=False)
        self._scalar_fields(schema)
        schema.add_field("dense", DataType.FLOAT_VECTOR, dim=dim)
        index = self.client.prepare_index_params()
        params = {"M": 16, "efConstruction": 128} if self.settings.dense_index.startswith("HNSW") else {}
        index.add_index("dense", index_type=self.settings.dense_index, metric_type="IP", params=params)
        self.client.create_collection(name, schema=schema, index_params=index, **self._create_kwargs())

    # -------------------------------------------------------------- search

    def search(self, collection: str, field: str, query: Any, k: int, expr: str) -> tuple[list[str], list[float]]:
        """Top ``k`` block ids by inner product of ``field`` with ``query``, restricted by ``expr``
        (before the cut); only hits with a positive score (sparse) are kept."""
        if k <= 0:
            return [], []
        from pymilvus import MilvusException

        params = {"metric_type": "IP", "params": {"drop_ratio_search": 0.0} if field != "dense" else {"ef": 128}}
        kwargs = {"data": [query], "anns_field": field, "limit": min(k, MILVUS_TOPK_MAX), "filter": expr,
                  "search_params": params, "output_fields": ["block_id"]}
        if collection not in self._loaded:  # released (a reopened database): loaded before the first search
            self._load(collection)
        try:
            hits = self.client.search(collection, **kwargs)[0]
        except MilvusException as exc:
            if exc.code != MILVUS_NOT_LOADED_CODE:
                raise
            self._load(collection)  # released since (the server restarted): loaded, then searched again
            hits = self.client.search(collection, **kwargs)[0]
        pairs = [(str(h["block_id"] if "block_id" in h else h["id"]), float(h["distance"])) for h in hits]
        if field != "dense":
            pairs = [p for p in pairs if p[1] > 0]
        pairs.sort(key=lambda p: (-p[1], p[0]))
        return [b for b, _ in pairs], [s for _, s in pairs]

    def _load(self, collection: str) -> None:
        """Load ``collection`` unless Milvus has it loaded (one call to ask when it has)."""
        from pymilvus.client.types import LoadState

        if self.client.get_load_state(collection).get("state") != LoadState.Loaded:
            self.client.load_collection(collection)
        self._loaded.add(collection)

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

    def rows(self, collection: str) -> int:
        """Rows of ``collection`` as a strongly consistent ``count(*)`` sees them (deletes counted,
        unlike ``get_collection_stats`` of a Milvus that has not compacted): what the sync compares
        with the rows it wrote. The collection is loaded first when it is released."""
        from pymilvus import MilvusException

        if collection not in self._loaded:
            self._load(collection)
        try:
            found = self.client.query(collection, filter="", output_fields=["count(*)"], consistency_level="Strong")
        except MilvusException as exc:
            if exc.code != MILVUS_NOT_LOADED_CODE:
                raise
            self._load(collection)
            found = self.client.query(collection, filter="", output_fields=["count(*)"], consistency_level="Strong")
        return int(found[0]["count(*)"])

    def unreachable(self) -> str | None:
        """Why Milvus does not answer now (its version asked again, at most ``MILVUS_PING_TIMEOUT_S``),
        else None: ``server_version`` is the one found when the client opened. Never raises."""
        try:
            self.client.get_server_version(timeout=MILVUS_PING_TIMEOUT_S)
        except Exception as exc:  # noqa: BLE001 - pymilvus.MilvusException, grpc errors: the answer is the error
            return unreachable_message(self.settings.uri, exc)
        return None

    def count(self, collection: str) -> int:
        """Rows of ``collection`` (0 when it does not exist)."""
        if not self.client.has_collection(collection):
            return 0
        return int(self.client.get_collection_stats(collection).get("row_count", 0))
