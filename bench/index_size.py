"""What an index folder holds, by file and by catalog table: ``python bench/index_size.py INDEX``.

With ``--build FOLDER --index INDEX [--random-vectors]``, first indexes FOLDER into INDEX (the
default model embeds the blocks; with ``--random-vectors``, the folder is indexed lexical-only and
every block then gets a seeded random unit vector of the default model, as bench/run.py does for
tldr, and the lanes are warmed so the vector lane's files are written; with ``--lexical``, no model:
the keyword index alone). Run it with two checkouts
(``PYTHONPATH=<checkout>/src``) to compare their index sizes on the same corpus.
"""

from __future__ import annotations

import argparse
import sqlite3
import time
from pathlib import Path

import numpy as np


def build(folder: Path, index: Path, random_vectors: bool, lexical: bool = False, seed: int = 20240601) -> None:
    from sleuth.config import Config
    from sleuth.engine import Engine

    started = time.perf_counter()
    if lexical:
        with Engine(index, Config(model="none")) as e:
            e.index([folder], project=folder.name)
        print(f"indexed lexical-only (no model) in {time.perf_counter() - started:.1f} s")
        return
    if not random_vectors:
        with Engine(index) as e:
            e.index([folder], project=folder.name)
        print(f"indexed with embeddings in {time.perf_counter() - started:.1f} s")
        return
    with Engine(index, Config(model="none")) as e:
        e.index([folder], project=folder.name)
    with Engine(index) as e:
        emb = e.embedder()
        if emb is None:
            raise SystemExit(f"no embedding model: {e.vector_unavailable}")
        pending = e.catalog.blocks_without_vectors(emb.name, 10**8)
        rng = np.random.default_rng(seed)
        for i in range(0, len(pending), 10_000):
            chunk = pending[i : i + 10_000]
            vecs = rng.standard_normal((len(chunk), emb.dim)).astype(np.float32)
            vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
            e.catalog.store_vectors(emb.name, [(h, v.tobytes()) for (h, _), v in zip(chunk, vecs, strict=True)])
        with e.folder.write_lock.held():
            e.warm_lanes()
    print(f"indexed lexical-only, {len(pending)} random vectors, in {time.perf_counter() - started:.1f} s")


def report(index: Path) -> None:
    files = sorted((p for p in index.rglob("*") if p.is_file()), key=lambda p: -p.stat().st_size)
    total = sum(p.stat().st_size for p in files)
    groups: dict[str, int] = {}
    for p in files:
        key = "postings/" if p.parent.name == "postings" else p.name
        groups[key] = groups.get(key, 0) + p.stat().st_size
    print(f"{index}: {total / 1e6:.2f} MB in {len(files)} files")
    for name, size in sorted(groups.items(), key=lambda kv: -kv[1]):
        print(f"  {name:40s} {size / 1e6:8.2f} MB")
    conn = sqlite3.connect(f"{(index / 'catalog.sqlite3').resolve().as_uri()}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT name, SUM(pgsize), SUM(unused) FROM dbstat GROUP BY name ORDER BY 2 DESC")
        print("  catalog by table and index (pages, of which unused):")
        for name, size, unused in rows.fetchall()[:8]:
            print(f"    {name:38s} {size / 1e6:8.2f} MB ({unused / 1e6:.2f} unused)")
    except sqlite3.OperationalError as exc:
        print(f"  (no per-table sizes: {exc})")
    finally:
        conn.close()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("index", type=Path)
    ap.add_argument("--build", type=Path, default=None, help="folder to index into INDEX first")
    ap.add_argument("--random-vectors", action="store_true")
    ap.add_argument("--lexical", action="store_true", help="index without a model (no vectors)")
    args = ap.parse_args()
    if args.build is not None:
        build(args.build, args.index, args.random_vectors, args.lexical)
    report(args.index)


if __name__ == "__main__":
    main()
