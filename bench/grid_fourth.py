"""Issue 14, fourth pass: RM3 settings and RM3 on the index lane beside the candidate default, the
title-vector lane's weight, and convex combinations (Bruch et al. 2023) of the candidate's lanes.

    python bench/grid_fourth.py [--data ../shared/data] [--datasets scifact cranfield cisi npl]
                                [--tag s14t] [--grids rm3-settings index-rm3 title-vector-4 convex-4]

Reads the lane runs of ``bench/grid_terms.py`` (``<cache>/sleuth/grid/<dataset>.<tag>.pkl`` and its
``.title-vector.pkl``; run it first with ``--grids title-vector`` if they are missing) and adds, per
query, lists saved under ``<dataset>.<tag>.fourth.pkl``:

- ``rm3w-D-T-W``: the rm3 lane (``sleuth.lanes.lexical.FeedbackLane``, a word of the query required)
  with D feedback blocks, T expansion terms, original-query weight W;
- ``index-rm3w-D-T-W``: the same RM3 query (the feedback blocks from the bm25 lane's first round)
  run through the index lane's fields and boosts (title, heading, tags, path, body), the blocks
  restricted to those holding a word of the query.

Fusion offline with the engine's ``sleuth.fusion.fuse``; each grid's first row is the candidate
default (bm25 0.48, index 0.12, rm3 0.096, vector 0.5). CoSQA is reported, never tuned on.
"""

from __future__ import annotations

import pickle
import sys
from collections.abc import Mapping
from pathlib import Path

import tantivy
from fusion_grid import (
    FAMILIES,
    LANES,
    EvalRun,
    Fuser,
    LaneRuns,
    add_document_paths,
    cache_dir,
    doc_of_block,
    fused_by,
    grid,
    grid_arguments,
    lane_runs,
    pick,
    print_grids,
)

from sleuth.eval.run import EVAL_DEPTH_DOCS
from sleuth.fusion import RRF_K, FusedDocument, fuse
from sleuth.lanes.base import LaneQuery
from sleuth.lanes.feedback import rm3_weights
from sleuth.lanes.lexical import INDEX_FIELD_BOOSTS, FeedbackLane, required_phrases
from sleuth.text import analyze, parse_query
from sleuth.types import RankedList

DEPTH_BLOCKS = 500
#: The candidate default (branch 14t-rank 380ea48): lanes and score weights.
CANDIDATE_LANES = ("bm25", "rm3@rm3w-10-20-0.7", "index", "vector")
CANDIDATE_W = {"bm25": 0.48, "index": 0.12, "rm3": 0.096, "vector": 0.5}
#: RM3 settings tried (feedback blocks, expansion terms, original-query weight).
RM3_SETTINGS = ((10, 20, 0.7), (3, 10, 0.5), (5, 10, 0.5), (5, 10, 0.7), (5, 20, 0.7), (3, 20, 0.7),
                (10, 10, 0.7), (10, 30, 0.7), (20, 20, 0.7), (10, 20, 0.5))
INDEX_RM3_SETTINGS = ((10, 20, 0.7), (5, 10, 0.5), (5, 20, 0.7))


def rm3_name(d: int, t: int, w: float) -> str:
    return f"rm3w-{d}-{t}-{w:g}"


def index_rm3(run: EvalRun, text: str, d: int, t: int, w: float) -> RankedList:
    """The RM3 query of the bm25 lane's first round, through the index lane's fields (see module doc)."""
    parsed = parse_query(text)
    pairs = parsed.weighted_terms()
    postings = run.engine.postings
    if not pairs:
        return RankedList("index", (), ())
    required = required_phrases(postings, parsed)
    first_query = postings.any_of("body", [term for term, _ in pairs], qtf=[n for _, n in pairs])
    if first_query is None:
        return RankedList("index", (), ())
    first = postings.search(first_query, d, None, required)
    blocks = run.engine.catalog.blocks(first.block_ids) if first.block_ids else {}
    feedback = [(s, analyze(blocks[b].text)) for b, s in zip(first.block_ids, first.scores, strict=True)
                if b in blocks]
    expanded = rm3_weights(pairs, feedback, t, w)
    terms, weights = [term for term, _ in expanded], [x for _, x in expanded]
    per_field = [postings.any_of(f, terms, b, weights) for f, b in INDEX_FIELD_BOOSTS.items() if b > 0]
    clauses = [(tantivy.Occur.Should, q) for q in per_field if q is not None]
    if not clauses:
        return RankedList("index", (), ())
    hits = postings.search(tantivy.Query.boolean_query(clauses), DEPTH_BLOCKS, None, [*required, first_query])
    return RankedList("index", tuple(hits.block_ids), tuple(hits.scores))


