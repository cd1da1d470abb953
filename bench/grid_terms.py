"""Issue 14, third pass: the rm3 lane beside bm25 again, a BM25F title field, query-side term weights.

    python bench/grid_terms.py [--data ../shared/data] [--datasets scifact cranfield cisi npl] [--tag s14t]

Lane runs as bench/fusion_grid.py makes them (each lane once per query through the engine, saved
under ``<cache>/sleuth/grid/<dataset>.<tag>.pkl``), plus these lists per query:

- ``rm3-10-20-0.7``: the rm3 lane (sleuth.lanes.lexical.FeedbackLane) with the settings the second
  pass chose (10 blocks, 20 terms, original weight 0.7);
- ``bm25f-<w>``: BM25F (Robertson, Zaragoza & Taylor, "Simple BM25 extension to multiple weighted
  fields", CIKM 2004): a block's title and body term frequencies, each normalised by its field's
  length (b 0.75), added with the title's weight ``w`` before the one saturation ``k1`` (the lane
  today saturates the title's terms, prepended to each block's body, with the body's); exact lengths,
  numpy over the catalog's blocks; ``bm25f-1`` is the control (the title as a field of weight 1);
- ``bm25@qw-...`` / ``index@qw-...``: the bm25 and index lanes with query-side term weights for long
  queries (more than ``QW_LONG_TERMS`` distinct terms): each term's qtf times ``(idf / mean idf of
  the query's terms) ** a`` (``qw-idf<a>``), or terms in more than ``p`` of the blocks left out
  (``qw-df<p>``).

Grids (``--grids``): ``rm3-again`` (the second pass's rm3 rows on today's lanes), ``title-field``,
``query-weights``; each prints nDCG@10 / Recall@100 per set and the sets helped and hurt against
its first row (the default hybrid). CoSQA is reported, never tuned on.
"""

from __future__ import annotations

import math
import sqlite3
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import numpy as np
from fusion_grid import (
    EvalRun,
    Fuser,
    LaneRuns,
    add_document_paths,
    fused_by,
    grid,
    grid_arguments,
    lane_runs,
    print_grids,
    rm3_lane,
)
from scipy import sparse

from sleuth.lanes.lexical import IndexLane, required_phrases
from sleuth.lanes.sparse import BM25_B, BM25_K1
from sleuth.text import analyze, parse_query
from sleuth.types import RankedList

DEPTH_BLOCKS = 500
DEFAULT_W = {"bm25": 0.48, "index": 0.12, "vector": 0.4}
DEFAULT_LANES = ("bm25", "index", "vector")
#: BM25F title weights tried.
TITLE_WEIGHTS = (1.0, 2.0, 3.0, 5.0)
#: A query with more distinct terms than this is "long" for the query-side weights.
QW_LONG_TERMS = 6
QW_SETTINGS = {"qw-idf0.5": ("idf", 0.5), "qw-idf1": ("idf", 1.0), "qw-df0.05": ("df", 0.05),
               "qw-df0.1": ("df", 0.1)}


