"""Metric tests: hand-computed values, and agreement with ir_measures (pytrec_eval / trec_eval).

Comparison convention: ``evaluate`` averages over qrels queries with at least one relevant doc
(grade > 0); ir_measures also reports queries without relevant docs (as 0), so its per-query
output is restricted to the same query set before comparing. A judged query absent from the run
scores 0 in both (ir_measures reports it as 0; ``.get(qid, 0.0)`` below covers a provider that
omits it, which is trec_eval's ``-c`` convention).
"""

from __future__ import annotations

import math
import random

import ir_measures
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ir_measures import RR, R, nDCG

from sleuth.eval import (
    evaluate,
    format_table,
    judged_queries,
    mrr_at_k,
    ndcg_at_k,
    per_query,
    recall_at_k,
    summarize,
)

TOL = 1e-9


def log2(x: float) -> float:
    return math.log2(x)


# --------------------------------------------------------------------------- reference


def reference(
    run: dict[str, list[str]], qrels: dict[str, dict[str, int]], ndcg_k: int, recall_k: int, mrr_k: int
) -> dict[str, dict[str, float]]:
    """ir_measures per-query values keyed like ``per_query``, restricted to judged queries."""
    scored = [
        ir_measures.ScoredDoc(qid, doc, float(len(ranking) - i))  # strictly descending by rank
        for qid, ranking in run.items()
        for i, doc in enumerate(ranking)
    ]
    qrel_rows = [ir_measures.Qrel(qid, doc, g) for qid, js in qrels.items() for doc, g in js.items()]
    names = {nDCG @ ndcg_k: f"ndcg@{ndcg_k}", R @ recall_k: f"recall@{recall_k}", RR @ mrr_k: f"mrr@{mrr_k}"}
    got: dict[str, dict[str, float]] = {}
    if scored:
        for m in ir_measures.iter_calc(list(names), qrel_rows, scored):
            got.setdefault(m.query_id, {})[names[m.measure]] = m.value
    return {
        qid: {name: got.get(qid, {}).get(name, 0.0) for name in names.values()}
        for qid in judged_queries(qrels)
    }


def assert_matches_reference(run, qrels, ndcg_k=10, recall_k=100, mrr_k=10) -> None:
    ours = per_query(run, qrels, ndcg_k=ndcg_k, recall_k=recall_k, mrr_k=mrr_k)
    ref = reference(run, qrels, ndcg_k, recall_k, mrr_k)
    assert ours.keys() == ref.keys()
    for qid in ref:
        for name, value in ref[qid].items():
            assert ours[qid][name] == pytest.approx(value, abs=TOL), (qid, name)
    if ref:
        summary = evaluate(run, qrels, ndcg_k=ndcg_k, recall_k=recall_k, mrr_k=mrr_k)
        assert summary["queries"] == len(ref)
        for name in next(iter(ref.values())):
            mean = sum(v[name] for v in ref.values()) / len(ref)
            assert summary[name] == pytest.approx(mean, abs=TOL), name


# --------------------------------------------------------------------------- hand-made cases

QRELS_A = {"q1": {"d1": 3, "d2": 2, "d3": 0, "d4": 1}}
RUN_A = {"q1": ["d3", "d1", "d5", "d2"]}


def test_ndcg_by_hand() -> None:
    dcg = 3 / log2(3) + 2 / log2(5)  # d1 at rank 2, d2 at rank 4; d3 (0) and d5 (unjudged) gain 0
    idcg = 3 / log2(2) + 2 / log2(3) + 1 / log2(4)  # grades 3, 2, 1 (and 0) sorted descending
    assert ndcg_at_k(RUN_A["q1"], QRELS_A["q1"], 10) == pytest.approx(dcg / idcg, abs=1e-12)
    assert dcg / idcg == pytest.approx(0.5783754, abs=1e-7)


def test_ndcg_cutoff_applies_to_ideal_too() -> None:
    dcg = 3 / log2(3)  # top 2 = d3, d1
    idcg = 3 / log2(2) + 2 / log2(3)  # ideal cut at 2 as well
    assert ndcg_at_k(RUN_A["q1"], QRELS_A["q1"], 2) == pytest.approx(dcg / idcg, abs=1e-12)


def test_ndcg_perfect_and_empty() -> None:
    assert ndcg_at_k(["d1", "d2", "d4"], QRELS_A["q1"], 10) == pytest.approx(1.0)
    assert ndcg_at_k([], QRELS_A["q1"], 10) == 0.0
    assert ndcg_at_k(["d1"], {"d1": 0}, 10) == 0.0  # no relevant doc: ideal DCG 0 -> 0


def test_negative_grades_count_as_not_relevant() -> None:
    judgments = {"a": -1, "b": 2}
    assert ndcg_at_k(["a", "b"], judgments) == pytest.approx((2 / log2(3)) / 2)
    assert recall_at_k(["a"], judgments) == 0.0
    assert mrr_at_k(["a", "b"], judgments) == 0.5


def test_recall_and_mrr_by_hand() -> None:
    ranking, judgments = RUN_A["q1"], QRELS_A["q1"]
    assert recall_at_k(ranking, judgments, 100) == pytest.approx(2 / 3)  # d1, d2 of {d1, d2, d4}
    assert recall_at_k(ranking, judgments, 2) == pytest.approx(1 / 3)
    assert recall_at_k(ranking, judgments, 1) == 0.0
    assert mrr_at_k(ranking, judgments, 10) == 0.5
    assert mrr_at_k(ranking, judgments, 1) == 0.0
    assert recall_at_k(ranking, {"d3": 0}, 10) == 0.0


