"""Term proximity for the lexical lanes: the sequential dependence model (SDM) over BM25.

    python bench/grid_prox.py [--data ../shared/data] [--datasets scifact cranfield cisi npl]
                              [--tag p24] [--grids sdm-bm25 sdm-weights prox-lane sdm-alone rm3-sdm bm25-kb]

SDM (Metzler & Croft, "A Markov Random Field Model for Term Dependencies", SIGIR 2005) scores a
block by three features of the query: its terms, its ordered bigrams (each pair of adjacent query
terms as an exact phrase, ``#1``) and its unordered windows (each pair within a few positions,
``#uwN``), weighted λT / λO / λU (0.85 / 0.1 / 0.05 in the paper). Here each feature is BM25
(tantivy: a phrase scores as one term whose frequency is its number of matches and whose idf is the
sum of its terms'), over the ``body`` field, which has positions already (analysed terms, stop words
removed at indexing and in the query alike, so "adjacent" means adjacent once stop words are gone).
The window is a tantivy phrase query with slop ``s`` (``s`` words between the two in order; the two
swapped cost 2 plus the words between, as in Lucene), ``s`` = 6 standing for SDM's ``#uw8``.

Lists per query, saved under ``<cache>/sleuth/grid/<dataset>.<tag>.prox.pkl`` beside the lane runs
of ``bench/fusion_grid.py`` (``<dataset>.<tag>.pkl``: bm25, tfidf, index, exact, vector, and the rm3
lane of the default, ``rm3w-10-20-0.7``):

- ``sdm-T-O-U-sS``: the bm25 lane's query with the bigram and window clauses added (weights T, O, U,
  slop S); ``index-sdm-...``: the index lane with the same clauses added to its body field;
- ``prox-sS``: the bigram and window clauses alone (O 2 : U 1), a lane of its own;
- ``rm3sdm-T-O-U-sS`` (grid ``rm3-sdm``): the rm3 lane of the default (10 blocks, 20 terms, λ 0.7,
  a word of the query required) with the original query's bigram and window clauses added to its
  second round, the expanded query's part times T (saved under ``<dataset>.<tag>.rm3sdm.pkl``);
- ``kb-K-B`` (grid ``bm25-kb``): BM25 with k1 = K and b = B, which tantivy does not let a query set
  (its k1 1.2 and b 0.75 are constants), so a prototype: exact BM25 over the postings' body terms
  (``Catalog.indexed_blocks``), Lucene idf, exact lengths (tantivy keeps one byte per length), quoted
  phrases required through the postings; ``kb-1.2-0.75`` is its control (saved under
  ``<dataset>.<tag>.kb.pkl``).

Fusion offline with the engine's ``sleuth.fusion.fuse``; each grid's first row is the default hybrid
(bm25 0.48, index 0.12, rm3 0.096, vector 0.5). CoSQA is reported, never tuned on. Prints the mean
per-query time of each kind of list on each set (the first dataset's queries warm the searcher).
"""

from __future__ import annotations

import pickle
import sys
import time
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import tantivy
from scipy import sparse

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fusion_grid import (
    FAMILIES,
    EvalRun,
    Fuser,
    LaneRuns,
    add_document_paths,
    cache_dir,
    fused_by,
    grid,
    grid_arguments,
    lane_runs,
    print_grids,
)

from sleuth.eval.run import eval_cache_dir
from sleuth.lanes.base import LaneQuery
from sleuth.lanes.feedback import rm3_weights
from sleuth.lanes.lexical import INDEX_FIELD_BOOSTS, FeedbackLane, required_phrases
from sleuth.lanes.postings import Postings
from sleuth.store.catalog import Catalog
from sleuth.text import ParsedQuery, analyze, parse_query
from sleuth.types import RankedList

DEPTH_BLOCKS = 500
DEFAULT_LANES = ("bm25", "rm3@rm3w-10-20-0.7", "index", "vector")
DEFAULT_W = {"bm25": 0.48, "index": 0.12, "rm3": 0.096, "vector": 0.5}
#: SDM weights tried (terms, ordered bigrams, unordered windows) and window slops.
SDM_WEIGHTS = ((0.85, 0.1, 0.05), (0.95, 0.03, 0.02), (0.9, 0.05, 0.05), (0.7, 0.2, 0.1))
SLOPS = (6, 2, 14)
#: At most this many adjacent pairs of a query get proximity clauses (CISI's longest has ~60 terms).
MAX_PAIRS = 64

