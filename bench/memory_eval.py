"""nDCG@10 of ``project_memory_search`` (the seed-004 path: exact + lexical + vector + graph lanes,
automatic variants, rerank) on BEIR sets, beside the engine's hybrid ranking of the same index.

    python bench/memory_eval.py ../shared/data/scifact ../shared/data/cranfield [--no-rerank]

Prints one table row per (dataset, setting). Uses the evaluation index cache (see sleuth.evaluation).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from sleuth.eval.metrics import evaluate
from sleuth.evaluation import EvalRun
from sleuth.memory import search as memory_search
from sleuth.memory.request import parse_memory_request
from sleuth.memory.search import MemorySearch

#: Results per query (nDCG@10 needs 10).
RESULTS_PER_QUERY = 10


def memory_ndcg(run: EvalRun, rerank: bool, lanes: list[str] | None = None,
                auto_variants: bool = True) -> tuple[float, float]:
    """(nDCG@10, mean ms per query) of project_memory_search over ``run``'s index (``rerank``: the
    primary-query rerank; ``lanes``: the ``filters.retrieval_lanes``; ``auto_variants``: add
    identifiers and phrases as variants)."""
    memory_search.PRIMARY_RERANK = rerank
    memory_search.AUTO_VARIANTS = auto_variants
    searcher = MemorySearch(run.engine, lane_delays_s={})
    project = run.engine.project_ids()[0]
    ranking: dict[str, list[str]] = {}
    started = time.perf_counter()
    for qid, text in run.dataset.queries.items():
        args = {"query": text[:4000], "project_id": project, "limit": RESULTS_PER_QUERY,
                "response_deadline_ms": 300_000}
        if lanes:
            args["filters"] = {"retrieval_lanes": lanes}
        req = parse_memory_request(args)
        payload = searcher.search(req)
        ranking[qid] = [r["path"] for r in payload["results"]]
    ms = (time.perf_counter() - started) * 1000 / max(1, len(run.dataset.queries))
    searcher.close()
    return float(evaluate(ranking, run.dataset.qrels)["ndcg@10"]), ms


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("datasets", nargs="+", type=Path)
    parser.add_argument("--no-rerank", action="store_true", help="without the primary-query rerank")
    parser.add_argument("--lanes", nargs="*", default=None, help="retrieval_lanes filter (default: all four)")
    parser.add_argument("--no-auto-variants", action="store_true", help="do not add identifiers/phrases as variants")
    parser.add_argument("--skip-engine", action="store_true", help="do not evaluate the engine's hybrid ranking")
    args = parser.parse_args(argv)
    print("| dataset | ranking | nDCG@10 | ms/query |")
    print("|---|---|---:|---:|")
    for dataset in args.datasets:
        run = EvalRun(dataset)
        if not args.skip_engine:
            engine = run.evaluate()
            print(f"| {run.dataset.name} | engine hybrid ({'+'.join(engine['lanes'])}) | {engine['ndcg@10']:.4f} "
                  f"| {engine['query_ms_mean']:.1f} |", flush=True)
        setting = f"lanes {'+'.join(args.lanes or ['all'])}, auto variants {'off' if args.no_auto_variants else 'on'}"
        ndcg, ms = memory_ndcg(run, not args.no_rerank, args.lanes, not args.no_auto_variants)
        print(f"| {run.dataset.name} | project_memory_search ({setting}, primary rerank "
              f"{'off' if args.no_rerank else 'on'}) | {ndcg:.4f} | {ms:.1f} |", flush=True)
        run.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
