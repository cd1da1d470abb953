from __future__ import annotations

import dataclasses
import math
import os
import sys
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.errors import ConfigError, IndexNotFound, ProjectNotFound, QueryError
from sleuth.indexer import doc_id_for, make_blocks, now_rfc3339
from sleuth.ingest import parse_document
from sleuth.lanes.base import LaneQuery
from sleuth.store.catalog import DocumentRow
from sleuth.text import parse_query
from sleuth.types import Question, SearchRequest


def write(root: Path, rel: str, text: str, mtime_ns: int | None = None) -> Path:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    if mtime_ns is not None:
        os.utime(p, ns=(mtime_ns, mtime_ns))
    return p


def paths(resp) -> list[str]:
    return [h.path for h in resp.hits]


@pytest.fixture
def src(tmp_path: Path) -> Path:
    root = tmp_path / "notes"
    write(root, "fox.md", "# Foxes\n\nThe quick brown fox jumps over the lazy dog.\n", 1_000_000_000)
    write(root, "reversed.md", "# Reversed\n\nA brown quick fox sleeps under the tree.\n", 1_000_000_000)
    write(root, "cats.md", "# Cats\n\nCats sleep all day in the warm sun.\n", 1_000_000_000)
    write(root, "code/app.py", "def get_user_name(user):\n    return user.name\n", 1_000_000_000)
    return root


@pytest.fixture
def engine(tmp_path: Path):
    eng = Engine(tmp_path / "idx")
    yield eng
    eng.close()


def test_index_then_search(engine, src):
    report = engine.index([src], project="notes")
    assert report.project == "notes"
    assert (report.added, report.updated, report.unchanged, report.removed) == (4, 0, 0, 0)
    assert report.scanned == 4
    assert report.skipped == [] and report.problems == []
    resp = engine.search("sleeping cats")
    assert resp.result_count == len(resp.hits) >= 1
    assert resp.hits[0].path == "cats.md"
    assert resp.hits[0].rank == 1
    assert resp.hits[0].project == "notes"
    assert resp.terms == ["sleep", "cat"]
    assert "Cats" in resp.hits[0].snippet
    for s, e in resp.hits[0].highlights:
        assert resp.hits[0].snippet[s:e].lower().startswith(("cat", "sleep"))
    resp = engine.search("get_user_name")
    assert paths(resp)[0] == "code/app.py"


def test_search_only_returns_matching_documents(engine, src):
    engine.index([src], project="notes")
    resp = engine.search("fox")
    assert sorted(paths(resp)) == ["fox.md", "reversed.md"]
    assert engine.search("zebra").result_count == 0


def test_quoted_phrase_requires_exact_phrase(engine, src):
    engine.index([src], project="notes")
    resp = engine.search('"quick brown"')
    assert paths(resp) == ["fox.md"]
    resp = engine.search('"brown quick" fox')
    assert paths(resp) == ["reversed.md"]
    assert resp.phrases == ["brown quick"]
    resp = engine.search('"quick brown"', lanes=["bm25", "tfidf", "index", "exact"])
    assert paths(resp) == ["fox.md"]


def test_project_filter_before_top_k(tmp_path: Path):
    big, small = tmp_path / "big", tmp_path / "small"
    for i in range(30):
        write(big, f"w{i:02d}.md", f"# Widget {i}\n\nwidget widget widget gadget widget {i}\n")
    write(small, "only.md", "# Lonely\n\n" + "filler text about many other things. " * 20 + "one widget here.\n")
    cfg = Config(rank_window_step_docs=1, lane_depth_blocks_per_result=1)
    with Engine(tmp_path / "idx", config=cfg) as eng:
        eng.index([big], project="big")
        eng.index([small], project="small")
        unfiltered = eng.search("widget", limit=1)
        assert unfiltered.hits[0].project == "big"
        resp = eng.search("widget", projects=["small"], limit=1)
        assert resp.result_count == 1
        assert resp.hits[0].path == "only.md"
        assert resp.hits[0].project == "small"
        resp = eng.search("widget", projects=["big"], limit=50)
        assert resp.result_count == 30
        assert {h.project for h in resp.hits} == {"big"}
        assert {p.project_id: p.documents for p in eng.projects()} == {"big": 30, "small": 1}