FAMILIES["prox"] = "lexical"  # a lane of words, as the registry would class it


def query_pairs(parsed: ParsedQuery) -> list[tuple[str, str]]:
    """Adjacent pairs of the query's analysed terms (stop words gone), distinct, in query order."""
    seq = analyze(parsed.text)
    pairs = [(a, b) for a, b in zip(seq, seq[1:], strict=False) if a != b]
    return list(dict.fromkeys(pairs))[:MAX_PAIRS]


def prox_clauses(postings: Postings, pairs: Sequence[tuple[str, str]], w_ordered: float, w_window: float,
                 slop: int) -> list[tantivy.Query]:
    """One exact-phrase clause per pair (boost ``w_ordered``) and one window clause (slop ``slop``,
    boost ``w_window``), over the body field."""
    out: list[tantivy.Query] = []
    for a, b in pairs:
        if w_ordered > 0:
            out.append(tantivy.Query.boost_query(
                tantivy.Query.phrase_query(postings.schema, "body", [a, b], 0), w_ordered))
        if w_window > 0:
            out.append(tantivy.Query.boost_query(
                tantivy.Query.phrase_query(postings.schema, "body", [a, b], slop), w_window))
    return out


def sdm_body(postings: Postings, parsed: ParsedQuery, wt: float, wo: float, wu: float, slop: int,
             boost: float = 1.0) -> tantivy.Query | None:
    """The bm25 lane's body query (terms weighted by qtf) times ``wt`` plus the proximity clauses."""
    pairs = parsed.weighted_terms()
    terms = postings.any_of("body", [t for t, _ in pairs], qtf=[n for _, n in pairs])
    if terms is None:
        return None
    clauses = [tantivy.Query.boost_query(terms, wt), *prox_clauses(postings, query_pairs(parsed), wo, wu, slop)]
    q = tantivy.Query.boolean_query([(tantivy.Occur.Should, c) for c in clauses])
    return tantivy.Query.boost_query(q, boost) if boost != 1.0 else q


def _search(postings: Postings, scoring: tantivy.Query | None, parsed: ParsedQuery, lane: str) -> RankedList:
    if scoring is None:
        return RankedList(lane, (), ())
    hits = postings.search(scoring, DEPTH_BLOCKS, None, required_phrases(postings, parsed))
    return RankedList(lane, tuple(hits.block_ids), tuple(hits.scores))


def sdm_name(wt: float, wo: float, wu: float, slop: int) -> str:
    return f"sdm-{wt:g}-{wo:g}-{wu:g}-s{slop}"


def index_sdm(postings: Postings, parsed: ParsedQuery, wt: float, wo: float, wu: float, slop: int) -> RankedList:
    """The index lane with the SDM body query in place of its body field's."""
    pairs = parsed.weighted_terms()
    terms, qtf = [t for t, _ in pairs], [n for _, n in pairs]
    per_field = [sdm_body(postings, parsed, wt, wo, wu, slop, b) if f == "body" else postings.any_of(f, terms, b, qtf)
                 for f, b in INDEX_FIELD_BOOSTS.items() if b > 0]
    clauses = [(tantivy.Occur.Should, q) for q in per_field if q is not None]
    return _search(postings, tantivy.Query.boolean_query(clauses) if clauses else None, parsed, "index")


