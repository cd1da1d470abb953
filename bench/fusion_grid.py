"""Fusion grids without re-running the lanes: each lane runs once per query, fusion runs offline.

    python bench/fusion_grid.py [--data ../shared/data] [--datasets scifact cranfield cisi npl]
                                [--tag NAME] [--grids rrf-weights cc ...] [--list]

For every dataset, the lane runs (bm25, tfidf, index, exact and vector, each at the engine's
evaluation depth of 500 blocks, and the RM3 second round of the bm25 lane) are computed once through
the engine (``sleuth.eval.run.EvalRun``: the index and its vectors are kept in sleuth's cache) and
pickled under ``<cache>/sleuth/grid/<dataset>.<tag>.pkl``; ``--tag`` names the code that made them
(change it when a lane changes). Each grid then fuses the saved lists with ``sleuth.fusion`` and
prints nDCG@10 (Recall@100) per dataset, and for each setting the datasets it helped and hurt
against the first row of its grid. CoSQA is reported, never tuned on: leave it out of choices.
Nothing here changes the engine's defaults; a chosen setting goes to ``sleuth.config`` by hand.
"""

from __future__ import annotations

import argparse
import os
import pickle
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from sleuth.eval import evaluate
from sleuth.eval.run import EVAL_DEPTH_DOCS, EvalRun
from sleuth.fusion import RRF_K, FusedDocument, convex, fuse, repeated_lanes, rrf
from sleuth.lanes import registry
from sleuth.lanes.base import LaneQuery
from sleuth.text import parse_query
from sleuth.types import RankedList

sys.path.insert(0, str(Path(__file__).resolve().parent))
from grid_confidence import CONFIDENCE_RULES, Rule, coverage_features

DEFAULT_LANE_WEIGHTS = registry.lane_weights()

#: Lanes run once per query, and the depth (blocks) each returns: the engine's depth for 100 results.
LANES = ("bm25", "tfidf", "index", "exact", "vector")
DEPTH_BLOCKS = 500
#: Datasets that choose defaults (CoSQA is only reported).
TUNING = ("scifact", "cranfield", "cisi", "npl")


@dataclass
class LaneRuns:
    """One dataset's saved lane answers: ``lists[qid][lane]``, ``path_of`` doc id → corpus id, qrels."""

    name: str
    lists: dict[str, dict[str, RankedList]]
    path_of: dict[str, str]
    qrels: dict[str, dict[str, int]]
    texts: dict[str, str]
    #: ``features[qid][name]``: per-query lane statistics (``coverage_features``).
    features: dict[str, dict[str, float]] = field(default_factory=dict)


def doc_of_block(block_id: str) -> str:
    return block_id.partition(":")[0]


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sleuth" / "grid"


def lane_runs(data: Path, name: str, tag: str, extra: Mapping[str, Callable[[EvalRun, str], RankedList]],
              features: Callable[[EvalRun, str, Mapping[str, RankedList]], dict[str, float]] | None = None,
              ) -> LaneRuns:
    """The saved lane runs of dataset ``name`` (computed and saved when missing)."""
    path = cache_dir() / f"{name}.{tag}.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)  # our own cache file
    started = time.perf_counter()
    run = EvalRun(data / name)
    lists: dict[str, dict[str, RankedList]] = {}
    feats: dict[str, dict[str, float]] = {}
    try:
        lanes = run.engine.lanes
        lanes["vector"].embed_queries(list(run.dataset.queries.values()))
        for qid, text in run.dataset.queries.items():
            q = LaneQuery(parse_query(text), DEPTH_BLOCKS)
            answers = {}
            for lane in LANES:
                ran = lanes[lane].unavailable() is None and lanes[lane].applies(q.parsed)
                answers[lane] = lanes[lane].search(q) if ran else RankedList(lane, (), ())
            for lane, fn in extra.items():
                answers[lane] = fn(run, text)
            lists[qid] = answers
            if features is not None:
                feats[qid] = features(run, text, answers)
        doc_ids = sorted({doc_of_block(b) for a in lists.values() for r in a.values() for b in r.block_ids})
        docs = run.engine.catalog.documents(doc_ids)
        path_of = {d: docs[d].rel_path for d in doc_ids if d in docs}
        out = LaneRuns(name, lists, path_of, run.dataset.qrels, dict(run.dataset.queries), feats)
    finally:
        run.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        pickle.dump(out, fh)
    print(f"# {name}: lane runs computed in {time.perf_counter() - started:.0f} s -> {path}", file=sys.stderr)
    return out


