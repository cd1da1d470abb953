"""Interleaved A/B of embedding throughput: another checkout's sleuth against this one's.

    .venv/bin/python bench/embed_ab.py --base-src ../wt-base/src --base-python ../wt-base/.venv/bin/python \
        [--texts 200] [--rounds 3] [--masked]

Each run is a fresh process that loads the default model through that checkout's
``sleuth.embed.load_embedder`` and embeds the same seeded sample (half SciFact abstracts, half tldr
pages: the sample of bench/embed_options.py); the model load is not timed. Runs alternate
base, new (default settings), new with ``model_int8 = false`` (and with ``--masked`` the per-token int8
graph with an attention mask, bert_graph's default before ``single_text`` was), round after round, so every ratio is
taken within the same minutes; the machine load is printed with each round (on a shared machine
quote the ratios). Throughput = texts / seconds of ``embed(texts)``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
CHILD = """
import json, sys, time
from sleuth.embed import DEFAULT_MODEL, load_embedder
texts = json.load(open(sys.argv[1], encoding="utf-8"))
if sys.argv[2] == "masked":  # the per-token int8 graph with an attention mask, from a folder (built untimed)
    import shutil, tempfile
    from pathlib import Path
    from sleuth.bert_graph import build_int8_from_folder
    from sleuth.embed import packaged_minilm_dir
    folder = Path(tempfile.mkdtemp(prefix="sleuth-ab-")) / "all-MiniLM-L6-v2@int8-token-outliers2"
    folder.mkdir()
    build_int8_from_folder(packaged_minilm_dir(), folder / "model.onnx")
    shutil.copy(packaged_minilm_dir() / "tokenizer.json", folder / "tokenizer.json")
    emb = load_embedder(str(folder), False)
    shutil.rmtree(folder.parent)  # the session holds the model in memory
else:
    quantized = {"auto": None, "fp32": False}[sys.argv[2]]
    emb = load_embedder(DEFAULT_MODEL) if quantized is None else load_embedder(DEFAULT_MODEL, quantized)
emb.embed(texts[:2])
started = time.perf_counter()
emb.embed(texts)
took = time.perf_counter() - started
print(json.dumps({"per_s": len(texts) / took, "name": emb.name, "path": getattr(emb, "path", "")}))
"""


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def main() -> None:
    """Run the rounds and print the table (see the module docstring)."""
    sys.path.insert(0, str(HERE))
    from embed_options import sample_texts

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--base-src", type=Path, required=True, help="the other checkout's src folder")
    ap.add_argument("--base-python", default=sys.executable, help="a Python with that checkout's dependencies")
    ap.add_argument("--texts", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--masked", action="store_true",
                    help="also run this checkout's per-token int8 graph with an attention mask (the default before)")
    args = ap.parse_args()
    sample = Path(tempfile.mkdtemp(prefix="sleuth-embed-ab-")) / "texts.json"
    sample.write_text(json.dumps(sample_texts(args.texts)), encoding="utf-8")
    new_src = HERE.parent / "src"
    runs = {"base": (args.base_python, args.base_src, "auto"), "new": (sys.executable, new_src, "auto"),
            "new fp32": (sys.executable, new_src, "fp32")}
    if args.masked:
        runs["new masked"] = (sys.executable, new_src, "masked")
    rates: dict[str, list[float]] = {k: [] for k in runs}
    names: dict[str, str] = {}
    loads = [_load()]
    for r in range(args.rounds):
        for key, (python, src, setting) in runs.items():
            env = {**os.environ, "PYTHONPATH": str(src)}
            out = subprocess.run([python, "-c", CHILD, str(sample), setting], capture_output=True, text=True,
                                 env=env, check=True)
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rates[key].append(row["per_s"])
            names[key] = f"{row['name']} ({row['path'] or 'fp32'})"
        loads.append(_load())
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f}/s" for k, v in rates.items()) + f"; load {loads[-1]}",
              flush=True)
    print(f"\n{args.texts} texts (half SciFact abstracts, half tldr pages), {args.rounds} rounds interleaved, "
          f"load average (1 min) {' -> '.join(loads)}\n")
    print("| run | model (path) | texts/s median (min-max) | ratio to base, median of rounds (min-max) |")
    print("| --- | --- | ---: | ---: |")
    for key, values in rates.items():
        ratios = [a / b for a, b in zip(values, rates["base"], strict=True)]
        print(f"| {key} | {names[key]} | {statistics.median(values):.1f} ({min(values):.1f}-{max(values):.1f}) | "
              f"{statistics.median(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f}) |")


if __name__ == "__main__":
    main()
