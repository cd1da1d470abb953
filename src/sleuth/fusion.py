"""Weighted reciprocal rank fusion with blocks grouped to documents. Pure functions.

RRF as in Cormack, Clarke & Büttcher 2009: ``score(d) = Σ_lanes w_lane / (k + rank_lane(d))``
with 1-based ranks and k = 60. Lanes rank *blocks*; each lane's list is first grouped to documents
(a document's rank in a lane is the rank of its best block there, "MaxP"), so a document with many
matching blocks is not counted several times by one lane. A document absent from a lane gets
nothing from it. Each fused document carries its per-lane trace, whose contributions add up to
its score.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from itertools import repeat
from operator import add
from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:  # annotations only: pure, and free of pydantic (sleuth.types) at import
    from sleuth.types import RankedList

#: The RRF constant k (Cormack et al. 2009; the seed's value).
RRF_K = 60


#: The ``lane`` of a trace entry that is no lane's: a document moved above one it supersedes
#: (:func:`sleuth.pipeline.fuse.order_superseded`); its contribution is what raised the document's
#: score to that one's.
SUPERSEDES_TRACE = "supersedes"


class LaneTrace(NamedTuple):
    """One lane's part in a document's fused score (a named tuple: built for every fused
    document of every search)."""

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
    #: Found by the semantic (vector) lane alone, not by a lexical lane (see sleuth.ranking).
    semantic_only: bool = False
    #: ``{lane: the lane it repeats}`` of the search (:func:`repeated_lanes`), set on the documents
    #: whose trace holds such a lane (weight and contribution 0: not counted); None when none does.
    repeats: Mapping[str, str] | None = None
    #: Ids of the documents it supersedes that it was moved above (sleuth.pipeline.fuse.order_superseded),
    #: in the order of the trace's :data:`SUPERSEDES_TRACE` entries, one each.
    moved_above: list[str] = field(default_factory=list)

    @property
    def sources(self) -> list[str]:
        """Lanes that returned at least one block of this document, in trace order."""
        return [t.lane for t in self.trace if t.lane != SUPERSEDES_TRACE]


def group_by_document(ranked: RankedList, doc_of: Callable[[str], str]) -> list[tuple[str, list[str], float]]:
    """Collapse a lane's block list to ``[(doc_id, [block_ids best first], best_score)]`` in rank order."""
    docs = list(map(doc_of, ranked.block_ids))
    if len(set(docs)) == len(docs):  # each document once (most lists): nothing to collapse
        return list(zip(docs, [[b] for b in ranked.block_ids], ranked.scores, strict=True))
    order: dict[str, tuple[list[str], float]] = {}
    for block_id, doc_id, score in zip(ranked.block_ids, docs, ranked.scores, strict=True):
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
    return _documents(scores, traces, doc_blocks, limit)