#: RM3 settings prototyped as extra lanes: name -> (feedback blocks, feedback terms, original weight).
RM3_SETTINGS = {f"rm3-{d}-{t}-{w}": (d, t, w) for d, t, w in (
    (10, 10, 0.5), (5, 10, 0.5), (10, 20, 0.5), (10, 10, 0.7), (3, 10, 0.5), (10, 10, 0.3),
    (5, 10, 0.7), (10, 20, 0.7), (3, 10, 0.7), (10, 10, 0.6), (20, 10, 0.7), (10, 5, 0.7),
    (10, 10, 0.7), (10, 20, 0.5), (5, 20, 0.7), (20, 20, 0.7), (10, 30, 0.7), (10, 20, 0.8))}
#: The RM3 settings the ``--no-rm3`` lane runs carry (tag s14c): RM3 as a lane beside bm25.
RM3_LANE_SETTINGS = ("rm3-10-10-0.5", "rm3-10-20-0.7", "rm3-10-20-0.5", "rm3-20-20-0.7", "rm3-10-30-0.7",
                     "rm3-10-20-0.8")


def rm3_lane(fb_docs: int, fb_terms: int, original_weight: float) -> Callable[[EvalRun, str], RankedList]:
    """The rm3 lane (sleuth.lanes.lexical.FeedbackLane) with these RM3 settings. Until 2026-12-01 this was
    a prototype that left quoted phrases out of both rounds (every lane requires them), which on CISI,
    whose queries quote words, raised the rows with RM3 by up to 0.03 (docs/EVAL.md). As the grids of the
    first two passes ran it: blocks holding no word of the query may be returned (the lane's default
    since the third pass requires one; bench/grid_terms.py compares the two)."""
    from sleuth.lanes.lexical import FeedbackLane

    def search(run: EvalRun, text: str) -> RankedList:
        lane = FeedbackLane(run.engine.postings, run.engine.catalog, fb_docs, fb_terms, original_weight,
                            query_word_required=False)
        return lane.search(LaneQuery(parse_query(text), DEPTH_BLOCKS))
    return search


#: Index lane field boosts prototyped as extra lanes (``index@<name>``): name -> boosts.
INDEX_BOOST_SETTINGS = {
    "title2": {"title": 2.0, "heading": 1.0, "tags": 1.0, "path": 0.5, "body": 1.0},
    "title3": {"title": 3.0, "heading": 1.0, "tags": 1.0, "path": 0.5, "body": 1.0},
    "title05": {"title": 0.5, "heading": 1.0, "tags": 1.0, "path": 0.5, "body": 1.0},
}


def index_lane(boosts: Mapping[str, float]) -> Callable[[EvalRun, str], RankedList]:
    """The index lane with other field boosts."""
    from sleuth.lanes.lexical import IndexLane

    def search(run: EvalRun, text: str) -> RankedList:
        lane = IndexLane(run.engine.postings, dict(boosts))
        return lane.search(LaneQuery(parse_query(text), DEPTH_BLOCKS))
    return search


Fuser = Callable[[Mapping[str, RankedList], str], list[FusedDocument]]


def score(runs: LaneRuns, fuser: Fuser) -> tuple[float, float]:
    """(nDCG@10, Recall@100) of ``fuse`` over every query of ``runs``."""
    ranking = {}
    for qid, lists in runs.lists.items():
        fused = fuser(lists, runs.texts[qid])[:EVAL_DEPTH_DOCS]
        ranking[qid] = [runs.path_of[d.doc_id] for d in fused]
    r = evaluate(ranking, runs.qrels)
    return float(r["ndcg@10"]), float(r["recall@100"])


def as_lane(lists: Mapping[str, RankedList], name: str) -> RankedList:
    """The saved list ``name`` (``lane@list``: the saved list ``list``, or ``lane@variant``, under the
    name ``lane``, so that it takes that lane's weight)."""
    lane, _, saved = name.partition("@")
    if not saved:
        return lists[name]
    ranked = lists[saved] if saved in lists else lists[name]
    return ranked if ranked.lane == lane else RankedList(lane, ranked.block_ids, ranked.scores)


