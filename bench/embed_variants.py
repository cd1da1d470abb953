"""Fidelity and speed of int8 variants of the default model, on text that is not a judged set.

    .venv/bin/python bench/embed_variants.py [--texts 300] [--rounds 3] [--only NAME ...] [--workdir DIR]
        [--calibrate hugo|builtin] [--no-speed] [--cpu-time] [--against NAME] [--print-channels]

Builds all-MiniLM-L6-v2's float32 graph (the reference) and every int8 variant below from the
package's weights (sleuth.bert_graph), then embeds one sample with each, one text per call on one
thread, as the embedder does. The sample is drawn from the Hugo docs and tldr corpora in
``../shared/data`` (not judged sets, never the eval sets' documents or queries): whole pages (up to
256 word pieces), single paragraphs, and the same paragraphs lower-cased without punctuation (short
plain text). Outlier channels are chosen on a separate draw of Hugo docs paragraphs (``--calibrate
hugo``) or on sleuth.bert_graph's built-in texts. Prints, per variant, 1 - cosine to the float32
vectors (mean, 99th percentile, max) and texts/s interleaved round by round with the ratio to the
current default (``cur-o2``) in the same round; the load average is printed with each round.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "bench"))

from sleuth.bert_graph import (  # noqa: E402
    PRODUCT_KINDS,
    BertConfig,
    build_bert_graph,
    find_outlier_channels,
    load_weights,
    quantize_weight_int8,
)
from sleuth.embed import Embedder, ModelFiles, packaged_minilm_dir, quantize_int8  # noqa: E402

LAYERS = 6
ALL = frozenset(f"{n}.{k}" for n in range(LAYERS) for k in PRODUCT_KINDS)
FFN = frozenset(p for p in ALL if ".ffn" in p)

# name -> (kind, outlier count, outlier points, fp32 points). kind "cur": quantize_dynamic (per-tensor
# activation scales per call) of the graph with outliers apart; "pt": int8 built here, per-token scales;
# "st": the same for one text per call (bert_graph's single_text, the default int8 graph since issue 16).
VARIANTS: dict[str, tuple[str, int, frozenset[str], frozenset[str]]] = {
    "cur-o2": ("cur", 2, FFN, frozenset()),
    "cur-o8": ("cur", 8, FFN, frozenset()),
    "pt-o0": ("pt", 0, frozenset(), frozenset()),
    "pt-o2ffn": ("pt", 2, FFN, frozenset()),
    "pt-o2all": ("pt", 2, ALL, frozenset()),
    "st-o2all": ("st", 2, ALL, frozenset()),
    "pt-o4all": ("pt", 4, ALL, frozenset()),
    "pt-o8all": ("pt", 8, ALL, frozenset()),
    "dq-o2all": ("dq", 2, ALL, frozenset()),
    "dq-o4all": ("dq", 4, ALL, frozenset()),
    "nb-b32": ("nb32", 0, frozenset(), frozenset()),
    "nb-b64": ("nb64", 0, frozenset(), frozenset()),
    "nb-b128": ("nb128", 0, frozenset(), frozenset()),
    "nb-b128-o2all": ("nb128", 2, ALL, frozenset()),
    "nb-b32-o2all": ("nb32", 2, ALL, frozenset()),
    "wq-only": ("wq", 0, frozenset(), frozenset()),
    "pt-o2all-ffn2-fp32": ("pt", 2, ALL, frozenset(p for p in ALL if p.endswith("ffn2"))),
    "pt-o2all-qkv-fp32": ("pt", 2, ALL, frozenset(p for p in ALL if p.endswith("qkv"))),
    "pt-o2ffn-last-fp32": ("pt", 2, FFN, frozenset(p for p in ALL if p.startswith("5."))),
    "pt-o2ffn-attnout-fp32": ("pt", 2, FFN, frozenset(p for p in ALL if p.endswith("attn_out"))),
}


def _pages(name: str) -> list[str]:
    with gzip.open(DATA / name / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        return [json.loads(line)["text"] for line in fh]


def _paragraphs(pages: list[str]) -> list[str]:
    out = []
    for page in pages:
        for para in re.split(r"\n\s*\n", page):
            words = para.split()
            if 8 <= len(words) <= 120 and not para.lstrip().startswith(("---", "```", "{{", "|", "<")):
                out.append(para.strip())
    return out


def sample_texts(n: int, seed: int = 16) -> list[str]:
    """``n`` texts from Hugo docs and tldr: a third whole pages, a third paragraphs, a third those
    paragraphs lower-cased without punctuation."""
    rng = random.Random(seed)
    hugo, tldr = _pages("md-hugo-docs"), _pages("md-tldr")
    pages = rng.sample(hugo, n // 6) + rng.sample(tldr, n // 3 - n // 6)
    paras = rng.sample(_paragraphs(hugo), n // 6) + rng.sample(_paragraphs(tldr), n // 3 - n // 6)
    plain = [" ".join(re.sub(r"[^\w\s]", " ", p.lower()).split()) for p in paras]
    rest = n - len(pages) - len(paras) - len(plain)
    return pages + paras + plain + rng.sample(_paragraphs(hugo), rest)


def calibration_texts(count: int = 64) -> tuple[str, ...]:
    """Hugo docs paragraphs of another draw than the sample's (seed 61)."""
    return tuple(random.Random(61).sample(_paragraphs(_pages("md-hugo-docs")), count))