def test_incremental_reindex(engine, src):
    engine.index([src], project="notes")
    again = engine.index([src], project="notes")
    assert (again.added, again.updated, again.unchanged, again.removed) == (0, 0, 4, 0)

    # edit
    write(src, "cats.md", "# Cats\n\nCats chase laser pointers.\n", 2_000_000_000)
    # delete
    (src / "fox.md").unlink()
    # rename
    (src / "code/app.py").rename(src / "code/users.py")
    rep = engine.index([src], project="notes")
    assert rep.updated == 1
    assert rep.unchanged == 1  # reversed.md
    assert rep.added == 1  # users.py
    assert rep.removed == 2  # fox.md, app.py

    assert engine.search("warm sun").result_count == 0
    assert paths(engine.search("laser pointers")) == ["cats.md"]
    assert paths(engine.search('"quick brown"')) == []
    assert "fox.md" not in paths(engine.search("fox lazy dog jumps"))
    assert paths(engine.search("get_user_name")) == ["code/users.py"]
    all_paths = {p for q in ("cats", "fox", "user name", "brown") for p in paths(engine.search(q))}
    assert "code/app.py" not in all_paths and "fox.md" not in all_paths
    assert engine.projects()[0].documents == 3


def test_touched_file_same_content_unchanged(engine, src):
    engine.index([src], project="notes")
    os.utime(src / "cats.md", ns=(3_000_000_000, 3_000_000_000))
    rep = engine.index([src], project="notes")
    assert (rep.added, rep.updated, rep.unchanged) == (0, 0, 4)
    gen = engine.catalog.generation()
    rep = engine.index([src], project="notes")
    assert rep.unchanged == 4
    assert engine.catalog.generation() == gen


def test_binary_and_malformed_front_matter_reported(engine, src):
    (src / "image.bin").write_bytes(b"\x00\x01\x02\x03garbage")
    (src / "data.txt").write_bytes(b"abc\x00\x00\x00def" * 10)
    write(src, "broken.md", "---\ntitle: [unclosed\nfoo: : bar\n---\n# Broken\n\nstill searchable zanzibar text.\n")
    rep = engine.index([src], project="notes")
    skipped = {s["path"]: s["reason"] for s in rep.skipped}
    assert "image.bin" in skipped and "data.txt" in skipped
    assert "binary" in skipped["data.txt"]
    problems = {p["path"] for p in rep.problems}
    assert problems == {"broken.md"}
    assert rep.added == 5  # 4 good files + broken.md
    assert paths(engine.search("zanzibar")) == ["broken.md"]
    assert paths(engine.search("sleeping cats"))[0] == "cats.md"
    assert {s["path"] for s in engine.catalog.skipped("notes")} >= {"image.bin", "data.txt"}


def test_explain_traces_add_up(engine, src):
    engine.index([src], project="notes")
    resp = engine.search("quick brown fox", explain=True)
    assert resp.hits
    for h in resp.hits:
        assert h.explain
        assert math.isclose(sum(c.contribution for c in h.explain), h.score, rel_tol=1e-9)
        for c in h.explain:  # z-score fusion: weight x (lane score - lane's lowest) / spread >= 0
            assert c.contribution >= 0 and (c.weight > 0 or c.contribution == 0)
        assert sorted(c.lane for c in h.explain) == sorted(h.sources)
    assert engine.search("quick brown fox").hits[0].explain is None
    scores = [h.score for h in resp.hits]
    assert scores == sorted(scores, reverse=True)
    engine.config = dataclasses.replace(engine.config, fusion="rrf")
    for h in engine.search("quick brown fox", explain=True).hits:
        assert math.isclose(sum(c.contribution for c in h.explain), h.score, rel_tol=1e-9)
        for c in h.explain:
            assert math.isclose(c.contribution, c.weight / (60 + c.rank), rel_tol=1e-12)


