"""Issue 17.2 through the Python API: path globs, tags, kinds, roles and recorded-time filters applied
inside every lane before its top-k; pages that neither repeat nor skip; documents found by path or
block id; two roots told apart; notebook cells and PDF pages as locations."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.errors import DocumentNotFound, QueryError
from sleuth.types import SearchFilters, SearchRequest
from tests.pdf_samples import make_pdf

LEXICAL = ("bm25", "tfidf", "index", "exact")
DAY_NS = 86_400 * 1_000_000_000


def write(root: Path, rel: str, text: str, mtime_s: int = 1_600_000_000) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    p.write_text(text, encoding="utf-8")
    os.utime(p, (mtime_s, mtime_s))


@pytest.fixture
def site(tmp_path: Path) -> tuple[Engine, Path]:
    """Two roots (en, ja) holding the same paths, tagged pages, decisions, a notebook and a PDF;
    each lane returns one block only (so a filter applied after the top-k would find nothing)."""
    en, ja = tmp_path / "site" / "en", tmp_path / "site" / "ja"
    write(en, "publish.md", "# Publish\n\nPublish the site with the quokka deploy command. quokka quokka.\n")
    write(ja, "publish.md", "# Publish\n\nPublish the site (Japanese) with the quokka deploy command.\n")
    write(en, "guide/tags.md", "---\ntags: [Deploy, ops]\n---\n# Tagged\n\nA note on quokka.\n")
    write(en, "drafts/wip.md", "# Draft\n\nquokka draft\n")
    write(en, "doc/adr/0001-use-files.md", "# 1. Use files\n\nDate: 2019-03-01\n\n## Status\n\n"
          "Superseded by [2. Use SQLite](0002-use-sqlite.md)\n\n## Context\n\nquokka storage in files.\n")
    write(en, "doc/adr/0002-use-sqlite.md", "# 2. Use SQLite\n\nDate: 2021-06-15\n\n## Status\n\nAccepted\n\n"
          "Supersedes [1. Use files](0001-use-files.md)\n\n## Context\n\nquokka storage in one file.\n")
    cells = [{"cell_type": "markdown", "source": "# Analysis\n\nIntro."},
             {"cell_type": "code", "source": ""},
             {"cell_type": "code", "source": "wombat = load()\n" + "x = 1\n" * 40}]
    write(en, "nb/analysis.ipynb", json.dumps({"cells": cells, "metadata": {}, "nbformat": 4}))
    (en / "papers").mkdir()
    (en / "papers" / "p.pdf").write_bytes(make_pdf(["Introduction text.", "The numbat result is here."]))
    config = Config(lanes=LEXICAL, rank_window_step_docs=1, lane_depth_blocks_per_result=1, model="none")
    engine = Engine(tmp_path / "idx", config=config)
    engine.index([en, ja], project="site")
    yield engine, tmp_path
    engine.close()


def search(engine: Engine, query: str, **filters: object) -> list[str]:
    resp = engine.search(SearchRequest(query=query, limit=10, filters=SearchFilters(**filters)))
    return [f"{h.root_label}/{h.path}" for h in resp.hits]


def test_filters_apply_before_each_lanes_top_k(site: tuple[Engine, Path]) -> None:
    engine, _ = site
    # Unfiltered, each lane's single block is en/publish.md (quokka three times).
    assert search(engine, "quokka")[0] == "en/publish.md"
    assert search(engine, "quokka", paths=["ja/**"]) == ["ja/publish.md"]
    assert search(engine, "quokka", paths=["guide/*.md"]) == ["en/guide/tags.md"]
    assert search(engine, "quokka", tags=["deploy"]) == ["en/guide/tags.md"]  # case-insensitive
    assert "en/drafts/wip.md" not in search(engine, "quokka draft", paths=["!drafts/"])
    assert search(engine, "quokka draft", paths=["*.md", "!drafts/"])[0] != "en/drafts/wip.md"
    assert search(engine, "quokka storage", kinds=["decision"], recorded_after_ns=1_600_000_000 * 10**9) == [
        "en/doc/adr/0002-use-sqlite.md"]
    until_2020 = 1_577_836_800 * 10**9
    assert search(engine, "quokka storage", recorded_before_ns=until_2020) == ["en/doc/adr/0001-use-files.md"]
    assert search(engine, "quokka", roles=["report"], paths=["doc/**"])[0].startswith("en/doc/adr/")
    with pytest.raises(QueryError, match="path glob 1 is empty"):
        search(engine, "quokka", paths=["  "])
    # filters that leave no document say so, not that no word of the query occurs (a new user's
    # date filter excluded every page and was told the words were missing)
    after_all = SearchRequest(query="quokka", filters=SearchFilters(recorded_after_ns=4_000_000_000 * 10**9))
    resp = engine.search(after_all)
    assert (resp.hits, resp.notice, resp.word_notice) == ([], "no document matches the filters", None)


def test_decision_records_order_and_status(site: tuple[Engine, Path]) -> None:
    engine, _ = site
    resp = engine.search(SearchRequest(query="quokka storage files", limit=5, lanes=[*LEXICAL, "graph"],
                                       filters=SearchFilters(kinds=["decision"])))
    order = [h.path for h in resp.hits]
    # 0001 matches "files" best, but 0002 supersedes it: the replacement ranks just above it.
    assert order == ["doc/adr/0002-use-sqlite.md", "doc/adr/0001-use-files.md"]
    old = resp.hits[1]
    assert old.superseded_by == [resp.hits[0].doc_id] and old.kind == "decision" and old.role == "report"
    assert old.recorded_ns == 1_551_398_400 * 10**9  # Date: 2019-03-01, not the file's mtime
    doc = engine.get("doc/adr/0001-use-files.md")
    assert (doc.status, doc.recorded_at) == ("superseded", "2019-03-01T00:00:00Z")
    # 0002 was moved above 0001: it carries 0001's score, and its explanation says why (a new user saw
    # it at #1 with score 0.0000 and every lane +0.000).
    explained = engine.search(SearchRequest(query="quokka storage files", limit=5, lanes=[*LEXICAL, "graph"],
                                            explain=True, filters=SearchFilters(kinds=["decision"])))
    new, old = explained.hits
    assert [h.path for h in explained.hits] == order
    assert (new.score, new.moved_above, old.moved_above) == (old.score, [old.doc_id], [])
    assert new.sources == [h.sources for h in resp.hits][0] and "supersedes" not in new.sources
    moved = [c for c in new.explain or [] if c.lane == "supersedes"]
    assert [(c.rank, c.weight, c.lane_score, c.moved_above) for c in moved] == [(1, 1.0, old.score, old.doc_id)]
    assert sum(c.contribution for c in new.explain or []) == pytest.approx(new.score, abs=1e-12)
    assert moved[0].contribution == pytest.approx(old.score - sum(
        c.contribution for c in new.explain or [] if c.lane != "supersedes"), abs=1e-12)
    assert not any(c.lane == "supersedes" for c in old.explain or [])
    # MCP's results say it too.
    from sleuth.memory.arguments import parse_memory_request
    from sleuth.memory.search import MemorySearch

    memory = MemorySearch(engine).search(parse_memory_request(
        {"query": "quokka storage files", "project_id": "site", "filters": {"kinds": ["decision"]}}))
    results = [(r["path"], r["score"], r.get("moved_above"), r.get("superseded_by")) for r in memory["results"]]
    assert results == [("doc/adr/0002-use-sqlite.md", round(old.score, 6), [old.doc_id], None),
                       ("doc/adr/0001-use-files.md", round(old.score, 6), None, [new.doc_id])]


def test_pages_neither_repeat_nor_skip(tmp_path: Path) -> None:
    root = tmp_path / "many"
    for i in range(60):
        words = " ".join(["alpha"] * (1 + i % 7) + ["beta"] * (1 + (i * 3) % 5) + [f"filler{j}" for j in range(i % 11)])
        write(root, f"d{i:02d}.md", f"# Doc {i}\n\n{words}\n")
    config = Config(lanes=("bm25", "tfidf"), rank_window_step_docs=1, lane_depth_blocks_per_result=1, model="none")
    with Engine(tmp_path / "idx", config=config) as engine:
        engine.index([root], project="many")

        def page(offset: int, limit: int) -> list[str]:
            resp = engine.search(SearchRequest(query="alpha beta", offset=offset, limit=limit, rank_window=40))
            assert [h.rank for h in resp.hits] == list(range(offset + 1, offset + len(resp.hits) + 1))
            return [h.doc_id for h in resp.hits]

        big = page(0, 40)
        assert len(big) == 40
        assert page(0, 10) + page(10, 10) + page(20, 10) + page(30, 10) == big
        assert page(5, 7) == big[5:12]
        with pytest.raises(QueryError, match="larger than rank_window"):
            page(35, 10)


def test_get_takes_a_path_a_root_qualified_path_or_a_block_id(site: tuple[Engine, Path]) -> None:
    engine, tmp = site
    with pytest.raises(QueryError, match="names 2 documents: en/publish.md .*, ja/publish.md"):
        engine.get("publish.md")
    ja = engine.get("ja/publish.md")
    assert (ja.root_label, ja.path, ja.kind, ja.format) == ("ja", "publish.md", "document", "markdown")
    assert engine.get(str(tmp / "site" / "ja" / "publish.md")).doc_id == ja.doc_id
    assert engine.get("guide/tags.md").title == "Tagged"
    block = ja.blocks[0]["block_id"]
    assert engine.resolve(str(block)) == (ja.doc_id, block)
    assert engine.get(str(block)).doc_id == ja.doc_id
    with pytest.raises(DocumentNotFound):
        engine.get("nowhere.md")
    with pytest.raises(DocumentNotFound):
        engine.get("ja/publish.md", projects=["other"])


def test_locations_are_cells_and_pages(site: tuple[Engine, Path]) -> None:
    engine, _ = site
    nb = engine.search(SearchRequest(query="wombat", limit=1)).hits[0]
    assert (nb.path, nb.kind, nb.format, nb.location) == ("nb/analysis.ipynb", "notebook", "notebook", "cell 3")
    pdf = engine.search(SearchRequest(query="numbat", limit=1)).hits[0]
    assert (pdf.path, pdf.kind, pdf.format, pdf.location) == ("papers/p.pdf", "paper", "pdf", "page 2")
    md = engine.search(SearchRequest(query="quokka", limit=1)).hits[0]
    assert md.location == "lines 1-3"


def test_a_notebook_in_a_notes_folder_is_a_notebook(tmp_path: Path) -> None:
    """A new user's trial: ``mine/notes/churn.ipynb`` got kind ``note`` (its folder's), so
    ``sleuth search churn --kind notebook`` found nothing while the same file under ``analysis/``
    was a ``notebook``. The notes folder names prose: a notebook or config there keeps its format's
    kind (and role); a markdown note stays a ``note``, a PDF a ``paper``."""
    from click.testing import CliRunner

    from sleuth.cli import cli
    from sleuth.memory.arguments import parse_memory_request
    from sleuth.memory.search import MemorySearch

    root = tmp_path / "kb"
    cells = [{"cell_type": "markdown", "source": "# Churn analysis\n\nWe model customer churn."},
             {"cell_type": "code", "source": "model = fit(churn)\n"}]
    notebook = json.dumps({"cells": cells, "metadata": {}, "nbformat": 4})
    write(root, "mine/notes/churn.ipynb", notebook)
    write(root, "mine/analysis/churn2.ipynb", notebook)
    write(root, "mine/notes/meeting.md", "# Meeting\n\nChurn went up in March.\n")
    write(root, "mine/notes/settings.yaml", "churn_threshold: 0.3\n")
    (root / "mine" / "notes" / "review.pdf").write_bytes(make_pdf(["Churn review.", "Churn by month."]))
    config = Config(lanes=LEXICAL, model="none")
    with Engine(tmp_path / "idx", config=config) as engine:
        engine.index([root], project="kb")

        def kinds(**filters: object) -> list[tuple[str, str, str, str]]:
            resp = engine.search(SearchRequest(query="churn", limit=10, filters=SearchFilters(**filters)))
            return sorted((h.path, h.kind, h.format, h.role) for h in resp.hits)

        assert kinds() == [("mine/analysis/churn2.ipynb", "notebook", "notebook", "other"),
                           ("mine/notes/churn.ipynb", "notebook", "notebook", "other"),
                           ("mine/notes/meeting.md", "note", "markdown", "other"),
                           ("mine/notes/review.pdf", "paper", "pdf", "paper"),
                           ("mine/notes/settings.yaml", "config", "config", "config")]
        assert [p for p, *_ in kinds(kinds=["notebook"])] == ["mine/analysis/churn2.ipynb", "mine/notes/churn.ipynb"]
        assert [p for p, *_ in kinds(kinds=["note"])] == ["mine/notes/meeting.md"]
        assert [p for p, *_ in kinds(kinds=["paper"])] == ["mine/notes/review.pdf"]
        # MCP's filters.kinds match the same kinds.
        memory = MemorySearch(engine).search(parse_memory_request(
            {"query": "churn", "project_id": "kb", "filters": {"kinds": ["notebook"]}}))
        assert sorted((r["path"], r["kind"]) for r in memory["results"]) == [
            ("mine/analysis/churn2.ipynb", "notebook"), ("mine/notes/churn.ipynb", "notebook")]
    out = CliRunner().invoke(cli, ["search", "churn", "--kind", "notebook", "--index", str(tmp_path / "idx"),
                                   "--format", "json"])
    assert out.exit_code == 0, out.output
    assert sorted((h["path"], h["kind"], h["format"]) for h in json.loads(out.output)["hits"]) == [
        ("mine/analysis/churn2.ipynb", "notebook", "notebook"), ("mine/notes/churn.ipynb", "notebook", "notebook")]


def test_a_file_given_as_a_root_is_shown_under_its_folder_name(tmp_path: Path) -> None:
    """``sleuth index docs README.md``: the README's hit reads ``proj/README.md`` (its folder's name,
    as its document ids use), not ``README.md/README.md``; path globs and ``get`` take that name."""
    proj = tmp_path / "proj"
    write(proj, "docs/guide.md", "# Guide\n\nHow to deploy the frobnicator.\n")
    write(proj, "README.md", "# Readme\n\nThe frobnicator project.\n")
    with Engine(tmp_path / "idx", config=Config(lanes=LEXICAL, model="none")) as engine:
        engine.index([proj / "docs", proj / "README.md"], project="p")
        assert sorted(search(engine, "frobnicator")) == ["docs/guide.md", "proj/README.md"]
        assert search(engine, "frobnicator", paths=["proj/**"]) == ["proj/README.md"]
        assert engine.get("proj/README.md").text.startswith("# Readme")
        readme = str((proj / "README.md").resolve())
        assert engine.get(readme).text.startswith("# Readme")  # by its absolute path: the root itself
        assert engine.resolve(readme)[0] == engine.resolve("proj/README.md")[0]
        with pytest.raises(DocumentNotFound):
            engine.resolve(str((proj / "docs").resolve()))  # a folder root is no document
    from sleuth.pathglob import root_label

    (proj / "README.md").unlink()  # gone: its stale hit keeps the name it had (a new process)
    root_label.cache_clear()
    with Engine(tmp_path / "idx", config=Config(lanes=LEXICAL, model="none")) as engine:
        assert sorted(search(engine, "frobnicator")) == ["docs/guide.md", "proj/README.md"]