def pick(lists: Mapping[str, RankedList], lanes: Sequence[str]) -> list[RankedList]:
    """The lists of ``lanes``; ``bm25@rm3-...`` is the RM3 list standing in for the bm25 lane (until
    2026-12-01 it kept the name ``rm3-...`` and so a weight of 1, not the bm25 lane's: see docs/EVAL.md),
    ``index@title2`` the index lane with other boosts."""
    return [as_lane(lists, lane) for lane in lanes]


def rrf_of(lanes: Sequence[str], weights: Mapping[str, float] | None = None, k: int = RRF_K) -> Fuser:
    w = dict(DEFAULT_LANE_WEIGHTS if weights is None else weights)

    def fuse(lists: Mapping[str, RankedList], _text: str) -> list[FusedDocument]:
        return rrf(pick(lists, lanes), doc_of_block, w, k, limit=EVAL_DEPTH_DOCS)
    return fuse


def without_repeats(lists: list[RankedList], weights: Mapping[str, float], kept_weight: str) -> tuple[
        list[RankedList], dict[str, float]]:
    """``lists`` without the lanes that repeat another; the kept lane's weight is its own
    (``own``), the largest of its group (``max``) or their sum (``sum``: the same as not collapsing)."""
    repeats = repeated_lanes(lists, doc_of_block, LANES)
    w = dict(weights)
    for lane, kept in repeats.items():
        if kept_weight == "max":
            w[kept] = max(w.get(kept, 1.0), weights.get(lane, 1.0))
        elif kept_weight == "sum":
            w[kept] = w.get(kept, 1.0) + weights.get(lane, 1.0)
    return [r for r in lists if r.lane not in repeats], w


def rrf_once(lanes: Sequence[str], kept_weight: str, weights: Mapping[str, float] | None = None,
             k: int = RRF_K) -> Fuser:
    base = dict(DEFAULT_LANE_WEIGHTS if weights is None else weights)

    def fuse(lists: Mapping[str, RankedList], _text: str) -> list[FusedDocument]:
        kept, w = without_repeats(pick(lists, lanes), base, kept_weight)
        return rrf(kept, doc_of_block, w, k, limit=EVAL_DEPTH_DOCS)
    return fuse


def cc_of(lanes: Sequence[str], weights: Mapping[str, float], floors: Mapping[str, float] | None = None,
          once: bool = False) -> Fuser:
    """Convex combination of ``lanes``; ``once``: a lane repeating another is left out (its weight
    goes to the lane it repeats)."""
    def fuse(lists: Mapping[str, RankedList], _text: str) -> list[FusedDocument]:
        chosen, w = pick(lists, lanes), weights
        if once:
            chosen, w = without_repeats(chosen, weights, "sum")
        return convex(chosen, doc_of_block, w, floors, limit=EVAL_DEPTH_DOCS)
    return fuse


def grid_table(title: str, rows: list[tuple[str, Fuser]], runs: list[LaneRuns]) -> list[str]:
    """A markdown table: one row per setting, nDCG@10 / R@100 per dataset, helped / hurt vs row 1."""
    out = [f"### {title}", "", "| setting | " + " | ".join(r.name for r in runs) + " | helped | hurt |",
           "|---|" + "---|" * (len(runs) + 2)]
    base: list[float] | None = None
    for label, fuser in rows:
        values = [score(r, fuser) for r in runs]
        ndcgs = [v[0] for v in values]
        if base is None:
            base, helped, hurt = ndcgs, "", ""
        else:
            helped = ", ".join(r.name for r, a, b in zip(runs, ndcgs, base, strict=True) if a > b + 1e-4)
            hurt = ", ".join(r.name for r, a, b in zip(runs, ndcgs, base, strict=True) if a < b - 1e-4)
        cells = " | ".join(f"{n:.4f} / {rc:.3f}" for n, rc in values)
        out.append(f"| {label} | {cells} | {helped} | {hurt} |")
        print(out[-1], flush=True)
    return [*out, ""]


GRIDS: dict[str, Callable[[], list[tuple[str, Fuser]]]] = {}


def grid(name: str) -> Callable[[Callable[[], list[tuple[str, Fuser]]]], Callable[[], list[tuple[str, Fuser]]]]:
    def register(fn: Callable[[], list[tuple[str, Fuser]]]) -> Callable[[], list[tuple[str, Fuser]]]:
        GRIDS[name] = fn
        return fn
    return register


