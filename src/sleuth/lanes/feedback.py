"""Pseudo-relevance feedback for the lexical lanes: RM3. Pure functions.

RM3 (Abdul-Jaleel et al., "UMass at TREC 2004: Novelty and HARD", 2004; Lavrenko & Croft,
"Relevance-Based Language Models", SIGIR 2001), as Anserini implements it: the top ``fb_docs``
blocks of a first retrieval are taken as relevant; the relevance model is

    P(w | R) ∝ Σ_{d ∈ F} P(w | d) · P(Q | d),   P(w | d) = tf(w, d) / |d|,

with ``P(Q | d)`` the first round's score of ``d`` normalised over ``F``. Its ``fb_terms`` most
likely terms, renormalised, are interpolated with the query's own model ``P(w | Q) = qtf / |Q|``:

    weight(w) = λ · P(w | Q) + (1 - λ) · P(w | R),   λ = ``original_weight``,

and the second round scores ``Σ_w weight(w) · BM25(w, d)``.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter
from collections.abc import Sequence

#: Anserini's RM3 defaults (fbDocs 10, fbTerms 10, originalQueryWeight 0.5).
RM3_FEEDBACK_BLOCKS = 10
RM3_FEEDBACK_TERMS = 10
RM3_ORIGINAL_WEIGHT = 0.5


def rm3_weights(query: Sequence[tuple[str, float]], feedback: Sequence[tuple[float, Sequence[str]]],
                fb_terms: int = RM3_FEEDBACK_TERMS,
                original_weight: float = RM3_ORIGINAL_WEIGHT) -> list[tuple[str, float]]:
    """The RM3 query: ``[(term, weight)]``, the query's terms first (in query order), then the
    expansion terms by descending weight (ties by term); weights add up to 1, none is 0. Without
    feedback (no block with a positive score, ``fb_terms`` 0 or λ 1) it is the query's own model.

    Args:
        query: ``[(term, qtf)]`` of the original query (distinct terms, qtf > 0).
        feedback: ``[(first-round score, terms of the block in order)]`` of the feedback blocks.
        fb_terms: how many relevance-model terms are kept (>= 0).
        original_weight: λ in [0, 1].
    Raises:
        ValueError: ``original_weight`` outside [0, 1] or ``fb_terms`` negative.
    """
    if not 0.0 <= original_weight <= 1.0:
        raise ValueError(f"original_weight must be in [0, 1], got {original_weight}")
    if fb_terms < 0:
        raise ValueError(f"fb_terms must be >= 0, got {fb_terms}")
    total_qtf = sum(n for _, n in query)
    if not total_qtf:
        return []
    docs = [(s, terms) for s, terms in feedback if s > 0 and terms]
    if not docs or fb_terms == 0 or original_weight == 1.0:
        return _normalised({t: n / total_qtf for t, n in query}, [t for t, _ in query])
    weights = {t: original_weight * n / total_qtf for t, n in query}
    total_score = math.fsum(s for s, _ in docs)
    relevance: dict[str, float] = {}
    shared: dict[str, list[float]] = {}  # the terms of several feedback blocks: their parts
    for s, terms in docs:
        length, share = len(terms), s / total_score
        for term, tf in Counter(terms).items():
            part = (tf / length) * share
            if term in relevance:
                if term in shared:
                    shared[term].append(part)
                else:
                    shared[term] = [relevance[term], part]
            else:
                relevance[term] = part
    # fsum: a term's probability does not depend on the order of the feedback blocks (a term of
    # one block is its one part)
    for term, parts in shared.items():
        relevance[term] = math.fsum(parts)
    top = _most_likely(relevance, fb_terms)
    mass = math.fsum(p for _, p in top)
    for term, p in top:
        weights[term] = weights.get(term, 0.0) + (1.0 - original_weight) * p / mass
    return _normalised(weights, [t for t, _ in query])


def _most_likely(relevance: dict[str, float], n: int) -> list[tuple[str, float]]:
    """The ``n`` most likely terms, by descending probability, ties by term: the same as sorting
    every term, with only the terms at or above the ``n``-th largest probability sorted."""
    if n <= 0:
        return []
    if len(relevance) > n:
        floor = heapq.nlargest(n, relevance.values())[-1]
        candidates = [(t, p) for t, p in relevance.items() if p >= floor]
    else:
        candidates = list(relevance.items())
    return sorted(candidates, key=lambda kv: (-kv[1], kv[0]))[:n]


def _normalised(weights: dict[str, float], query_order: list[str]) -> list[tuple[str, float]]:
    """``weights`` scaled to add up to 1, zero weights left out, query terms first."""
    weights = {t: w for t, w in weights.items() if w > 0}
    total = math.fsum(weights.values())
    if total <= 0:
        return []
    first = [t for t in query_order if t in weights]
    rest = sorted((t for t in weights if t not in set(first)), key=lambda t: (-weights[t], t))
    return [(t, weights[t] / total) for t in [*first, *rest]]
