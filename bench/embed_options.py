"""Speed and fidelity of the embedding options tried for issue 16 (docs/BENCH.md, embedding section).

    .venv/bin/python bench/embed_options.py [--texts 64] [--rounds 3] [--only NAME ...] [--workdir DIR]

Builds all-MiniLM-L6-v2's graph from the package's weights in each layout (sleuth.bert_graph), makes
the int8 variants (onnxruntime's dynamic and static QDQ quantisation, MatMulNBits), then embeds the
same sample (half SciFact abstracts, half tldr pages, seeded) with every option in its own process,
the options interleaved round by round, so that each option's ratio to the reference (``fp32-fused``,
today's settings: 256 word pieces, batches of 32 sorted by length, two one-thread calls) is taken
within the same minutes. Prints texts/s (median), the median of the per-round ratios, and the cosine
of each option's vectors to the reference's (min and median). The machine load is printed before and
after: on a shared machine quote the ratios, not the absolute rates.
"""

from __future__ import annotations

import argparse
import gzip
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DATA = ROOT.parent / "shared" / "data"

# name -> how to run it. model: a file made by make_models(); the rest are session/batching options.
BASE = {"model": "fused", "opt": "all", "threads": "calls", "batch": 32, "cap": 256, "sort": True}
OPTIONS: dict[str, dict] = {
    "fp32-fused": {},
    "fp32-standard": {"model": "standard"},
    "fp32-standard-opt-disable": {"model": "standard", "opt": "disable"},
    "fp32-standard-opt-basic": {"model": "standard", "opt": "basic"},
    "fp32-standard-opt-extended": {"model": "standard", "opt": "extended"},
    "fp32-standard-transformers-optimizer": {"model": "standard-tfopt"},
    "fp32-fused-unsorted": {"sort": False},
    "fp32-fused-batch8": {"batch": 8},
    "fp32-fused-batch64": {"batch": 64},
    "fp32-fused-batch1": {"batch": 1},
    "fp32-fused-one-call-2-threads": {"threads": "one2"},
    "fp32-fused-two-sessions": {"threads": "sessions"},
    "fp32-fused-cap128": {"cap": 128},
    "int8-dynamic": {"model": "fused-int8"},
    "int8-dynamic-standard": {"model": "standard-int8"},
    "int8-dynamic-ffn2-fp32": {"model": "fused-int8-ffn2-fp32"},
    "int8-dynamic-one-call-2-threads": {"model": "fused-int8", "threads": "one2"},
    "int8-dynamic-two-sessions": {"model": "fused-int8", "threads": "sessions"},
    "int8-dynamic-batch8": {"model": "fused-int8", "batch": 8},
    "int8-dynamic-batch1": {"model": "fused-int8", "batch": 1},
    "int8-dynamic-cap128": {"model": "fused-int8", "cap": 128},
    "int8-outliers": {"model": "fused-int8-outliers"},
    "int8-outliers-batch1": {"model": "fused-int8-outliers", "batch": 1},
    "int8-outliers-batch1-two-sessions": {"model": "fused-int8-outliers", "batch": 1, "threads": "sessions"},
    "int8-outliers-batch1-cap128": {"model": "fused-int8-outliers", "batch": 1, "cap": 128},
    "int8-static-qdq-minmax": {"model": "standard-int8-static"},
    "int8-matmulnbits-8bit-block32": {"model": "fused-nbits8"},
}