def test_get_returns_whole_text(engine, src):
    engine.index([src], project="notes")
    hit = engine.search("laziest dog").hits[0]
    doc = engine.get(hit.doc_id)
    assert doc.text == (src / "fox.md").read_text()
    assert doc.path == "fox.md"
    assert doc.blocks
    for b in doc.blocks:
        s, e = b["chars"]
        assert 0 <= s < e <= len(doc.text)


def test_unknown_project_raises(engine, src):
    engine.index([src], project="notes")
    with pytest.raises(ProjectNotFound):
        engine.search("fox", projects=["nope"])
    with pytest.raises(ProjectNotFound):
        engine.search("the", projects=["nope"])


@pytest.mark.parametrize("query", ["", "   ", "the of and", "!!! ??"])
def test_empty_query(engine, src, query):
    engine.index([src], project="notes")
    resp = engine.search(query)
    assert resp.result_count == 0
    assert resp.hits == []
    assert resp.notice


def test_too_long_query(engine, src):
    engine.index([src], project="notes")
    with pytest.raises(QueryError):
        engine.search("fox " * 2_500)


def _row(pid: str, root: Path, rel: str, text: str) -> tuple[DocumentRow, list]:
    parsed = parse_document(rel, text)
    doc_id = doc_id_for(pid, root.name, rel)
    title = parsed.title or rel
    row = DocumentRow(
        doc_id=doc_id, project_id=pid, root=str(root), rel_path=rel, title=title, tags=[],
        kind=parsed.kind, front_matter={}, mtime_ns=1, size_bytes=len(text), content_hash="h" + rel,
        revision="r", text=parsed.text, generation=0, indexed_at=now_rfc3339(),
    )
    return row, make_blocks(pid, doc_id, title, parsed)


def test_postings_catch_up_after_crash(tmp_path: Path, src):
    idx = tmp_path / "idx"
    with Engine(idx) as eng:
        eng.index([src], project="notes")
        # simulate a crash: catalog committed, postings never told
        row, blocks = _row("notes", src.resolve(), "crash.md", "# Crash\n\nxylophone quartet rehearsal\n")
        gen = eng.catalog.write_documents([(row, blocks)], now_rfc3339())
        fox_id = eng.search('"quick brown"').hits[0].doc_id
        gen = eng.catalog.delete_documents([fox_id])
        assert eng.postings.generation() < gen
    with Engine(idx) as fresh:
        assert fresh.postings.generation() == fresh.catalog.generation() == gen
        resp = fresh.search("xylophone")
        assert paths(resp) == ["crash.md"]
        assert fresh.get(resp.hits[0].doc_id).text == "# Crash\n\nxylophone quartet rehearsal\n"
        assert fresh.search('"quick brown"').result_count == 0
        raw = fresh.lanes["bm25"].search(LaneQuery(parse_query("quick lazy"), 100, None))
        assert all(not b.startswith(fox_id) for b in raw.block_ids)


def test_rewritten_document_catch_up(tmp_path: Path, src):
    idx = tmp_path / "idx"
    with Engine(idx) as eng:
        eng.index([src], project="notes")
        row, blocks = _row("notes", src.resolve(), "cats.md", "# Cats\n\nCats juggle oranges.\n")
        eng.catalog.write_documents([(row, blocks)], now_rfc3339())
    with Engine(idx) as fresh:
        assert paths(fresh.search("juggle oranges")) == ["cats.md"]
        assert fresh.search("warm sun").result_count == 0


