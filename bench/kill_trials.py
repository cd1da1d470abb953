"""Crash safety: kill -9 a real `sleuth index` at random points, then check the index it leaves.

Each trial starts `python -m sleuth.cli index` on a real corpus (a seeded sample of the tldr pages)
in a subprocess, either into an empty index ("fresh") or into a complete index of an older version
of the corpus with edited, added and deleted files ("update"), and sends it SIGKILL after a random
delay (uniform over the length of an uninterrupted run of that kind). Then, for the index left:

1. it opens and answers searches (every hit's document and block exist), and opening it removed
   the scratch files the killed writer left;
2. no partial document is visible: every document's blocks are exactly those of one complete
   version of its file (the old one or the new one), and the postings hold exactly the catalog's
   blocks once caught up (postings generation == catalog generation);
3. every stored vector has the model's dimensions;
4. re-running `sleuth index` resumes and ends identical to a clean index of the same files: same
   documents (ids, paths, content hashes), same block ids, same skipped files, every block embedded.

Usage: python bench/kill_trials.py --data ../shared/data [--trials 20] [--files 1000] [--seed 7]
                                   [--model all-MiniLM-L6-v2|none] [--workdir DIR] [--keep]

The embedding model is on by default (as in `sleuth index`), so many kills land while vectors are
being embedded. Exit status 1 when any check failed. tests/integration/test_crash.py runs a few
trials on a small corpus.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import signal
import sqlite3
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

PROJECT = "kt"
QUERIES = ("list files", "compress archive", "git commit", "network", "print")


@dataclass
class Snapshot:
    """What a catalog holds: ``docs[doc_id] = (rel_path, content_hash, sorted block ids)``."""

    docs: dict[str, tuple[str, str, tuple[str, ...]]]
    skipped: list[tuple[str, str]]
    blocks: int
    blocks_with_vectors: int
    bad_vectors: int


@dataclass
class Trial:
    number: int
    kind: str
    kill_after_s: float
    phase: str = ""
    problems: list[str] = field(default_factory=list)
    resumed_identical: bool = False


# ---------------------------------------------------------------------------------------------- corpus

def sample_tldr(tar_path: Path, n_files: int, seed: int) -> dict[str, str]:
    """``{rel_path: text}`` of ``n_files`` pages drawn (seeded) from the tldr archive."""
    with tarfile.open(tar_path) as tar:
        members = [m for m in tar.getmembers() if m.isfile() and m.name.endswith(".md")]
        chosen = random.Random(seed).sample(members, min(n_files, len(members)))
        out = {}
        for m in sorted(chosen, key=lambda m: m.name):
            handle = tar.extractfile(m)
            assert handle is not None
            out[m.name] = handle.read().decode("utf-8", "replace")
    return out


def versions(pages: dict[str, str], seed: int) -> tuple[dict[str, str | bytes], dict[str, str | bytes]]:
    """``(old, new)`` versions of a corpus: the old one has ~10% of the pages edited, ~5% missing
    (added by the new one) and a few extra pages (deleted by the new one). Both hold a file that
    is skipped by its extension and one whose content is binary."""
    rng = random.Random(seed + 1)
    new: dict[str, str | bytes] = dict(pages)
    new["extra/picture.png"] = "not indexed: a binary file type"
    new["extra/blob.dat"] = b"\x00\x01\x02binary\x00"
    old: dict[str, str | bytes] = {}
    for rel, text in new.items():
        r = rng.random()
        if isinstance(text, bytes) or r >= 0.15:
            old[rel] = text
        elif r < 0.10:
            old[rel] = text + f"\n- An older line of this page, version {rng.randrange(10**6)}\n"
        # else: missing from the old version
    for i in range(max(2, len(pages) // 20)):
        old[f"old-only/page-{i}.md"] = f"# Old page {i}\n\n> Deleted in the new version.\n\n- line {i}\n"
    return old, new


def materialize(folder: Path, files: dict[str, str | bytes]) -> None:
    """Make ``folder`` hold exactly ``files`` (unchanged files are left alone)."""
    folder.mkdir(parents=True, exist_ok=True)
    for path in sorted(folder.rglob("*"), reverse=True):
        rel = path.relative_to(folder).as_posix()
        if path.is_file() and rel not in files:
            path.unlink()
        elif path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    for rel, content in files.items():
        path = folder / rel
        data = content.encode("utf-8") if isinstance(content, str) else content
        if path.is_file() and path.read_bytes() == data:
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


# ---------------------------------------------------------------------------------------------- checks

def snapshot(index: Path) -> Snapshot:
    con = sqlite3.connect(f"file:{index / 'catalog.sqlite3'}?mode=ro", uri=True)
    try:
        blocks: dict[str, list[str]] = {}
        for doc_id, block_id in con.execute("SELECT doc_id, block_id FROM blocks"):
            blocks.setdefault(doc_id, []).append(block_id)
        docs = {d: (rel, h, tuple(sorted(blocks.get(d, [])))) for d, rel, h in
                con.execute("SELECT doc_id, rel_path, content_hash FROM documents")}
        skipped = sorted((p, r) for p, r in con.execute("SELECT path, reason FROM skipped"))
        n_blocks = con.execute("SELECT COUNT(*) FROM blocks").fetchone()[0]
        with_vectors = con.execute("SELECT COUNT(*) FROM blocks b WHERE EXISTS"
                                   " (SELECT 1 FROM vectors v WHERE v.embed_hash = b.embed_hash)").fetchone()[0]
        dims = {len(v) for (v,) in con.execute("SELECT vector FROM vectors")}
        bad = 0 if len(dims) <= 1 else len(dims) - 1
        return Snapshot(docs, skipped, n_blocks, with_vectors, bad)
    finally:
        con.close()


def postings_blocks(engine: object) -> set[str]:
    import tantivy

    searcher = engine.postings.searcher()  # type: ignore[attr-defined]
    hits = searcher.search(tantivy.Query.all_query(), max(1, searcher.num_docs)).hits
    addrs = [a for _, a in hits]
    keys = zip(searcher.fast_field_values("doc_key", addrs), searcher.fast_field_values("block_key", addrs),
               strict=True)
    return {f"{d:016x}:{b:012x}" for d, b in keys}


def check_open_index(index: Path, versions_seen: tuple[Snapshot, ...], model: str | None = None) -> list[str]:
    """Open the index left by a killed writer and check it (see the module docstring, 1-3).

    ``model``: the embedding model the writer used (None: sleuth's configuration).
    """
    from dataclasses import replace

    from sleuth.config import load_config
    from sleuth.engine import Engine
    from sleuth.store.scratch import INDEX_SCRATCH_GLOBS, stale_files

    problems: list[str] = []
    known = [{d: (h, b) for d, (_, h, b) in s.docs.items()} for s in versions_seen]
    config = load_config(index) if model is None else replace(load_config(index), model=model)
    with Engine(index, config) as engine:  # opening replays what the postings missed
        if engine.postings.generation() != engine.catalog.generation():
            problems.append(f"postings at {engine.postings.generation()}, catalog at {engine.catalog.generation()}")
        left = stale_files(index, INDEX_SCRATCH_GLOBS)  # opening sweeps what the killed writer left
        if left:
            problems.append(f"scratch files of the killed writer left: {', '.join(sorted(p.name for p in left))}")
        snap = snapshot(index)
        catalog_blocks = {b for _, _, bs in snap.docs.values() for b in bs}
        for doc_id, (rel, chash, block_ids) in snap.docs.items():
            if not block_ids:
                problems.append(f"document without blocks: {rel}")
            elif not any(k.get(doc_id) == (chash, block_ids) for k in known):
                problems.append(f"document {rel} holds blocks of no complete version of its file")
        in_postings = postings_blocks(engine)
        if in_postings != catalog_blocks:
            problems.append(f"postings and catalog differ: {len(in_postings - catalog_blocks)} blocks only in the "
                            f"postings, {len(catalog_blocks - in_postings)} only in the catalog")
        if snap.bad_vectors:
            problems.append("vectors of different sizes are stored")
        for query in QUERIES:
            try:
                resp = engine.search(query, limit=5)
            except Exception as exc:  # noqa: BLE001 - reported as a failed check
                problems.append(f"search {query!r} failed: {type(exc).__name__}: {exc}")
                continue
            for hit in resp.hits:
                if engine.catalog.document(hit.doc_id) is None or not engine.catalog.blocks([hit.best_block_id]):
                    problems.append(f"search {query!r} returned a missing document or block: {hit.path}")
        if snap.docs and not any(engine.search(q, limit=1).hits for q in QUERIES):
            problems.append("no query found anything in a non-empty index")
    return problems


def compare(got: Snapshot, want: Snapshot) -> list[str]:
    problems = []
    if got.docs != want.docs:
        differ = {d for d in set(got.docs) | set(want.docs) if got.docs.get(d) != want.docs.get(d)}
        sample = sorted((got.docs.get(d) or want.docs[d])[0] for d in differ)[:3]
        problems.append(f"{len(differ)} documents differ from a clean index (e.g. {', '.join(sample)})")
    if got.skipped != want.skipped:
        problems.append(f"skipped files differ: {got.skipped} != {want.skipped}")
    if (got.blocks, got.blocks_with_vectors) != (want.blocks, want.blocks_with_vectors):
        problems.append(f"blocks with vectors: {got.blocks_with_vectors}/{got.blocks}, clean index: "
                        f"{want.blocks_with_vectors}/{want.blocks}")
    return problems


def phase_of(snap: Snapshot, target: Snapshot) -> str:
    if snap.docs == target.docs:
        if snap.blocks_with_vectors < target.blocks_with_vectors:
            return f"embedding ({snap.blocks_with_vectors}/{target.blocks_with_vectors} blocks had vectors)"
        return "after writing and embedding (lanes' caches)"
    done = sum(1 for d, v in snap.docs.items() if target.docs.get(d) == v)
    return f"writing documents ({done}/{len(target.docs)} current)"


# ---------------------------------------------------------------------------------------------- running

def sleuth_index(corpus: Path, index: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-m", "sleuth.cli", "index", str(corpus), "--project", PROJECT,
                             "--index", str(index)], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def run_to_end(corpus: Path, index: Path, env: dict[str, str]) -> float:
    """Run ``sleuth index`` to its end, embedding included (``SLEUTH_INDEX_WAIT=1``: it waits for
    the embedding instead of leaving it to a background worker); returns the seconds it took."""
    started = time.perf_counter()
    proc = sleuth_index(corpus, index, {**env, "SLEUTH_INDEX_WAIT": "1"})
    _, err = proc.communicate(timeout=3600)
    if proc.returncode != 0:
        raise RuntimeError(f"sleuth index failed ({proc.returncode}): {err.decode(errors='replace')}")
    return time.perf_counter() - started


def run_trials(pages: dict[str, str], workdir: Path, trials: int, seed: int, env: dict[str, str],
               log: Callable[[str], None] = print, kill_when_embedding: int = 0,
               check_update: bool = True) -> list[Trial]:
    """Run ``trials`` kill trials in ``workdir`` (see the module docstring).

    ``check_update``: first check that an uninterrupted update ends identical to a clean index (and
    time it; otherwise update trials draw their delay from the fresh run's length).
    ``kill_when_embedding``: that many extra trials (kind "embed") index an empty index and kill
    the writer as soon as every document is written (while the model loads or the first vectors
    are computed), instead of at a random time.
    """
    rng = random.Random(seed)
    model = env.get("SLEUTH_MODEL")
    old, new = versions(pages, seed)
    corpus = workdir / "corpus"  # one path: document ids derive from the root's folder name
    ref_old, ref_new = workdir / "ref-old", workdir / "ref-new"
    if trials:  # update trials start from a clean index of the old version
        materialize(corpus, old)
        run_to_end(corpus, ref_old, env)
    materialize(corpus, new)
    fresh_s = run_to_end(corpus, ref_new, env)
    s_new = snapshot(ref_new)
    s_old = snapshot(ref_old) if trials else s_new
    update_s = fresh_s
    if check_update and trials:  # an uninterrupted update first: it must end identical to a clean index
        shutil.copytree(ref_old, workdir / "base-update")
        update_s = run_to_end(corpus, workdir / "base-update", env)
        if compare(snapshot(workdir / "base-update"), s_new):
            raise RuntimeError("an uninterrupted update does not end identical to a clean index: "
                               + "; ".join(compare(snapshot(workdir / "base-update"), s_new)))
        shutil.rmtree(workdir / "base-update")
    log(f"corpus: {len(pages)} pages; uninterrupted runs: fresh {fresh_s:.1f} s, update {update_s:.1f} s; "
        f"clean index: {len(s_new.docs)} documents, {s_new.blocks} blocks, {s_new.blocks_with_vectors} embedded")
    results: list[Trial] = []
    for number in range(1, trials + kill_when_embedding + 1):
        kind = "fresh" if number > trials or rng.random() < 0.5 else "update"
        index = workdir / f"trial-{number}"
        if kind == "update":
            shutil.copytree(ref_old, index)
        delay = rng.uniform(0.0, fresh_s if kind == "fresh" else update_s)
        trial = Trial(number, kind if number <= trials else "embed", delay)
        proc = sleuth_index(corpus, index, env)
        started = time.perf_counter()
        if number > trials:
            while proc.poll() is None and snapshot_docs(index) < len(s_new.docs):
                time.sleep(0.02)
        else:
            try:
                proc.wait(timeout=delay)
            except subprocess.TimeoutExpired:
                pass
        trial.kill_after_s = time.perf_counter() - started
        if proc.poll() is None:
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait()
            trial.phase = phase_of(snapshot(index), s_new) if (index / "catalog.sqlite3").exists() else "starting"
        else:
            trial.phase = "finished before the kill"
        if (index / "catalog.sqlite3").exists():
            trial.problems += check_open_index(index, (s_old, s_new), model)
        run_to_end(corpus, index, env)
        trial.problems += [f"after resuming: {p}" for p in compare(snapshot(index), s_new)]
        trial.problems += [f"after resuming: {p}" for p in check_open_index(index, (s_new,), model)]
        trial.resumed_identical = not any(p.startswith("after resuming") for p in trial.problems)
        status = "ok" if not trial.problems else "FAILED: " + "; ".join(trial.problems)
        log(f"trial {number:>2} {trial.kind:<7} killed after {trial.kill_after_s:5.2f} s, {trial.phase}: {status}")
        results.append(trial)
        shutil.rmtree(index, ignore_errors=True)
    return results


def snapshot_docs(index: Path) -> int:
    """How many documents the catalog holds now (0 while it does not exist)."""
    try:
        con = sqlite3.connect(f"file:{index / 'catalog.sqlite3'}?mode=ro", uri=True, timeout=5)
        try:
            return int(con.execute("SELECT COUNT(*) FROM documents").fetchone()[0])
        finally:
            con.close()
    except sqlite3.Error:
        return 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "data")
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--files", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--model", default=None, help="Embedding model (default: sleuth's default; 'none': lexical)")
    parser.add_argument("--workdir", type=Path, default=None)
    parser.add_argument("--keep", action="store_true", help="Keep the work folder.")
    args = parser.parse_args()
    env = dict(os.environ)
    if args.model:
        env["SLEUTH_MODEL"] = args.model
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix="sleuth-kill-"))
    workdir.mkdir(parents=True, exist_ok=True)
    try:
        pages = sample_tldr(args.data / "md-tldr" / "markdown.tar.gz", args.files, args.seed)
        results = run_trials(pages, workdir, args.trials, args.seed, env, kill_when_embedding=1)
    finally:
        if not args.keep:
            shutil.rmtree(workdir, ignore_errors=True)
    failed = [t for t in results if t.problems]
    phases: dict[str, int] = {}
    for t in results:
        key = t.phase.split(" (")[0]
        phases[key] = phases.get(key, 0) + 1
    print(f"{len(results)} trials (seed {args.seed}): {len(results) - len(failed)} passed, {len(failed)} failed; "
          f"killed while: " + ", ".join(f"{k} ×{v}" for k, v in sorted(phases.items())))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
