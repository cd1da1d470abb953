"""nDCG@10 of ``project_memory_search`` (seed 004: every family's lanes, the graph included) on BEIR
sets, beside the engine's default ranking of the same index. Both run the one search pipeline, so
with the same lanes they rank alike (tests/integration/test_pipeline_parity.py); this measures what
the tool's default lanes (adding the graph lane) change.

    python bench/memory_eval.py ../shared/data/scifact ../shared/data/cranfield [--lanes bm25 vector]

Prints one table row per (dataset, ranking). Uses the evaluation index cache (see sleuth.eval.run).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sleuth.eval.metrics import evaluate
from sleuth.eval.run import EvalRun
from sleuth.memory.arguments import parse_memory_request
from sleuth.memory.search import MemorySearch

#: Results per query (nDCG@10 needs 10).
RESULTS_PER_QUERY = 10


def memory_ndcg(run: EvalRun, lanes: list[str] | None = None) -> tuple[float, float]:
    """(nDCG@10, mean ms per query) of project_memory_search over ``run``'s index (``lanes``: the
    ``filters.retrieval_lanes``; None: the tool's defaults)."""
    searcher = MemorySearch(run.engine)
    project = run.engine.project_ids()[0]
    ranking: dict[str, list[str]] = {}
    started = time.perf_counter()
    for qid, text in run.dataset.queries.items():
        args = {"query": text[:4000], "project_id": project, "limit": RESULTS_PER_QUERY,
                "response_deadline_ms": 300_000, "response_budget_bytes": 1_000_000}
        if lanes:
            args["filters"] = {"retrieval_lanes": lanes}
        payload = searcher.search(parse_memory_request(args))
        ranking[qid] = [r["path"] for r in payload["results"]]
    ms = (time.perf_counter() - started) * 1000 / max(1, len(run.dataset.queries))
    return float(evaluate(ranking, run.dataset.qrels)["ndcg@10"]), ms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--lanes", nargs="*", default=None, help="retrieval_lanes filter (default: all four)")
    parser.add_argument("--skip-engine", action="store_true", help="do not evaluate the engine's default ranking")
    args = parser.parse_args(argv)
    print("| dataset | ranking | nDCG@10 | ms/query |")
    print("|---|---|---:|---:|")
    for dataset in args.datasets:
        run = EvalRun(dataset)
        if not args.skip_engine:
            engine = run.evaluate()
            print(f"| {run.dataset.name} | engine default ({'+'.join(engine.lanes)}) | {engine.ndcg_10:.4f} "
                  f"| {engine.query_ms_mean:.1f} |", flush=True)
        ndcg, ms = memory_ndcg(run, args.lanes)
        print(f"| {run.dataset.name} | project_memory_search (lanes {'+'.join(args.lanes or ['all'])}) "
              f"| {ndcg:.4f} | {ms:.1f} |", flush=True)
        run.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