def prox_lists(data: Path, name: str, tag: str) -> dict[str, dict[str, RankedList]]:
    """``{qid: {list name: RankedList}}`` of the proximity lists (computed once, then read back)."""
    path = cache_dir() / f"{name}.{tag}.prox.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)  # our own cache file
    run = EvalRun(data / name)
    out: dict[str, dict[str, RankedList]] = {}
    spent: dict[str, float] = {}
    try:
        postings = run.engine.postings
        kinds = {"bm25-plain": lambda p: _search(postings, postings.any_of(
            "body", list(p.terms), qtf=[n for _, n in p.weighted_terms()]), p, "bm25")}
        for wt, wo, wu in SDM_WEIGHTS:
            for s in SLOPS:
                kinds[sdm_name(wt, wo, wu, s)] = (lambda p, a=(wt, wo, wu, s): _search(
                    postings, sdm_body(postings, p, *a), p, "bm25"))
                kinds["index-" + sdm_name(wt, wo, wu, s)] = (lambda p, a=(wt, wo, wu, s): index_sdm(postings, p, *a))
        for s in SLOPS:
            kinds[f"prox-s{s}"] = (lambda p, s=s: _search(postings, (lambda c: tantivy.Query.boolean_query(
                [(tantivy.Occur.Should, x) for x in c]) if c else None)(
                prox_clauses(postings, query_pairs(p), 2.0, 1.0, s)), p, "prox"))
        rm3 = FeedbackLane(postings, run.engine.catalog)
        for qid, text in run.dataset.queries.items():
            parsed = parse_query(text)
            answers: dict[str, RankedList] = {}
            for kind, fn in kinds.items():
                started = time.perf_counter()
                answers[kind] = fn(parsed)
                spent[kind] = spent.get(kind, 0.0) + time.perf_counter() - started
            answers["rm3w-10-20-0.7"] = rm3.search(LaneQuery(parsed, DEPTH_BLOCKS))
            out[qid] = answers
    finally:
        run.close()
    n = max(1, len(out))
    print(f"# {name}: ms/query at depth {DEPTH_BLOCKS}: " + ", ".join(
        f"{k} {v * 1000 / n:.2f}" for k, v in spent.items()), file=sys.stderr, flush=True)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as fh:
        pickle.dump(out, fh)
    return out


@grid("sdm-bm25")
def _sdm_bm25() -> list[tuple[str, Fuser]]:
    """SDM clauses in the bm25 lane's query (and the index lane's body), in the default hybrid"""
    rows: list[tuple[str, Fuser]] = [("default: bm25+index+rm3+vector", fused_by("zscore", DEFAULT_LANES, DEFAULT_W))]
    for wt, wo, wu in SDM_WEIGHTS:
        for s in SLOPS:
            n = sdm_name(wt, wo, wu, s)
            rows.append((f"{n} in bm25", fused_by("zscore", (f"bm25@{n}", *DEFAULT_LANES[1:]), DEFAULT_W)))
            rows.append((f"{n} in bm25 and index", fused_by(
                "zscore", (f"bm25@{n}", DEFAULT_LANES[1], f"index@index-{n}", "vector"), DEFAULT_W)))
    return rows


@grid("sdm-weights")
def _sdm_weights() -> list[tuple[str, Fuser]]:
    """The best Cranfield row of sdm-bm25 (0.85 / 0.1 / 0.05, slop 2, in bm25) with other lane weights"""
    rows: list[tuple[str, Fuser]] = [("default: bm25+index+rm3+vector", fused_by("zscore", DEFAULT_LANES, DEFAULT_W))]
    lanes = (f"bm25@{sdm_name(0.85, 0.1, 0.05, 2)}", *DEFAULT_LANES[1:])
    for change in ({"vector": 0.45}, {"vector": 0.55}, {"rm3": 0.06}, {"rm3": 0.15}, {"bm25": 0.4},
                   {"bm25": 0.56}, {"index": 0.06}, {"index": 0.2}):
        label = ", ".join(f"{k} {v:g}" for k, v in change.items())
        rows.append((f"sdm-0.85-0.1-0.05-s2 in bm25, {label}", fused_by("zscore", lanes, {**DEFAULT_W, **change})))
    return rows


@grid("sdm-alone")
def _sdm_alone() -> list[tuple[str, Fuser]]:
    """The bm25 lane with SDM clauses, alone"""
    rows: list[tuple[str, Fuser]] = [("bm25 lane alone", fused_by("zscore", ("bm25",), DEFAULT_W))]
    for wt, wo, wu in SDM_WEIGHTS:
        for s in SLOPS:
            n = sdm_name(wt, wo, wu, s)
            rows.append((f"{n} alone", fused_by("zscore", (f"bm25@{n}",), DEFAULT_W)))
    return rows


@grid("prox-lane")
def _prox_lane() -> list[tuple[str, Fuser]]:
    """A proximity lane (bigram and window clauses alone) beside the default lanes"""
    rows: list[tuple[str, Fuser]] = [("default: bm25+index+rm3+vector", fused_by("zscore", DEFAULT_LANES, DEFAULT_W))]
    for s in SLOPS:
        for wp in (0.03, 0.06, 0.1, 0.2):
            rows.append((f"prox-s{s} {wp}", fused_by("zscore", (*DEFAULT_LANES, f"prox@prox-s{s}"),
                                                     {**DEFAULT_W, "prox": wp})))
    return rows


#: SDM settings of the rm3 lane's second round.
RM3_SDM = ((0.85, 0.1, 0.05, 6), (0.85, 0.1, 0.05, 2), (0.95, 0.03, 0.02, 6), (0.9, 0.05, 0.05, 14))


