"""nDCG@10 of the default hybrid, the rm3 lane alone and lexical fusion (bm25, index, rm3) with other
RM3 settings of the rm3 lane, per judged set: a Markdown table for bench/fusion_grids.md.

    python bench/grid_rm3_terms.py [--data ../shared/data] [--sets scifact cranfield cisi npl]

Each set is indexed once through ``sleuth.eval.run.EvalRun`` (vectors from sleuth's cache); the rm3
lane's ``fb_blocks``, ``fb_terms`` and ``original_weight`` are set on the engine's lane between runs,
so every row ranks the same index with the default lanes, weights and fusion. The first row is the
default (``sleuth.lanes.lexical.RM3_FEEDBACK_TERMS`` etc.); ``helped`` / ``hurt`` compare the
hybrid's nDCG@10 with it (a difference over 0.0001). Why it was run: fewer expansion terms make the
rm3 lane's second round cheaper at 1,000,000 blocks (docs/BENCH.md, issue 16 item 6). CoSQA is not
among the sets: it is reported, never tuned on.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from sleuth.eval.run import EvalRun
from sleuth.lanes.lexical import RM3_FEEDBACK_BLOCKS, RM3_FEEDBACK_TERMS, RM3_ORIGINAL_WEIGHT

ROOT = Path(__file__).resolve().parent.parent
#: RM3 settings tried: (feedback blocks, expansion terms, original-query weight λ); the default first.
SETTINGS: list[tuple[int, int, float]] = [
    (RM3_FEEDBACK_BLOCKS, RM3_FEEDBACK_TERMS, RM3_ORIGINAL_WEIGHT),
    (10, 15, 0.7), (10, 12, 0.7), (10, 10, 0.7), (10, 10, 0.6), (10, 10, 0.8),
]
#: Lane sets evaluated per setting, by column name (None: the default lanes).
COLUMNS: dict[str, list[str] | None] = {"hybrid": None, "rm3 lane": ["rm3"], "bm25+index+rm3": ["bm25", "index", "rm3"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data")
    ap.add_argument("--sets", nargs="+", default=["scifact", "cranfield", "cisi", "npl"])
    args = ap.parse_args()
    # scores[setting][set][column] = (nDCG@10, Recall@100)
    scores: dict[tuple[int, int, float], dict[str, dict[str, tuple[float, float]]]] = {s: {} for s in SETTINGS}
    for name in args.sets:
        run = EvalRun(args.data / name)
        try:
            lane = run.engine.lanes["rm3"]
            for setting in SETTINGS:
                lane.fb_blocks, lane.fb_terms, lane.original_weight = setting  # type: ignore[attr-defined]
                for column, lanes in COLUMNS.items():
                    report = run.evaluate(lanes)
                    scores[setting].setdefault(name, {})[column] = (report.ndcg_10, report.recall_100)
                print(f"{name} rm3-{'-'.join(map(str, setting))} done", file=sys.stderr, flush=True)
        finally:
            run.close()
    head = "| setting | " + " | ".join(f"{n} hybrid" for n in args.sets) + " | " + " | ".join(
        f"{n} rm3 lane / bm25+index+rm3" for n in args.sets) + " | helped | hurt |"
    print(head)
    print("|" + "---|" * (2 * len(args.sets) + 3))
    first = scores[SETTINGS[0]]
    for setting in SETTINGS:
        row = scores[setting]
        hybrid = [f"{row[n]['hybrid'][0]:.4f} / {row[n]['hybrid'][1]:.3f}" for n in args.sets]
        alone = [f"{row[n]['rm3 lane'][0]:.4f} / {row[n]['bm25+index+rm3'][0]:.4f}" for n in args.sets]
        diff = {n: row[n]["hybrid"][0] - first[n]["hybrid"][0] for n in args.sets}
        helped = ", ".join(n for n, d in diff.items() if d > 0.0001)
        hurt = ", ".join(n for n, d in diff.items() if d < -0.0001)
        label = "rm3-{}-{}-{}".format(*setting) + (" (the default)" if setting == SETTINGS[0] else "")
        print(f"| {label} | " + " | ".join(hybrid) + " | " + " | ".join(alone) + f" | {helped} | {hurt} |")


if __name__ == "__main__":
    main()