def build(workdir: Path, wanted: list[str], calibrate: str) -> dict[str, Path]:
    """Write the float32 reference and each wanted variant into ``workdir``; returns their paths."""
    folder = packaged_minilm_dir()
    cfg = BertConfig.from_file(folder / "config.json")
    weights = load_weights(folder / "model.safetensors", cfg)
    texts = calibration_texts() if calibrate == "hugo" else None
    paths = {"fp32": workdir / "fp32.onnx"}
    if not paths["fp32"].exists():
        paths["fp32"].write_bytes(build_bert_graph(cfg, weights, "fused").SerializeToString())
    found: dict[tuple[int, bool], dict[str, np.ndarray]] = {}
    for name in wanted:
        kind, count, points, fp32_points = VARIANTS[name]
        out = workdir / f"{name}-{calibrate}.onnx"
        paths[name] = out
        if out.exists():
            continue
        outliers = None
        if count:
            every = bool(points - FFN)
            key = (count, every)
            if key not in found:
                extra = {"texts": texts} if texts else {}
                found[key] = find_outlier_channels(cfg, weights, folder / "tokenizer.json", count,
                                                   every_product=every, **extra)
            outliers = {p: idx for p, idx in found[key].items() if p in points}
        if kind == "wq":  # float32 arithmetic on int8-rounded weights: the weights' share of the error
            rounded = dict(weights)
            for key, value in weights.items():
                if value.ndim == 2 and key.startswith("encoder."):
                    q, scale = quantize_weight_int8(value.T)
                    rounded[key] = (q.astype(np.float32) * scale).T
            out.write_bytes(build_bert_graph(cfg, rounded, "fused").SerializeToString())
        elif kind.startswith("nb"):
            # MatMulNBits, 8-bit weights in blocks along K, accuracy level 4 (int8 products on
            # activations quantised per block of each row); attention unfused as for "dq".
            from embed_options import _nbits

            split = workdir / f"{name}-split.onnx"
            model = build_bert_graph(cfg, weights, "fused", outliers, int8_per_token=True, fp32_points=ALL)
            for node in model.graph.node:
                if node.name.startswith("fp32_side_"):
                    node.op_type = "MatMul"  # left as is by _nbits (its K is the outlier count)
            split.write_bytes(model.SerializeToString())
            _nbits(split, out, 8, int(kind[2:]))
            split.unlink()
        elif kind in ("cur", "dq"):
            # dq: attention unfused (QKV MatMul + MultiHeadAttention) so that the QKV and
            # attention-output inputs have their outlier channels apart too; quantize_dynamic after.
            split = workdir / f"{name}-split.onnx"
            model = (build_bert_graph(cfg, weights, "fused", outliers) if kind == "cur" else
                     build_bert_graph(cfg, weights, "fused", outliers, int8_per_token=True, fp32_points=ALL))
            split.write_bytes(model.SerializeToString())
            keep = [node.name for node in model.graph.node if node.name.startswith("fp32_side_")]
            quantize_int8(split, out, exclude=keep)
            split.unlink()
        else:
            model = build_bert_graph(cfg, weights, "fused", outliers, int8_per_token=True, fp32_points=fp32_points,
                                     single_text=kind == "st")
            out.write_bytes(model.SerializeToString())
    return paths


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> None:
    """Build, embed, print the table (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", nargs="*", default=list(VARIANTS))
    ap.add_argument("--workdir", type=Path, default=None)
    ap.add_argument("--calibrate", choices=["hugo", "builtin"], default="hugo")
    ap.add_argument("--no-speed", action="store_true", help="fidelity only")
    ap.add_argument("--cpu-time", action="store_true",
                    help="texts per second of this thread's CPU time (steadier than wall time on a loaded machine)")
    ap.add_argument("--against", default="",
                    help="also print 1 - cosine of every variant's vectors to this variant's (e.g. pt-o2all)")
    ap.add_argument("--print-channels", action="store_true",
                    help="print the 2 outlier channels of every product calibrated on Hugo docs, and stop")
    args = ap.parse_args()
    if args.print_channels:
        folder = packaged_minilm_dir()
        cfg = BertConfig.from_file(folder / "config.json")
        found = find_outlier_channels(cfg, load_weights(folder / "model.safetensors", cfg), folder / "tokenizer.json",
                                      2, texts=calibration_texts(), every_product=True)
        print({point: tuple(idx.tolist()) for point, idx in found.items()})
        return
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sleuth-embed-variants-"))
    workdir.mkdir(parents=True, exist_ok=True)
    wanted = [n for n in args.only if n in VARIANTS]
    if "cur-o2" not in wanted:
        wanted.insert(0, "cur-o2")
    paths = build(workdir, wanted, args.calibrate)
    tokenizer = packaged_minilm_dir() / "tokenizer.json"
    embedders = {name: Embedder(ModelFiles(name, path, tokenizer)) for name, path in paths.items()}
    texts = sample_texts(args.texts)
    # Fidelity: every text embedded alone (one call, one thread), as the embedder does.
    vectors = {name: np.concatenate([e._embed_batch([enc]) for enc in e.tokenizer.encode_batch(texts)])
               for name, e in embedders.items()}
    ref = vectors["fp32"]
    print(f"{len(texts)} texts (Hugo docs + tldr: pages, paragraphs, plain lower-case paragraphs); "
          f"calibration {args.calibrate}; workdir {workdir}")
    gaps = {name: 1.0 - np.sum(v * ref, axis=1) for name, v in vectors.items()}
    rates: dict[str, list[float]] = {name: [] for name in embedders}
    if not args.no_speed:
        encodings = next(iter(embedders.values())).tokenizer.encode_batch(texts)
        for r in range(args.rounds):
            clock = time.thread_time if args.cpu_time else time.perf_counter
            for name, e in embedders.items():
                started = clock()
                for enc in encodings:
                    e._embed_batch([enc])
                rates[name].append(len(texts) / (clock() - started))
            print(f"round {r + 1}: load {_load()}: " + ", ".join(f"{k} {v[-1]:.1f}/s" for k, v in rates.items()),
                  flush=True)
    print("\n| variant | 1-cos mean | p99 | max | texts/s one thread (median) | ratio to cur-o2 |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for name, gap in gaps.items():
        speed = ratio = ""
        if rates[name]:
            speed = f"{statistics.median(rates[name]):.1f}"
            ratio = f"{statistics.median(a / b for a, b in zip(rates[name], rates['cur-o2'], strict=True)):.2f}"
        print(f"| {name} | {gap.mean():.2e} | {np.quantile(gap, 0.99):.2e} | {gap.max():.2e} | {speed} | {ratio} |")
    if args.against in vectors:
        print(f"\n| variant | 1-cos to {args.against}: mean | p99 | max |\n| --- | ---: | ---: | ---: |")
        for name, v in vectors.items():
            gap = 1.0 - np.sum(v * vectors[args.against], axis=1)
            print(f"| {name} | {gap.mean():.2e} | {np.quantile(gap, 0.99):.2e} | {gap.max():.2e} |")


if __name__ == "__main__":
    main()
