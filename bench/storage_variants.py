"""nDCG@10 of the vector lane and the default hybrid with the block vectors stored in other ways.

    XDG_CACHE_HOME=<private cache> .venv/bin/python bench/storage_variants.py \
        [--sets scifact cranfield cisi npl] [--variants f32 q8 f16 ...] [--fp32-model] \
        [--float32 DIR] [--save-float32 DIR]

For each judged set, runs what ``sleuth eval DATASET --lanes vector`` and ``sleuth eval DATASET`` run
(EvalRun, default settings) once per storage variant, with the vector lane's float32 matrix replaced
by the variant's decoding of the blocks' float32 vectors (``decode(encode(v))``); queries are embedded
once and stay float32, as the lane does. The float32 vectors of the blocks (the model's output,
before storage) come from ``DIR/<set>.<model>.npz`` (``hashes``, ``vectors``) when given, else from
a float32 lane file of an index made before catalog format 5 (``vectors.<stem>.<token>.f32`` with a
``vector-state 2`` state file), else the blocks are embedded again (minutes per set).
``--fp32-model`` uses the float32 model (``model_int8 = false``) instead of the default by CPU.
Prints one JSON line per set and variant: bytes per vector, fidelity (1 - cosine to float32, mean;
standard deviation of the dot-product error over 200 seeded block pairs) and the two nDCG@10.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "src"))

from sleuth.config import Config  # noqa: E402
from sleuth.eval.run import EvalRun  # noqa: E402
from sleuth.store import vector_codes  # noqa: E402
from sleuth.store.vector_cache import stem_for  # noqa: E402

JUDGED_SETS = ("scifact", "cranfield", "cisi", "npl")
CODE_MAX = 127


def _norm_kept(v: np.ndarray, d: np.ndarray) -> np.ndarray:
    """``d`` scaled to the norms of ``v`` (row by row; how every variant keeps unit vectors unit)."""
    n = np.linalg.norm(d, axis=1, keepdims=True)
    return d * np.linalg.norm(v, axis=1, keepdims=True) / np.where(n > 0, n, 1.0)


def q8_vector(v: np.ndarray) -> np.ndarray:
    """Format 5: one step per vector, max|v| / 127 (the scale keeping the norm)."""
    step = np.abs(v).max(axis=1, keepdims=True) / CODE_MAX
    return _norm_kept(v, np.clip(np.rint(v / np.where(step > 0, step, 1.0)), -CODE_MAX, CODE_MAX))


def format_6(v: np.ndarray) -> np.ndarray:
    """Format 6 as sleuth.store.vector_codes writes it (blocks of ``vector_codes.BLOCK_DIMS``)."""
    return vector_codes.decode(vector_codes.encode(v)).astype(np.float64)


def q8_blocks(width: int) -> Callable[[np.ndarray], np.ndarray]:
    """8-bit codes with one float16 scale per block of ``width`` dimensions (step: block max / 127)."""
    def f(v: np.ndarray) -> np.ndarray:
        n, d = v.shape
        w = v.reshape(n, d // width, width)
        step = (np.abs(w).max(axis=2, keepdims=True) / CODE_MAX).astype(np.float16).astype(np.float64)
        step = np.where(step > 0, step, 1.0)
        codes = np.clip(np.rint(w / step), -CODE_MAX, CODE_MAX)
        return _norm_kept(v, (codes * step).reshape(n, d))
    return f


def q8_zero_point(v: np.ndarray) -> np.ndarray:
    """8-bit codes with a zero point per vector (min..max in 255 steps)."""
    lo, hi = v.min(axis=1, keepdims=True), v.max(axis=1, keepdims=True)
    step = np.where(hi > lo, (hi - lo) / 255, 1.0)
    return _norm_kept(v, np.rint((v - lo) / step) * step + lo)


def q8_rotated(v: np.ndarray) -> np.ndarray:
    """Format 5's codes of the vector turned by a seeded random rotation (spreads large dimensions)."""
    rot, _ = np.linalg.qr(np.random.default_rng(0).standard_normal((v.shape[1], v.shape[1])))
    return q8_vector(v @ rot) @ rot.T


def q8_clipped(ratio: float) -> Callable[[np.ndarray], np.ndarray]:
    """Format 5 with the step at ``ratio`` x max|v| / 127 (the largest components clipped)."""
    def f(v: np.ndarray) -> np.ndarray:
        step = np.abs(v).max(axis=1, keepdims=True) * ratio / CODE_MAX
        step = np.where(step > 0, step, 1.0)
        return _norm_kept(v, np.clip(np.rint(v / step), -CODE_MAX, CODE_MAX) * step)
    return f


def float16(v: np.ndarray) -> np.ndarray:
    return v.astype(np.float16).astype(np.float64)


