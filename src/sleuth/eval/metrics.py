"""Ranking metrics with the standard trec_eval definitions: nDCG@k, Recall@k, MRR@k.

Pure functions, no I/O. Shapes::

    Qrels = {query_id: {doc_id: grade}}     # graded relevance; grade <= 0 means "not relevant"
    Run   = {query_id: [doc_id, ...]}       # ranked best first, no duplicates

Definitions (each matches what ``trec_eval`` / ``pytrec_eval`` report, which the tests check
against ``ir_measures`` to 1e-9):

* **nDCG@k** -- Järvelin & Kekäläinen, "Cumulated gain-based evaluation of IR techniques",
  ACM TOIS 20(4), 2002, in the form of trec_eval's ``ndcg_cut``: gain = grade (linear, negative
  grades count as 0), discount ``1 / log2(rank + 1)`` for 1-based ranks, and the ideal DCG is built
  from *all* judged grades of the query sorted descending, also cut at k.
* **Recall@k** -- trec_eval ``recall.k``: ``|relevant ∩ top k| / |relevant|``, relevant = grade > 0.
* **MRR@k** -- trec_eval ``recip_rank`` restricted to the top k (``RR@k`` in ir_measures):
  ``1 / rank`` of the first document with grade > 0 within the top k, else 0.

Which queries are averaged: :func:`evaluate` and :func:`per_query` score every query id in the
qrels that has at least one document with grade > 0 (a query absent from the run scores 0 on every
metric). Queries with no relevant document are left out, since every metric is 0 for them by
construction (trec_eval would count them, as 0, which only dilutes the mean); queries that are in
the run but not in the qrels are ignored (as trec_eval does). ir_measures' mean agrees with ours
once both are restricted to the same set of queries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = [
    "Qrels",
    "Run",
    "evaluate",
    "judged_queries",
    "metric_names",
    "mrr_at_k",
    "ndcg_at_k",
    "per_query",
    "recall_at_k",
]

Qrels = dict[str, dict[str, int]]
"""query_id -> {doc_id: graded relevance}; grade <= 0 = judged not relevant."""

Run = dict[str, list[str]]
"""query_id -> ranked doc ids, best first, no duplicates."""


def _top_k(ranking: Sequence[str], k: int) -> Sequence[str]:
    """The first ``k`` doc ids of ``ranking``; rejects ``k < 1`` and duplicates within them."""
    if k < 1:
        raise ValueError(f"cutoff k must be >= 1, got {k}")
    top = ranking[:k]
    if len(set(top)) != len(top):
        raise ValueError("ranking contains duplicate doc ids")
    return top


def ndcg_at_k(ranking: Sequence[str], judgments: Mapping[str, int], k: int = 10) -> float:
    """Normalised discounted cumulative gain at cutoff ``k`` (trec_eval ``ndcg_cut.k``).

    ``DCG@k = sum_{r=1..k} gain(d_r) / log2(r + 1)`` with ``gain = max(grade, 0)`` (unjudged = 0);
    the ideal DCG@k uses all judged grades of the query sorted descending. Returns 0.0 when the
    ideal DCG is 0 (no relevant document). Järvelin & Kekäläinen, ACM TOIS 20(4), 2002.
    """
    top = _top_k(ranking, k)
    dcg = 0.0
    for rank, doc_id in enumerate(top, start=1):
        gain = judgments.get(doc_id, 0)
        if gain > 0:
            dcg += gain / math.log2(rank + 1)
    ideal_gains = sorted((g for g in judgments.values() if g > 0), reverse=True)[:k]
    idcg = sum(g / math.log2(rank + 1) for rank, g in enumerate(ideal_gains, start=1))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Sequence[str], judgments: Mapping[str, int], k: int = 100) -> float:
    """Recall at cutoff ``k`` (trec_eval ``recall.k``): fraction of relevant docs (grade > 0) in
    the top ``k``. Returns 0.0 when the query has no relevant document."""
    top = _top_k(ranking, k)
    relevant = {d for d, g in judgments.items() if g > 0}
    if not relevant:
        return 0.0
    return sum(1 for d in top if d in relevant) / len(relevant)


def mrr_at_k(ranking: Sequence[str], judgments: Mapping[str, int], k: int = 10) -> float:
    """Reciprocal rank at cutoff ``k`` (trec_eval ``recip_rank`` on the top k; ir_measures
    ``RR@k``): ``1 / rank`` of the first doc with grade > 0 among the top ``k``, else 0.0.
    Averaged over queries by :func:`evaluate` this is MRR@k."""
    top = _top_k(ranking, k)
    for rank, doc_id in enumerate(top, start=1):
        if judgments.get(doc_id, 0) > 0:
            return 1.0 / rank
    return 0.0


def metric_names(*, ndcg_k: int = 10, recall_k: int = 100, mrr_k: int = 10) -> tuple[str, str, str]:
    """The metric keys used by :func:`evaluate` / :func:`per_query`, e.g.
    ``("ndcg@10", "recall@100", "mrr@10")``."""
    return f"ndcg@{ndcg_k}", f"recall@{recall_k}", f"mrr@{mrr_k}"


def judged_queries(qrels: Mapping[str, Mapping[str, int]]) -> list[str]:
    """Query ids of ``qrels`` with at least one relevant doc (grade > 0), in qrels order.

    These are the queries :func:`evaluate` averages over."""
    return [qid for qid, judgments in qrels.items() if any(g > 0 for g in judgments.values())]


def per_query(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    ndcg_k: int = 10,
    recall_k: int = 100,
    mrr_k: int = 10,
) -> dict[str, dict[str, float]]:
    """Per-query metrics: ``{query_id: {"ndcg@10": x, "recall@100": y, "mrr@10": z}}``.

    Covers exactly :func:`judged_queries` (qrels queries with >= 1 relevant doc); a query absent
    from ``run`` is scored on an empty ranking (all metrics 0). Run queries not in qrels are ignored.
    """
    ndcg_name, recall_name, mrr_name = metric_names(ndcg_k=ndcg_k, recall_k=recall_k, mrr_k=mrr_k)
    out: dict[str, dict[str, float]] = {}
    for qid in judged_queries(qrels):
        judgments = qrels[qid]
        ranking = run.get(qid, ())
        out[qid] = {
            ndcg_name: ndcg_at_k(ranking, judgments, ndcg_k),
            recall_name: recall_at_k(ranking, judgments, recall_k),
            mrr_name: mrr_at_k(ranking, judgments, mrr_k),
        }
    return out


def evaluate(
    run: Mapping[str, Sequence[str]],
    qrels: Mapping[str, Mapping[str, int]],
    *,
    ndcg_k: int = 10,
    recall_k: int = 100,
    mrr_k: int = 10,
) -> dict[str, float]:
    """Mean metrics over the judged queries: ``{"ndcg@10", "recall@100", "mrr@10", "queries"}``.

    The metric keys are built from the k values; ``"queries"`` is the number of queries averaged
    (qrels queries with >= 1 relevant doc; those missing from ``run`` count as 0). Raises
    ``ValueError`` if there is no such query, since the mean would be undefined.
    """
    scores = per_query(run, qrels, ndcg_k=ndcg_k, recall_k=recall_k, mrr_k=mrr_k)
    if not scores:
        raise ValueError("qrels contain no query with a relevant document (grade > 0)")
    n = len(scores)
    summary: dict[str, float] = {}
    for name in metric_names(ndcg_k=ndcg_k, recall_k=recall_k, mrr_k=mrr_k):
        summary[name] = math.fsum(s[name] for s in scores.values()) / n
    summary["queries"] = n
    return summary