def test_a_search_during_an_indexing_run_says_which_lanes_lag(tmp_path) -> None:
    """An indexing run commits its postings at its end: meanwhile the catalog is ahead, and a
    search says that the bm25, index, rm3 and exact lanes do not see the new documents yet."""
    import os

    from sleuth.config import Config
    from sleuth.locks import lock_exclusive

    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# Alpha\n\nWombats dig burrows.\n", encoding="utf-8")
    engine = Engine(tmp_path / "idx", Config(model="none"))
    engine.index([root], project="notes")
    assert engine.search("wombats").notice is None
    held = lock_exclusive(tmp_path / "idx" / "write.lock", 0)  # another process's indexing run
    try:
        engine.postings._set_generation(engine.catalog.generation() - 1)  # its postings not committed yet
        resp = engine.search("wombats")
        assert resp.notice and "indexing run is in progress" in resp.notice
        assert [sorted(h.sources) for h in resp.hits] == [["bm25", "index", "rm3"]]  # postings still hold a.md
    finally:
        os.close(held)
    resp = engine.search("wombats")  # the lock is free: the postings catch up
    assert resp.notice is None and engine.postings.generation() == engine.catalog.generation()


def test_id_labels_of_roots_that_share_a_folder_name(tmp_path: Path) -> None:
    from sleuth.indexer import id_label

    a, b, c = tmp_path / "x" / "a" / "docs", tmp_path / "x" / "b" / "docs", tmp_path / "y" / "b" / "docs"
    for folder in (a, b, c):
        folder.mkdir(parents=True)
    roots = [str(a), str(b), str(c)]
    assert [id_label(Path(r), roots) for r in roots] == ["docs", "b/docs", "y/b/docs"]
    assert id_label(a, [str(a)]) == "docs"  # a lone root keeps its folder's name (ids unchanged)
    from sleuth.indexer import id_labels

    assert id_labels(["/a/a/b/a", "/a"]) == {"/a/a/b/a": "a", "/a": "/a"}  # "a" twice lost a document


def _id_label_by_comparison(root: Path, roots: list[str]) -> str:
    """The definition of a root's id label, as written before ``id_labels``: each candidate label
    compared with every earlier root's (quadratic in the roots); then, as attack session 41 asked, a
    label another folder of an earlier root has already (``/a`` after ``/a/a/b/a``: both ``a``, one
    document lost) gives way to the folder's whole path."""
    def folder(p: Path) -> Path:
        return p if p.is_dir() or not p.exists() else p.parent

    mine = folder(root)
    before = roots[: roots.index(str(root))] if str(root) in roots else []
    earlier = [folder(Path(r)) for r in before]
    label = str(mine)
    for n in range(1, len(mine.parts) + 1):
        candidate = "/".join(mine.parts[-n:])
        if all("/".join(e.parts[-n:]) != candidate for e in earlier):
            label = candidate if n == 1 else candidate.lstrip("/")
            break
    taken = {_id_label_by_comparison(Path(r), roots): folder(Path(r)) for r in reversed(before)}
    return str(mine) if label in taken and taken[label] != mine else label


_LABEL_PARTS = ["docs", "a", "b", "x", "notes.md", "n1.md"]


@pytest.mark.parametrize("seed", range(40))
def test_id_labels_match_their_definition_by_comparison(tmp_path: Path, seed: int) -> None:
    """``id_labels`` (set lookups) gives every root the label the pairwise definition gives: roots of
    files and folders, absolute and relative, missing, nested, sharing names, at several depths, repeated."""
    import random

    from sleuth.indexer import id_label, id_labels

    rng = random.Random(seed)
    made = tmp_path / "t"
    for parts in [("x", "docs"), ("a", "docs"), ("a", "b", "docs"), ("b", "docs", "a")]:
        (made.joinpath(*parts)).mkdir(parents=True, exist_ok=True)
    for parts in [("x", "docs", "notes.md"), ("a", "n1.md"), ("b", "docs", "n1.md"), ("notes.md",)]:
        made.joinpath(*parts).write_text("# n\n")
    roots: list[str] = []
    for _ in range(rng.randint(1, 12)):
        parts = [rng.choice(_LABEL_PARTS) for _ in range(rng.randint(0, 4))]
        base = rng.choice([str(made), "/", "rel", str(tmp_path)])
        roots.append(str(Path(base, *parts)))
    expected = {r: _id_label_by_comparison(Path(r), roots) for r in roots}
    assert id_labels(roots) == expected
    folders = {label: {Path(r) if Path(r).is_dir() or not Path(r).exists() else Path(r).parent
                       for r in roots if expected[r] == label} for label in expected.values()}
    assert all(len(f) == 1 for f in folders.values()), folders  # a label names one folder
    assert {r: id_label(Path(r), roots) for r in roots} == expected
    assert id_label(made / "elsewhere", roots) == _id_label_by_comparison(made / "elsewhere", roots)


