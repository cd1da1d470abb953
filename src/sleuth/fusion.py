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

if TYPE_CHECKING:  # annotations only: sleuth.config imports this module, and a cold search reads the
    # config before anything else (sleuth.startup), so it stays free of pydantic (sleuth.types)
    from sleuth.types import RankedList

#: The RRF constant k (Cormack et al. 2009; the seed's value).
RRF_K = 60
#: Lane weights: the seed's bm25 / tfidf / index weights, and the exact and vector lanes'.
DEFAULT_LANE_WEIGHTS: dict[str, float] = {"bm25": 1.2, "tfidf": 0.8, "index": 1.5, "exact": 1.0, "vector": 2.0}


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
    #: Found by the semantic (vector) lane alone: no word of the query in it (see sleuth.ranking).
    semantic_only: bool = False

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
    weights: Mapping[str, float] | None = None,
    k: int = RRF_K,
    limit: int | None = None,
) -> list[FusedDocument]:
    """Fuse lanes' block lists into documents ranked by weighted RRF.

    Args:
        lists: one RankedList per lane (block ids best first).
        doc_of: maps a block id to its document id.
        weights: lane name → weight (missing lanes weigh 1.0; weight 0 drops a lane).
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
    weights = DEFAULT_LANE_WEIGHTS if weights is None else weights
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
    return _documents(scores, traces, doc_blocks, limit)


def convex(
    lists: Sequence[RankedList],
    doc_of: Callable[[str], str],
    weights: Mapping[str, float] | None = None,
    floors: Mapping[str, float] | None = None,
    limit: int | None = None,
) -> list[FusedDocument]:
    """Fuse lanes' block lists by a convex combination of normalised scores.

    Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 42(1),
    2023: ``score(d) = Σ_lanes w_lane · φ_lane(s_lane(d))`` with ``φ(s) = (s - lo) / (hi - lo)``,
    ``hi`` the lane's best score for the query and ``lo`` its lowest returned score ("min-max") or,
    for a lane in ``floors``, that fixed lower bound ("theoretical min-max", TMM). A document's lane
    score is its best block's (MaxP); a document absent from a lane gets 0 from it. Weights need not
    add up to 1 (only their ratios matter for the order).

    Args / returns / order: as :func:`rrf` (``floors``: lane → the lowest score it can return).
        The trace's ``contribution`` is ``w · φ``; ``rank`` the document's rank in the lane.
    """
    weights = DEFAULT_LANE_WEIGHTS if weights is None else weights
    floors = floors or {}
    scores: dict[str, float] = {}
    traces: dict[str, list[tuple[str, int, float, float, float]]] = {}
    doc_blocks: dict[str, list[tuple[str, float]]] = {}
    for ranked in sorted(lists, key=lambda r: r.lane):
        w = weights.get(ranked.lane, 1.0)
        if w <= 0 or not ranked.block_ids:
            continue
        lane = ranked.lane
        hi = max(ranked.scores)
        lo = min(floors.get(lane, min(ranked.scores)), hi)
        span = hi - lo

        def phi(s: float, lo: float = lo, span: float = span) -> float:
            return 1.0 if span <= 0 else min(1.0, max(0.0, (s - lo) / span))

        seen: set[str] = set()
        for block_id, lane_score in zip(ranked.block_ids, ranked.scores, strict=True):
            doc_id = doc_of(block_id)
            part = w * phi(lane_score)
            doc_blocks.setdefault(doc_id, []).append((block_id, part))
            if doc_id in seen:
                continue
            seen.add(doc_id)
            scores[doc_id] = scores.get(doc_id, 0.0) + part
            traces.setdefault(doc_id, []).append((lane, len(seen), w, part, lane_score))
    return _documents(scores, traces, doc_blocks, limit)


def _documents(scores: dict[str, float], traces: dict[str, list[tuple[str, int, float, float, float]]],
               doc_blocks: dict[str, list[tuple[str, float]]], limit: int | None) -> list[FusedDocument]:
    """Fused documents by descending score (ties by id), each with its blocks best first."""
    order = sorted(scores, key=lambda d: (-scores[d], d))
    if limit is not None:
        order = order[: max(limit, 0)]
    out: list[FusedDocument] = []
    for doc_id in order:
        block_scores: dict[str, float] = {}
        for block_id, part in doc_blocks[doc_id]:
            block_scores[block_id] = block_scores.get(block_id, 0.0) + part
        blocks = sorted(block_scores, key=lambda b: (-block_scores[b], b))
        trace = [LaneTrace(*t) for t in traces[doc_id]]
        trace.sort(key=lambda t: (-t.contribution, t.lane))
        out.append(FusedDocument(doc_id, scores[doc_id], blocks, blocks[0], trace))
    return out


def document_order(ranked: RankedList, doc_of: Callable[[str], str]) -> tuple[str, ...]:
    """The documents of a lane's block list in rank order (each once, at its best block)."""
    return tuple(dict.fromkeys(map(doc_of, ranked.block_ids)))


def repeated_lanes(lists: Sequence[RankedList], doc_of: Callable[[str], str],
                   lane_order: Sequence[str] = ()) -> dict[str, str]:
    """``{lane: the lane it repeats}`` for every lane whose documents, in order, are exactly those of
    another lane's list (a lane that adds nothing to the fusion). Of a group of identical lists the
    first in ``lane_order`` (then by name) is the one kept; empty lists repeat nothing.

    On a collection without titles, headings or tags the index lane ranks exactly as the bm25 lane
    (it adds those fields to the same body field), and would otherwise count that list twice.
    """
    position = {lane: i for i, lane in enumerate(lane_order)}
    kept: dict[tuple[str, ...], str] = {}
    out: dict[str, str] = {}
    for ranked in sorted(lists, key=lambda r: (position.get(r.lane, len(position)), r.lane)):
        docs = document_order(ranked, doc_of)
        if not docs:
            continue
        if docs in kept:
            out[ranked.lane] = kept[docs]
        else:
            kept[docs] = ranked.lane
    return out
