"""Fusion grids without re-running the lanes: each lane runs once per query, fusion runs offline.

    python bench/fusion_grid.py [--data ../shared/data] [--datasets scifact cranfield cisi npl]
                                [--tag NAME] [--grids rrf-weights cc ...] [--list]

For every dataset, the lane runs (bm25, tfidf, index, exact and vector, each at the engine's
evaluation depth of 500 blocks, and the RM3 second round of the bm25 lane) are computed once through
the engine (``sleuth.evaluation.EvalRun``: the index and its vectors are kept in sleuth's cache) and
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
from dataclasses import dataclass
from pathlib import Path

from sleuth.eval import evaluate
from sleuth.evaluation import EVAL_DEPTH_DOCS, EvalRun
from sleuth.fusion import DEFAULT_LANE_WEIGHTS, RRF_K, FusedDocument, convex, repeated_lanes, rrf
from sleuth.lanes.base import LaneQuery
from sleuth.lanes.feedback import rm3_weights
from sleuth.text import parse_query
from sleuth.types import RankedList

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


def doc_of_block(block_id: str) -> str:
    return block_id.partition(":")[0]


def cache_dir() -> Path:
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sleuth" / "grid"


def lane_runs(data: Path, name: str, tag: str, extra: Mapping[str, Callable[[EvalRun, str], RankedList]]) -> LaneRuns:
    """The saved lane runs of dataset ``name`` (computed and saved when missing)."""
    path = cache_dir() / f"{name}.{tag}.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)  # noqa: S301 - our own cache file
    started = time.perf_counter()
    run = EvalRun(data / name)
    lists: dict[str, dict[str, RankedList]] = {}
    try:
        run.engine.embed_queries(list(run.dataset.queries.values()))
        for qid, text in run.dataset.queries.items():
            q = LaneQuery(parse_query(text), DEPTH_BLOCKS)
            answers = {}
            for lane in LANES:
                answer = run.engine.run_lane(lane, q)
                answers[lane] = answer if not isinstance(answer, str) else RankedList(lane, (), ())
            for lane, fn in extra.items():
                answers[lane] = fn(run, text)
            lists[qid] = answers
        doc_ids = sorted({doc_of_block(b) for a in lists.values() for r in a.values() for b in r.block_ids})
        docs = run.engine.catalog.documents(doc_ids)
        path_of = {d: docs[d].rel_path for d in doc_ids if d in docs}
        out = LaneRuns(name, lists, path_of, run.dataset.qrels, dict(run.dataset.queries))
    finally:
        run.close()
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        pickle.dump(out, fh)
    print(f"# {name}: lane runs computed in {time.perf_counter() - started:.0f} s -> {path}", file=sys.stderr)
    return out


#: RM3 settings prototyped as extra lanes: name -> (feedback blocks, feedback terms, original weight).
RM3_SETTINGS = {"rm3-10-10-0.5": (10, 10, 0.5), "rm3-5-10-0.5": (5, 10, 0.5), "rm3-10-20-0.5": (10, 20, 0.5),
                "rm3-10-10-0.7": (10, 10, 0.7), "rm3-3-10-0.5": (3, 10, 0.5), "rm3-10-10-0.3": (10, 10, 0.3)}


def rm3_lane(fb_docs: int, fb_terms: int, original_weight: float) -> Callable[[EvalRun, str], RankedList]:
    """A bm25 lane with an RM3 second round (prototype: the blocks' terms read from the catalog)."""
    def search(run: EvalRun, text: str) -> RankedList:
        parsed = parse_query(text)
        postings = run.engine.postings
        pairs = parsed.weighted_terms()
        first = postings.search(postings.any_of("body", [t for t, _ in pairs], qtf=[n for _, n in pairs]),
                                fb_docs, None) if pairs else None
        if not first or not first.block_ids:
            return RankedList("bm25", (), ())
        marks = ",".join("?" * len(first.block_ids))
        terms = dict(run.engine.catalog.conn.execute(
            f"SELECT block_id, terms FROM blocks WHERE block_id IN ({marks})", first.block_ids).fetchall())
        feedback = [(s, terms[b].split()) for b, s in zip(first.block_ids, first.scores, strict=True) if b in terms]
        expanded = rm3_weights(pairs, feedback, fb_terms, original_weight)
        hits = postings.search(postings.any_of("body", [t for t, _ in expanded], qtf=[w for _, w in expanded]),
                               DEPTH_BLOCKS, None)
        return RankedList("bm25", tuple(hits.block_ids), tuple(hits.scores))
    return search


Fuser = Callable[[Mapping[str, RankedList], str], list[FusedDocument]]


def score(runs: LaneRuns, fuse: Fuser) -> tuple[float, float]:
    """(nDCG@10, Recall@100) of ``fuse`` over every query of ``runs``."""
    ranking = {}
    for qid, lists in runs.lists.items():
        fused = fuse(lists, runs.texts[qid])[:EVAL_DEPTH_DOCS]
        ranking[qid] = [runs.path_of[d.doc_id] for d in fused]
    r = evaluate(ranking, runs.qrels)
    return float(r["ndcg@10"]), float(r["recall@100"])


def as_lane(lists: Mapping[str, RankedList], name: str) -> RankedList:
    """The saved list ``name`` under the lane name it stands for (``rm3-...`` lists are bm25's)."""
    ranked = lists[name]
    lane = name.partition("@")[0]
    return ranked if ranked.lane == lane else RankedList(lane, ranked.block_ids, ranked.scores)


def pick(lists: Mapping[str, RankedList], lanes: Sequence[str]) -> list[RankedList]:
    """The lists of ``lanes``; ``bm25@rm3-...`` is the RM3 list standing in for the bm25 lane."""
    return [as_lane(lists, lane.partition("@")[2] or lane) if "@" in lane else lists[lane] for lane in lanes]


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


def cc_of(lanes: Sequence[str], weights: Mapping[str, float], floors: Mapping[str, float] | None = None) -> Fuser:
    def fuse(lists: Mapping[str, RankedList], _text: str) -> list[FusedDocument]:
        return convex(pick(lists, lanes), doc_of_block, weights, floors, limit=EVAL_DEPTH_DOCS)
    return fuse


def grid_table(title: str, rows: list[tuple[str, Fuser]], runs: list[LaneRuns]) -> list[str]:
    """A markdown table: one row per setting, nDCG@10 / R@100 per dataset, helped / hurt vs row 1."""
    out = [f"### {title}", "", "| setting | " + " | ".join(r.name for r in runs) + " | helped | hurt |",
           "|---|" + "---|" * (len(runs) + 2)]
    base: list[float] | None = None
    for label, fuse in rows:
        values = [score(r, fuse) for r in runs]
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


@grid("rm3")
def _rm3() -> list[tuple[str, Fuser]]:
    """RM3 second round for the bm25 lane: the lane alone, and in the seed's hybrid"""
    rows: list[tuple[str, Fuser]] = [("bm25", rrf_of(("bm25",)))]
    rows += [(f"bm25 {name}", rrf_of((f"bm25@{name}",))) for name in RM3_SETTINGS]
    rows.append(("rrf hybrid", rrf_of(("bm25", "tfidf", "index", "vector"))))
    rows += [(f"rrf hybrid, bm25 {name}", rrf_of((f"bm25@{name}", "tfidf", "index", "vector"))) for name in RM3_SETTINGS]
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--datasets", nargs="+", default=list(TUNING))
    ap.add_argument("--tag", default="main")
    ap.add_argument("--grids", nargs="+", default=["lanes"])
    ap.add_argument("--out", type=Path, help="append the tables to this markdown file")
    args = ap.parse_args()
    extra = {name: rm3_lane(*setting) for name, setting in RM3_SETTINGS.items()}
    runs = [lane_runs(args.data, name, args.tag, extra) for name in args.datasets]
    lines: list[str] = []
    for name in args.grids:
        lines += grid_table(f"{name} ({GRIDS[name].__doc__ or ''})".strip(), GRIDS[name](), runs)
    if args.out:
        with args.out.open("a", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
