"""Steps 3 and 4 of a search: fusion, expansion, the primary-query rerank and supersession order. Pure.

3. Fusion: every lane's list of every variant of a question joins one fusion (by default of
   z-scored lane scores, :func:`sleuth.fusion.fuse`; a list repeating another counts once); a
   variant's lists weigh ``Variant.weight`` times their lane's weight and are named ``lane#i``
   (the primary query's simply ``lane``).
4. Expansion: an expansion lane (the graph) ranks the nodes reached from the fused top documents
   (``GRAPH_SEED_DOCUMENTS``, weighted by their fused score relative to the best); its list joins a
   second fusion of the same lists.
5. Rerank (once, by the primary query): with variants, the top ``RERANK_DEPTH`` documents are
   re-scored by RRF over two rankings, the fusion of every variant and the primary query's own
   fusion; a document only a meaning lane found is marked semantic-only (and dropped when weak and
   no word of the query occurs: :mod:`sleuth.ranking`); then a document superseded by another one
   in the ranking hands its place to it (the replacement moves up to just above it, its score
   raised to at least the superseded one's, with a ``supersedes`` trace entry saying so).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping, Sequence

from sleuth.fusion import SUPERSEDES_TRACE, ZSCORE_DEPTH_DOCS, FusedDocument, LaneTrace, fuse
from sleuth.lanes import registry
from sleuth.lanes.graph import is_entity_node
from sleuth.pipeline.plan import PlannedQuestion
from sleuth.ranking import drop_weak_semantic, judge_semantic_only, semantic_lanes
from sleuth.types import RankedList

#: How many fused documents seed an expansion lane.
GRAPH_SEED_DOCUMENTS = 10
#: Reranking by the primary query: how many fused documents it reorders.
RERANK_DEPTH = 30
#: Documents fused beyond a question's window, to replace any deleted since the lanes answered.
FUSED_SPARE_DOCUMENTS = 20

#: (seeds ``[(doc_id, weight)]``, k) → the expansion lane's list.
Expand = Callable[[Sequence[tuple[str, float]], int], RankedList]


def doc_of_node(node_id: str) -> str:
    """The fusion key of a lane item: a block's document id (``<doc_id>:<suffix>``), an entity's id."""
    return node_id.partition(":")[0]


def list_name(lane: str, variant: int) -> str:
    """A lane list's name in fusion: ``lane`` for the primary query, ``lane#i`` for variant i."""
    return lane if variant == 0 else f"{lane}#{variant}"


def lane_of(name: str) -> str:
    """The lane a fused list came from (``bm25#1`` → ``bm25``)."""
    return name.partition("#")[0]


def fuse_question(question: PlannedQuestion, lists: Sequence[tuple[int, RankedList]], method: str,
                  lane_weights: Mapping[str, float], rrf_k: int, expand: Mapping[str, Expand], depth: int,
                  superseded_by: Mapping[str, set[str]], lane_order: Sequence[str] = (), window: int = 0,
                  ) -> tuple[list[FusedDocument], int]:
    """One question's ranking: fusion, expansion, rerank, semantic-only marks and supersession order
    (module docstring).

    Args:
        question: the planned question (its variants give the lists' weights).
        lists: ``(variant index, list)`` of every lane's answer.
        method: the fusion (:func:`sleuth.fusion.fuse`: ``zscore``, ``convex`` or ``rrf``).
        lane_weights: lane name → weight in that fusion (expansion lanes' included).
        rrf_k: the RRF constant.
        expand: expansion lanes by name (seeds, k) → list.
        depth: how many nodes an expansion lane returns.
        superseded_by: doc_id → ids of the documents replacing it.
        lane_order: the lanes in the order of preference when two lists repeat each other.
        window: the plan's rank window (documents); z-scores are taken over at least as many.
    Returns:
        ``(documents, dropped)``: the fused documents, best first -- the whole ranking when
        supersession, a rerank or dropped semantic-only documents need it, else at least the
        question's window plus ``FUSED_SPARE_DOCUMENTS`` -- and how many weak semantic-only ones
        were dropped.
    """
    named: list[RankedList] = []
    weights: dict[str, float] = {}
    # a semantic lane searches only the blocks holding the query's quoted phrases, if it has some:
    # what such a list found holds them as written, so is no meaning-only match
    semantic, verbatim = semantic_lanes(), set()
    for vi, ranked in lists:
        name = list_name(ranked.lane, vi)
        weights[name] = lane_weights.get(ranked.lane, 1.0) * question.variants[vi].weight
        named.append(RankedList(name, ranked.block_ids, ranked.scores))
        if ranked.lane in semantic and question.variants[vi].parsed.phrases:
            verbatim.add(name)
    with_variants = len(question.variants) > 1
    drop_weak = drop_weak_semantic(named)
    whole = bool(superseded_by) or with_variants or drop_weak
    limit = None if whole else max(question.window + FUSED_SPARE_DOCUMENTS, RERANK_DEPTH, GRAPH_SEED_DOCUMENTS)
    order = [list_name(lane, vi) for vi in range(len(question.variants)) for lane in lane_order]

    def fused_of(rankings: list[RankedList], at_most: int | None) -> list[FusedDocument]:
        groups = {r.lane: registry.match_group(lane_of(r.lane)) for r in rankings}
        # z-scores over each lane's ZSCORE_DEPTH_DOCS best documents, or over as many as are asked for
        return fuse(rankings, doc_of_node, method, weights, rrf_k, groups, order, at_most,
                    max(ZSCORE_DEPTH_DOCS, question.window, window))

    fused = fused_of(named, limit)
    semantic_found = any(r.block_ids and lane_of(r.lane) in semantic for r in named)
    if expand:
        seeding = fused[:GRAPH_SEED_DOCUMENTS]
        if drop_weak and semantic_found:
            # a weak meaning match, dropped below (no word of the query occurs), expands to nothing:
            # its links and entities would come back as results of a query that matched no word
            seeding = judge_semantic_only(seeding, True, verbatim=frozenset(verbatim))
        top = [d for d in seeding if not is_entity_node(d.doc_id)]
        best = seeding[0].score if seeding and seeding[0].score > 0 else 1.0
        seeds = [(d.doc_id, d.score / best) for d in top]
        for name, lane_expand in expand.items():
            named.append(lane_expand(seeds, depth))
            weights[name] = lane_weights.get(name, 1.0)
        fused = fused_of(named, limit)
    if with_variants:
        own = [r for r in named if "#" not in r.lane and r.lane not in expand]
        fused = rerank_by_primary(fused, fused_of(own, None), rrf_k)
    # a document is semantic-only when only semantic lanes found it: none is when they found nothing
    judged = judge_semantic_only(fused, drop_weak, verbatim=frozenset(verbatim)) if semantic_found else fused
    dropped = len(fused) - len(judged)
    return (order_superseded(judged, superseded_by) if superseded_by else judged), dropped


