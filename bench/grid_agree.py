"""Issue 14, lane agreement and score shapes: per-query lane weights from the agreement of the lanes'
top documents, and normalisations of the z-score fusion not gridded before.

    python bench/grid_agree.py [--data ../shared/data] [--datasets scifact cranfield cisi npl]
                               [--tag e26] [--grids proto agreement peak-ratio minmax-depth lane-depth
                                absent absent-fine shape mix length vprf vprf-weights]

Without ``--grids`` it only computes (and caches) the lane runs. Tables of tag e26 and what they
found: bench/fusion_grids.md, "Issue 14, pass e26".

Lane runs of ``bench/fusion_grid.py`` (bm25, tfidf, index, exact, vector at 500 blocks) plus the
default rm3 lane (``sleuth.lanes.lexical.FeedbackLane`` with its defaults), saved under
``<cache>/sleuth/grid/<dataset>.<tag>.pkl``. Fusion offline; each grid's first row is the default
hybrid (bm25 0.48, index 0.12, rm3 0.096, vector 0.5, z-scores over 200 documents). ``vprf`` lists (the
vector lane searched again with a feedback query vector) are saved under ``<dataset>.<tag>.vprf.pkl``.
CoSQA is reported, never tuned on.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fusion_grid import (
    DEPTH_BLOCKS,
    FAMILIES,
    LANES,
    EvalRun,
    Fuser,
    LaneRuns,
    doc_of_block,
    fused_by,
    grid,
    grid_arguments,
    lane_runs,
    print_grids,
)

from sleuth.eval.run import EVAL_DEPTH_DOCS
from sleuth.fusion import ZSCORE_DEPTH_DOCS, ZSCORE_FLAT, FusedDocument, _family_weights, repeated_lanes
from sleuth.lanes.base import LaneQuery
from sleuth.text import parse_query
from sleuth.types import RankedList


def rm3_default(run: EvalRun, text: str) -> RankedList:
    """The engine's rm3 lane (its default settings) at the grids' depth."""
    return run.engine.lanes["rm3"].search(LaneQuery(parse_query(text), DEPTH_BLOCKS))


DEFAULT_LANES = ("bm25", "rm3", "index", "vector")
DEFAULT_W = {"bm25": 0.48, "index": 0.12, "rm3": 0.096, "vector": 0.5}
LEXICAL = ("bm25", "rm3", "index")
LANE_ORDER = (*LANES, "rm3")

#: Per-lane score transform applied before normalising (z-scores are affine-invariant: only a
#: non-linear one changes the order).
Transform = Callable[[float], float]
#: Per-query weight rule: (weights, the lanes' document lists {lane: [(doc, score)]}, query text) -> weights.
WeightRule = Callable[[Mapping[str, float], Mapping[str, list[tuple[str, float]]], str], dict[str, float]]


def doc_lists(lists: Mapping[str, RankedList], lanes: Sequence[str]) -> dict[str, list[tuple[str, float]]]:
    """Each lane's documents best first, at their best block's score (MaxP)."""
    out: dict[str, list[tuple[str, float]]] = {}
    for lane in lanes:
        best: dict[str, float] = {}
        r = lists[lane]
        for b, sc in zip(r.block_ids, r.scores, strict=True):
            d = doc_of_block(b)
            if d not in best:
                best[d] = sc
        out[lane] = list(best.items())
    return out


def proto(lanes: Sequence[str] = DEFAULT_LANES, weights: Mapping[str, float] = DEFAULT_W, *,
          norm: str = "z", depth: int | Mapping[str, int] = ZSCORE_DEPTH_DOCS,
          transform: Mapping[str, Transform] | None = None, absent: Mapping[str, float] | None = None,
          rule: WeightRule | None = None, rrf_mix: float = 0.0, rrf_k: int = 60,
          agree_bonus: tuple[float, int] | None = None) -> Fuser:
    """A prototype of ``sleuth.fusion.fuse(..., "zscore")`` with the choices it fixes made free.

    ``norm``: ``z`` (shifted z-scores: (s - min) / std, the engine's) or ``mm`` (min-max over the
    lane's ``depth`` best documents); ``depth``: documents a lane is normalised over and contributes
    (per lane or one for all); ``transform``: a per-lane function applied to the scores first;
    ``absent``: per lane, what a document outside that lane's window gets, in the lane's normalised
    units (0: the engine's; negative: a penalty); ``rule``: per-query weights; ``rrf_mix``: plus
    ``rrf_mix`` times weighted RRF scaled so that rank 1 gives the lane's weight; ``agree_bonus``
    ``(beta, n)``: a document in the top ``n`` of both the lexical family and the vector lane has its
    score times ``1 + beta``. Repeating lanes counted once, their weight to their family (as fuse).
    """
    tf = dict(transform or {})
    gone = dict(absent or {})

    def run(lists: Mapping[str, RankedList], text: str) -> list[FusedDocument]:
        chosen = [lists[lane] for lane in lanes]
        w = dict(weights)
        repeats = repeated_lanes([r for r in chosen if w.get(r.lane, 1.0) > 0], doc_of_block, LANE_ORDER)
        kept = [lane for lane in lanes if lane not in repeats]
        if repeats:
            w = _family_weights(w, list(lanes), repeats, FAMILIES)
        docs = doc_lists(lists, kept)
        if rule is not None:
            w = rule(w, docs, text)
        scores: dict[str, float] = {}
        penalties: list[tuple[float, set[str]]] = []
        for lane in sorted(kept):
            wl = w.get(lane, 1.0)
            if wl <= 0 or not docs[lane]:
                continue
            n = depth[lane] if isinstance(depth, Mapping) else depth
            top = docs[lane][:n]
            f = tf.get(lane)
            vals = [f(v) for _, v in top] if f else [v for _, v in top]
            low, hi = min(vals), max(vals)
            if norm == "z":
                mean = math.fsum(vals) / len(vals)
                spread = math.sqrt(math.fsum([(v - mean) ** 2 for v in vals]) / len(vals))
            else:
                spread = hi - low
            for rank, ((d, _), v) in enumerate(zip(top, vals, strict=True), start=1):
                part = wl * ((v - low) / spread if spread > 0 else (ZSCORE_FLAT if norm == "z" else 1.0))
                if rrf_mix:
                    part += rrf_mix * wl * (rrf_k + 1) / (rrf_k + rank)
                scores[d] = scores.get(d, 0.0) + part
            if gone.get(lane):
                penalties.append((wl * gone[lane], {d for d, _ in top}))
        for value, present in penalties:
            for d in scores:
                if d not in present:
                    scores[d] += value
        if agree_bonus is not None:
            beta, n = agree_bonus
            lex = {d for lane in kept if lane != "vector" for d, _ in docs[lane][:n]}
            vec = {d for d, _ in docs.get("vector", [])[:n]}
            for d in lex & vec:
                scores[d] *= 1 + beta
        order = sorted(scores, key=lambda d: (-scores[d], d))[:EVAL_DEPTH_DOCS]
        return [FusedDocument(d, scores[d]) for d in order]
    return run


def overlap(docs: Mapping[str, list[tuple[str, float]]], a: Sequence[str], b: str, k: int) -> float:
    """|top-k of the lanes ``a`` (union, each its own top k) ∩ top-k of ``b``| / k."""
    left = {d for lane in a if lane in docs for d, _ in docs[lane][:k]}
    right = {d for d, _ in docs.get(b, [])[:k]}
    return len(left & right) / k if right else 0.0


def agreement_rule(k: int, gamma: float, centre: float = 0.5, lexical: Sequence[str] = ("bm25",)) -> WeightRule:
    """The vector lane's weight times ``exp(gamma (o - centre))`` and the lexical lanes' divided by
    it, ``o`` the overlap of the top ``k`` documents of ``lexical`` and of the vector lane (so
    gamma > 0 trusts the vector lane more when the lanes agree, < 0 when they disagree)."""
    def rule(w: Mapping[str, float], docs: Mapping[str, list[tuple[str, float]]], _t: str) -> dict[str, float]:
        if "vector" not in docs or not docs["vector"]:
            return dict(w)
        c = math.exp(gamma * (overlap(docs, lexical, "vector", k) - centre))
        return {lane: v * c if lane == "vector" else v / c for lane, v in w.items()}
    return rule


def _peak(values: Sequence[float], top: int, depth: int = ZSCORE_DEPTH_DOCS) -> float:
    """Mean z-score of the ``top`` best of ``values`` (best first) over its ``depth`` best."""
    vals = list(values[:depth])
    if len(vals) < 3:
        return 0.0
    mean = math.fsum(vals) / len(vals)
    std = math.sqrt(math.fsum([(v - mean) ** 2 for v in vals]) / len(vals))
    return 0.0 if std <= 0 else (math.fsum(vals[:top]) / min(top, len(vals)) - mean) / std


def peak_ratio_rule(top: int, gamma: float) -> WeightRule:
    """Shift weight between the lexical family and the vector lane by their peakedness ratio, their
    sum kept: vector x r, lexical / r, ``r = (peak_vector / peak_bm25) ** (gamma / 2)`` (``_peak``)."""
    def rule(w: Mapping[str, float], docs: Mapping[str, list[tuple[str, float]]], _t: str) -> dict[str, float]:
        pv = _peak([s for _, s in docs.get("vector", [])], top)
        pb = _peak([s for _, s in docs.get("bm25", [])], top)
        if pv <= 0 or pb <= 0:
            return dict(w)
        r = (pv / pb) ** (gamma / 2)
        return {lane: v * r if lane == "vector" else v / r for lane, v in w.items()}
    return rule


def length_rule(gamma: float, median: float = 8.0) -> WeightRule:
    """The vector lane's weight times ``(terms / median) ** gamma``, lexical divided by it (terms:
    the query's distinct analysed terms)."""
    from sleuth.text import parse_query as parse

    def rule(w: Mapping[str, float], _docs: Mapping[str, list[tuple[str, float]]], text: str) -> dict[str, float]:
        n = max(1, len(parse(text).weighted_terms()))
        c = (n / median) ** gamma
        return {lane: v * c if lane == "vector" else v / c for lane, v in w.items()}
    return rule


def _base_rows() -> list[tuple[str, Fuser]]:
    return [("default: bm25+index+rm3+vector", fused_by("zscore", DEFAULT_LANES, DEFAULT_W))]


@grid("proto")
def _proto() -> list[tuple[str, Fuser]]:
    """the prototype with the engine's choices, against the engine's fusion"""
    return [*_base_rows(), ("prototype, engine's choices", proto())]


@grid("agreement")
def _agreement() -> list[tuple[str, Fuser]]:
    """per-query weights from the overlap of the lexical and vector lanes' top k documents: vector x
    exp(g (o - 0.5)), lexical / the same; o against bm25, or against the lexical lanes' union (lex)"""
    rows = _base_rows()
    for lex, name in ((("bm25",), "bm25"), (LEXICAL, "lex")):
        for k in (10, 20):
            for g in (-1.0, -0.5, 0.5, 1.0):
                rows.append((f"agree {name}@{k} g {g:g}", proto(rule=agreement_rule(k, g, lexical=lex))))
    return rows


@grid("peak-ratio")
def _peak_ratio() -> list[tuple[str, Fuser]]:
    """per-query share between the vector lane and the lexical lanes by their peakedness ratio (mean
    z of the top t documents of vector over bm25), the two families' sum of weights kept"""
    rows = _base_rows()
    for top in (1, 5, 10):
        for g in (-0.5, 0.25, 0.5, 1.0):
            rows.append((f"peak-ratio top {top} g {g:g}", proto(rule=peak_ratio_rule(top, g))))
    return rows


@grid("minmax-depth")
def _minmax_depth() -> list[tuple[str, Fuser]]:
    """min-max normalisation over each lane's top N documents (outside: 0), default weights and the
    vector lane's at 0.4 and 0.6"""
    rows = _base_rows()
    for n in (10, 20, 50, 100, 200):
        for wv in (0.4, 0.5, 0.6):
            rows.append((f"mm top {n}, vector {wv:g}", proto(weights={**DEFAULT_W, "vector": wv}, norm="mm", depth=n)))
    return rows


@grid("lane-depth")
def _lane_depth() -> list[tuple[str, Fuser]]:
    """z-scores over a depth of the vector lane's own, or of the lexical lanes' own (the others 200)"""
    rows = _base_rows()
    for n in (50, 100, 300, 500):
        rows.append((f"vector over {n}", proto(depth={"bm25": 200, "rm3": 200, "index": 200, "vector": n})))
    for n in (50, 100, 300, 500):
        rows.append((f"lexical over {n}", proto(depth={"bm25": n, "rm3": n, "index": n, "vector": 200})))
    return rows


@grid("absent")
def _absent() -> list[tuple[str, Fuser]]:
    """a document outside a lane's 200 best gets a penalty of d (in that lane's standard deviations,
    times its weight) instead of 0: in every lane, the vector lane only, the lexical lanes only"""
    rows = _base_rows()
    for d in (0.25, 0.5, 1.0, 2.0):
        rows.append((f"absent -{d:g} every lane", proto(absent=dict.fromkeys(DEFAULT_LANES, -d))))
        rows.append((f"absent -{d:g} vector only", proto(absent={"vector": -d})))
        rows.append((f"absent -{d:g} lexical only", proto(absent=dict.fromkeys(LEXICAL, -d))))
    return rows


@grid("absent-fine")
def _absent_fine() -> list[tuple[str, Fuser]]:
    """finer penalties for a document outside the vector lane's (or every lane's) 200 best"""
    rows = _base_rows()
    for d in (0.1, 0.15, 0.25, 0.35):
        rows.append((f"absent -{d:g} vector only", proto(absent={"vector": -d})))
        rows.append((f"absent -{d:g} every lane", proto(absent=dict.fromkeys(DEFAULT_LANES, -d))))
    return rows


@grid("shape")
def _shape() -> list[tuple[str, Fuser]]:
    """a non-linear transform of a lane's scores before the z-scores: exp(cosine / t) for the vector
    lane, log or square of the lexical lanes' BM25"""
    rows = _base_rows()
    for t in (0.05, 0.1, 0.2):
        rows.append((f"vector exp(s / {t:g})", proto(transform={"vector": lambda s, t=t: math.exp(s / t)})))
    for name, f in (("log(1 + s)", math.log1p), ("sqrt", math.sqrt), ("square", lambda s: s * s)):
        rows.append((f"lexical {name}", proto(transform=dict.fromkeys(LEXICAL, f))))
    rows.append(("vector square", proto(transform={"vector": lambda s: s * s})))
    return rows


@grid("mix")
def _mix() -> list[tuple[str, Fuser]]:
    """z-scores plus a weighted RRF term (rank 1 = the lane's weight, times m); and a bonus for documents
    in the top n of both the lexical lanes and the vector lane (score x (1 + b), CombMNZ-like)"""
    rows = _base_rows()
    for m in (0.25, 0.5, 1.0, 2.0):
        rows.append((f"z + {m:g} rrf", proto(rrf_mix=m)))
    for b in (0.05, 0.1, 0.2):
        for n in (10, 50):
            rows.append((f"both top {n}: x {1 + b:g}", proto(agree_bonus=(b, n))))
    return rows


@grid("length")
def _length() -> list[tuple[str, Fuser]]:
    """vector x (terms / 8) ** g, lexical / the same (terms: the query's distinct analysed terms)"""
    rows = _base_rows()
    for g in (-0.25, -0.1, 0.1, 0.25):
        rows.append((f"length g {g:g}", proto(rule=length_rule(g))))
    return rows


#: Vector pseudo-relevance feedback settings (Rocchio on the query embedding): (source of the
#: feedback documents, how many, weight of the original query vector).
VPRF_SETTINGS = tuple((src, k, a) for src in ("hybrid", "vector") for k in (3, 5, 10) for a in (0.5, 0.7))
FAMILIES["vprf"] = "semantic"


def vprf_name(src: str, k: int, a: float) -> str:
    return f"vprf-{src}-{k}-{a:g}"


def vprf_lists(data: Path, r: LaneRuns, tag: str) -> dict[str, dict[str, RankedList]]:
    """``{qid: {vprf-SRC-K-A: RankedList}}``: the vector lane searched again with the query vector
    ``A q + (1 - A) mean(v)``, renormalised, ``v`` the best blocks' vectors of the first K documents
    of SRC (the default hybrid's fused ranking, or the vector lane's own), through the lane itself
    (its similarity floor and phrase filter). Saved under ``<dataset>.<tag>.vprf.pkl``."""
    import pickle

    import numpy as np
    from fusion_grid import cache_dir

    path = cache_dir() / f"{r.name}.{tag}.vprf.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)  # our own cache file
    hybrid = fused_by("zscore", DEFAULT_LANES, DEFAULT_W)
    run = EvalRun(data / r.name)
    out: dict[str, dict[str, RankedList]] = {}
    try:
        lane = run.engine.lanes["vector"]
        m = lane.matrix()
        slot = m.slot_of()
        lane.embed_queries(list(r.texts.values()))
        for qid, text in r.texts.items():
            lists = r.lists[qid]
            q = lane.query_vector(text)
            firsts = {"hybrid": [d.best_block_id for d in hybrid(lists, text)[:10]],
                      "vector": list(lists["vector"].block_ids)}
            seen: dict[str, list[str]] = {}
            for src, blocks in firsts.items():
                docs: dict[str, str] = {}
                for b in blocks:
                    docs.setdefault(doc_of_block(b), b)
                seen[src] = list(docs.values())
            answers: dict[str, RankedList] = {}
            for src, k, a in VPRF_SETTINGS:
                rows = [slot[b] for b in seen[src][:k] if b in slot]
                if not rows:
                    answers[vprf_name(src, k, a)] = lists["vector"]
                    continue
                centroid = m.rows(np.asarray(rows, dtype=np.int64)).mean(axis=0)
                v = a * q + (1 - a) * centroid
                v = (v / np.linalg.norm(v)).astype(np.float32)
                lane._remember(text, v)
                answers[vprf_name(src, k, a)] = lane.search(LaneQuery(parse_query(text), DEPTH_BLOCKS))
            lane._remember(text, q)
            out[qid] = answers
    finally:
        run.close()
    with path.open("wb") as fh:
        pickle.dump(out, fh)
    return out


@grid("vprf")
def _vprf() -> list[tuple[str, Fuser]]:
    """vector pseudo-relevance feedback: the vector lane's query vector moved towards the first K
    documents of the default hybrid or of the vector lane (weight A kept on the query), instead of
    the vector lane, or beside it (weights 0.25 / 0.25)"""
    rows = _base_rows()
    for src, k, a in VPRF_SETTINGS:
        n = vprf_name(src, k, a)
        rows.append((f"{n} instead of vector", fused_by("zscore", (*DEFAULT_LANES[:3], f"vector@{n}"), DEFAULT_W)))
        rows.append((f"{n} beside vector", fused_by("zscore", (*DEFAULT_LANES, f"vprf@{n}"),
                                                   {**DEFAULT_W, "vector": 0.25, "vprf": 0.25})))
    return rows


@grid("vprf-weights")
def _vprf_weights() -> list[tuple[str, Fuser]]:
    """the best vprf rows beside the vector lane (vprf grid) with other (vector, vprf) weights"""
    rows = _base_rows()
    for n in ("vprf-vector-3-0.5", "vprf-vector-3-0.7", "vprf-hybrid-3-0.7"):
        for wv, wp in ((0.4, 0.1), (0.35, 0.15), (0.5, 0.1), (0.45, 0.15)):
            rows.append((f"{n} beside, vector {wv:g}, vprf {wp:g}",
                         fused_by("zscore", (*DEFAULT_LANES, f"vprf@{n}"), {**DEFAULT_W, "vector": wv, "vprf": wp})))
    return rows


def main() -> None:
    ap = grid_arguments(__doc__ or "", "e26", [])
    args = ap.parse_args()
    runs: list[LaneRuns] = []
    for name in args.datasets:
        r = lane_runs(args.data, name, args.tag, {"rm3": rm3_default})
        if any(g.startswith("vprf") for g in args.grids):
            extra = vprf_lists(args.data, r, args.tag)
            for qid, answers in r.lists.items():
                answers.update(extra.get(qid, {}))
        runs.append(r)
        print(f"# {name}: lists ready", file=sys.stderr, flush=True)
    print_grids(args.grids, runs)


if __name__ == "__main__":
    main()
