"""Keeping the index current: re-indexing changed paths only, freshness, per-file coverage, and
searches while a write is half done (the catalog ahead of the postings)."""

from __future__ import annotations

import io
import os
import tarfile
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.errors import IndexBusy, ProjectNotFound
from sleuth.freshness import coverage_summary, freshness, skip_state
from sleuth.ingest.walk import normalize_rel_paths, walk_paths, walk_roots
from sleuth.locks import WriteLock as _WriteLock
from sleuth.types import SkippedFile

LEXICAL = Config(model="none")


def write(root: Path, rel: str, text: str) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    return p


def paths(resp) -> list[str]:
    return [h.path for h in resp.hits]


def snapshot(eng: Engine) -> dict[str, set[str]]:
    """doc id -> block ids, the whole catalog."""
    out: dict[str, set[str]] = {}
    for row in eng.catalog.conn.execute("SELECT d.doc_id, b.block_id FROM documents d JOIN blocks b USING (doc_id)"):
        out.setdefault(row[0], set()).add(row[1])
    return out


def postings_blocks(eng: Engine) -> set[str]:
    import tantivy

    searcher = eng.postings.searcher()
    hits = searcher.search(tantivy.Query.all_query(), max(1, searcher.num_docs)).hits
    addrs = [a for _, a in hits]
    keys = zip(searcher.fast_field_values("doc_key", addrs), searcher.fast_field_values("block_key", addrs),
               strict=True)
    return {f"{d:016x}:{b:012x}" for d, b in keys}


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    write(root, "a.md", "# Alpha\n\nThe alpha page talks about wombats.\n")
    write(root, "sub/b.md", "# Beta\n\nBeta is about numbats.\n")
    write(root, "sub/deeper/c.md", "# Gamma\n\nGamma mentions quokkas.\n")
    write(root, "other/d.txt", "delta text on bilbies\n")
    write(root, ".gitignore", "ignored/\n*.log\n")
    write(root, "ignored/e.md", "# Hidden\n\nignored wallabies\n")
    return root


def test_walk_paths_is_the_walk_restricted_to_the_paths(tree: Path) -> None:
    write(tree, "sub/.gitignore", "secret.md\n")
    write(tree, "sub/secret.md", "# Secret\n")
    write(tree, "sub/x.log", "log\n")
    whole = {i.rel_path if not isinstance(i, SkippedFile) else i.path for i in walk_roots([tree])}
    for rels in (["sub"], ["sub/b.md", "other"], ["a.md", "sub/deeper"], ["ignored/e.md", "sub/secret.md"],
                 ["sub/x.log", "missing.md", "sub/gone/"], [""]):
        got = {i.rel_path if not isinstance(i, SkippedFile) else i.path for i in walk_paths(tree, rels)}
        wanted = {p for p in whole if any(r == "" or p == r or p.startswith(r.rstrip("/") + "/") for r in rels)}
        assert got == wanted, rels
    assert normalize_rel_paths(["./sub//b.md", "sub", "sub/deeper/", "a.md"]) == ["a.md", "sub"]
    assert normalize_rel_paths(["a.md", "."]) == [""]
    with pytest.raises(ValueError):
        list(walk_paths(tree, ["../outside.md"]))