def extra_lists(data: Path, name: str, tag: str) -> dict[str, dict[str, RankedList]]:
    """``{qid: {list name: RankedList}}`` of this pass's lists (computed once, then read back)."""
    path = cache_dir() / f"{name}.{tag}.fourth.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)  # our own cache file
    run = EvalRun(data / name)
    out: dict[str, dict[str, RankedList]] = {}
    try:
        lanes = {rm3_name(d, t, w): FeedbackLane(run.engine.postings, run.engine.catalog, d, t, w, True)
                 for d, t, w in RM3_SETTINGS}
        for qid, text in run.dataset.queries.items():
            q = LaneQuery(parse_query(text), DEPTH_BLOCKS)
            answers = {n: lane.search(q) for n, lane in lanes.items()}
            for d, t, w in INDEX_RM3_SETTINGS:
                answers[f"index-{rm3_name(d, t, w)}"] = index_rm3(run, text, d, t, w)
            out[qid] = answers
    finally:
        run.close()
    with path.open("wb") as fh:
        pickle.dump(out, fh)
    return out


@grid("rm3-settings")
def _rm3_settings() -> list[tuple[str, Fuser]]:
    """RM3 settings and weights of the rm3 lane beside the candidate default's other lanes"""
    rows: list[tuple[str, Fuser]] = [("candidate: bm25+index+rm3w-10-20-0.7+vector",
                                      fused_by("zscore", CANDIDATE_LANES, CANDIDATE_W))]
    for d, t, w in RM3_SETTINGS[1:]:
        lanes = ("bm25", f"rm3@{rm3_name(d, t, w)}", "index", "vector")
        rows.append((f"{rm3_name(d, t, w)}, rm3 0.096", fused_by("zscore", lanes, CANDIDATE_W)))
    for d, t, w in RM3_SETTINGS[:2]:
        lanes = ("bm25", f"rm3@{rm3_name(d, t, w)}", "index", "vector")
        for wr in (0.15, 0.24):
            rows.append((f"{rm3_name(d, t, w)}, rm3 {wr}", fused_by("zscore", lanes, {**CANDIDATE_W, "rm3": wr})))
    return rows


@grid("index-rm3")
def _index_rm3() -> list[tuple[str, Fuser]]:
    """RM3 on the index lane: the expanded query through the index lane's fields, instead of it or beside"""
    rows: list[tuple[str, Fuser]] = [("candidate: bm25+index+rm3w-10-20-0.7+vector",
                                      fused_by("zscore", CANDIDATE_LANES, CANDIDATE_W))]
    for d, t, w in INDEX_RM3_SETTINGS:
        name = f"index-{rm3_name(d, t, w)}"
        rows.append((f"{name} instead of index", fused_by(
            "zscore", ("bm25", "rm3@rm3w-10-20-0.7", f"index@{name}", "vector"), CANDIDATE_W)))
        rows.append((f"{name} instead of index and rm3", fused_by(
            "zscore", ("bm25", f"index@{name}", "vector"), CANDIDATE_W)))
        for wi in (0.06, 0.12):
            rows.append((f"{name} beside, weight {wi}", fused_by(
                "zscore", (*CANDIDATE_LANES, f"rm3x@{name}"), {**CANDIDATE_W, "rm3x": wi})))
    return rows


