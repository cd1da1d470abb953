"""Fingerprints of the text analysis over the judged and markdown corpora, to prove that a change to
``sleuth.text`` leaves its output identical token for token.

``python bench/analysis_identity.py [--data ../shared/data] [--out FILE]`` prints one SHA-256 per
corpus and function (``analyze``, ``surface_tokens``, ``tokenize`` with spans, ``identifiers``, and
``find_terms`` for a few terms of each text) over every title and text. Run it with two checkouts
(``PYTHONPATH=<checkout>/src``) and compare the lines: equal fingerprints mean the same tokens.
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib
import json
import sys
import time
from pathlib import Path

CORPORA = ("scifact", "npl", "cisi", "cranfield", "cosqa", "md-hugo-docs", "md-tldr")


def _texts(folder: Path):
    path = folder / "corpus.jsonl.gz"
    opener = gzip.open if path.exists() else open
    if not path.exists():
        path = folder / "corpus.jsonl"
    with opener(path, "rt", encoding="utf-8") as f:
        for line in f:
            doc = json.loads(line)
            yield doc.get("title", "") or ""
            yield doc.get("text", "") or ""


def _block_fields(title: str, text: str) -> tuple[str, str]:
    """The bm25 and exact fields of a one-block document as the indexer builds them (``block_fields``),
    or, in a checkout without it, as ``block_terms`` and ``surface_tokens`` give."""
    from sleuth.text import analyze

    module = importlib.import_module("sleuth.text.analyze")  # (sleuth.text.analyze is also a function)
    if hasattr(module, "block_fields"):
        return module.block_fields(text, analyze(title))
    return module.block_terms(text, analyze(title)), " ".join(module.surface_tokens(text))


def fingerprints(folder: Path) -> dict[str, str]:
    """SHA-256 of each analysis function's output over every title and text of the corpus in ``folder``."""
    from sleuth.text import analyze, identifiers, surface_tokens, tokenize
    from sleuth.text.analyze import find_terms

    hashes = {name: hashlib.sha256() for name in ("analyze", "surface_tokens", "tokenize", "identifiers",
                                                   "find_terms", "block_fields")}
    texts = iter(_texts(folder))
    for title, body in zip(texts, texts, strict=True):
        body_terms, exact = _block_fields(title, body)
        hashes["block_fields"].update((body_terms + "\x1f" + exact + "\x1e").encode("utf-8", "surrogatepass"))
    for text in _texts(folder):
        terms = analyze(text)
        hashes["analyze"].update(("\x1f".join(terms) + "\x1e").encode("utf-8", "surrogatepass"))
        hashes["surface_tokens"].update(("\x1f".join(surface_tokens(text)) + "\x1e").encode("utf-8", "surrogatepass"))
        toks = tokenize(text)
        hashes["tokenize"].update(("\x1f".join(f"{t.term}@{t.start}-{t.end}" for t in toks) + "\x1e")
                                  .encode("utf-8", "surrogatepass"))
        hashes["identifiers"].update(("\x1f".join(identifiers(text)) + "\x1e").encode("utf-8", "surrogatepass"))
        wanted = frozenset(terms[::7][:5])
        hashes["find_terms"].update(("\x1f".join(f"{t.term}@{t.start}-{t.end}" for t in find_terms(text, wanted))
                                     + "\x1e").encode("utf-8", "surrogatepass"))
    return {name: h.hexdigest() for name, h in hashes.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", type=Path, default=Path("../shared/data"))
    ap.add_argument("--corpora", default=",".join(CORPORA))
    args = ap.parse_args()
    for name in args.corpora.split(","):
        started = time.perf_counter()
        for fn, digest in fingerprints(args.data / name).items():
            print(f"{name}\t{fn}\t{digest}")
        print(f"# {name}: {time.perf_counter() - started:.1f} s", file=sys.stderr)


if __name__ == "__main__":
    main()
