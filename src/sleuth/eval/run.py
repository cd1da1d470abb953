"""``sleuth eval``: index a BEIR-layout dataset, run its queries, score the rankings.

The I/O half of evaluation (the metric functions and the loader live in ``sleuth.eval``). The
evaluation index is kept in sleuth's cache (``<cache>/eval/<dataset>``) so that block vectors,
cached by block text, are computed once: a second run of the same dataset re-indexes the text
(seconds) but embeds nothing.
"""

from __future__ import annotations

import os
import shutil
import time
from collections.abc import Sequence
from pathlib import Path

from sleuth.config import Config
from sleuth.engine import Engine, Record
from sleuth.errors import IndexFormatError
from sleuth.eval import BeirDataset, evaluate, load_beir
from sleuth.reports import EvalReport
from sleuth.types import SearchRequest

#: Documents retrieved per query (Recall@100 needs 100).
EVAL_DEPTH_DOCS = 100


def eval_cache_dir(name: str) -> Path:
    """Where the evaluation index of dataset ``name`` is kept (``$XDG_CACHE_HOME/sleuth/eval/<name>``)."""
    base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return base / "sleuth" / "eval" / name


class EvalRun:
    """A dataset indexed once, evaluated with any lane set.

    Args:
        dataset_dir: a BEIR-layout folder. index_dir: where to keep the index (default: the cache).
        config: ranking settings (default: the built-in defaults, not any config file).
        fresh: start from an empty index (re-embeds everything).
        embed: embed the blocks that have no vector yet (False when no lane that will be asked for
            matches by meaning: a lexical evaluation makes no vectors).
    Raises:
        sleuth.eval.DatasetError: the dataset is malformed.
    """

    def __init__(self, dataset_dir: Path, index_dir: Path | None = None, config: Config | None = None,
                 fresh: bool = False, embed: bool = True) -> None:
        self.dataset: BeirDataset = load_beir(dataset_dir)
        self.index_dir = index_dir or eval_cache_dir(self.dataset.name)
        if fresh:
            shutil.rmtree(self.index_dir, ignore_errors=True)
        try:
            self.engine = Engine(self.index_dir, config or Config())
        except IndexFormatError:
            # An index of an older format: rebuild it, keeping the vectors (they depend only on text).
            old_catalog = self.index_dir.with_name(self.index_dir.name + ".old-catalog.sqlite3")
            (self.index_dir / "catalog.sqlite3").replace(old_catalog)
            shutil.rmtree(self.index_dir, ignore_errors=True)
            self.engine = Engine(self.index_dir, config or Config())
            self.engine.catalog.import_vectors(old_catalog)
            old_catalog.unlink()
        started = time.perf_counter()
        report = self.engine.index_records(
            self.dataset.name,
            (Record(rel_path=d.doc_id, title=d.title, text=f"{d.title}\n\n{d.text}" if d.title else d.text)
             for d in self.dataset.corpus),
            embed=embed,
        )
        self.index_s = time.perf_counter() - started
        self.embedded = report.embedded

    def evaluate(self, lanes: Sequence[str] | None = None, limit: int = EVAL_DEPTH_DOCS,
                 rank_window: int | None = None) -> EvalReport:
        """Run every query with ``lanes`` (None = the configured lanes), ``limit`` results each (in
        documents; Recall@100 counts only the first ``limit``) and ``rank_window``
        (:attr:`SearchRequest.rank_window`; None: the engine's own), and score the ranking.

        Raises:
            pydantic.ValidationError: ``limit`` or ``rank_window`` is out of range.
            sleuth.errors.QueryError: ``rank_window`` is smaller than ``limit``.
        """
        run: dict[str, list[str]] = {}
        unavailable: dict[str, str] = {}
        used: list[str] = []
        started = time.perf_counter()
        for qid, text in self.dataset.queries.items():
            request = SearchRequest(query=text, limit=limit, rank_window=rank_window,
                                    lanes=list(lanes) if lanes else None, snippets=False)
            resp = self.engine.search(request)
            run[qid] = [h.path for h in resp.hits]
            unavailable.update(resp.unavailable_lanes)
            used = used or resp.lanes
        query_ms = (time.perf_counter() - started) * 1000 / max(1, len(self.dataset.queries))
        scores = evaluate(run, self.dataset.qrels)
        return EvalReport.model_validate({
            "dataset": self.dataset.name,
            "lanes": used,
            **{k: round(v, 4) if isinstance(v, float) else v for k, v in scores.items()},
            "documents": len(self.dataset.corpus),
            "index_s": round(self.index_s, 2),
            "embedded": self.embedded,
            "query_ms_mean": round(query_ms, 2),
            "unavailable_lanes": unavailable,
        })

    def close(self) -> None:
        self.engine.close()


def run_eval(dataset_dir: Path, lanes: Sequence[str] | None = None, config: Config | None = None,
             index_dir: Path | None = None, fresh: bool = False) -> EvalReport:
    """Index ``dataset_dir`` (reusing cached vectors) and evaluate one lane set; see :class:`EvalRun`.
    Blocks are embedded only when a lane of ``lanes`` (or of the configured lanes, when None)
    matches by meaning."""
    from sleuth.lanes.registry import lanes_matching

    asked = list(lanes) if lanes else list((config or Config()).lanes)
    run = EvalRun(dataset_dir, index_dir, config, fresh, embed=bool(set(asked) & lanes_matching("meaning")))
    try:
        return run.evaluate(lanes)
    finally:
        run.close()
