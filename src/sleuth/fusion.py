"""Weighted reciprocal rank fusion with blocks grouped to documents. Pure functions.

RRF as in Cormack, Clarke & Büttcher 2009: ``score(d) = Σ_lanes w_lane / (k + rank_lane(d))``
with 1-based ranks and k = 60. Lanes rank *blocks*; each lane's list is first grouped to documents
(a document's rank in a lane is the rank of its best block there, "MaxP"), so a document with many
matching blocks is not counted several times by one lane. A document absent from a lane gets
nothing from it. Each fused document carries its per-lane trace, whose contributions add up to
its score.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # annotations only: pure, and free of pydantic (sleuth.types) at import
    from sleuth.types import RankedList

#: The RRF constant k (Cormack et al. 2009; the seed's value).
RRF_K = 60


@dataclass(frozen=True)
class LaneTrace:
    """One lane's part in a document's fused score."""

    lane: str
    rank: int
    weight: float
    contribution: float
    lane_score: float


@dataclass
class FusedDocument:
    """A document after fusion: its score, its matching blocks (best first) and its trace."""

    doc_id: str
    score: float = 0.0
    block_ids: list[str] = field(default_factory=list)
    best_block_id: str = ""
    trace: list[LaneTrace] = field(default_factory=list)

    @property
    def sources(self) -> list[str]:
        """Lanes that returned at least one block of this document, in trace order."""
        return [t.lane for t in self.trace]


def group_by_document(ranked: RankedList, doc_of: Callable[[str], str]) -> list[tuple[str, list[str], float]]:
    """Collapse a lane's block list to ``[(doc_id, [block_ids best first], best_score)]`` in rank order."""
    order: dict[str, tuple[list[str], float]] = {}
    for block_id, score in zip(ranked.block_ids, ranked.scores, strict=True):
        doc_id = doc_of(block_id)
        if doc_id in order:
            order[doc_id][0].append(block_id)
        else:
            order[doc_id] = ([block_id], score)
    return [(doc_id, blocks, score) for doc_id, (blocks, score) in order.items()]


def rrf(
    lists: Sequence[RankedList],
    doc_of: Callable[[str], str],
    weights: Mapping[str, float],
    k: int = RRF_K,
    limit: int | None = None,
) -> list[FusedDocument]:
    """Fuse lanes' block lists into documents ranked by weighted RRF.

    Args:
        lists: one RankedList per lane (block ids best first).
        doc_of: maps a block id to its document id.
        weights: list name → weight (missing lists weigh 1.0; weight 0 drops a list). The lanes'
            default weights are in :mod:`sleuth.lanes.registry`.
        k: the RRF constant, > 0.
        limit: return only the best ``limit`` documents (the same as slicing the full result,
            without building the others).
    Returns:
        Documents by descending score; ties broken by document id so the order never depends on
        the order of ``lists``. A document's best block is the block with the highest summed
        block-level RRF contribution.
    Raises:
        ValueError: ``k`` is not positive.
    """
    if k <= 0:
        raise ValueError(f"RRF k must be positive, got {k}")
    # Plain dicts, lists and tuples on the hot path. Block-level sums (to choose each document's
    # best block) are only added up for the documents returned.
    scores: dict[str, float] = {}
    traces: dict[str, list[tuple[str, int, float, float, float]]] = {}
    doc_blocks: dict[str, list[tuple[str, float]]] = {}
    for ranked in sorted(lists, key=lambda r: r.lane):
        w = weights.get(ranked.lane, 1.0)
        if w <= 0:
            continue
        lane = ranked.lane
        lane_docs = 0
        seen: set[str] = set()
        for block_rank, (block_id, doc_id, lane_score) in enumerate(
                zip(ranked.block_ids, map(doc_of, ranked.block_ids), ranked.scores, strict=True), start=1):
            if doc_id in seen:
                doc_blocks[doc_id].append((block_id, w / (k + block_rank)))
                continue
            seen.add(doc_id)  # the document's best block in this lane sets its lane rank
            lane_docs += 1
            contribution = w / (k + lane_docs)
            if doc_id in scores:
                scores[doc_id] += contribution
                traces[doc_id].append((lane, lane_docs, w, contribution, lane_score))
                doc_blocks[doc_id].append((block_id, w / (k + block_rank)))
            else:
                scores[doc_id] = contribution
                traces[doc_id] = [(lane, lane_docs, w, contribution, lane_score)]
                doc_blocks[doc_id] = [(block_id, w / (k + block_rank))]
    order = sorted(scores, key=lambda d: (-scores[d], d))
    if limit is not None:
        order = order[: max(limit, 0)]
    out: list[FusedDocument] = []
    for doc_id in order:
        block_scores: dict[str, float] = {}
        for block_id, part in doc_blocks[doc_id]:  # lane by lane, so each sum adds in lane order
            block_scores[block_id] = block_scores.get(block_id, 0.0) + part
        blocks = sorted(block_scores, key=lambda b: (-block_scores[b], b))
        trace = [LaneTrace(*t) for t in traces[doc_id]]
        trace.sort(key=lambda t: (-t.contribution, t.lane))
        out.append(FusedDocument(doc_id, scores[doc_id], blocks, blocks[0], trace))
    return out
