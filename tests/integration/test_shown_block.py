"""The passage a hit shows holds the query word (a new user's trial: `sleuth search catalog` over
an ADR titled "Use PostgreSQL for the catalog" showed its `## Status` block, which matched only
through its title and heading path, not the `## Context` block whose text holds the word). Scores
and order stay as they were; every surface shows the same block: the Python API, the real CLI's
JSON and text, and a real MCP session (project_memory_search, search_project)."""

from __future__ import annotations

import json
from pathlib import Path

from sleuth.engine import Engine
from sleuth.types import SearchRequest
from tests.integration.conftest import run_cli
from tests.integration.mcp_session import session

ADR = """# 1. Use PostgreSQL for the catalog

Date: 2024-03-01

## Status

Accepted

## Context

The catalog of documents needs concurrent writers from several hosts, so SQLite alone is not enough.

## Decision

We will use PostgreSQL.
"""
OTHER = "# 2. Use Redis for caching\n\nDate: 2024-03-02\n\n## Status\n\nAccepted\n\n## Context\n\nResponses are slow.\n"
CONTEXT = "The catalog of documents needs concurrent writers from several hosts, so SQLite alone is not enough."


def _index(tmp_path: Path) -> Path:
    root = tmp_path / "notes" / "adr"
    root.mkdir(parents=True)
    (root / "0001-use-postgresql-for-the-catalog.md").write_text(ADR, encoding="utf-8")
    (root / "0002-use-redis.md").write_text(OTHER, encoding="utf-8")
    index = tmp_path / "idx"
    run_cli("index", str(tmp_path / "notes"), "--project", "p", "--index", str(index))
    return index


def test_the_shown_block_holds_the_query_word_on_every_surface(tmp_path: Path) -> None:
    index = _index(tmp_path)
    with Engine(index) as engine:
        plain = engine.search(SearchRequest(query="catalog", lanes=["bm25"], snippets=False)).hits
        (hit,) = engine.search(SearchRequest(query="catalog", lanes=["bm25"])).hits
    # The block that scored highest is the Status block (title and heading path only) ...
    (unshown,) = plain
    assert (unshown.heading_path, unshown.snippet) == (["1. Use PostgreSQL for the catalog", "Status"], "")
    # ... the hit shows the Context block, whose own text holds the word, at the same score.
    assert hit.score == unshown.score and hit.doc_id == unshown.doc_id
    assert hit.heading_path == ["1. Use PostgreSQL for the catalog", "Context"]
    assert hit.snippet == f"## Context\n\n{CONTEXT}"
    assert [hit.snippet[s:e] for s, e in hit.highlights] == ["catalog"]
    assert (hit.lines, hit.location) == ((9, 11), "lines 9-11")
    assert hit.best_block_id == hit.block_ids[0] != unshown.best_block_id
    assert sorted(hit.block_ids) == sorted(unshown.block_ids)
    assert hit.passages[0].text == hit.snippet

    (cli,) = json.loads(run_cli("search", "catalog", "--index", str(index), "--lanes", "bm25",
                                "--format", "json").stdout)["hits"]
    assert (cli["best_block_id"], cli["snippet"], cli["heading_path"]) == (
        hit.best_block_id, hit.snippet, hit.heading_path)
    text = run_cli("search", "catalog", "--index", str(index), "--lanes", "bm25").stdout
    assert "Context" in text and CONTEXT in text and f"block {hit.best_block_id}" in text

    out = session(["--index", str(index), "--no-broker"], [
        ("project_memory_search", {"query": "catalog", "project_id": "p", "filters": {"retrieval_lanes": ["bm25"]}}),
        ("search_project", {"project_id": "p", "query": "catalog", "limit": 1})])
    memory, project = (r.structured_content for r in out["results"])
    (top,) = memory["results"]
    first = top["summary"][0]
    assert (first["heading_path"], first["text"]) == (hit.heading_path, hit.snippet)
    assert ADR[first["source_span"]["start"]:first["source_span"]["end"]] == hit.snippet
    (item,) = project["items"]
    assert item["block_ids"][0] == hit.best_block_id