def test_update_paths_matches_a_full_index(tree: Path, tmp_path: Path) -> None:
    with Engine(tmp_path / "idx", LEXICAL) as eng:
        eng.index([tree], project="notes")
        root = str(tree.resolve())
        assert paths(eng.search("wallabies")) == []  # .gitignored

        write(tree, "a.md", "# Alpha\n\nThe alpha page now talks about echidnas.\n")  # edit
        (tree / "sub/deeper/c.md").unlink()  # the last file of a folder
        (tree / "other/d.txt").rename(tree / "other/renamed.txt")  # rename
        write(tree, "new/f.md", "# Fresh\n\nA new folder about platypus.\n")  # new folder
        write(tree, "new/g.log", "ignored by *.log\n")
        write(tree, "pic.png", "not really a picture")  # skipped with a reason
        report = eng.update_paths("notes", root, ["a.md", "sub/deeper/c.md", "sub/deeper", "other/d.txt",
                                                  "other/renamed.txt", "new", "pic.png"])
        assert (report.added, report.updated, report.removed) == (2, 1, 2)
        assert report.skipped == [{"path": "pic.png", "reason": "binary file type: .png"}]
        assert paths(eng.search("echidnas")) == ["a.md"]
        assert paths(eng.search("wombats")) == []
        assert paths(eng.search("quokkas")) == []
        assert paths(eng.search("bilbies")) == ["other/renamed.txt"]
        assert paths(eng.search("platypus")) == ["new/f.md"]
        assert eng.update_paths("notes", root, ["a.md"]).unchanged == 1  # nothing changed: nothing written

        # a deleted folder: every document under it goes
        import shutil

        shutil.rmtree(tree / "sub")
        assert eng.update_paths("notes", root, ["sub"]).removed == 1
        incremental, inc_postings = snapshot(eng), postings_blocks(eng)
        inc_skips = [(s["path"], s["reason"]) for s in eng.catalog.skipped()]
    with Engine(tmp_path / "clean", LEXICAL) as clean:
        clean.index([tree], project="notes")
        assert snapshot(clean) == incremental
        assert postings_blocks(clean) == inc_postings == {b for bs in incremental.values() for b in bs}
        assert [(s["path"], s["reason"]) for s in clean.catalog.skipped()] == inc_skips


def test_update_paths_deleted_root_and_errors(tree: Path, tmp_path: Path) -> None:
    import shutil

    with Engine(tmp_path / "idx", LEXICAL) as eng:
        eng.index([tree], project="notes")
        with pytest.raises(ProjectNotFound):
            eng.update_paths("notes", tmp_path / "elsewhere", ["a.md"])
        with pytest.raises(ProjectNotFound):
            eng.update_paths("nope", tree, ["a.md"])
        shutil.rmtree(tree)
        report = eng.update_paths("notes", tree, ["a.md"])
        assert report.removed == 4
        assert eng.catalog.counts()["documents"] == 0 and postings_blocks(eng) == set()
        write(tree, "back.md", "# Back\n\nthe root came back with kiwis\n")
        assert eng.update_paths("notes", tree, [""]).added == 1
        assert paths(eng.search("kiwis")) == ["back.md"]


def test_index_folder_inside_a_root_is_not_indexed(tree: Path) -> None:
    with Engine(tree / "my-index", LEXICAL) as eng:
        report = eng.index([tree], project="notes")
        assert not any(s["path"].startswith("my-index") for s in report.skipped)
        assert eng.update_paths("notes", tree, ["my-index"]).scanned == 0


def test_search_finds_a_document_being_rewritten(tree: Path, tmp_path: Path, monkeypatch) -> None:
    """The catalog commits a rewritten document before the postings do: a reader in between got
    block ids from the postings that the catalog no longer has, and the document was dropped
    (a search for the file being indexed came back empty)."""
    with Engine(tmp_path / "idx", LEXICAL) as eng:
        eng.index([tree], project="notes")
        write(tree, "a.md", "# Alpha\n\nThe alpha page talks about wombats, version two.\n")
        with monkeypatch.context() as m:
            m.setattr(eng.postings, "apply", lambda *a, **k: None)  # the postings commit has not happened yet
            eng.update_paths("notes", tree, ["a.md"])
        writer = _WriteLock(eng.index_dir / "write.lock", 0)
        assert writer.acquire(blocking=False)  # the writer still holds the index: no catch-up
        try:
            assert eng.postings.generation() < eng.catalog.generation()
            for lanes in (["bm25"], ["index"], ["tfidf"], None):
                resp = eng.search("wombats", lanes=lanes)
                assert paths(resp) == ["a.md"], lanes
                hit = resp.hits[0]
                assert "version two" in eng.catalog.blocks([hit.best_block_id])[hit.best_block_id].text
                assert set(hit.block_ids) <= set(eng.catalog.blocks(hit.block_ids))
            (tree / "a.md").unlink()
            eng.catalog.delete_documents([hit.doc_id])  # deleted, postings not told either
            assert eng.search("wombats").hits == []
        finally:
            writer.release()