def rm3_sdm(lane: FeedbackLane, parsed: ParsedQuery, wt: float, wo: float, wu: float, slop: int) -> RankedList:
    """``FeedbackLane.search`` with the proximity clauses of the original query in its second round."""
    postings = lane.postings
    pairs = parsed.weighted_terms()
    required = required_phrases(postings, parsed)
    first_query = postings.any_of("body", [t for t, _ in pairs], qtf=[n for _, n in pairs])
    if first_query is None:
        return RankedList("rm3", (), ())
    first = postings.search(first_query, lane.fb_blocks, None, required)
    blocks = lane.catalog.blocks(first.block_ids) if first.block_ids else {}
    feedback = [(sc, analyze(blocks[b].text)) for b, sc in zip(first.block_ids, first.scores, strict=True)
                if b in blocks]
    expanded = rm3_weights(pairs, feedback, lane.fb_terms, lane.original_weight)
    scoring = postings.any_of("body", [t for t, _ in expanded], qtf=[w for _, w in expanded])
    if scoring is None:
        return RankedList("rm3", (), ())
    # the expanded query's weights add up to 1; the proximity clauses are scaled to the same mass
    mass = 1.0 / max(1, sum(n for _, n in pairs))
    clauses = [tantivy.Query.boost_query(scoring, wt),
               *prox_clauses(postings, query_pairs(parsed), wo * mass, wu * mass, slop)]
    q = tantivy.Query.boolean_query([(tantivy.Occur.Should, c) for c in clauses])
    hits = postings.search(q, DEPTH_BLOCKS, None, [*required, first_query])
    return RankedList("rm3", tuple(hits.block_ids), tuple(hits.scores))


def rm3sdm_name(wt: float, wo: float, wu: float, slop: int) -> str:
    return "rm3" + sdm_name(wt, wo, wu, slop)


def rm3sdm_lists(name: str, queries: dict[str, str], tag: str) -> dict[str, dict[str, RankedList]]:
    """``{qid: {rm3sdm-...: RankedList}}`` over the evaluation index ``name`` (computed once)."""
    path = cache_dir() / f"{name}.{tag}.rm3sdm.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)  # our own cache file
    index_dir = eval_cache_dir(name)
    postings = Postings(index_dir / "postings")
    try:
        lane = FeedbackLane(postings, Catalog(index_dir / "catalog.sqlite3"))
        out = {qid: {rm3sdm_name(*a): rm3_sdm(lane, parse_query(text), *a) for a in RM3_SDM}
               for qid, text in queries.items()}
    finally:
        postings.close()
    with path.open("wb") as fh:
        pickle.dump(out, fh)
    return out


@grid("rm3-sdm")
def _rm3_sdm() -> list[tuple[str, Fuser]]:
    """SDM clauses in the rm3 lane's second round (and in the bm25 lane's query), in the default hybrid"""
    rows: list[tuple[str, Fuser]] = [("default: bm25+index+rm3+vector", fused_by("zscore", DEFAULT_LANES, DEFAULT_W))]
    for a in RM3_SDM:
        n = rm3sdm_name(*a)
        rows.append((f"{n} for rm3", fused_by("zscore", ("bm25", f"rm3@{n}", "index", "vector"), DEFAULT_W)))
        rows.append((f"{n} for rm3, {sdm_name(*a)} for bm25", fused_by(
            "zscore", (f"bm25@{sdm_name(*a)}", f"rm3@{n}", "index", "vector"), DEFAULT_W)))
    return rows


#: k1 and b of the BM25 prototype (the control, tantivy's, first).
KB_SETTINGS = ((1.2, 0.75), (0.9, 0.75), (1.6, 0.75), (2.0, 0.75), (1.2, 0.5), (1.2, 0.6), (1.2, 0.9),
               (0.9, 0.5), (1.6, 0.9), (2.0, 0.9))