class BM25F:
    """BM25F over one evaluation index's blocks (title and body fields), exact lengths."""

    def __init__(self, run: EvalRun) -> None:
        con = sqlite3.connect(f"file:{run.index_dir / 'catalog.sqlite3'}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT b.block_id, d.title, b.text FROM blocks b JOIN documents d "
                               "ON d.doc_id = b.doc_id ORDER BY b.block_id").fetchall()
        finally:
            con.close()
        self.block_ids = [r[0] for r in rows]
        titles: dict[str, list[str]] = {}
        fields = {"title": [titles.setdefault(t, analyze(t)) for _, t, _ in rows],
                  "body": [analyze(text) for _, _, text in rows]}
        self.vocab: dict[str, int] = {}
        n = len(rows)
        triples: dict[str, tuple[list[int], list[int], list[float]]] = {}
        for field, units in fields.items():
            lengths = np.array([len(u) for u in units], dtype=np.float64)
            avg = lengths.mean() or 1.0
            r, c, v = triples.setdefault(field, ([], [], []))
            for i, unit in enumerate(units):
                norm = 1 - BM25_B + BM25_B * lengths[i] / avg
                for term, tf in Counter(unit).items():
                    r.append(i)
                    c.append(self.vocab.setdefault(term, len(self.vocab)))
                    v.append(tf / norm)
        shape = (n, len(self.vocab))
        self.parts = {f: sparse.csc_matrix((v, (r, c)), shape=shape) for f, (r, c, v) in triples.items()}
        self.df = np.asarray(((self.parts["title"] + self.parts["body"]) > 0).sum(axis=0)).ravel()
        self.n = n

    def search(self, run: EvalRun, text: str, title_weight: float) -> RankedList:
        parsed = parse_query(text)
        pairs = [(self.vocab[t], n) for t, n in parsed.weighted_terms() if t in self.vocab]
        if not pairs:
            return RankedList("bm25", (), ())
        cols = [c for c, _ in pairs]
        tf = (title_weight * self.parts["title"][:, cols] + self.parts["body"][:, cols]).toarray()
        idf = np.array([math.log(1 + (self.n - self.df[c] + 0.5) / (self.df[c] + 0.5)) for c in cols])
        qtf = np.array([n for _, n in pairs], dtype=np.float64)
        scores = (tf * (BM25_K1 + 1) / (tf + BM25_K1) * idf * qtf).sum(axis=1)
        if parsed.phrases:  # every lane requires the quoted phrases: keep the blocks holding them
            postings = run.engine.postings
            scoring = postings.any_of("body", list(parsed.terms))
            allowed = set(postings.search(scoring, self.n, None, required_phrases(postings, parsed)).block_ids) \
                if scoring is not None else set()
            mask = np.array([b in allowed for b in self.block_ids])
            scores = np.where(mask, scores, 0.0)
        top = np.flatnonzero(scores > 0)
        top = top[np.lexsort((top, -scores[top]))][:DEPTH_BLOCKS]
        return RankedList("bm25", tuple(self.block_ids[i] for i in top), tuple(float(scores[i]) for i in top))


_BM25F: dict[int, BM25F] = {}


def bm25f_lane(title_weight: float) -> Callable[[EvalRun, str], RankedList]:
    def search(run: EvalRun, text: str) -> RankedList:
        scorer = _BM25F.get(id(run))
        if scorer is None:
            _BM25F.clear()
            scorer = _BM25F[id(run)] = BM25F(run)
        return scorer.search(run, text, title_weight)
    return search


def query_weights(run: EvalRun, text: str, rule: tuple[str, float]) -> list[tuple[str, float]]:
    """``[(term, weight)]`` of the query under ``rule`` (unchanged for a short query)."""
    pairs = parse_query(text).weighted_terms()
    if len(pairs) <= QW_LONG_TERMS:
        return [(t, float(n)) for t, n in pairs]
    searcher = run.engine.postings.searcher()
    n_blocks = max(searcher.num_docs, 1)
    df = {t: searcher.doc_freq("body", t) for t, _ in pairs}
    kind, a = rule
    if kind == "df":
        kept = [(t, float(n)) for t, n in pairs if df[t] <= a * n_blocks]
        return kept or [(t, float(n)) for t, n in pairs]
    idf = {t: math.log(1 + (n_blocks - df[t] + 0.5) / (df[t] + 0.5)) for t, _ in pairs}
    mean = sum(idf.values()) / len(idf) or 1.0
    return [(t, n * (idf[t] / mean) ** a) for t, n in pairs]


def weighted_lane(lane: str, rule: tuple[str, float]) -> Callable[[EvalRun, str], RankedList]:
    def search(run: EvalRun, text: str) -> RankedList:
        pairs = query_weights(run, text, rule)
        parsed = parse_query(text)
        postings = run.engine.postings
        terms, w = [t for t, _ in pairs], [x for _, x in pairs]
        if lane == "bm25":
            scoring = postings.any_of("body", terms, qtf=w)
        else:
            index = IndexLane(postings)
            import tantivy
            per_field = [postings.any_of(f, terms, b, w) for f, b in index.boosts.items() if b > 0]
            clauses = [(tantivy.Occur.Should, q) for q in per_field if q is not None]
            scoring = tantivy.Query.boolean_query(clauses) if clauses else None
        if scoring is None:
            return RankedList(lane, (), ())
        hits = postings.search(scoring, DEPTH_BLOCKS, None, required_phrases(postings, parsed))
        return RankedList(lane, tuple(hits.block_ids), tuple(hits.scores))
    return search