def test_evaluate_query_set_and_keys() -> None:
    qrels = {
        "q1": QRELS_A["q1"],
        "q2": {"x": 1},  # absent from the run: counts, scores 0
        "q3": {"d1": 0},  # no relevant doc: left out
    }
    run = {"q1": RUN_A["q1"], "q3": ["d1"], "q9": ["d1"]}  # q9 is not judged: ignored
    result = evaluate(run, qrels, ndcg_k=5, recall_k=3, mrr_k=2)
    assert set(result) == {"ndcg@5", "recall@3", "mrr@2", "queries"}
    assert result["queries"] == 2
    ndcg_q1 = (3 / log2(3) + 2 / log2(5)) / (3 + 2 / log2(3) + 1 / log2(4))
    assert result["ndcg@5"] == pytest.approx(ndcg_q1 / 2, abs=1e-12)
    assert result["recall@3"] == pytest.approx((1 / 3) / 2)  # top 3 of q1 holds d1 only
    assert result["mrr@2"] == pytest.approx(0.5 / 2)
    assert set(per_query(run, qrels)) == {"q1", "q2"}
    assert per_query(run, qrels)["q2"] == {"ndcg@10": 0.0, "recall@100": 0.0, "mrr@10": 0.0}


def test_default_keys() -> None:
    assert set(evaluate(RUN_A, QRELS_A)) == {"ndcg@10", "recall@100", "mrr@10", "queries"}


def test_invalid_input() -> None:
    with pytest.raises(ValueError):
        ndcg_at_k(["a"], {"a": 1}, 0)
    with pytest.raises(ValueError):
        recall_at_k(["a", "a"], {"a": 1}, 10)
    with pytest.raises(ValueError):
        evaluate({"q": ["a"]}, {"q": {"a": 0}})  # nothing to average


@pytest.mark.parametrize("ks", [(10, 100, 10), (2, 3, 1), (5, 1, 3)])
def test_hand_cases_match_ir_measures(ks: tuple[int, int, int]) -> None:
    qrels = {
        "q1": QRELS_A["q1"],
        "q2": {"x": 1, "y": 3},
        "q3": {"d1": 0},
        "q4": {"a": -1, "b": 2, "c": 1},
    }
    run = {"q1": RUN_A["q1"], "q3": ["d1"], "q4": ["a", "z", "c", "b"], "q9": ["d1"]}
    assert_matches_reference(run, qrels, *ks)


# --------------------------------------------------------------------------- random cases

DOCS = [f"d{i}" for i in range(25)]
QIDS = [f"q{i}" for i in range(8)]

grade = st.sampled_from([0, 0, 1, 1, 2, 3, -1])
judgments = st.dictionaries(st.sampled_from(DOCS), grade, min_size=1, max_size=12)
qrels_st = st.dictionaries(st.sampled_from(QIDS[:6]), judgments, min_size=1, max_size=6)
ranking_st = st.lists(st.sampled_from(DOCS), unique=True, max_size=20)
run_st = st.dictionaries(st.sampled_from(QIDS), ranking_st, max_size=8)
k_st = st.integers(min_value=1, max_value=15)


@settings(max_examples=300, deadline=None)
@given(run=run_st, qrels=qrels_st, ndcg_k=k_st, recall_k=k_st, mrr_k=k_st)
def test_random_cases_match_ir_measures(run, qrels, ndcg_k, recall_k, mrr_k) -> None:
    assert_matches_reference(run, qrels, ndcg_k, recall_k, mrr_k)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_large_seeded_runs_match_ir_measures(seed: int) -> None:
    """Benchmark-sized: 200 queries, rankings of 150 from 400 docs, grades 0..3."""
    rng = random.Random(seed)
    docs = [f"doc{i}" for i in range(400)]
    qrels = {
        f"q{i}": {d: rng.choice([0, 1, 1, 2, 3]) for d in rng.sample(docs, rng.randint(1, 30))}
        for i in range(200)
    }
    run = {}
    for qid, js in qrels.items():
        if rng.random() < 0.05:
            continue  # some judged queries missing from the run
        pool = list(js) + rng.sample(docs, 200)
        ranking = list(dict.fromkeys(rng.sample(pool, len(pool))))[:150]
        run[qid] = ranking
    assert_matches_reference(run, qrels)
    assert_matches_reference(run, qrels, 20, 50, 5)


# --------------------------------------------------------------------------- report


def test_summarize_matches_evaluate() -> None:
    qrels = {"q1": QRELS_A["q1"], "q2": {"x": 1}}
    assert summarize(per_query(RUN_A, qrels)) == evaluate(RUN_A, qrels)
    with pytest.raises(ValueError):
        summarize({})
    with pytest.raises(ValueError):
        summarize({"a": {"m": 1.0}, "b": {"n": 1.0}})


def test_format_table_plain_and_markdown() -> None:
    rows = [
        {"set": "scifact", "ndcg@10": 0.66412, "queries": 300},
        {"set": "a|b", "queries": 5},  # missing key -> empty cell
    ]
    cols = ["set", "ndcg@10", "queries"]
    assert format_table(rows, cols).splitlines() == [
        "set      ndcg@10  queries",
        "-------  -------  -------",
        "scifact   0.6641      300",
        "a|b                     5",
    ]
    assert format_table(rows, cols, markdown=True, precision=2).splitlines() == [
        "| set     | ndcg@10 | queries |",
        "| ------- | ------: | ------: |",
        "| scifact |    0.66 |     300 |",
        "| a\\|b    |         |       5 |",
    ]
    assert format_table([], ["x"]) == "x\n-"
