"""``sleuth eval``: index a BEIR-layout dataset, run its queries, score the rankings.

The I/O half of evaluation (the metric functions and the loader live in ``sleuth.eval``).
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.eval import evaluate, load_beir
from sleuth.types import SearchRequest

#: Documents retrieved per query (Recall@100 needs 100).
EVAL_DEPTH_DOCS = 100


def run_eval(dataset_dir: Path, lanes: Sequence[str] | None = None, config: Config | None = None,
             index_dir: Path | None = None) -> dict[str, object]:
    """Index the corpus of ``dataset_dir`` into a fresh index and evaluate its queries.

    Returns ``{"dataset", "lanes", "ndcg@10", "recall@100", "mrr@10", "queries", "documents",
    "index_s", "query_ms_mean"}``. Raises ``sleuth.eval.DatasetError`` for a malformed dataset.
    """
    dataset = load_beir(dataset_dir)
    with tempfile.TemporaryDirectory(prefix="sleuth-eval-") as tmp:
        engine = Engine(index_dir or Path(tmp), config)
        try:
            started = time.perf_counter()
            engine.index_records(
                dataset.name,
                (Record(rel_path=d.doc_id, title=d.title, text=f"{d.title}\n\n{d.text}" if d.title else d.text)
                 for d in dataset.corpus),
            )
            index_s = time.perf_counter() - started
            run: dict[str, list[str]] = {}
            started = time.perf_counter()
            for qid, text in dataset.queries.items():
                request = SearchRequest(
                    query=text, limit=EVAL_DEPTH_DOCS, lanes=list(lanes) if lanes else None, snippets=False
                )
                resp = engine.search(request)
                run[qid] = [h.path for h in resp.hits]
            query_ms = (time.perf_counter() - started) * 1000 / max(1, len(dataset.queries))
            used_lanes = list(engine.config.with_lanes(list(lanes) if lanes else None).lanes)
        finally:
            engine.close()
    scores = evaluate(run, dataset.qrels)
    return {
        "dataset": dataset.name,
        "lanes": used_lanes,
        **{k: round(v, 4) if isinstance(v, float) else v for k, v in scores.items()},
        "documents": len(dataset.corpus),
        "index_s": round(index_s, 2),
        "query_ms_mean": round(query_ms, 2),
    }
