"""What every lane (retriever) takes and returns."""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from sleuth.text import ParsedQuery
from sleuth.types import RankedList


@dataclass(frozen=True)
class LaneQuery:
    """A lane's input: the parsed query, how many blocks to return at most (``k``), and the
    filters every lane applies *before* its top-k cut (``projects``: project ids, None = all;
    ``doc_ids``: the only documents that may be returned, None = all)."""

    parsed: ParsedQuery
    k: int
    projects: tuple[str, ...] | None = None
    doc_ids: frozenset[str] | None = None


class Lane(Protocol):
    """A retriever: ``search`` returns at most ``q.k`` blocks, best first, each matching the query."""

    name: str

    def search(self, q: LaneQuery) -> RankedList: ...


def doc_mask(block_ids: np.ndarray, doc_ids: Collection[str], cache: dict[str, np.ndarray]) -> np.ndarray:
    """Boolean mask over ``block_ids`` (``<doc_id>:<suffix>`` strings, shape (n,)): true where the
    block's document is in ``doc_ids``. ``cache`` keeps the block → document column between calls
    (pass a dict owned by the object holding ``block_ids``)."""
    docs = cache.get("doc_of_block")
    if docs is None or len(docs) != len(block_ids):
        docs = np.asarray([b.partition(":")[0] for b in block_ids.tolist()], dtype=object)
        cache["doc_of_block"] = docs
    return np.isin(docs, np.asarray(list(doc_ids), dtype=object))