def grid_arguments(doc: str, tag: str, grids: Sequence[str]) -> argparse.ArgumentParser:
    """The arguments every grid script takes: ``--data``, ``--datasets`` (default :data:`TUNING`),
    ``--tag`` (the lane lists' cache tag) and ``--grids`` (``grids`` by default)."""
    ap = argparse.ArgumentParser(description=doc.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--datasets", nargs="+", default=list(TUNING))
    ap.add_argument("--tag", default=tag)
    ap.add_argument("--grids", nargs="+", default=list(grids))
    return ap


def add_document_paths(data: Path, r: LaneRuns) -> None:
    """Add to ``r.path_of`` the corpus ids of documents that lists added after :func:`lane_runs`
    found (read from the dataset's index)."""
    docs = {doc_of_block(b) for a in r.lists.values() for rl in a.values() for b in rl.block_ids}
    missing = sorted(docs - set(r.path_of))
    if missing:
        run = EvalRun(data / r.name)
        try:
            found = run.engine.catalog.documents(missing)
            r.path_of.update({d: found[d].rel_path for d in missing if d in found})
        finally:
            run.close()


def print_grids(names: Sequence[str], runs: list[LaneRuns]) -> None:
    """Print the table of each grid of ``names`` (registered with :func:`grid`) over ``runs``."""
    for name in names:
        grid_table(f"{name} ({GRIDS[name].__doc__ or ''})".strip(), GRIDS[name](), runs)


@grid("lanes")
def _lanes() -> list[tuple[str, Fuser]]:
    """Each lane alone, lexical fusion, bm25+vector and the seed's hybrid (weighted RRF)."""
    return [(f"{'+'.join(lanes)}", rrf_of(lanes)) for lanes in (
        ("bm25", "tfidf", "index", "vector"), ("bm25",), ("tfidf",), ("index",), ("vector",),
        ("bm25", "tfidf", "index"), ("bm25", "vector"))]


@grid("cc")
def _cc() -> list[tuple[str, Fuser]]:
    """Convex combination of min-max (mm) or theoretical min-max (tmm: floor 0) normalised scores"""
    rows: list[tuple[str, Fuser]] = [("rrf default hybrid", rrf_of(("bm25", "tfidf", "index", "vector")))]
    for norm, floors in (("mm", None), ("tmm", {"bm25": 0.0, "tfidf": 0.0, "index": 0.0, "vector": 0.0}),
                         ("tmm v0.3", {"bm25": 0.0, "tfidf": 0.0, "index": 0.0, "vector": 0.3})):
        for alpha in (0.3, 0.4, 0.5, 0.6, 0.7):
            rows.append((f"cc {norm} bm25+vector, vector {alpha}",
                         cc_of(("bm25", "vector"), {"bm25": 1 - alpha, "vector": alpha}, floors)))
        for alpha in (0.4, 0.5, 0.6):
            lex = (1 - alpha) / 3
            rows.append((f"cc {norm} 4 lanes, vector {alpha}, lexical {lex:.3f} each",
                         cc_of(("bm25", "tfidf", "index", "vector"),
                               {"bm25": lex, "tfidf": lex, "index": lex, "vector": alpha}, floors)))
    return rows


@grid("repeats")
def _repeats() -> list[tuple[str, Fuser]]:
    """A lane whose list repeats another's, counted once (weighted RRF, seed weights)"""
    rows: list[tuple[str, Fuser]] = []
    for lanes in (("bm25", "tfidf", "index", "vector"), ("bm25", "tfidf", "index")):
        rows.append((f"{'+'.join(lanes)}, counted twice (seed)", rrf_of(lanes)))
        for kept in ("own", "max"):
            rows.append((f"{'+'.join(lanes)}, once, kept lane's weight {kept}", rrf_once(lanes, kept)))
    return rows


TMM_V03 = {"bm25": 0.0, "tfidf": 0.0, "index": 0.0, "vector": 0.3}


@grid("search")
def _search() -> list[tuple[str, Fuser]]:
    """Broad search: RRF k and weights, convex combinations of lane sets, with and without RM3"""
    rows: list[tuple[str, Fuser]] = [("rrf hybrid (seed)", rrf_of(("bm25", "tfidf", "index", "vector")))]
    for k in (10, 20, 40, 100):
        rows.append((f"rrf hybrid k {k}", rrf_of(("bm25", "tfidf", "index", "vector"), k=k)))
    for wv in (1.0, 1.5, 2.0):
        rows.append((f"rrf bm25 1 + vector {wv}", rrf_of(("bm25", "vector"), {"bm25": 1.0, "vector": wv})))
    for bm in ("bm25", "bm25@rm3-3-10-0.5", "bm25@rm3-10-10-0.5", "bm25@rm3-10-20-0.5"):
        for norm, floors in (("mm", None), ("tmm", TMM_V03)):
            for alpha in (0.4, 0.5, 0.6):
                rows += _cc_rows(bm, norm, floors, alpha, ((0.5, 0.25, 0.25), (0.6, 0.2, 0.2), (0.5, 0.5, 0.0),
                                                          (0.7, 0.3, 0.0)))
    return rows


def _cc_rows(bm: str, norm: str, floors: Mapping[str, float] | None, alpha: float,
             splits: Sequence[tuple[float, float, float]]) -> list[tuple[str, Fuser]]:
    """Convex combinations of ``bm`` (a bm25 list) + vector, and of the lexical lanes split as
    ``splits`` (bm25, tfidf, index shares of the lexical weight 1 - alpha) + vector."""
    rows = [(f"cc {norm} {bm}+vector, vector {alpha}",
             cc_of((bm, "vector"), {"bm25": 1 - alpha, "vector": alpha}, floors))]
    for split in splits:
        lex = {lane: (1 - alpha) * f for lane, f in zip(("bm25", "tfidf", "index"), split, strict=True)}
        lanes = (*(lane for lane, f in zip((bm, "tfidf", "index"), split, strict=True) if f), "vector")
        rows.append((f"cc {norm} {'+'.join(lanes)}, vector {alpha}, lexical split {split}",
                     cc_of(lanes, {**lex, "vector": alpha}, floors, once=True)))
    return rows


@grid("cc-rm3")
def _cc_rm3() -> list[tuple[str, Fuser]]:
    """Min-max convex combinations with the bm25 lane's RM3 second round, by RM3 setting"""
    rows: list[tuple[str, Fuser]] = [("rrf hybrid (seed)", rrf_of(("bm25", "tfidf", "index", "vector")))]
    for bm in ("bm25", *(f"bm25@{name}" for name in RM3_SETTINGS)):
        for alpha in (0.5, 0.6):
            rows += _cc_rows(bm, "mm", None, alpha, ((0.5, 0.25, 0.25), (0.6, 0.2, 0.2)))
    return rows


FAMILIES = {"bm25": "lexical", "tfidf": "lexical", "index": "lexical", "exact": "lexical", "rm3": "lexical",
            "vector": "semantic"}


def fused_by(method: str, lanes: Sequence[str], weights: Mapping[str, float], families: bool = True) -> Fuser:
    """The engine's own fusion (``sleuth.fusion.fuse``), repeating lanes counted once."""
    def run(lists: Mapping[str, RankedList], _text: str) -> list[FusedDocument]:
        return fuse(pick(lists, lanes), doc_of_block, method, weights, RRF_K, FAMILIES if families else None,
                    LANES, limit=EVAL_DEPTH_DOCS)
    return run


@grid("repeats-family")
def _repeats_family() -> list[tuple[str, Fuser]]:
    """A repeating lane counted once: its weight dropped, or shared by its family (sleuth.fusion.fuse)"""
    hybrid = ("bm25", "tfidf", "index", "vector")
    rows: list[tuple[str, Fuser]] = [("rrf hybrid, counted twice (seed)", rrf_of(hybrid))]
    rows.append(("rrf hybrid, once, weight dropped", fused_by("rrf", hybrid, DEFAULT_LANE_WEIGHTS, False)))
    rows.append(("rrf hybrid, once, weight to its family", fused_by("rrf", hybrid, DEFAULT_LANE_WEIGHTS, True)))
    for alpha, split in ((0.6, (0.5, 0.25, 0.25)), (0.6, (0.6, 0.2, 0.2)), (0.5, (0.6, 0.2, 0.2))):
        w = {**{lane: (1 - alpha) * f for lane, f in zip(("bm25", "tfidf", "index"), split, strict=True)},
             "vector": alpha}
        label = f"cc mm hybrid vector {alpha} split {split}"
        rows.append((f"{label}, counted twice", cc_of(hybrid, w)))
        rows.append((f"{label}, once, weight dropped", fused_by("convex", hybrid, w, False)))
        rows.append((f"{label}, once, weight to its family", fused_by("convex", hybrid, w, True)))
    lexical = ("bm25", "tfidf", "index")
    rows.append(("rrf lexical, counted twice (seed)", rrf_of(lexical)))
    rows.append(("rrf lexical, once, weight dropped", fused_by("rrf", lexical, DEFAULT_LANE_WEIGHTS, False)))
    w = {"bm25": 0.6, "tfidf": 0.2, "index": 0.2}
    rows.append(("cc mm lexical split (0.6, 0.2, 0.2), counted twice", cc_of(lexical, w)))
    rows.append(("cc mm lexical split (0.6, 0.2, 0.2), once", fused_by("convex", lexical, w, False)))
    return rows


def zscore_of(lanes: Sequence[str], weights: Mapping[str, float], depth_docs: int = 100) -> Fuser:
    """Prototype: convex combination of z-scores (each lane's document scores standardised over its
    top ``depth_docs`` documents; a document a lane did not return gets that lane's lowest z)."""
    def run(lists: Mapping[str, RankedList], _text: str) -> list[FusedDocument]:
        scores: dict[str, float] = {}
        for ranked in pick(lists, lanes):
            docs: dict[str, float] = {}
            for b, sc in zip(ranked.block_ids, ranked.scores, strict=True):
                docs.setdefault(doc_of_block(b), sc)
            top = list(docs.items())[:depth_docs]
            if not top:
                continue
            values = [v for _, v in top]
            mean = sum(values) / len(values)
            std = (sum((v - mean) ** 2 for v in values) / len(values)) ** 0.5 or 1.0
            low = (min(values) - mean) / std
            w = weights.get(ranked.lane, 1.0)
            for d, v in top:
                scores[d] = scores.get(d, 0.0) + w * ((v - mean) / std - low)
        order = sorted(scores, key=lambda d: (-scores[d], d))[:EVAL_DEPTH_DOCS]
        return [FusedDocument(d, scores[d]) for d in order]
    return run


@grid("zscore")
def _zscore() -> list[tuple[str, Fuser]]:
    """Convex combination of z-score normalised lanes (a lane whose best documents stand out weighs more)"""
    rows: list[tuple[str, Fuser]] = [("cc mm bm25+vector, vector 0.5", cc_of(("bm25", "vector"),
                                                                            {"bm25": 0.5, "vector": 0.5}))]
    for alpha in (0.4, 0.5, 0.6):
        rows.append((f"z bm25+vector, vector {alpha}",
                     zscore_of(("bm25", "vector"), {"bm25": 1 - alpha, "vector": alpha})))
        lex = {"bm25": (1 - alpha) * 0.6, "tfidf": (1 - alpha) * 0.2, "index": (1 - alpha) * 0.2}
        rows.append((f"z 4 lanes, vector {alpha}, split (0.6, 0.2, 0.2)",
                     zscore_of(("bm25", "tfidf", "index", "vector"), {**lex, "vector": alpha})))
    return rows


@grid("zscore-split")
def _zscore_split() -> list[tuple[str, Fuser]]:
    """z-score fusion: the lexical lanes' shares and the depth the z-scores are taken over"""
    rows: list[tuple[str, Fuser]] = [("rrf hybrid (seed)", rrf_of(("bm25", "tfidf", "index", "vector")))]
    for depth in (100, 50, 200):
        for alpha in (0.4, 0.5):
            for split in ((0.6, 0.2, 0.2), (0.5, 0.1, 0.4), (0.4, 0.2, 0.4), (0.5, 0.0, 0.5), (0.7, 0.1, 0.2),
                          (0.8, 0.0, 0.2)):
                lex = {lane: (1 - alpha) * f for lane, f in zip(("bm25", "tfidf", "index"), split, strict=True)}
                lanes = (*(lane for lane, f in lex.items() if f), "vector")
                rows.append((f"z depth {depth} {'+'.join(lanes)}, vector {alpha}, split {split}",
                             zscore_of(lanes, {**lex, "vector": alpha}, depth)))
    return rows


@grid("default")
def _default() -> list[tuple[str, Fuser]]:
    """The chosen default (sleuth.fusion.fuse, z-score, repeats once) beside the seed's"""
    w = {"bm25": 0.48, "tfidf": 0.12, "index": 0.12, "vector": 0.4}
    return [("rrf hybrid (seed)", rrf_of(("bm25", "tfidf", "index", "vector"))),
            ("z prototype depth 200 bm25+index+vector", zscore_of(("bm25", "index", "vector"), w, 200)),
            ("zscore bm25+index+vector (default)", fused_by("zscore", ("bm25", "index", "vector"), w)),
            ("zscore bm25+tfidf+index+vector", fused_by("zscore", ("bm25", "tfidf", "index", "vector"), w)),
            ("zscore bm25+index (lexical, no model)", fused_by("zscore", ("bm25", "index"), w)),
            ("zscore bm25+tfidf+index (lexical fusion)", fused_by("zscore", ("bm25", "tfidf", "index"), w)),
            ("zscore bm25+vector", fused_by("zscore", ("bm25", "vector"), w))]


def judged(fuser: Fuser, min_similarity: float) -> Fuser:
    """``fuser`` with weak semantic-only documents dropped (sleuth.ranking.judge_semantic_only)."""
    from sleuth.ranking import judge_semantic_only

    def run(lists: Mapping[str, RankedList], text: str) -> list[FusedDocument]:
        return judge_semantic_only(fuser(lists, text), True, min_similarity)
    return run


@grid("semantic-only")
def _semantic_only() -> list[tuple[str, Fuser]]:
    """Dropping documents found by the vector lane alone below a cosine (the default hybrid)"""
    base = fused_by("zscore", ("bm25", "index", "vector"), {"bm25": 0.48, "index": 0.12, "vector": 0.4})
    return [("none dropped", base), *((f"dropped below cosine {t}", judged(base, t)) for t in (0.4, 0.5, 0.6))]


@grid("rm3-lane")
def _rm3_lane() -> list[tuple[str, Fuser]]:
    """The RM3 second round as a lane of its own beside bm25 (not instead of it)"""
    rows: list[tuple[str, Fuser]] = [("z bm25+vector, vector 0.5", zscore_of(("bm25", "vector"),
                                                                            {"bm25": 0.5, "vector": 0.5}))]
    for setting in ("rm3-3-10-0.5", "rm3-10-10-0.5", "rm3-5-10-0.7"):
        for alpha in (0.4, 0.5):
            for r in (0.3, 0.5):
                w = {"bm25": (1 - alpha) * (1 - r), "rm3": (1 - alpha) * r, "vector": alpha}
                lanes = ("bm25", f"rm3@{setting}", "vector")
                rows.append((f"z bm25+{setting}+vector, vector {alpha}, rm3 share {r}", zscore_of(lanes, w)))
                rows.append((f"cc mm bm25+{setting}+vector, vector {alpha}, rm3 share {r}", cc_of(lanes, w)))
    return rows


@grid("rm3-beside")
def _rm3_beside() -> list[tuple[str, Fuser]]:
    """The rm3 lane beside bm25 in the z-score hybrid (tag s14c): a share of the bm25 lane's 0.48, or
    an rm3 weight of its own with the vector lane's at 0.45 or 0.5 (and those vector weights without rm3)"""
    w = {"bm25": 0.48, "index": 0.12, "vector": 0.4}
    lanes = ("bm25", "index", "vector")
    rows: list[tuple[str, Fuser]] = [("zscore bm25+index+vector (the default)", fused_by("zscore", lanes, w))]
    for wv in (0.45, 0.5):
        rows.append((f"no rm3, vector {wv}", fused_by("zscore", lanes, {**w, "vector": wv})))
    for setting in RM3_LANE_SETTINGS:
        with_rm3 = ("bm25", f"rm3@{setting}", "index", "vector")
        for share in (0.1, 0.2, 0.3):
            ws = {**w, "bm25": 0.48 * (1 - share), "rm3": 0.48 * share}
            rows.append((f"{setting}, rm3 share {share} of bm25's 0.48", fused_by("zscore", with_rm3, ws)))
        for wr, wv in ((0.06, 0.5), (0.096, 0.5), (0.096, 0.45)):
            rows.append((f"{setting}, bm25 0.48, rm3 {wr}, vector {wv}",
                         fused_by("zscore", with_rm3, {**w, "rm3": wr, "vector": wv})))
    return rows


@grid("index-boosts")
def _index_boosts() -> list[tuple[str, Fuser]]:
    """The default hybrid with the index lane's title boost changed (INDEX_BOOST_SETTINGS; tag s14 or later)"""
    w = {"bm25": 0.48, "index": 0.12, "vector": 0.4}
    rows: list[tuple[str, Fuser]] = [("zscore bm25+index+vector (the default: title 1)",
                                      fused_by("zscore", ("bm25", "index", "vector"), w))]
    for name, boosts in INDEX_BOOST_SETTINGS.items():
        rows.append((f"index lane title {boosts['title']:g}",
                     fused_by("zscore", ("bm25", f"index@{name}", "vector"), w)))
    return rows


@grid("confidence")
def _confidence() -> list[tuple[str, Fuser]]:
    """Per-query lane confidence: the default hybrid's lane weights scaled per query (tag s14b or s14c)"""
    w = {"bm25": 0.48, "index": 0.12, "vector": 0.4}
    lanes = ("bm25", "index", "vector")
    rows: list[tuple[str, Fuser]] = [("zscore bm25+index+vector (the default)",
                                      fused_by("zscore", lanes, w))]
    for label, rule in CONFIDENCE_RULES.items():
        rows.append((label, conf_of(lanes, w, rule)))
    return rows


def conf_of(lanes: Sequence[str], weights: Mapping[str, float], rule: Rule) -> Fuser:
    """z-score fusion with each query's weights set by ``rule`` (weights, lists, features)."""
    def run(lists: Mapping[str, RankedList], text: str) -> list[FusedDocument]:
        w = rule(weights, lists, CURRENT_FEATURES.get(text, {}))
        return fuse(pick(lists, lanes), doc_of_block, "zscore", w, RRF_K, FAMILIES, LANES, limit=EVAL_DEPTH_DOCS)
    return run


#: query text -> its coverage features, filled from the lane runs before the grids run.
CURRENT_FEATURES: dict[str, dict[str, float]] = {}


@grid("rm3")
def _rm3() -> list[tuple[str, Fuser]]:
    """RM3 second round for the bm25 lane: the lane alone, and in the seed's hybrid"""
    rows: list[tuple[str, Fuser]] = [("bm25", rrf_of(("bm25",)))]
    rows += [(f"bm25 {name}", rrf_of((f"bm25@{name}",))) for name in RM3_SETTINGS]
    rows.append(("rrf hybrid", rrf_of(("bm25", "tfidf", "index", "vector"))))
    rows += [(f"rrf hybrid, bm25 {name}", rrf_of((f"bm25@{name}", "tfidf", "index", "vector")))
             for name in RM3_SETTINGS]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--datasets", nargs="+", default=list(TUNING))
    ap.add_argument("--tag", default="main")
    ap.add_argument("--grids", nargs="+", default=["lanes"])
    ap.add_argument("--out", type=Path, help="append the tables to this markdown file")
    ap.add_argument("--no-rm3", action="store_true", help="leave out the RM3 lists (and compute the "
                    "index lane boost variants and the per-query coverage features instead)")
    args = ap.parse_args()
    if args.no_rm3:
        extra = {f"index@{name}": index_lane(b) for name, b in INDEX_BOOST_SETTINGS.items()}
        extra.update({name: rm3_lane(*RM3_SETTINGS[name]) for name in RM3_LANE_SETTINGS})
        feats: Callable[[EvalRun, str, Mapping[str, RankedList]], dict[str, float]] | None = coverage_features
    else:
        extra, feats = {name: rm3_lane(*setting) for name, setting in RM3_SETTINGS.items()}, None
    runs = [lane_runs(args.data, name, args.tag, extra, feats) for name in args.datasets]
    for r in runs:
        CURRENT_FEATURES.update({r.texts[qid]: f for qid, f in r.features.items()})
    lines: list[str] = []
    for name in args.grids:
        lines += grid_table(f"{name} ({GRIDS[name].__doc__ or ''})".strip(), GRIDS[name](), runs)
    if args.out:
        with args.out.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