def rerank_by_primary(fused: list[FusedDocument], primary: list[FusedDocument], rrf_k: int,
                      depth: int = RERANK_DEPTH) -> list[FusedDocument]:
    """The head (``depth`` documents) of ``fused`` re-scored by RRF over two rankings: ``fused``
    itself and the primary query's own fusion (``primary``); a document the primary query did not
    retrieve gets only the first part. Ties keep their order. The tail is unchanged."""
    primary_rank = {d.doc_id: i for i, d in enumerate(primary, start=1)}
    head = fused[:depth]
    scored = sorted(
        ((1 / (rrf_k + i) + (1 / (rrf_k + primary_rank[d.doc_id]) if d.doc_id in primary_rank else 0.0), i, d)
         for i, d in enumerate(head, start=1)),
        key=lambda x: (-x[0], x[1]))
    return [d for _, _, d in scored] + fused[depth:]


def moved_above(doc: FusedDocument, superseded: FusedDocument, place: int) -> FusedDocument:
    """``doc`` moved to ``place`` (1-based position in the ranking), just above ``superseded``, a
    document it supersedes: its score raised to ``superseded``'s when lower (so the scores of the
    list still read in its order), and a trace entry saying so -- lane :data:`SUPERSEDES_TRACE`,
    rank ``place``, weight 1, contribution the raise (0.0 when none was needed; the contributions
    still sum to the score), lane score ``superseded``'s score -- with ``superseded``'s id in
    ``moved_above``. A new document: ``doc`` is not changed."""
    score = max(doc.score, superseded.score)
    entry = LaneTrace(SUPERSEDES_TRACE, place, 1.0, score - doc.score, superseded.score)
    return dataclasses.replace(doc, score=score, trace=[*doc.trace, entry],
                               moved_above=[*doc.moved_above, superseded.doc_id])


def order_superseded(ranked: list[FusedDocument], superseded_by: Mapping[str, set[str]]) -> list[FusedDocument]:
    """``ranked`` with each document's replacements (``superseded_by``: doc_id → ids of the documents
    replacing it) that rank below it moved up to just above it, in their own order, chains included;
    otherwise the order is kept. A superseded record that matched well thus hands its place to what
    replaced it and follows right after. Each replacement moved is :func:`moved_above` it (its score
    raised to the superseded one's, a trace entry saying so); no other document changes. Cycles
    cannot make it loop: at most ``len(ranked)`` passes."""
    ranked = list(ranked)
    for _ in range(len(ranked)):
        moved = False
        position = {d.doc_id: i for i, d in enumerate(ranked)}
        for i, d in enumerate(ranked):
            later = sorted(position[n] for n in superseded_by.get(d.doc_id, ()) if position.get(n, -1) > i)
            if later:
                newer = [moved_above(ranked[j], d, i + 1 + k) for k, j in enumerate(later)]
                rest = [x for j, x in enumerate(ranked) if j not in set(later)]
                ranked = rest[:i] + newer + rest[i:]
                moved = True
                break
        if not moved:
            break
    return ranked
