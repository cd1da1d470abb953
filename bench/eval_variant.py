"""nDCG@10 of the vector lane and the default hybrid with a given ONNX model file, per judged set.

    XDG_CACHE_HOME=<private cache> .venv/bin/python bench/eval_variant.py MODEL.onnx NAME \
        [--sets scifact cranfield cisi npl]

Runs what ``sleuth eval DATASET --lanes vector`` and ``sleuth eval DATASET`` run (EvalRun, default
settings) with the vector lane's model set to a folder holding ``MODEL.onnx`` (as ``model.onnx``)
and the default model's tokenizer, used as is (``model_int8 = false``). The vectors are recorded
under the folder's name, ``NAME``, so those of another variant are never reused; a variant's folder
named as a built-in model (e.g. ``all-MiniLM-L6-v2@int8-...``) shares its vectors, which is right
only when the files are byte-identical (checked by the caller). Prints one JSON line per set.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "src"))

from sleuth.config import Config  # noqa: E402
from sleuth.embed import packaged_minilm_dir  # noqa: E402
from sleuth.eval.run import EvalRun  # noqa: E402

JUDGED_SETS = ("scifact", "cranfield", "cisi", "npl")


def main() -> None:
    """Evaluate the model on each set (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("model", type=Path)
    ap.add_argument("name")
    ap.add_argument("--sets", nargs="+", default=list(JUDGED_SETS))
    args = ap.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="sleuth-variant-")) / args.name
    folder.mkdir()
    (folder / "model.onnx").symlink_to(args.model.resolve())
    shutil.copy(packaged_minilm_dir() / "tokenizer.json", folder / "tokenizer.json")
    config = Config(model=str(folder), model_int8=False)
    for name in args.sets:
        run = EvalRun(DATA / name, config=config)
        try:
            vector, hybrid = run.evaluate(["vector"]), run.evaluate()
        finally:
            run.close()
        print(json.dumps({"set": name, "model": args.name, "embedded": run.embedded,
                          "vector_ndcg10": vector.ndcg_10, "hybrid_ndcg10": hybrid.ndcg_10,
                          "hybrid_lanes": hybrid.lanes}), flush=True)
    shutil.rmtree(folder.parent)


if __name__ == "__main__":
    main()