def kb_lists(name: str, queries: dict[str, str], tag: str) -> dict[str, dict[str, RankedList]]:
    """``{qid: {kb-K-B: RankedList}}``: the BM25 prototype of the module doc over the evaluation index
    ``name`` (made by ``prox_lists`` before), computed once, then read back."""
    path = cache_dir() / f"{name}.{tag}.kb.pkl"
    if path.is_file():
        with path.open("rb") as fh:
            return pickle.load(fh)  # our own cache file
    index_dir = eval_cache_dir(name)
    catalog = Catalog(index_dir / "catalog.sqlite3")
    postings = Postings(index_dir / "postings")
    try:
        block_ids: list[str] = []
        vocab: dict[str, int] = {}
        rows: list[int] = []
        cols: list[int] = []
        for i, ib in enumerate(catalog.indexed_blocks(0)):
            block_ids.append(ib.block.block_id)
            for t in ib.terms.split():
                rows.append(i)
                cols.append(vocab.setdefault(t, len(vocab)))
        n = len(block_ids)
        tf = sparse.csc_matrix((np.ones(len(rows)), (rows, cols)), shape=(n, len(vocab)))
        tf.sum_duplicates()
        lengths = np.asarray(tf.sum(axis=1)).ravel()
        rel_len = lengths / (lengths.mean() or 1.0)
        df = np.diff(tf.indptr)
        out: dict[str, dict[str, RankedList]] = {}
        for qid, text in queries.items():
            parsed = parse_query(text)
            pairs = [(vocab[t], q) for t, q in parsed.weighted_terms() if t in vocab]
            answers: dict[str, RankedList] = {}
            mask = None
            if parsed.phrases:  # every lane requires the quoted phrases
                scoring = postings.any_of("body", list(parsed.terms))
                allowed = set(postings.search(scoring, n, None, required_phrases(postings, parsed)).block_ids) \
                    if scoring is not None else set()
                mask = np.array([b in allowed for b in block_ids])
            for k1, b in KB_SETTINGS:
                if not pairs:
                    answers[f"kb-{k1:g}-{b:g}"] = RankedList("bm25", (), ())
                    continue
                c = [x for x, _ in pairs]
                f = tf[:, c].toarray()
                idf = np.log(1 + (n - df[c] + 0.5) / (df[c] + 0.5))
                qtf = np.array([q for _, q in pairs], dtype=np.float64)
                norm = (k1 * (1 - b + b * rel_len))[:, None]
                scores = (f * (k1 + 1) / (f + norm) * idf * qtf).sum(axis=1)
                if mask is not None:
                    scores = np.where(mask, scores, 0.0)
                top = np.flatnonzero(scores > 0)
                top = top[np.lexsort((top, -scores[top]))][:DEPTH_BLOCKS]
                answers[f"kb-{k1:g}-{b:g}"] = RankedList(
                    "bm25", tuple(block_ids[i] for i in top), tuple(float(scores[i]) for i in top))
            out[qid] = answers
    finally:
        postings.close()
    with path.open("wb") as fh:
        pickle.dump(out, fh)
    return out


@grid("bm25-kb")
def _bm25_kb() -> list[tuple[str, Fuser]]:
    """BM25 k1 and b of the bm25 lane (exact prototype; first row its control at tantivy's 1.2 / 0.75)"""
    rows: list[tuple[str, Fuser]] = []
    for k1, b in KB_SETTINGS:
        n = f"kb-{k1:g}-{b:g}"
        rows.append((f"{n} for bm25 in the default hybrid", fused_by("zscore", (f"bm25@{n}", *DEFAULT_LANES[1:]),
                                                                      DEFAULT_W)))
    for k1, b in KB_SETTINGS:
        n = f"kb-{k1:g}-{b:g}"
        rows.append((f"{n} alone", fused_by("zscore", (f"bm25@{n}",), DEFAULT_W)))
    return rows


def main() -> None:
    ap = grid_arguments(__doc__, "p24", ["sdm-bm25", "prox-lane", "sdm-alone"])
    args = ap.parse_args()
    runs: list[LaneRuns] = []
    for name in args.datasets:
        extra = prox_lists(args.data, name, args.tag)
        r = lane_runs(args.data, name, args.tag, {})
        kb = kb_lists(name, r.texts, args.tag) if "bm25-kb" in args.grids else {}
        if "rm3-sdm" in args.grids:
            more = rm3sdm_lists(name, r.texts, args.tag)
            kb = {qid: {**kb.get(qid, {}), **more.get(qid, {})} for qid in r.texts}
        for qid, answers in r.lists.items():
            answers.update(extra.get(qid, {}))
            answers.update(kb.get(qid, {}))
        add_document_paths(args.data, r)
        runs.append(r)
        print(f"# {name}: lists ready", file=sys.stderr, flush=True)
    print_grids(args.grids, runs)


if __name__ == "__main__":
    main()
