"""The lanes ``bm25``, ``index``, ``tfidf`` and ``vector`` answered by Milvus (``milvus_uri``).

Same names, weights and scores as the local lanes (:mod:`sleuth.lanes.sparse` says how the
scores match), so fusion, which stays in sleuth, is unchanged. The engine builds these instead of
the local ones when ``milvus_uri`` is set (:func:`milvus_lane_specs`); the ``exact`` and ``graph``
lanes, and the check of quoted phrases, stay on the local postings and the catalog.

Every lane brings Milvus up to the catalog before it answers when it can take the write lock
without waiting (a writer does it at the end of each run: :meth:`warm`); otherwise it answers from
what Milvus holds.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Collection, Sequence
from typing import Any

from sleuth.errors import ConfigError, SleuthError, StorageError
from sleuth.lanes.base import LaneBase, LaneContext, LaneQuery, LaneSkipped, LaneStatus
from sleuth.lanes.lexical import INDEX_FIELD_BOOSTS
from sleuth.lanes.registry import LaneSpec
from sleuth.lanes.vector import VectorLane, no_vectors_reason
from sleuth.scaleout import asked_once
from sleuth.store.milvus import MilvusIndex, MilvusSettings, expressions, unreachable_message
from sleuth.store.urls import redact_url
from sleuth.text import ParsedQuery
from sleuth.types import RankedList

log = logging.getLogger(__name__)

#: The local lanes Milvus answers for, and the classes that do.
MILVUS_LANES = {
    "bm25": "MilvusBM25Lane",
    "index": "MilvusIndexLane",
    "tfidf": "MilvusTfidfLane",
    "vector": "MilvusVectorLane",
}


#: How long a process trusts that Milvus still holds what it last found synced while the catalog
#: does not change (then it checks the collections' marks again: a Milvus database emptied or
#: replaced meanwhile is synced again; :mod:`sleuth.store.milvus_sync`).
MILVUS_RECHECK_INTERVAL_S = 30.0
#: After Milvus could not be reached, how long a process answers with that error before it tries
#: to connect again (an engine opened for ``sleuth status`` or ``doctor`` asks several times).
MILVUS_RETRY_INTERVAL_S = 30.0


class MilvusShared:
    """One :class:`MilvusIndex` per engine, opened when a lane first needs it, and its sync."""

    def __init__(self, context: LaneContext, unreachable_ok: bool = False) -> None:
        cfg = context.config
        assert cfg.milvus_uri is not None
        self.context = context
        #: Searching and serving (:func:`milvus_lane_specs`): a warm-up that cannot reach Milvus is logged.
        self.unreachable_ok = unreachable_ok
        settings = MilvusSettings(cfg.milvus_uri, cfg.milvus_collection, cfg.milvus_dense_index,
                                  cfg.milvus_consistency, cfg.milvus_partitions)
        if cfg.milvus_sync_part_blocks is not None:
            settings = dataclasses.replace(settings, sync_part_blocks=cfg.milvus_sync_part_blocks)
        self.settings = settings
        self._index: MilvusIndex | None = None
        self._lock = threading.Lock()
        self._synced: tuple[int, str | None] | None = None
        self._checked_at = 0.0  # time.monotonic() when Milvus was last found up to ``_synced``
        self._failed: tuple[float, SleuthError] | None = None  # (time.monotonic(), why) of the last failed open
        #: ``(time.perf_counter() when it ended, seconds it took)`` of the last sync that changed Milvus.
        self.last_sync: tuple[float, float] | None = None

    @property
    def index(self) -> MilvusIndex:
        """The Milvus index, opened on first use.

        Raises:
            StorageError: Milvus cannot be reached (the same error again for
                ``MILVUS_RETRY_INTERVAL_S`` after a failed try).
            ConfigError: a setting the backend would ignore.
        """
        with self._lock:
            if self._index is None:
                if self._failed is not None and time.monotonic() - self._failed[0] < MILVUS_RETRY_INTERVAL_S:
                    raise self._failed[1]
                try:
                    self._index = MilvusIndex(self.settings, self.context.catalog)
                except (StorageError, ConfigError) as exc:
                    self._failed = (time.monotonic(), exc)
                    raise
                self._failed = None
            return self._index

    def unreachable(self) -> str | None:
        """Why Milvus cannot be used now, else None: the client opened if it was not (a failed open's
        error is given again for ``MILVUS_RETRY_INTERVAL_S``), then asked its version
        (:meth:`MilvusIndex.unreachable`: a server gone since the client opened). What status and
        doctor report: asked once per report (:func:`sleuth.scaleout.one_report`); never raises."""
        return asked_once(self, "unreachable", self._unreachable_now)

    def _unreachable_now(self) -> str | None:
        try:
            index = self.index
        except (StorageError, ConfigError) as exc:
            return str(exc)
        return index.unreachable()

    def close(self) -> None:
        """Close the Milvus client (the engine closes; a later use opens a new one)."""
        with self._lock:
            index, self._index = self._index, None
        if index is not None:
            index.close()

    def model(self) -> tuple[str, int] | None:
        """``(name, dimensions)`` of the embedding model when it loads, else None."""
        embedder = self.context.model.get()
        return (embedder.name, embedder.dim) if embedder is not None else None

    def warm(self) -> None:
        """:meth:`sync`, at the end of a write (the lanes' ``warm``). Searching and serving
        (``unreachable_ok``): a Milvus that cannot be reached, that fails meanwhile or that refuses
        this index (a setting of the backend's, another index's collections: ConfigError) is
        logged, not raised; the catalog holds the write (a record written over MCP or HTTP is kept
        and its receipt returned, never to be written twice by a retry), each search names the
        reason in its failed lanes, and the next sync that reaches Milvus catches up.

        Raises:
            StorageError, ConfigError: without ``unreachable_ok``.
        """
        try:
            self.sync()
        except Exception as exc:  # also pymilvus' MilvusException when the server went away after the open
            if not self.unreachable_ok or not (isinstance(exc, StorageError | ConfigError)
                                               or type(exc).__module__.startswith(("pymilvus", "grpc"))):
                raise
            log.warning("Milvus is not up to the catalog (its next sync catches up): %s", exc)

    def sync(self) -> None:
        """Bring Milvus up to the catalog when this process may write (holds or can take the lock)."""
        catalog = self.context.catalog
        model = self.model()
        key = (catalog.generation(), catalog.get_meta(f"vectors:{model[0]}") if model else None)
        if key == self._synced and time.monotonic() - self._checked_at < MILVUS_RECHECK_INTERVAL_S:
            return
        index = self.index
        if not index.behind(model[0] if model else None):
            self._synced, self._checked_at = key, time.monotonic()
            return
        with self.context.lane_files_writable() as allowed:
            if allowed:
                began = time.perf_counter()
                if index.sync(*(model or (None, 0))):
                    ended = time.perf_counter()
                    self.last_sync = (ended, ended - began)
                self._synced, self._checked_at = key, time.monotonic()

    def synced_since(self, started: float) -> float | None:
        """Seconds taken by a sync that changed Milvus and ended after ``started`` (a
        ``time.perf_counter()``: a search's start; it waited for that sync), else None."""
        last = self.last_sync
        return last[1] if last is not None and last[0] >= started else None


def filters(lane: str, context: LaneContext, q: LaneQuery) -> list[str]:
    """The Milvus filter expressions of ``q`` (:func:`sleuth.store.milvus.expressions`; ``[]``:
    nothing can match), the blocks of its quoted phrases read from the local postings.

    Raises:
        LaneSkipped: more blocks or documents to list than ``sleuth.store.milvus.MILVUS_FILTER_IDS_MAX``.
    """
    phrase_blocks = context.phrase_blocks(q) if q.parsed.phrases else None
    if phrase_blocks is not None and not phrase_blocks:
        return []
    try:
        return expressions(q.projects, q.doc_filter, q.doc_ids, phrase_blocks)
    except ValueError as exc:
        what = ("the quoted phrase is too common" if phrase_blocks is not None else
                "the filter allows too many documents")
        raise LaneSkipped(f"{what} for the {lane} lane in Milvus ({exc}): the other lanes answer") from None


class _MilvusLexical(LaneBase):
    """A lexical lane over the ``lex`` or ``tfidf`` sparse field of ``<collection>_lex``."""

    field = "lex"

    def __init__(self, context: LaneContext, shared: MilvusShared) -> None:
        self.context, self.shared = context, shared

    def synced_since(self, started: float) -> float | None:
        """See :meth:`MilvusShared.synced_since`."""
        return self.shared.synced_since(started)

    def query_vector(self, parsed: ParsedQuery) -> dict[int, float]:
        raise NotImplementedError

    def applies(self, parsed: ParsedQuery) -> bool:
        """Only a query with a word that is not a stop word has something to look up."""
        return bool(parsed.terms)

    def warm(self) -> None:
        self.shared.warm()

    def close(self) -> None:
        self.shared.close()

    def status(self) -> LaneStatus:
        """Milvus' version and location, the generation it holds and the rows of ``<collection>_lex``
        (the same for the three lexical lanes: asked once per report, :func:`sleuth.scaleout.one_report`);
        unavailable with the reason when Milvus cannot be reached."""
        found = asked_once(self.shared, "lex_status", self._status_now)
        return dataclasses.replace(found, details=dict(found.details) if found.details is not None else None)

    def _status_now(self) -> LaneStatus:
        why = self.shared.unreachable()
        if why is not None:
            return LaneStatus(False, why)
        index = self.shared.index
        try:
            rows = index.count(index.lex)
        except Exception as exc:  # noqa: BLE001 - pymilvus.MilvusException, grpc errors: gone since the ping
            return LaneStatus(False, unreachable_message(self.shared.settings.uri, exc))
        return LaneStatus(True, details={"backend": index.server_version, "uri": redact_url(self.shared.settings.uri),
                                         "milvus_generation": index.state().get("generation"), "rows": rows})

    def rows_being_rewritten(self) -> bool:
        """Whether a sync of ``<collection>_lex`` has not ended (``lex_sync`` in ``milvus:state``:
        another process syncing, or one stopped mid-way whose sync this process could not finish).
        A search then answers from the rows the sync before it left, with the documents this one
        has reached updated (a rebuild fills a collection of its own, which the alias names only
        when it is whole: :mod:`sleuth.store.milvus_sync`); the response's notice says so."""
        return "lex_sync" in self.shared.index.state()

    def search(self, q: LaneQuery) -> RankedList:
        self.shared.sync()
        if not q.parsed.terms or (q.doc_ids is not None and not q.doc_ids):
            return RankedList(self.name, (), ())
        vector = self.query_vector(q.parsed)
        if not vector:
            return RankedList(self.name, (), ())
        exprs = filters(self.name, self.context, q)
        if not exprs:
            return RankedList(self.name, (), ())
        index = self.shared.index
        ids, scores = index.search_any(index.lex, self.field, vector, q.k, exprs)
        return RankedList(self.name, tuple(ids), tuple(scores))


class _MilvusBM25(_MilvusLexical):
    boosts: dict[str, float] = {"body": 1.0}

    def query_vector(self, parsed: ParsedQuery) -> dict[int, float]:
        from sleuth.lanes import sparse

        pairs = parsed.weighted_terms()
        index = self.shared.index
        ids = [sparse.term_id(f, t) for f, b in self.boosts.items() if b > 0 for t, _ in pairs]
        df = index.document_frequencies(ids)
        return sparse.bm25_query(pairs, self.boosts, df, int(index.stats().get("n", 0)))


class MilvusBM25Lane(_MilvusBM25):
    """``bm25``: BM25 over the block body."""

    name = "bm25"


class MilvusIndexLane(_MilvusBM25):
    """``index``: BM25 per field (title, heading, tags, path, body), weighted by ``INDEX_FIELD_BOOSTS``."""

    name = "index"
    boosts = dict(INDEX_FIELD_BOOSTS)


class MilvusTfidfLane(_MilvusLexical):
    """``tfidf``: cosine of sublinear TF-IDF vectors."""

    name = "tfidf"
    field = "tfidf"

    def query_vector(self, parsed: ParsedQuery) -> dict[int, float]:
        from sleuth.lanes import sparse

        pairs = parsed.weighted_terms()
        index = self.shared.index
        df = index.document_frequencies(sparse.term_id("body", t) for t, _ in pairs)
        return sparse.tfidf_query(pairs, df, int(index.stats().get("n", 0)))


class MilvusVectorLane(VectorLane):
    """``vector``: cosine of embeddings in ``<collection>_dense`` (query embedded here, as locally)."""

    def __init__(self, context: LaneContext, shared: MilvusShared) -> None:
        super().__init__(context)
        self.shared = shared

    def unavailable(self) -> str | None:
        embedder = self.context.model.get()
        if embedder is None:
            return self.context.model.unavailable()
        have, total = self.context.catalog.vector_counts(embedder.name, dim=embedder.dim)
        return no_vectors_reason(embedder.name, self.embedding_running()) if total and not have else None

    def status(self) -> LaneStatus:
        """The local lane's status (model and the catalog's counts), unavailable as well when Milvus
        cannot be reached (:meth:`MilvusShared.unreachable`): a search would fail."""
        status = super().status()
        why = self.shared.unreachable() if status.available else None
        return status if why is None else LaneStatus(False, why, status.details)

    def pending_documents(self) -> int:
        return len(self.shared.index.state().get("pending", []))

    def pending_doc_ids(self) -> Collection[str]:
        """The ids of the documents :meth:`pending_documents` counts."""
        return list(self.shared.index.state().get("pending", []))

    def synced_since(self, started: float) -> float | None:
        """See :meth:`MilvusShared.synced_since`."""
        return self.shared.synced_since(started)

    def warm(self) -> None:
        self.shared.warm()

    def close(self) -> None:
        self.shared.close()

    def search(self, q: LaneQuery) -> RankedList:
        self.shared.sync()
        if not q.parsed.text or (q.doc_ids is not None and not q.doc_ids):
            return RankedList(self.name, (), ())
        index = self.shared.index
        if not index.client.has_collection(index.dense):
            return RankedList(self.name, (), ())
        exprs = filters(self.name, self.context, q)
        if not exprs:
            return RankedList(self.name, (), ())
        vector = self.query_vector(q.parsed.text)
        ids, scores = index.search_any(index.dense, "dense", vector.astype("float32").tolist(), q.k, exprs)
        keep = [(b, s) for b, s in zip(ids, scores, strict=True) if s >= self.min_similarity]
        return RankedList(self.name, tuple(b for b, _ in keep), tuple(s for _, s in keep))


def milvus_lane_specs(specs: Sequence[LaneSpec], context: LaneContext, open_now: bool = True,
                      unreachable_ok: bool = False) -> list[LaneSpec]:
    """``specs`` with the lanes of ``MILVUS_LANES`` built over one shared Milvus index (names,
    weights and families kept, so fusion weights apply unchanged).

    Args:
        open_now: open the Milvus index now (False: when a lane first needs it, so an engine
            opened for ``sleuth status`` or ``doctor`` opens without Milvus and says why).
        unreachable_ok: with ``open_now``, an unreachable Milvus does not fail the open: the
            Milvus lanes fail when used (named in a search's failed lanes, tried again after
            ``MILVUS_RETRY_INTERVAL_S``) while the local lanes answer (searching and serving).
    Raises:
        StorageError: Milvus cannot be reached (with ``open_now``, without ``unreachable_ok``).
        ConfigError: a Milvus setting the backend would ignore (with ``open_now``).
    """
    shared = MilvusShared(context, unreachable_ok)
    if open_now:
        try:
            shared.index  # noqa: B018 - opened now: an unreachable server or a refused setting fails the engine's open
        except StorageError:
            if not unreachable_ok:
                raise
    classes: dict[str, Any] = {name: globals()[cls] for name, cls in MILVUS_LANES.items()}

    def builder(cls: Any) -> Any:
        return lambda ctx: cls(ctx, shared)

    return [dataclasses.replace(s, build=builder(classes[s.name])) if s.name in classes else s for s in specs]
