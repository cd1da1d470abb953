"""What every lane (retriever) takes, returns and is built from.

A lane is built by the registry (:mod:`sleuth.lanes.registry`) from a :class:`LaneContext` (the
index folder's shared parts) and owns whatever it derives from the catalog: it loads it, brings
it up to the catalog's generation, caches it, and says why it cannot answer when it cannot.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import numpy as np

from sleuth.text import ParsedQuery
from sleuth.types import RankedList

if TYPE_CHECKING:
    from sleuth.config import Config
    from sleuth.lanes.model import SharedModel
    from sleuth.lanes.postings import Postings
    from sleuth.store.catalog import Catalog


class LaneSkipped(Exception):
    """Raised by a lane's ``search`` that cannot answer this query while the search goes on
    without it; the response lists the lane as skipped, with ``reason`` (readable, for the user)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass(frozen=True)
class DocFilter:
    """The document filters of a search, as given (empty: no filter; recorded-time bounds in ns
    since the epoch, inclusive): what ``LaneQuery.doc_ids`` was resolved from, for a lane that
    filters by document fields itself (a Milvus expression) instead of by a list of documents."""

    labels: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    families: tuple[str, ...] = ()
    recorded_after_ns: int | None = None
    recorded_before_ns: int | None = None


@dataclass(frozen=True)
class LaneQuery:
    """A lane's input: the parsed query, how many blocks to return at most (``k``), and the
    filters every lane applies *before* its top-k cut (``projects``: project ids, None = all;
    ``doc_ids``: the only documents that may be returned, None = all; ``doc_filter``: the filters
    ``doc_ids`` was resolved from, when it was)."""

    parsed: ParsedQuery
    k: int
    projects: tuple[str, ...] | None = None
    doc_ids: frozenset[str] | None = None
    doc_filter: DocFilter | None = None


@dataclass(frozen=True)
class LaneContext:
    """The parts of an open index a lane is built from.

    Attributes:
        index_dir: the index folder (lane files live beside the catalog).
        catalog: the catalog, the source of truth every derived index is rebuilt from.
        postings: the tantivy postings shared by the lanes served from them.
        config: the ranking settings.
        model: the embedding model, loaded once and shared with the indexer.
        lane_files_writable: a context manager yielding whether this process may write lane files
            now (it holds the index's write lock).
        phrase_blocks: the block ids holding every quoted phrase of a query (for lanes that cannot
            check phrases themselves).
    """

    index_dir: Path
    catalog: Catalog
    postings: Postings
    config: Config
    model: SharedModel
    lane_files_writable: Callable[[], contextlib.AbstractContextManager[bool]]
    phrase_blocks: Callable[[LaneQuery], set[str]]


@dataclass(frozen=True)
class LaneStatus:
    """A lane's health for ``sleuth status`` and ``doctor``: can it answer, why not, and details."""

    available: bool
    reason: str | None = None
    details: dict[str, Any] | None = None


@runtime_checkable
class Lane(Protocol):
    """A retriever: ``search`` returns at most ``q.k`` blocks, best first, each matching the query.

    ``applies(parsed)`` says whether the lane has anything to look for in a query (the exact lane
    needs a quoted phrase or an identifier); ``unavailable()`` why it cannot run now (None: it
    can), cheaply; ``warm()`` loads or builds what it derives, so that a first query does not;
    ``status()`` its health.
    """

    name: str

    def search(self, q: LaneQuery) -> RankedList: ...

    def applies(self, parsed: ParsedQuery) -> bool: ...

    def unavailable(self) -> str | None: ...

    def warm(self) -> None: ...

    def status(self) -> LaneStatus: ...


class LaneBase:
    """Defaults for a lane: applies to every query, always available, nothing to warm."""

    name = ""

    def applies(self, parsed: ParsedQuery) -> bool:
        return not parsed.is_empty

    def unavailable(self) -> str | None:
        return None

    def warm(self) -> None:
        return None

    def status(self) -> LaneStatus:
        reason = self.unavailable()
        return LaneStatus(reason is None, reason)


def doc_mask(block_ids: np.ndarray, doc_ids: Collection[str], cache: dict[str, np.ndarray]) -> np.ndarray:
    """Boolean mask over ``block_ids`` (``<doc_id>:<suffix>`` strings, shape (n,)): true where the
    block's document is in ``doc_ids``. ``cache`` keeps the block → document column between calls
    (pass a dict owned by the object holding ``block_ids``)."""
    docs = cache.get("doc_of_block")
    if docs is None or len(docs) != len(block_ids):
        docs = np.asarray([b.partition(":")[0] for b in block_ids.tolist()], dtype=object)
        cache["doc_of_block"] = docs
    return np.isin(docs, np.asarray(list(doc_ids), dtype=object))