def sample_texts(n: int) -> list[str]:
    """``n`` texts, half SciFact abstracts (title + text) and half tldr pages, seeded."""
    rng = random.Random(16)
    with gzip.open(DATA / "scifact" / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        scifact = [f"{d['title']}\n{d['text']}" for d in map(json.loads, fh)]
    with gzip.open(DATA / "md-tldr" / "corpus.jsonl.gz", "rt", encoding="utf-8") as fh:
        tldr = [json.loads(line)["text"] for line in fh]
    return rng.sample(scifact, n // 2) + rng.sample(tldr, n - n // 2)


def _nbits(src: Path, dst: Path, bits: int = 8, block: int = 32) -> None:
    """Replace every MatMul with a constant weight by MatMulNBits (block-wise symmetric weights,
    accuracy_level 4: activations quantised per block of each row, int8 products)."""
    import onnx
    from onnx import helper, numpy_helper

    model = onnx.load(str(src))
    graph = model.graph
    inits = {i.name: i for i in graph.initializer}
    nodes = []
    for node in graph.node:
        if node.op_type != "MatMul" or node.input[1] not in inits or node.name.startswith("fp32_side_"):
            nodes.append(node)
            continue
        w = numpy_helper.to_array(inits[node.input[1]])
        k, n = w.shape
        wt = w.T.reshape(n, k // block, block)
        qmax = 2 ** (bits - 1) - 1
        scale = np.maximum(np.abs(wt).max(-1) / qmax, 1e-12)
        q = (np.clip(np.round(wt / scale[..., None]), -qmax - 1, qmax) + 2 ** (bits - 1)).astype(np.uint8)
        graph.initializer.extend([numpy_helper.from_array(q, node.input[1] + "_q"),
                                  numpy_helper.from_array(scale.astype(np.float32).reshape(-1), node.input[1] + "_s")])
        nodes.append(helper.make_node("MatMulNBits", [node.input[0], node.input[1] + "_q", node.input[1] + "_s"],
                                      list(node.output), domain="com.microsoft", K=k, N=n, bits=bits,
                                      block_size=block, accuracy_level=4))
    del graph.node[:]
    graph.node.extend(nodes)
    used = {i for node in graph.node for i in node.input}
    keep = [i for i in graph.initializer if i.name in used]
    del graph.initializer[:]
    graph.initializer.extend(keep)
    onnx.save(model, str(dst))


def make_models(workdir: Path, texts: list[str], wanted: set[str]) -> None:
    """Write the model files the wanted options need into ``workdir`` (skipping existing ones)."""
    import onnx
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_dynamic,
        quantize_static,
    )

    from sleuth.bert_graph import INT8_OUTLIER_CHANNELS, build_from_folder
    from sleuth.embed import packaged_minilm_dir, quantize_int8

    folder = packaged_minilm_dir()
    path = {name: workdir / f"{name}.onnx" for name in wanted}
    for layout in ("standard", "fused"):
        out = workdir / f"{layout}.onnx"
        if not out.exists():
            build_from_folder(folder, out, layout)
    if "standard-tfopt" in wanted and not path["standard-tfopt"].exists():
        from onnxruntime.transformers import optimizer

        # opt_level 0: only its Python fusions (its onnxruntime pass imports torch); it needs sympy,
        # which sleuth's venv no longer has (torch brought it): `pip install sympy` to run this option.
        try:
            opt = optimizer.optimize_model(str(workdir / "standard.onnx"), model_type="bert", num_heads=12,
                                           hidden_size=384, opt_level=0)
            opt.save_model_to_file(str(path["standard-tfopt"]))
        except ImportError as exc:
            print(f"standard-tfopt not made: {exc}", file=sys.stderr)
    if "fused-int8" in wanted and not path["fused-int8"].exists():
        quantize_int8(workdir / "fused.onnx", path["fused-int8"])
    if "fused-int8-outliers" in wanted and not path["fused-int8-outliers"].exists():
        split = workdir / "fused-outliers-fp32.onnx"
        keep_fp32 = build_from_folder(folder, split, "fused", INT8_OUTLIER_CHANNELS)
        quantize_int8(split, path["fused-int8-outliers"], exclude=keep_fp32)
    if "fused-int8-ffn2-fp32" in wanted and not path["fused-int8-ffn2-fp32"].exists():
        g = onnx.load(str(workdir / "fused.onnx"))
        ffn2 = [n.name for n in g.graph.node if n.op_type == "MatMul" and ".output.dense." in n.input[1]
                and "attention" not in n.input[1]]
        quantize_int8(workdir / "fused.onnx", path["fused-int8-ffn2-fp32"], exclude=ffn2)
    if "standard-int8" in wanted and not path["standard-int8"].exists():
        quantize_dynamic(str(workdir / "standard.onnx"), str(path["standard-int8"]), weight_type=QuantType.QInt8,
                         per_channel=True, op_types_to_quantize=["MatMul"])
    if "standard-int8-static" in wanted and not path["standard-int8-static"].exists():
        from tokenizers import Tokenizer

        tok = Tokenizer.from_file(str(folder / "tokenizer.json"))
        tok.enable_truncation(256)
        calibration = sample_texts(len(texts) + 64)[-64:]  # real blocks not in the timed sample

        class Reader(CalibrationDataReader):
            def __init__(self) -> None:
                self.it = iter(tok.encode_batch(calibration))

            def get_next(self) -> dict | None:
                e = next(self.it, None)
                ids = None if e is None else np.array([e.ids], np.int64)
                return None if ids is None else {"input_ids": ids, "attention_mask": np.ones_like(ids)}

        quantize_static(str(workdir / "standard.onnx"), str(path["standard-int8-static"]), Reader(),
                        quant_format=QuantFormat.QDQ, op_types_to_quantize=["MatMul"], per_channel=True,
                        activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8)
    if "fused-nbits8" in wanted and not path["fused-nbits8"].exists():
        _nbits(workdir / "fused.onnx", path["fused-nbits8"])


def child(spec: dict) -> None:
    """Embed the sample with one option; print ``{"per_s", "took_s"}`` and save the vectors."""
    from concurrent.futures import ThreadPoolExecutor

    import onnxruntime as ort
    from tokenizers import Tokenizer

    from sleuth.embed import packaged_minilm_dir

    texts = json.loads(Path(spec["texts"]).read_text(encoding="utf-8"))
    tok = Tokenizer.from_file(str(packaged_minilm_dir() / "tokenizer.json"))
    tok.enable_truncation(spec["cap"])
    tok.enable_padding()
    level = ort.GraphOptimizationLevel
    levels = {"disable": level.ORT_DISABLE_ALL, "basic": level.ORT_ENABLE_BASIC,
              "extended": level.ORT_ENABLE_EXTENDED, "all": level.ORT_ENABLE_ALL}

    def session(threads: int) -> ort.InferenceSession:
        o = ort.SessionOptions()
        o.intra_op_num_threads, o.inter_op_num_threads, o.log_severity_level = threads, 1, 3
        o.graph_optimization_level = levels[spec["opt"]]
        o.add_session_config_entry("session.intra_op.allow_spinning", "0")
        return ort.InferenceSession(spec["model_path"], o, providers=["CPUExecutionProvider"])

    sessions = {"calls": lambda: [session(1)], "one2": lambda: [session(2)],
                "sessions": lambda: [session(1), session(1)]}[spec["threads"]]()

    def run(job: tuple[int, list]) -> np.ndarray:
        i, batch = job
        width = max(sum(e.attention_mask) for e in batch)
        ids = np.asarray([e.ids[:width] for e in batch], dtype=np.int64)
        mask = np.asarray([e.attention_mask[:width] for e in batch], dtype=np.int64)
        hidden = sessions[i % len(sessions)].run(None, {"input_ids": ids, "attention_mask": mask})[0]
        v = (hidden * mask[..., None]).sum(1) / mask.sum(1, keepdims=True)
        return v / np.linalg.norm(v, axis=1, keepdims=True)

    def embed(items: list[str]) -> np.ndarray:
        enc = tok.encode_batch(items)
        order = sorted(range(len(items)), key=lambda i: len(enc[i].ids)) if spec["sort"] else list(range(len(items)))
        b = spec["batch"]
        jobs = list(enumerate([enc[j] for j in order[i:i + b]] for i in range(0, len(items), b)))
        if spec["threads"] == "one2":
            out = [run(job) for job in jobs]
        else:
            with ThreadPoolExecutor(2) as pool:
                out = list(pool.map(run, jobs))
        result = np.empty((len(items), out[0].shape[1]), np.float32)
        result[order] = np.concatenate(out)
        return result

    embed(texts[:4])
    started = time.perf_counter()
    vectors = embed(texts)
    took = time.perf_counter() - started
    np.save(spec["vectors"], vectors)
    print(json.dumps({"per_s": len(texts) / took, "took_s": took}))


def main() -> None:
    """Run the options interleaved and print the table (see the module docstring)."""
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--texts", type=int, default=64)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--only", nargs="*", help="option names (default: all); fp32-fused is always run")
    ap.add_argument("--workdir", type=Path, default=None, help="keep the models here (default: a temp folder)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(json.loads(args.child))
        return
    names = ["fp32-fused"] + [n for n in (args.only or OPTIONS) if n != "fp32-fused"]
    unknown = [n for n in names if n not in OPTIONS]
    if unknown:
        sys.exit(f"unknown options {unknown}; known: {list(OPTIONS)}")
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sleuth-embed-options-"))
    workdir.mkdir(parents=True, exist_ok=True)
    texts = sample_texts(args.texts)
    (workdir / "texts.json").write_text(json.dumps(texts), encoding="utf-8")
    specs = {n: {**BASE, **OPTIONS[n]} for n in names}
    make_models(workdir, texts, {s["model"] for s in specs.values()})
    print(f"load before: {Path('/proc/loadavg').read_text().strip()}", flush=True)
    rates: dict[str, list[float]] = {n: [] for n in names}
    for r in range(args.rounds):
        for n in names:
            spec = {**specs[n], "texts": str(workdir / "texts.json"),
                    "model_path": str(workdir / f"{specs[n]['model']}.onnx"),
                    "vectors": str(workdir / f"vectors-{n}.npy")}
            out = subprocess.run([sys.executable, __file__, "--child", json.dumps(spec)], capture_output=True,
                                 text=True, check=False)
            if out.returncode:
                print(f"{n}: failed: {out.stderr.strip()[-500:]}", flush=True)
                continue
            rates[n].append(json.loads(out.stdout.strip().splitlines()[-1])["per_s"])
        print(f"round {r + 1}/{args.rounds} done, load {Path('/proc/loadavg').read_text().split()[0]}", flush=True)
    print(f"load after: {Path('/proc/loadavg').read_text().strip()}")
    ref = np.load(workdir / "vectors-fp32-fused.npy")
    print(f"\n{len(texts)} texts (half SciFact, half tldr), {args.rounds} rounds interleaved\n")
    print("| option | texts/s (median) | ratio to fp32-fused (median of rounds) | cosine to fp32 min / median |")
    print("| --- | ---: | ---: | ---: |")
    for n in names:
        if not rates[n] or len(rates[n]) != len(rates["fp32-fused"]):
            print(f"| {n} | failed | | |")
            continue
        ratio = statistics.median(a / b for a, b in zip(rates[n], rates["fp32-fused"], strict=True))
        cos = (np.load(workdir / f"vectors-{n}.npy") * ref).sum(1)
        print(f"| {n} | {statistics.median(rates[n]):.1f} | {ratio:.2f} | {cos.min():.4f} / {np.median(cos):.4f} |")


if __name__ == "__main__":
    main()