def rm3_word_lane(fb_docs: int, fb_terms: int, original_weight: float) -> Callable[[EvalRun, str], RankedList]:
    """The rm3 lane returning only blocks that hold a word of the query (``query_word_required``)."""
    from sleuth.lanes.base import LaneQuery
    from sleuth.lanes.lexical import FeedbackLane

    def search(run: EvalRun, text: str) -> RankedList:
        lane = FeedbackLane(run.engine.postings, run.engine.catalog, fb_docs, fb_terms, original_weight, True)
        return lane.search(LaneQuery(parse_query(text), DEPTH_BLOCKS))
    return search


def extras() -> dict[str, Callable[[EvalRun, str], RankedList]]:
    out: dict[str, Callable[[EvalRun, str], RankedList]] = {"rm3-10-20-0.7": rm3_lane(10, 20, 0.7),
                                                            "rm3w-10-20-0.7": rm3_word_lane(10, 20, 0.7)}
    out.update({f"bm25@bm25f-{w:g}": bm25f_lane(w) for w in TITLE_WEIGHTS})
    for name, rule in QW_SETTINGS.items():
        out[f"bm25@{name}"] = weighted_lane("bm25", rule)
        out[f"index@{name}"] = weighted_lane("index", rule)
    return out


@grid("rm3-again")
def _rm3_again() -> list[tuple[str, Fuser]]:
    """The rm3 lane beside bm25 on today's lanes (per-token model, 8-bit vectors)"""
    with_rm3 = ("bm25", "rm3@rm3-10-20-0.7", "index", "vector")
    rows: list[tuple[str, Fuser]] = [("zscore bm25+index+vector (the default)",
                                      fused_by("zscore", DEFAULT_LANES, DEFAULT_W))]
    for wv in (0.45, 0.5):
        rows.append((f"no rm3, vector {wv}", fused_by("zscore", DEFAULT_LANES, {**DEFAULT_W, "vector": wv})))
    for wr, wv in ((0.096, 0.5), (0.06, 0.5), (0.096, 0.45), (0.096, 0.4), (0.06, 0.4)):
        rows.append((f"rm3-10-20-0.7, bm25 0.48, rm3 {wr}, vector {wv}",
                     fused_by("zscore", with_rm3, {**DEFAULT_W, "rm3": wr, "vector": wv})))
    with_rm3w = ("bm25", "rm3@rm3w-10-20-0.7", "index", "vector")
    for wr, wv in ((0.096, 0.5), (0.06, 0.5), (0.096, 0.45), (0.096, 0.4)):
        rows.append((f"rm3w-10-20-0.7 (a word of the query required), bm25 0.48, rm3 {wr}, vector {wv}",
                     fused_by("zscore", with_rm3w, {**DEFAULT_W, "rm3": wr, "vector": wv})))
    rows.append(("rm3 lane alone", fused_by("zscore", ("rm3@rm3-10-20-0.7",), {"rm3": 1.0})))
    rows.append(("rm3w lane alone", fused_by("zscore", ("rm3@rm3w-10-20-0.7",), {"rm3": 1.0})))
    return rows


@grid("title-field")
def _title_field() -> list[tuple[str, Fuser]]:
    """BM25F title field in the bm25 lane (title weight w, exact lengths), alone and in the default hybrid"""
    rows: list[tuple[str, Fuser]] = [("zscore bm25+index+vector (the default)",
                                      fused_by("zscore", DEFAULT_LANES, DEFAULT_W))]
    for w in TITLE_WEIGHTS:
        rows.append((f"bm25f title {w:g} for bm25", fused_by("zscore", (f"bm25@bm25f-{w:g}", "index", "vector"),
                                                             DEFAULT_W)))
    rows.append(("bm25 lane alone", fused_by("zscore", ("bm25",), DEFAULT_W)))
    for w in TITLE_WEIGHTS:
        rows.append((f"bm25f title {w:g} alone", fused_by("zscore", (f"bm25@bm25f-{w:g}",), DEFAULT_W)))
    return rows


@grid("query-weights")
def _query_weights() -> list[tuple[str, Fuser]]:
    """Query-side term weights for long queries (> 6 distinct terms) in the bm25 and index lanes"""
    rows: list[tuple[str, Fuser]] = [("zscore bm25+index+vector (the default)",
                                      fused_by("zscore", DEFAULT_LANES, DEFAULT_W))]
    for name in QW_SETTINGS:
        rows.append((f"{name} in bm25 and index", fused_by("zscore", (f"bm25@{name}", f"index@{name}", "vector"),
                                                           DEFAULT_W)))
    rows.append(("bm25 lane alone", fused_by("zscore", ("bm25",), DEFAULT_W)))
    for name in QW_SETTINGS:
        rows.append((f"{name}, bm25 lane alone", fused_by("zscore", (f"bm25@{name}",), DEFAULT_W)))
    return rows