def test_second_writer_waits_then_reports_clearly(tree: Path, tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("SLEUTH_WRITE_LOCK_TIMEOUT_S", "0.2")
    with Engine(tmp_path / "idx", LEXICAL) as eng:
        holder = _WriteLock(eng.index_dir / "write.lock", 0)
        assert holder.acquire(blocking=False)
        try:
            with pytest.raises(IndexBusy) as err:
                eng.index([tree], project="notes")
            assert f"process {os.getpid()}" in str(err.value) and "waited 0.2 s" in str(err.value)
        finally:
            holder.release()
        assert eng.index([tree], project="notes").added == 4


def test_freshness(tmp_path: Path) -> None:
    root = tmp_path / "r"
    f = write(root, "dir/a.md", "hello\n")
    st = f.stat()
    assert freshness(str(root), "dir/a.md", st.st_mtime_ns, st.st_size) == "current"
    assert freshness(str(root), "dir/a.md", st.st_mtime_ns - 1, st.st_size) == "stale"
    assert freshness(str(root), "dir/a.md", st.st_mtime_ns, st.st_size + 1) == "stale"
    assert freshness(str(root), "dir/gone.md", st.st_mtime_ns, st.st_size) == "stale"
    assert freshness(str(tmp_path / "no-root"), "dir/a.md", st.st_mtime_ns, st.st_size) == "stale"
    assert freshness(str(f), "a.md", st.st_mtime_ns, st.st_size) == "current"  # a root that is one file
    assert freshness("", "record-1", 0, 5) == "current"  # records have no file
    archive = root / "bundle.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        info = tarfile.TarInfo("inner/x.md")
        info.size, info.mtime = 3, 1_000
        tar.addfile(info, io.BytesIO(b"abc"))
    assert freshness(str(root), "bundle.tar.gz/inner/x.md", 1_000 * 10**9, 3) == "current"
    assert freshness(str(root), "bundle.tar.gz/inner/x.md", 1, 3, indexed_at="2999-01-01T00:00:00.000Z") == "current"
    assert freshness(str(root), "bundle.tar.gz/inner/x.md", 1, 3, indexed_at="2001-01-01T00:00:00.000Z") == "stale"
    assert freshness(str(root), "gone.zip/inner/x.md", 1, 3) == "stale"
    assert skip_state("unreadable: [Errno 13] Permission denied") == "failed"
    assert skip_state("binary file type: .png") == "skipped"


def test_status_coverage_and_files(tree: Path, tmp_path: Path) -> None:
    write(tree, "pic.png", "PNG")
    with Engine(tmp_path / "idx", LEXICAL) as eng:
        eng.index([tree], project="notes")
        with tarfile.open(tree / "bundle.tar.gz", "w:gz") as tar:
            info = tarfile.TarInfo("inner/x.md")
            info.size = 3
            tar.addfile(info, io.BytesIO(b"abc"))
        eng.index([tree], project="notes")
        write(tree, "a.md", "# Alpha\n\nchanged since indexed\n")
        st = eng.status(files=True).model_dump()
        root = str(tree.resolve())
        assert st["coverage"] == [{"project": "notes", "root": root, "indexed": 5, "skipped": 1, "failed": 0,
                                   "last_indexed": st["coverage"][0]["last_indexed"], "outdated": False}]
        assert st["coverage"][0]["last_indexed"]
        skipped = [(s["path"], s["state"]) for s in st["skipped_files"]]
        assert skipped == [("pic.png", "skipped")]  # the .gitignore is a tool's dotfile: left out, not reported
        by_path = {f["path"]: f for f in st["files"]}
        assert by_path["a.md"]["freshness"] == "stale" and by_path["sub/b.md"]["freshness"] == "current"
        assert by_path["bundle.tar.gz/inner/x.md"]["freshness"] == "current"
        assert by_path["pic.png"] == {"project": "notes", "root": root, "path": "pic.png", "state": "skipped",
                                      "reason": "binary file type: .png", "at": by_path["pic.png"]["at"]}
        assert "files" not in eng.status().model_dump()


def test_coverage_summary_lists_empty_roots() -> None:
    rows = coverage_summary([("p", "/a"), ("p", "/b")], [("p", "/a", 3, "t1")],
                            [{"project": "p", "root": "/b", "path": "x", "reason": "unreadable: no", "at": "t"}])
    assert rows == [{"project": "p", "root": "/a", "indexed": 3, "skipped": 0, "failed": 0, "last_indexed": "t1",
                     "outdated": False},
                    {"project": "p", "root": "/b", "indexed": 0, "skipped": 0, "failed": 1, "last_indexed": None,
                     "outdated": False}]
    # a root parsed by an older parser says so (asked only of roots holding documents)
    asked: list[tuple[str, str]] = []
    rows = coverage_summary([("p", "/a"), ("p", "/b")], [("p", "/a", 3, "t1")], [],
                            lambda project, root: asked.append((project, root)) is None)
    assert [r["outdated"] for r in rows] == [True, False] and asked == [("p", "/a")]


def test_tfidf_model_updated_scores_as_a_model_built_from_scratch() -> None:
    import random

    import numpy as np

    from sleuth.lanes.tfidf import TfidfModel

    rng = random.Random(5)
    words = [f"w{i}" for i in range(40)]

    def rows(doc: str, n: int) -> list[tuple[str, str, str]]:
        return [(f"{doc}:{i:012x}", rng.choice("pq"), " ".join(rng.choices(words, k=rng.randint(1, 12))))
                for i in range(n)]

    docs = {f"{d:016x}": rows(f"{d:016x}", rng.randint(1, 3)) for d in range(30)}
    model = TfidfModel(r for rs in docs.values() for r in rs)
    for _ in range(5):
        changed = rng.sample(sorted(docs), 6)
        for d in changed[:3]:
            del docs[d]  # deleted
        for d in changed[3:]:
            docs[d] = rows(d, rng.randint(1, 3))  # rewritten
        new = f"{rng.randrange(10**6, 10**7):016x}"
        docs[new] = rows(new, 2) + [(f"{new}:{9:012x}", "p", "brandnewterm w1")]  # added, with a new term
        model = model.updated(changed, [r for d in [*changed[3:], new] for r in docs[d]])
        scratch = TfidfModel(r for rs in docs.values() for r in rs)
        assert sorted(model.block_ids) == sorted(scratch.block_ids)
        order = {b: i for i, b in enumerate(model.block_ids)}
        for query in (["w1"], ["w2", "w3", "w30"], ["brandnewterm"], ["nowhere"]):
            got = model.scores(query)
            want = scratch.scores(query)
            assert np.allclose([got[order[b]] for b in scratch.block_ids], want, atol=1e-6)
        again = TfidfModel.from_arrays(model.to_arrays())
        assert np.array_equal(again.scores(["w1"]), model.scores(["w1"]))


class FakeEmbedder:
    """Deterministic unit vectors from the text's hash (the vector matrix's bookkeeping is under test)."""

    name, dim = "fake-model", 8

    def embed(self, texts: list[str]):
        import hashlib

        import numpy as np

        out = np.asarray([np.frombuffer(hashlib.sha256(t.encode()).digest()[:32], dtype=np.uint8)[:8] for t in texts],
                         dtype=np.float32) + 1.0
        return out / np.linalg.norm(out, axis=1, keepdims=True)


def test_a_root_walked_without_a_change_is_indexed_then(tree: Path, tmp_path: Path) -> None:
    """A root's "last indexed" was its newest document's time, so after a run that changed nothing
    it lagged behind its project's (a new user read it as the root not being walked); it is the
    last run that walked all of it now. A refresh of a path under it does not count as a walk."""
    with Engine(tmp_path / "idx", LEXICAL) as eng:
        eng.index([tree], project="notes")
        with eng.catalog.write() as conn:  # as if indexed long ago, unchanged since
            conn.execute("UPDATE documents SET indexed_at='2020-01-01T00:00:00.000Z'")
            conn.execute("DELETE FROM meta WHERE key LIKE 'root_walked%'")
        assert eng.status().model_dump()["coverage"][0]["last_indexed"] == "2020-01-01T00:00:00.000Z"
        eng.index([tree / "sub"], project="notes")  # refreshed within the root: not a walk of it
        assert eng.status().model_dump()["coverage"][0]["last_indexed"] == "2020-01-01T00:00:00.000Z"
        report = eng.index([tree], project="notes")
        assert (report.added, report.updated) == (0, 0)
        project = {p.project_id: p for p in eng.projects()}["notes"]
        st = eng.status().model_dump()
        assert st["coverage"][0]["last_indexed"] == project.last_indexed > "2020"
        eng.remove_project("notes")  # its walked times go with it
        assert eng.catalog.conn.execute("SELECT COUNT(*) FROM meta WHERE key LIKE 'root_walked%'").fetchone()[0] == 0
