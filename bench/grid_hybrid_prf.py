"""Issue 14, hybrid pseudo-relevance feedback: the rm3 lane's feedback blocks taken from a fused first
stage (bm25 + vector, z-scores, the default weights) instead of the bm25 lane's best blocks.

    HPRF=off|fused|uniform [HPRF_FB=10] [HPRF_W='{"bm25": 0.48, "vector": 0.5}'] [HPRF_SW='{"rm3": 0.2}'] \
        python bench/grid_hybrid_prf.py DATASET [DATASET ...]

``HPRF=off`` is the engine as it is (the baseline row); ``fused`` weights each feedback block by its
document's fused score, ``uniform`` weights them alike; ``HPRF_FB`` feedback documents (their best
blocks); ``HPRF_W`` the first stage's lanes and weights; ``HPRF_SW`` overrides the default hybrid's
score weights (e.g. a larger rm3 weight). Every query runs the engine's default hybrid through
``EvalRun.evaluate`` with the rm3 lane's search replaced; prints one JSON line: nDCG@10 and
Recall@100 per dataset. Datasets are read from ../shared/data (``SLEUTH_DATA`` to change it).
A prototype: the first stage is searched again inside the rm3 lane (no latency measured).
Results: docs/EVAL.md, "Issue 14, hybrid pseudo-relevance feedback".
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

from sleuth.config import Config
from sleuth.eval.run import EvalRun
from sleuth.fusion import fuse
from sleuth.lanes.base import LaneQuery
from sleuth.lanes.feedback import rm3_weights
from sleuth.lanes.lexical import FeedbackLane, required_phrases
from sleuth.text import analyze
from sleuth.types import RankedList

MODE = os.environ.get("HPRF", "off")
FEEDBACK_DOCS = int(os.environ.get("HPRF_FB", "10"))
FIRST_STAGE_WEIGHTS: dict[str, float] = json.loads(os.environ.get("HPRF_W", '{"bm25": 0.48, "vector": 0.5}'))
FAMILIES = {"bm25": "lexical", "index": "lexical", "rm3": "lexical", "vector": "semantic"}
_real_search = FeedbackLane.search
_current: dict[str, EvalRun] = {}


def _search(self: FeedbackLane, q: LaneQuery) -> RankedList:
    """The rm3 lane with its feedback blocks from the fused first stage."""
    if MODE == "off":
        return _real_search(self, q)
    pairs = q.parsed.weighted_terms()
    if not pairs:
        return RankedList(self.name, (), ())
    lanes = _current["run"].engine.lanes
    lists = [lanes[name].search(q) for name in FIRST_STAGE_WEIGHTS
             if lanes[name].unavailable() is None and lanes[name].applies(q.parsed)]
    fused = fuse(lists, lambda b: b.partition(":")[0], "zscore", FIRST_STAGE_WEIGHTS, families=FAMILIES,
                 limit=FEEDBACK_DOCS)[:FEEDBACK_DOCS]
    blocks = [d.best_block_id for d in fused]
    scores = [d.score if MODE == "fused" else 1.0 for d in fused]
    texts = self.catalog.block_texts(blocks) if blocks else {}
    feedback = [(s, analyze(texts[b])) for b, s in zip(blocks, scores, strict=True) if b in texts and s > 0]
    scoring = self._scoring(rm3_weights(pairs, feedback, self.fb_terms, self.original_weight), {t for t, _ in pairs})
    if scoring is None:
        return RankedList(self.name, (), ())
    hits = self.postings.search(scoring, q.k, q.projects, required_phrases(self.postings, q.parsed), q.doc_ids)
    return RankedList(self.name, tuple(hits.block_ids), tuple(hits.scores))


def main() -> None:
    FeedbackLane.search = _search  # type: ignore[method-assign]
    data = Path(os.environ.get("SLEUTH_DATA", Path(__file__).resolve().parents[1].parent / "shared" / "data"))
    out: dict[str, object] = {"mode": MODE, "fb": FEEDBACK_DOCS, "first_stage": FIRST_STAGE_WEIGHTS,
                              "score_weights": os.environ.get("HPRF_SW", "")}
    for name in sys.argv[1:]:
        config = Config()
        override = json.loads(os.environ.get("HPRF_SW", "{}"))
        if override:
            config = dataclasses.replace(config, score_weights={**config.score_weights, **override})
        run = EvalRun(data / name, config=config)
        _current["run"] = run
        try:
            report = run.evaluate()
            out[name] = [report.ndcg_10, report.recall_100]
        finally:
            run.close()
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