@pytest.mark.parametrize("seed", range(30))
def test_roots_inside_a_root_are_those_path_semantics_say(seed: int) -> None:
    """``_ProjectRoots.inside`` (bisection of the sorted keys) lists the roots strictly inside a
    root, in the catalog's order, as ``Path.is_relative_to`` does: ``/a/b`` holds ``/a/b/c``, not
    ``/a/bc`` or ``/a/b-c``; ``/`` holds everything but itself."""
    import random

    from sleuth.indexer import _ProjectRoots

    rng = random.Random(seed)
    names = ["a", "b", "bc", "b-c", "b.c", "c", "z"]
    keys = list(dict.fromkeys("/" + "/".join(rng.choice(names) for _ in range(rng.randint(0, 4)))
                              for _ in range(rng.randint(1, 15))))
    roots = _ProjectRoots.of(keys)
    for probe in [*keys, "/", "/a", "/a/b", "/b/bc"]:
        expected = [k for k in keys if Path(k) != Path(probe) and Path(k).is_relative_to(probe)]
        assert roots.inside(Path(probe)) == expected, (probe, keys)


def test_a_root_per_file_costs_each_root_a_few_real_paths(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``sleuth index notes/*.md`` makes a root of each file: the run resolves each root a bounded
    number of times, not once for every other root (1,501 roots took 3 minutes, 4.5 million
    ``realpath`` calls). Counted, not timed."""
    notes = tmp_path / "notes"
    notes.mkdir()
    files = []
    for i in range(120):
        path = notes / f"n{i:03d}.md"
        path.write_text(f"# Note {i}\n\nAbout topic {i}.\n")
        files.append(path)
    calls = [0]
    real = os.path.realpath

    def counting(path, *args, **kwargs):  # type: ignore[no-untyped-def]
        calls[0] += 1
        return real(path, *args, **kwargs)

    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        monkeypatch.setattr(os.path, "realpath", counting)
        first = engine.index(files, project="many")
        again = engine.index(files, project="many")
        monkeypatch.setattr(os.path, "realpath", real)
        assert (first.added, again.unchanged) == (120, 120)
        assert calls[0] < 40 * len(files), calls[0]  # quadratic: more than 120 * 120 * 2
        assert engine.search("topic", limit=3).hits


def test_a_record_given_twice_in_one_run_is_indexed_once_with_its_last_text(tmp_path):
    from sleuth.engine import Record
    from sleuth.types import SearchRequest

    records = [Record("a", "a first draft about zebras", title="A"), Record("b", "other text", title="B"),
               Record("a", "the final text about giraffes", title="A")]
    with Engine(tmp_path / "idx", Config(model="none")) as eng:
        eng.index_records("p", records)
        # One tantivy document per block of the catalog: the first version of "a" is gone from both.
        assert eng.postings.searcher().num_docs == 2 == len(list(eng.catalog.indexed_blocks(0)))
        assert [h.path for h in eng.search(SearchRequest(query="giraffes", lanes=["bm25"], limit=5)).hits] == ["a"]
        assert eng.search(SearchRequest(query="zebras", lanes=["bm25"], limit=5)).hits == []
        exact = eng.search(SearchRequest(query='"about giraffes"', lanes=["exact"], limit=5)).hits
        assert [h.path for h in exact] == ["a"]


def test_a_record_given_again_in_a_later_batch_of_the_run_leaves_only_its_last_version(tmp_path, monkeypatch):
    # Only documents the catalog held before a batch get a postings delete (a new one has none to
    # delete); a document written by an earlier batch of the same run is one of them.
    from sleuth import indexer
    from sleuth.engine import Record
    from sleuth.types import SearchRequest

    monkeypatch.setattr(indexer, "FLUSH_DOCUMENTS", 2)
    records = [Record("a", "a first draft about zebras", title="A"), Record("b", "other text", title="B"),
               Record("c", "more text", title="C"), Record("a", "the final text about giraffes", title="A")]
    with Engine(tmp_path / "idx", Config(model="none")) as eng:
        eng.index_records("p", records)
        assert eng.postings.searcher().num_docs == 3 == len(list(eng.catalog.indexed_blocks(0)))
        assert [h.path for h in eng.search(SearchRequest(query="giraffes", lanes=["bm25"], limit=5)).hits] == ["a"]
        assert eng.search(SearchRequest(query="zebras", lanes=["bm25"], limit=5)).hits == []


def test_a_run_rewriting_many_documents_commits_its_staged_deletes_in_bounded_batches(tmp_path, monkeypatch):
    # tantivy holds every staged delete until a commit: a run commits once BULK_COMMIT_DELETES are
    # staged, and the postings end up as if each document had been rewritten alone.
    from sleuth import indexer
    from sleuth.engine import Record
    from sleuth.lanes import postings
    from sleuth.types import SearchRequest

    monkeypatch.setattr(indexer, "FLUSH_DOCUMENTS", 2)
    commits: list[int] = []
    real = postings.Postings._bulk_commit

    def counting(self: postings.Postings) -> None:
        if self._bulk is not None and self._bulk.generation is not None:
            commits.append(self._bulk.deletes)
        real(self)

    with Engine(tmp_path / "idx", Config(model="none")) as eng:
        eng.index_records("p", [Record(f"d{i}", f"old text number {i} about zebras") for i in range(10)])
        monkeypatch.setattr(postings, "BULK_COMMIT_DELETES", 4)
        monkeypatch.setattr(postings.Postings, "_bulk_commit", counting)
        eng.index_records("p", [Record(f"d{i}", f"new text number {i} about giraffes") for i in range(10)])
        assert commits == [4, 4, 2]  # two batches of two rewritten documents between commits, the rest at the end
        assert eng.postings.searcher().num_docs == 10
        assert eng.search(SearchRequest(query="zebras", lanes=["bm25"], limit=20)).hits == []
        assert len(eng.search(SearchRequest(query="giraffes", lanes=["bm25"], limit=20)).hits) == 10


def test_indexing_raises_the_gc_threshold_for_the_run_and_restores_it():
    import gc

    from sleuth.indexer import INDEXING_GC_THRESHOLD, fewer_collections

    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold()[0] == max(INDEXING_GC_THRESHOLD, before[0])
        with fewer_collections():  # overlapping runs: restored when the last one ends
            pass
        assert gc.get_threshold()[0] == max(INDEXING_GC_THRESHOLD, before[0])
    assert gc.get_threshold() == before


def test_reindexing_a_root_without_a_project_keeps_its_project(tmp_path: Path, src: Path):
    """Found by a new user: ``sleuth index content --project hugo`` then ``sleuth index .`` from inside
    made a second project of the same files, and every search returned each page twice."""
    eng = Engine(tmp_path / "idx")
    try:
        first = eng.index([src], project="hugo")
        assert first.project == "hugo" and first.added == 4
        again = eng.index([src])  # the same root, no name: still project "hugo"
        assert again.project == "hugo" and (again.added, again.updated) == (0, 0)
        assert [p.name for p in eng.projects()] == ["hugo"]
        resp = eng.search(SearchRequest(query="fox"))
        assert sorted(paths(resp)) == ["fox.md", "reversed.md"]
        # a root never indexed gets its folder's name; --project still names another project on purpose
        other = tmp_path / "other"
        write(other, "a.md", "# A\n\nA fox.\n")
        assert eng.index([other]).project == "other"
        assert eng.index([src], project="copy").project == "copy"
        assert sorted(p.name for p in eng.projects()) == ["copy", "hugo", "other"]
    finally:
        eng.close()


def test_grouped_questions_show_a_shared_block_around_their_own_terms(tmp_path: Path) -> None:
    # One search, two questions, one document: each question's snippet is cut around its own words
    # (the search's snippet cache was keyed by block alone: the second question got the first's).
    root = tmp_path / "notes"
    filler = " ".join(f"word{i}" for i in range(200))
    write(root, "long.md", f"# Notes\n\nThe quokka lives on an island. {filler} The wombat digs burrows.\n")
    with Engine(tmp_path / "idx", config=Config(model="none")) as eng:
        eng.index([root], project="p")
        resp = eng.search(SearchRequest(questions=[Question(id="a", query="quokka"), Question(id="b", query="wombat")],
                                        limit=1))
    (a,), (b,) = (q.hits for q in resp.questions)
    assert a.doc_id == b.doc_id
    assert "quokka" in a.snippet and "wombat" not in a.snippet
    assert "wombat" in b.snippet and "quokka" not in b.snippet


def test_a_missing_host_folder_with_the_catalog_in_postgresql_says_to_create_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A new user's trial of a second host: `sleuth search --index NEW` with $SLEUTH_CATALOG_URL set
    answered "not a sleuth index (no catalog.sqlite3); run `sleuth index` first", but scaled out no
    such file exists and an empty folder is all a host needs (no server is reached before this)."""
    monkeypatch.setenv("SLEUTH_CATALOG_URL", "postgresql://nobody@127.0.0.1:9/none")
    host = tmp_path / "host2"
    with pytest.raises(IndexNotFound) as raised:
        Engine.open(host)
    assert str(raised.value) == (
        f"{host} is not a folder: with the catalog in PostgreSQL (SLEUTH_CATALOG_URL) each host keeps its own"
        f" index folder; create it (`mkdir -p {host}`) and the first search builds its postings from the shared"
        " catalog, or run `sleuth index PATH` to index files into it")
    monkeypatch.delenv("SLEUTH_CATALOG_URL")
    with pytest.raises(IndexNotFound, match=r"is not a sleuth index \(no catalog.sqlite3\); run `sleuth index` first"):
        Engine.open(host)


@pytest.mark.parametrize(("package", "variable", "setting"), [
    ("psycopg", "SLEUTH_CATALOG_URL", "SLEUTH_CATALOG_URL"),
    ("pymilvus", "SLEUTH_MILVUS_URI", "milvus_uri (or SLEUTH_MILVUS_URI)"),
])
def test_a_scale_setting_without_its_package_says_what_to_install(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, package: str, variable: str, setting: str) -> None:
    """A venv made by `pip install sleuth` (or `make demo`) has neither psycopg nor pymilvus: with
    the catalog in PostgreSQL the error read "cannot reach the catalog at ...: No module named
    'psycopg'", and with Milvus a traceback. The package is hidden here as if not installed."""
    monkeypatch.setitem(sys.modules, package, None)  # `import package` raises ImportError
    url = {"psycopg": "postgresql://nobody@127.0.0.1:9/none", "pymilvus": "http://127.0.0.1:9"}[package]
    monkeypatch.setenv(variable, url)
    (tmp_path / "idx").mkdir()
    with pytest.raises(ConfigError) as raised:
        Engine(tmp_path / "idx").close()
    assert str(raised.value) == (f"{setting} is set, but the Python package {package} it needs is not installed:"
                                 " pip install 'sleuth[scale]' (docs/SCALE.md)")


def test_a_misspelt_request_field_is_an_error_not_ignored(engine, src):
    """The Python API's SearchRequest, its filters and questions refuse a field they do not have
    (``limt=5`` searched with the default limit, silently)."""
    import pydantic

    from sleuth.types import SearchFilters

    engine.index([src], project="notes")
    for make in (lambda: engine.search("cats", limt=5), lambda: SearchFilters(kind=["markdown"]),
                 lambda: SearchRequest(query="", questions=[{"query": "cats", "limt": 5}])):
        with pytest.raises(pydantic.ValidationError, match=r"(limt|kind)\n  Extra inputs are not permitted"):
            make()
    assert engine.search("cats", limit=1).hits


SIGNING_KEYS = """# Signing keys

How we handle the release signing keys.

## Rotation procedure

We rotate the keys every 90 days. The release manager generates a new key pair on the offline
machine and publishes the public key.

## Revocation

If a key leaks, publish the revocation certificate and tell every mirror. Keys are revoked, not rotated.

## Escrow

A copy of each key is kept in escrow with two officers.
"""


@pytest.mark.parametrize("lanes", [None, ["bm25"]], ids=["default", "bm25"])
def test_a_lone_matching_note_shows_the_section_that_matched(tmp_path: Path, lanes: list[str] | None) -> None:
    """A new user's trial of stop 40: when one note alone matched, every section of it got the same
    score from each lexical lane and the first block id won ("rotate the keys every 90 days" showed
    "Revocation", even with the bm25 lane alone)."""
    root = tmp_path / "notes"
    write(root, "signing-keys.md", SIGNING_KEYS)
    write(root, "garden.md", "# Garden\n\nTomatoes need sun and water.\n")
    with Engine(tmp_path / "idx", Config(model="none")) as e:
        e.index([root], embed=False)
        for query, section in (("rotate the keys every 90 days", "Rotation procedure"),
                               ("how do we rotate the signing keys", "Rotation procedure"),
                               ("revocation certificate", "Revocation"), ("escrow officers", "Escrow")):
            hits = e.search(SearchRequest(query=query, lanes=lanes)).hits
            assert [(h.path, h.heading_path) for h in hits] == [("signing-keys.md", ["Signing keys", section])], query


def test_a_root_swapped_for_a_link_while_the_run_waits_for_the_lock_is_refused(tmp_path: Path) -> None:
    """Attack session 41: ``sleuth index proj/docs`` resolves its path, then waits for the write lock;
    a folder swapped meanwhile for a symbolic link to a secret folder had the run read the secret
    (the roots' real paths were taken at the first pass). A root is now the path it was given as:
    one that leads elsewhere is refused, its documents kept, and said."""
    from sleuth.locks import lock_exclusive

    docs, secret = tmp_path / "proj" / "docs", tmp_path / "secret"
    docs.mkdir(parents=True)
    secret.mkdir()
    (docs / "a.md").write_text("# A\n\nordinary docs text\n")
    (secret / "s.md").write_text("# S\n\nTOPSECRET words\n")
    with Engine(tmp_path / "idx", Config(model="none")) as engine:
        engine.index([docs], project="p")
        held = lock_exclusive(engine.index_dir / "write.lock", 0)
        assert held is not None

        def swap_then_release(_holder: str) -> None:  # told once the run waits: the window, injected
            os.rename(docs, tmp_path / "proj" / "docs-away")
            os.symlink(secret, docs)
            os.close(held)

        engine.folder.write_lock.on_wait = swap_then_release
        report = engine.index([docs], project="p")
        assert [p["path"] for p in report.problems] == [str((tmp_path / "proj").resolve() / "docs")]
        assert "this root leads to " + str(secret.resolve()) + " now" in report.problems[0]["problem"]
        assert engine.search("TOPSECRET", limit=5).hits == []
        assert [h.path for h in engine.search("ordinary", limit=5).hits] == ["a.md"]  # kept (stale)
