"""Retrieval evaluation: trec_eval-style metrics, BEIR dataset loading, result tables."""

from __future__ import annotations

from sleuth.eval.beir import BeirDataset, CorpusDoc, DatasetError, load_beir
from sleuth.eval.metrics import (
    Qrels,
    Run,
    evaluate,
    judged_queries,
    metric_names,
    mrr_at_k,
    ndcg_at_k,
    per_query,
    recall_at_k,
)
from sleuth.eval.report import format_table, summarize

__all__ = [
    "BeirDataset",
    "CorpusDoc",
    "DatasetError",
    "Qrels",
    "Run",
    "evaluate",
    "format_table",
    "judged_queries",
    "load_beir",
    "metric_names",
    "mrr_at_k",
    "ndcg_at_k",
    "per_query",
    "recall_at_k",
    "summarize",
]
