"""Per-query lane confidence for bench/fusion_grid.py: query coverage features and weight rules.

``coverage_features`` is computed once per query with the lane runs (I/O: the postings); the rules
scale a fusion's lane weights per query from those features and the lanes' lists (pure).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence

from sleuth.eval.run import EvalRun
from sleuth.lanes.postings import BLOCK_ID_FORMAT, Postings
from sleuth.text import parse_query
from sleuth.types import RankedList

#: The lanes matching the query's words, whose weights the lexical rules scale.
LEXICAL_LANES = frozenset({"bm25", "tfidf", "index", "exact", "rm3"})


def doc_of_block(block_id: str) -> str:
    return block_id.partition(":")[0]


#: How many of the bm25 lane's best blocks the coverage features look at.
COVERAGE_BLOCKS = 3


def matched_idf(postings: Postings, field: str, terms: Sequence[str], qtf: Sequence[float],
                block_ids: Sequence[str]) -> tuple[float, list[float]]:
    """How much of the query each of ``block_ids`` holds, by idf.

    Returns ``(mass, held)``: ``mass = Σ_t qtf(t) · idf(t)`` over the query's distinct ``terms``
    (aligned with ``qtf``) and ``held[i]`` the part of it whose terms block ``block_ids[i]`` holds
    in ``field`` (0 for a block not in the index). idf as the bm25 lane's (Lucene's
    ``ln(1 + (N - n + 0.5) / (n + 0.5))``, N blocks, n of them holding the term), so a term found
    nowhere weighs the most. One dictionary look-up per term and one search restricted to ``block_ids``.
    """
    import tantivy

    searcher = postings.searcher()
    blocks = max(searcher.num_docs, 1)
    weights = []
    for t, n in zip(terms, qtf, strict=True):
        df = searcher.doc_freq(field, t)
        weights.append(float(n) * math.log(1 + (blocks - df + 0.5) / (df + 0.5)))
    mass = math.fsum(weights)
    if not block_ids or mass <= 0:
        return mass, [0.0] * len(block_ids)
    parts = [(tantivy.Occur.Should, tantivy.Query.const_score_query(postings.term(field, t), w))
             for t, w in zip(terms, weights, strict=True) if w > 0]
    allowed = tantivy.Query.term_set_query(postings.schema, "block_id", list(block_ids))
    query = tantivy.Query.boolean_query([
        (tantivy.Occur.Must, tantivy.Query.const_score_query(allowed, 0.0)),
        (tantivy.Occur.Must, tantivy.Query.boolean_query(parts))])
    hits = searcher.search(query, len(block_ids), count=False).hits
    addrs = [addr for _, addr in hits]
    found = [BLOCK_ID_FORMAT % keys for keys in zip(searcher.fast_field_values("doc_key", addrs),
                                                    searcher.fast_field_values("block_key", addrs), strict=True)]
    held = dict(zip(found, (float(s) for s, _ in hits), strict=True))
    return mass, [min(held.get(b, 0.0), mass) for b in block_ids]


def coverage_features(run: EvalRun, text: str, answers: Mapping[str, RankedList]) -> dict[str, float]:
    """Per-query statistics for lane confidence: the query's idf mass, the share of it held by the
    bm25 lane's best block (``cov1``) and by the best-covered of its top blocks (``cov3``), the share
    of terms found anywhere (``known``), and the query's term count."""
    postings = run.engine.postings
    pairs = parse_query(text).weighted_terms()
    terms, qtf = [t for t, _ in pairs], [n for _, n in pairs]
    top = list(answers["bm25"].block_ids[:COVERAGE_BLOCKS])
    mass, held = matched_idf(postings, "body", terms, qtf, top) if terms else (0.0, [])
    searcher = postings.searcher()
    known = sum(n for t, n in pairs if searcher.doc_freq("body", t) > 0)
    total = sum(qtf) or 1
    return {"mass": mass, "cov1": held[0] / mass if held and mass else 0.0,
            "cov3": max(held) / mass if held and mass else 0.0, "known": known / total, "terms": float(len(terms))}


Rule = Callable[[Mapping[str, float], Mapping[str, RankedList], Mapping[str, float]], dict[str, float]]


def _lexical_times(f: Callable[[Mapping[str, float]], float]) -> Rule:
    """The lexical lanes' weights times ``f(features)`` (the vector lane's unchanged)."""
    def rule(w: Mapping[str, float], _lists: Mapping[str, RankedList], feats: Mapping[str, float]) -> dict[str, float]:
        c = f(feats)
        return {lane: v * c if lane in LEXICAL_LANES else v for lane, v in w.items()}
    return rule


def _lane_peak(ranked: RankedList, depth: int = 200) -> float:
    """How far a lane's best document stands out: (best - mean) / std over its ``depth`` best documents."""
    best: dict[str, float] = {}
    for b, sc in zip(ranked.block_ids, ranked.scores, strict=True):
        best.setdefault(doc_of_block(b), sc)
    values = list(best.values())[:depth]
    if len(values) < 3:
        return 0.0
    mean = sum(values) / len(values)
    std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
    return (values[0] - mean) / std


def _peak_times(lanes: Sequence[str], gamma: float) -> Rule:
    """Each of ``lanes``' weights times (its peak / 3) ** gamma (``_lane_peak``)."""
    def rule(w: Mapping[str, float], lists: Mapping[str, RankedList], _feats: Mapping[str, float]) -> dict[str, float]:
        out = dict(w)
        for lane in lanes:
            if lane in lists and lane in out:
                out[lane] = w[lane] * max(_lane_peak(lists[lane]), 1e-6) ** gamma / 3 ** gamma
        return out
    return rule


def _vector_cosine(ref: float, gamma: float) -> Rule:
    """The vector lane's weight times (its best cosine / ref) ** gamma."""
    def rule(w: Mapping[str, float], lists: Mapping[str, RankedList], _feats: Mapping[str, float]) -> dict[str, float]:
        s = lists["vector"].scores
        return {lane: v * (s[0] / ref) ** gamma if lane == "vector" and s else v for lane, v in w.items()}
    return rule


#: The per-query confidence rules tried (features: ``coverage_features``).
CONFIDENCE_RULES: dict[str, Rule] = {
    **{f"lexical x cov1^{g}": _lexical_times(lambda f, g=g: f.get("cov1", 1.0) ** g) for g in (0.5, 1.0, 2.0)},
    **{f"lexical x min(1, cov1 / {c})": _lexical_times(lambda f, c=c: min(1.0, f.get("cov1", 1.0) / c))
       for c in (0.3, 0.5, 0.7)},
    **{f"lexical x cov3^{g}": _lexical_times(lambda f, g=g: f.get("cov3", 1.0) ** g) for g in (0.5, 1.0, 2.0)},
    **{f"lexical x min(1, cov3 / {c})": _lexical_times(lambda f, c=c: min(1.0, f.get("cov3", 1.0) / c))
       for c in (0.3, 0.5, 0.7)},
    **{f"lexical x known^{g}": _lexical_times(lambda f, g=g: f.get("known", 1.0) ** g) for g in (0.5, 1.0, 2.0)},
    **{f"vector x peak^{g}": _peak_times(("vector",), g) for g in (0.25, 0.5)},
    **{f"bm25, vector x peak^{g}": _peak_times(("bm25", "vector"), g) for g in (0.25, 0.5, 1.0)},
    **{f"vector x (cosine@1 / {r})^{g}": _vector_cosine(r, g) for r in (0.5, 0.6) for g in (0.5, 1.0, 2.0)},
}