def title_vector_lists(data: Path, name: str, tag: str) -> dict[str, RankedList]:
    """``{qid: the title-vector list}``: documents by the cosine of the query with their title alone
    (embedded by the default model, each as its first block), saved beside the lane runs."""
    import pickle

    from fusion_grid import cache_dir

    path = cache_dir() / f"{name}.{tag}.title-vector.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)  # our own cache file
    run = EvalRun(data / name)
    try:
        con = sqlite3.connect(f"file:{run.index_dir / 'catalog.sqlite3'}?mode=ro", uri=True)
        try:
            rows = con.execute("SELECT d.title, MIN(b.block_id) FROM documents d JOIN blocks b "
                               "ON b.doc_id = d.doc_id GROUP BY d.doc_id ORDER BY d.doc_id").fetchall()
        finally:
            con.close()
        titled = [(t, b) for t, b in rows if t and not t.endswith(".txt")]
        emb = run.engine.embedder()
        assert emb is not None, run.engine.vector_unavailable
        out: dict[str, RankedList] = {}
        if titled:
            matrix = emb.embed([t for t, _ in titled])
            queries = list(run.dataset.queries.items())
            qvecs = emb.embed([text for _, text in queries])
            for (qid, _), qv in zip(queries, qvecs, strict=True):
                cos = matrix @ qv
                top = np.argsort(-cos, kind="stable")[:DEPTH_BLOCKS]
                out[qid] = RankedList("title-vector", tuple(titled[i][1] for i in top if cos[i] >= 0.3),
                                      tuple(float(cos[i]) for i in top if cos[i] >= 0.3))
    finally:
        run.close()
    with path.open("wb") as fh:
        pickle.dump(out, fh)
    return out


@grid("title-vector")
def _title_vector() -> list[tuple[str, Fuser]]:
    """A title-vector lane (each document's title embedded alone) beside the default lanes"""
    rows: list[tuple[str, Fuser]] = [("zscore bm25+index+vector (the default)",
                                      fused_by("zscore", DEFAULT_LANES, DEFAULT_W))]
    for wt in (0.05, 0.1, 0.2):
        rows.append((f"title-vector {wt}", fused_by("zscore", (*DEFAULT_LANES, "title-vector"),
                                                    {**DEFAULT_W, "title-vector": wt})))
        rows.append((f"title-vector {wt}, vector {0.4 - wt:g}", fused_by(
            "zscore", (*DEFAULT_LANES, "title-vector"), {**DEFAULT_W, "vector": 0.4 - wt, "title-vector": wt})))
    return rows


@grid("title-vector-rm3")
def _title_vector_rm3() -> list[tuple[str, Fuser]]:
    """The title-vector lane beside the new default lanes (bm25, index, rm3 0.096, vector 0.5)"""
    lanes = ("bm25", "rm3@rm3w-10-20-0.7", "index", "vector")
    w = {**DEFAULT_W, "rm3": 0.096, "vector": 0.5}
    rows: list[tuple[str, Fuser]] = [("zscore bm25+index+rm3+vector (the new default)", fused_by("zscore", lanes, w))]
    for wt in (0.03, 0.05, 0.1):
        rows.append((f"title-vector {wt}", fused_by("zscore", (*lanes, "title-vector"), {**w, "title-vector": wt})))
    return rows


def main() -> None:
    ap = grid_arguments(__doc__, "s14t", ["rm3-again", "title-field", "query-weights"])
    args = ap.parse_args()
    runs: list[LaneRuns] = [lane_runs(args.data, name, args.tag, extras()) for name in args.datasets]
    if {"title-vector", "title-vector-rm3"} & set(args.grids):
        for r in runs:
            lists = title_vector_lists(args.data, r.name, args.tag)
            for qid, answers in r.lists.items():
                answers["title-vector"] = lists.get(qid, RankedList("title-vector", (), ()))
            add_document_paths(args.data, r)
    print_grids(args.grids, runs)


if __name__ == "__main__":
    main()