#: name -> (decode(encode(v)), bytes per vector at 384 dimensions)
VARIANTS: dict[str, tuple[Callable[[np.ndarray], np.ndarray], int]] = {
    "f32": (lambda v: v, 1536),
    "f16": (float16, 768),
    "q8": (q8_vector, 388),
    "format-6": (format_6, vector_codes.blob_bytes(384)),
    "q8-b64": (q8_blocks(64), 384 + 2 * 6),
    "q8-b32": (q8_blocks(32), 384 + 2 * 12),
    "q8-b16": (q8_blocks(16), 384 + 2 * 24),
    "q8-zp": (q8_zero_point, 392),
    "q8-rot": (q8_rotated, 388),
    "q8-clip0.8": (q8_clipped(0.8), 388),
}


def float32_vectors(run: EvalRun, model: str, folder: Path | None) -> dict[str, np.ndarray]:
    """``{embed_hash: float32 vector}`` of every block of the run's index (see the module docstring)."""
    name = run.dataset.name
    if folder is not None and (folder / f"{name}.{stem_for(model)}.npz").is_file():
        with np.load(folder / f"{name}.{stem_for(model)}.npz") as z:
            return dict(zip(z["hashes"].astype(str).tolist(), z["vectors"], strict=True))
    state = run.index_dir / f"{stem_for(model)}.state.npz"
    if state.is_file():
        with np.load(state) as z:
            if str(z["__key__"]) == "vector-state 2" and str(z["model"]) == model:
                vectors = np.fromfile(run.index_dir / str(z["vectors_file"]), dtype=np.float32)
                vectors = vectors.reshape(len(z["embed_hashes"]), -1)
                return {h: v for h, v in zip(z["embed_hashes"].astype(str).tolist(), vectors, strict=True) if h}
    catalog = run.engine.catalog
    rows = catalog.conn.execute("SELECT b.embed_hash, d.title, b.text FROM blocks b JOIN documents d"
                                " ON b.doc_id = d.doc_id GROUP BY b.embed_hash").fetchall()
    from sleuth.store.rows import embedding_text

    embedder = run.engine.lanes["vector"].context.model.get()
    vectors = embedder.embed([embedding_text(t, x) for _, t, x in rows])
    return {h: v for (h, _, _), v in zip(rows, vectors, strict=True)}


def main() -> None:
    """Evaluate each variant on each set (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sets", nargs="+", default=list(JUDGED_SETS))
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--fp32-model", action="store_true")
    ap.add_argument("--float32", type=Path, help="folder of <set>.<stem>.npz float32 block vectors")
    ap.add_argument("--save-float32", type=Path, help="save the float32 block vectors used there")
    args = ap.parse_args()
    config = Config(model_int8=False) if args.fp32_model else Config()
    for name in args.sets:
        run = EvalRun(DATA / name, config=config)
        try:
            lane = run.engine.lanes["vector"]
            model = lane.context.model.get().name
            # before the lane's matrix is first built (which sweeps old lane files)
            truth = float32_vectors(run, model, args.float32)
            if args.save_float32 is not None:
                args.save_float32.mkdir(parents=True, exist_ok=True)
                np.savez(args.save_float32 / f"{name}.{stem_for(model)}.npz", hashes=np.asarray(list(truth)),
                         vectors=np.asarray(list(truth.values()), dtype=np.float32))
            matrix = lane.matrix()
            hash_of = dict(run.engine.catalog.conn.execute("SELECT block_id, embed_hash FROM blocks").fetchall())
            slots = [i for i, b in enumerate(matrix.block_ids.tolist()) if b]
            v = np.stack([truth[hash_of[matrix.block_ids[i]]] for i in slots]).astype(np.float64)
            pairs = np.random.default_rng(7).choice(len(v), 200, replace=False)
            for variant in args.variants:
                code, nbytes = VARIANTS[variant]
                d = code(v)
                full = np.zeros((len(matrix.block_ids), v.shape[1]), dtype=np.float32)
                full[slots] = d
                matrix._vectors = full
                cos = (d * v).sum(1) / np.linalg.norm(d, axis=1) / np.linalg.norm(v, axis=1)
                err = v[pairs] @ d.T - v[pairs] @ v.T
                vector, hybrid = run.evaluate(["vector"]), run.evaluate()
                print(json.dumps({"set": name, "model": model, "variant": variant, "bytes": nbytes,
                                  "one_minus_cos_mean": float(np.mean(1 - cos)), "dot_err_std": float(err.std()),
                                  "vector_ndcg10": vector.ndcg_10, "hybrid_ndcg10": hybrid.ndcg_10,
                                  "vector_recall100": vector.recall_100, "hybrid_recall100": hybrid.recall_100}),
                      flush=True)
        finally:
            run.close()


if __name__ == "__main__":
    main()