@grid("title-vector-4")
def _title_vector_4() -> list[tuple[str, Fuser]]:
    """The title-vector lane beside the candidate default, finer weights, with vector 0.5 and 0.55"""
    rows: list[tuple[str, Fuser]] = [("candidate: bm25+index+rm3w-10-20-0.7+vector",
                                      fused_by("zscore", CANDIDATE_LANES, CANDIDATE_W))]
    for wv in (0.5, 0.55):
        for wt in (0.01, 0.02, 0.03, 0.04):
            rows.append((f"title-vector {wt}, vector {wv}", fused_by(
                "zscore", (*CANDIDATE_LANES, "title-vector"), {**CANDIDATE_W, "vector": wv, "title-vector": wt})))
    for d, t, w in ((5, 10, 0.5), (3, 10, 0.5), (5, 20, 0.7)):
        lanes = ("bm25", f"rm3@{rm3_name(d, t, w)}", "index", "vector", "title-vector")
        for wr in (0.096, 0.15):
            rows.append((f"title-vector 0.03, {rm3_name(d, t, w)} rm3 {wr}", fused_by(
                "zscore", lanes, {**CANDIDATE_W, "rm3": wr, "title-vector": 0.03})))
    return rows


@grid("convex-4")
def _convex_4() -> list[tuple[str, Fuser]]:
    """Convex combination of min-max normalised scores (Bruch, Gai & Ingber 2023) over the candidate's lanes"""
    rows: list[tuple[str, Fuser]] = [("candidate: bm25+index+rm3w-10-20-0.7+vector (zscore)",
                                      fused_by("zscore", CANDIDATE_LANES, CANDIDATE_W))]
    for alpha in (0.4, 0.5, 0.6):
        lex = 1 - alpha
        w = {"bm25": lex * 0.69, "index": lex * 0.17, "rm3": lex * 0.14, "vector": alpha}
        rows.append((f"convex mm, vector {alpha}, lexical split as the candidate",
                     fused_by("convex", CANDIDATE_LANES, w)))
    return rows


def zscore_depth(lanes: tuple[str, ...], weights: dict[str, float], depth: int) -> Fuser:
    """The engine's z-score fusion with each lane's scores z-scored over its ``depth`` best documents."""
    def run(lists: Mapping[str, RankedList], _text: str) -> list[FusedDocument]:
        return fuse(pick(lists, lanes), doc_of_block, "zscore", weights, RRF_K, FAMILIES, LANES,
                    limit=EVAL_DEPTH_DOCS, depth_docs=depth)
    return run


@grid("zscore-depth")
def _zscore_depth() -> list[tuple[str, Fuser]]:
    """The candidate default with each lane z-scored over its 50 to 400 best documents (200 now)"""
    rows: list[tuple[str, Fuser]] = [("candidate: bm25+index+rm3w-10-20-0.7+vector (depth 200)",
                                      fused_by("zscore", CANDIDATE_LANES, CANDIDATE_W))]
    for depth in (50, 100, 300, 400):
        rows.append((f"z-scores over {depth} documents", zscore_depth(CANDIDATE_LANES, CANDIDATE_W, depth)))
    return rows


def main() -> None:
    ap = grid_arguments(__doc__, "s14t", ["rm3-settings", "index-rm3", "title-vector-4", "convex-4"])
    args = ap.parse_args()
    runs: list[LaneRuns] = []
    for name in args.datasets:
        r = lane_runs(args.data, name, args.tag, {})
        tv_path = cache_dir() / f"{name}.{args.tag}.title-vector.pkl"
        with tv_path.open("rb") as fh:
            title_lists: dict[str, RankedList] = pickle.load(fh)  # our own cache file (bench/grid_terms.py)
        extra = extra_lists(args.data, name, args.tag)
        for qid, answers in r.lists.items():
            answers["title-vector"] = title_lists.get(qid, RankedList("title-vector", (), ()))
            answers.update(extra.get(qid, {}))
        add_document_paths(args.data, r)
        runs.append(r)
        print(f"# {name}: lists ready", file=sys.stderr, flush=True)
    print_grids(args.grids, runs)


if __name__ == "__main__":
    main()