def convex(
    lists: Sequence[RankedList],
    doc_of: Callable[[str], str],
    weights: Mapping[str, float],
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


#: Documents of each lane whose scores set its mean and spread in :func:`zscore`.
ZSCORE_DEPTH_DOCS = 200
#: What a lane whose documents all score the same (one document, say) gives each of them, times its
#: weight: the best of two documents' shifted z-score ((max - min) / std = 2), so that a lane's
#: lone match counts as its clear best and is not outweighed by a spread lane's middle.
ZSCORE_FLAT = 2.0


def zscore(
    lists: Sequence[RankedList],
    doc_of: Callable[[str], str],
    weights: Mapping[str, float],
    depth_docs: int = ZSCORE_DEPTH_DOCS,
    limit: int | None = None,
) -> list[FusedDocument]:
    """Fuse lanes' block lists by a weighted sum of z-scored lane scores.

    Each lane's document scores (best block, MaxP) are standardised over its ``depth_docs`` best
    documents: ``z(d) = (s(d) - mean) / std``, shifted so that the lane's lowest of them gets 0
    (``(s(d) - min) / std``), and ``score(d) = Σ_lanes w_lane · z_lane(d)``. A document outside a
    lane's ``depth_docs`` gets nothing from it. Unlike min-max (:func:`convex`), the scale is the
    spread of the lane's scores for this query: a lane whose best documents stand out from the rest
    weighs more for that query than a lane whose scores are flat (a per-query lane confidence).
    z-score normalisation for fusion: Montague & Aslam, "Relevance Score Normalization for
    Metasearch", CIKM 2001; Bruch, Gai & Ingber, ACM TOIS 42(1), 2023, §4. A lane whose documents
    all score the same (one document) gives each of them ``w · ZSCORE_FLAT``.

    Args / returns / order: as :func:`rrf`; ``depth_docs`` >= 1. The trace's ``contribution`` is
        ``w · z``; ``rank`` the document's rank in the lane.
    Raises:
        ValueError: ``depth_docs`` < 1.
    """
    if depth_docs < 1:
        raise ValueError(f"depth_docs must be >= 1, got {depth_docs}")
    # Each lane's columns are kept, and a document's trace and blocks are put together only for the
    # documents returned (a search shows tens of the hundreds its lanes found); the scores are
    # summed lane by lane in lane order, as the trace lists them, from C (map and dict.update).
    scores: dict[str, float] = {}
    lanes: list[_ZLane] = []
    for ranked in sorted(lists, key=lambda r: r.lane):
        w = weights.get(ranked.lane, 1.0)
        if w <= 0 or not ranked.block_ids:
            continue
        lane = _z_lane(ranked, doc_of, w, depth_docs)
        if scores:
            scores.update(zip(lane.docs, map(add, map(scores.get, lane.docs, repeat(0.0)), lane.parts),
                              strict=True))
        else:
            scores = dict(zip(lane.docs, lane.parts, strict=True))
        lanes.append(lane)
    order = sorted(sorted(scores), key=scores.__getitem__, reverse=True)
    if limit is not None:
        order = order[: max(limit, 0)]
    make_trace = partial(tuple.__new__, LaneTrace)
    out: list[FusedDocument] = []
    for doc_id in order:
        trace: list[LaneTrace] = []
        parts: list[tuple[str, float]] = []
        for lane in lanes:
            i = lane.rank_of.get(doc_id)
            if i is None:
                continue
            part = lane.parts[i]
            trace.append(make_trace((lane.lane, i + 1, lane.weight, part, lane.scores[i])))
            parts.append((lane.best_blocks[i], part))
            extra = lane.extra.get(doc_id)
            if extra:
                parts += [(b, _extra_part(lane, part, lane.scores[i], lane.block_score[b])) for b in extra]
        out.append(_fused_document(doc_id, scores[doc_id], parts, trace))
    return out


def _extra_part(lane: _ZLane, part: float, best: float, score: float) -> float:
    """What a block after its document's first (its best, whose part is ``part`` and lane score
    ``best``) gets from ``lane``, its lane score being ``score``: its z-score as the best block's
    (floored at 0). In a lane whose documents all score the same (``std`` 0: one document, say),
    ``part`` times ``score / best`` (0 for a negative score): the best block's score normalised by
    the lane's best with 0 as its floor (theoretical min-max, Bruch, Gai & Ingber 2023, §4), so the
    lane still orders a document's blocks and the hit shows the section that matched best (every
    block of a lone document got the same part, and the first block id won). A lane whose best
    score is not positive gives every block ``part``."""
    if lane.std > 0:
        return lane.weight * (max(0.0, score - lane.low) / lane.std)
    if best > 0:
        return part * max(0.0, score) / best
    return part


class _ZLane(NamedTuple):
    """One lane's part in :func:`zscore`: its documents (each once, best first, at most the depth),
    their best blocks, MaxP scores and weighted z-scores (``parts``), each document's position, the
    blocks after a document's first (``extra``) with their scores, and the lane's minimum and spread."""

    lane: str
    weight: float
    docs: list[str]
    best_blocks: Sequence[str]
    scores: Sequence[float]
    parts: list[float]
    rank_of: dict[str, int]
    extra: dict[str, list[str]]
    block_score: dict[str, float]
    low: float
    std: float


def _z_lane(ranked: RankedList, doc_of: Callable[[str], str], w: float, depth_docs: int) -> _ZLane:
    """A lane's columns for :func:`zscore` (the same grouping as :func:`group_by_document`)."""
    docs = list(map(doc_of, ranked.block_ids))
    extra: dict[str, list[str]] = {}
    block_score: dict[str, float] = {}
    if len(set(docs)) == len(docs):  # each document once (most lists): nothing to collapse
        best_blocks: Sequence[str] = ranked.block_ids[:depth_docs]
        best: Sequence[float] = ranked.scores[:depth_docs]
        docs = docs[:depth_docs]
    else:
        first: dict[str, int] = {}
        keep: list[int] = []
        for i, doc_id in enumerate(docs):
            if doc_id in first:
                extra.setdefault(doc_id, []).append(ranked.block_ids[i])
            else:
                first[doc_id] = i
                keep.append(i)
        keep = keep[:depth_docs]
        docs = [docs[i] for i in keep]
        best_blocks = [ranked.block_ids[i] for i in keep]
        best = [ranked.scores[i] for i in keep]
        block_score = dict(zip(ranked.block_ids, ranked.scores, strict=True))
    mean = math.fsum(best) / len(best)
    std = math.sqrt(math.fsum([(v - mean) ** 2 for v in best]) / len(best))
    low = min(best)
    parts = [w * ((s - low) / std) for s in best] if std > 0 else [w * ZSCORE_FLAT] * len(best)
    return _ZLane(ranked.lane, w, docs, best_blocks, best, parts, dict(zip(docs, range(len(docs)), strict=True)),
                  extra, block_score, low, std)


def _documents(scores: dict[str, float], traces: dict[str, list[tuple[str, int, float, float, float]]],
               doc_blocks: dict[str, list[tuple[str, float]]], limit: int | None) -> list[FusedDocument]:
    """Fused documents by descending score (ties by id), each with its blocks best first."""
    # by id, then (a stable sort) by descending score: ties stay in id order
    order = sorted(sorted(scores), key=scores.__getitem__, reverse=True)
    if limit is not None:
        order = order[: max(limit, 0)]
    out: list[FusedDocument] = []
    # tuple.__new__ from C (LaneTrace._make is a Python call and checks a length the parts always have)
    make_trace = partial(tuple.__new__, LaneTrace)
    for doc_id in order:
        out.append(_fused_document(doc_id, scores[doc_id], doc_blocks[doc_id],
                                   list(map(make_trace, traces[doc_id]))))
    return out


def _fused_document(doc_id: str, score: float, parts: list[tuple[str, float]], trace: list[LaneTrace]) -> FusedDocument:
    """A fused document from its ``(block id, part)`` pairs (a block's parts summed: its blocks by
    descending sum, ties by id) and its lanes' trace (sorted here by descending contribution, ties
    by lane)."""
    if len(parts) == 1:  # most documents: one block from one lane
        blocks = [parts[0][0]]
    else:
        block_scores: dict[str, float] = {}
        for block_id, part in parts:
            block_scores[block_id] = block_scores.get(block_id, 0.0) + part
        blocks = sorted(block_scores, key=lambda b: (-block_scores[b], b))
    if len(trace) > 1:
        trace.sort(key=lambda t: (-t.contribution, t.lane))
    return FusedDocument(doc_id, score, blocks, blocks[0], trace)


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


#: The fusion functions by name (``Config.fusion``).
FUSION_METHODS = ("rrf", "convex", "zscore")


def fuse(lists: Sequence[RankedList], doc_of: Callable[[str], str], method: str,
         weights: Mapping[str, float], k: int = RRF_K, families: Mapping[str, str] | None = None,
         lane_order: Sequence[str] = (), limit: int | None = None,
         depth_docs: int = ZSCORE_DEPTH_DOCS) -> list[FusedDocument]:
    """Fuse lanes' block lists with ``method`` (:func:`rrf`, :func:`convex` or :func:`zscore`),
    counting a lane that repeats another (:func:`repeated_lanes`) once.

    A repeating lane's list is left out of the sum; its weight is not given to the lane it repeats,
    and when ``families`` (lane → family, e.g. ``lexical`` / ``semantic``) is given, the other lanes
    of its family share that weight in proportion to theirs, so that one family's part of the
    fused score stays what the weights give it. It stays in the trace of the documents it found, at
    its rank, with weight and contribution 0 (so the contributions still add up to the score).

    Args: as :func:`rrf` and :func:`convex`; ``lane_order``: which lane of a repeated group is kept;
        ``depth_docs``: as :func:`zscore` (a search for more documents than it passes its window).
    Raises:
        ValueError: an unknown ``method``, or ``k`` not positive.
    """
    if method not in FUSION_METHODS:
        raise ValueError(f"unknown fusion method {method!r}; choose from {', '.join(FUSION_METHODS)}")
    weights = dict(weights)
    # Each block's document looked up once (a dict's lookup from C), not once per pass over the lists.
    ids = [b for r in lists for b in r.block_ids]
    doc_of = dict(zip(ids, map(doc_of, ids), strict=True)).__getitem__
    weighed = [r for r in lists if weights.get(r.lane, 1.0) > 0 and r.block_ids]
    repeats = repeated_lanes(weighed, doc_of, lane_order) if len(weighed) > 1 else {}
    kept = [r for r in lists if r.lane not in repeats]
    if repeats and families:
        weights = _family_weights(weights, [r.lane for r in lists], repeats, families)
    if method == "rrf":
        fused = rrf(kept, doc_of, weights, k, limit)
    elif method == "convex":
        fused = convex(kept, doc_of, weights, None, limit)
    else:
        fused = zscore(kept, doc_of, weights, depth_docs, limit)
    if repeats:
        _trace_repeats(fused, [r for r in lists if r.lane in repeats], doc_of, repeats)
    return fused


def _family_weights(weights: dict[str, float], lanes: Sequence[str], repeats: Mapping[str, str],
                    families: Mapping[str, str]) -> dict[str, float]:
    """``weights`` with each repeating lane's weight shared by the kept lanes of its family."""
    out = dict(weights)
    for lane in repeats:
        family = families.get(lane)
        mates = [m for m in lanes if m not in repeats and families.get(m) == family and family is not None]
        total = sum(out.get(m, 1.0) for m in mates)
        if total > 0:
            share = out.get(lane, 1.0)
            for m in mates:
                out[m] = out.get(m, 1.0) * (1 + share / total)
    return out


def _trace_repeats(fused: list[FusedDocument], repeated: Sequence[RankedList], doc_of: Callable[[str], str],
                   repeats: Mapping[str, str]) -> None:
    """Add each repeating lane to the traces of the documents it found (weight 0, contribution 0),
    and ``repeats`` (``{lane: the lane it repeats}``) to those documents."""
    by_doc = {d.doc_id: d for d in fused}
    traced: dict[str, FusedDocument] = {}
    for ranked in sorted(repeated, key=lambda r: r.lane):
        for rank, (doc_id, _blocks, score) in enumerate(group_by_document(ranked, doc_of), start=1):
            d = by_doc.get(doc_id)
            if d is not None:
                d.trace.append(LaneTrace(ranked.lane, rank, 0.0, 0.0, score))
                traced[doc_id] = d
    for d in traced.values():  # the others' traces are in order already (_documents)
        d.trace.sort(key=lambda t: (-t.contribution, t.lane))
        d.repeats = repeats
