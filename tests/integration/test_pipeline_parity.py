"""One pipeline behind every surface: the CLI's `sleuth search --format json` and the MCP tool
`project_memory_search` (real processes, a real stdio session) return the same documents in the same
order for the same query, lanes and project, supersession order included."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.integration.conftest import run_cli
from tests.integration.mcp_session import session
from tests.integration.test_memory_mcp import FILES, PDF_PAGES
from tests.pdf_samples import make_pdf

#: (query, CLI lanes, project_memory_search retrieval_lanes): the CLI names lanes, the tool their
#: seed-004 families (bm25 = the lexical lanes bm25, tfidf and index).
ALL_CLI = "bm25,tfidf,index,exact,vector,graph"
ALL_MCP = ["exact", "bm25", "vector", "graph"]
CASES = [
    ("which database stores the catalog", "bm25,tfidf,index,vector", ["bm25", "vector"]),
    ("where is open_catalog defined", ALL_CLI, ALL_MCP),
    ('"write-ahead log" catalog', "bm25,tfidf,index,exact", ["exact", "bm25"]),
    ("storage decision catalog json files", ALL_CLI, ALL_MCP),
    ("rank fusion recall", "vector", ["vector"]),
]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("parity")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "papers").mkdir()
    (root / "papers" / "ram.pdf").write_bytes(make_pdf(PDF_PAGES, title="Retrieval Augmented Memory"))
    index = root.parent / f"{root.name}-idx"
    run_cli("index", str(root), "--project", "lab", "--index", str(index))
    return index


def cli_order(index: Path, query: str, lanes: str, limit: int) -> list[str]:
    out = run_cli("search", query, "--index", str(index), "--project", "lab", "--lanes", lanes,
                  "--limit", str(limit), "--format", "json").stdout
    return [h["doc_id"] for h in json.loads(out)["hits"]]


def test_cli_and_project_memory_search_return_the_same_ranking(lab: Path) -> None:
    limit = 8
    calls = [("project_memory_search", {"query": q, "project_id": "lab", "limit": limit,
                                        "filters": {"retrieval_lanes": families},
                                        "response_budget_bytes": 1_000_000}) for q, _, families in CASES]
    results = session(["--index", str(lab), "--no-broker"], calls)["results"]
    for (query, lanes, _), result in zip(CASES, results, strict=True):
        payload: dict[str, Any] = result.structured_content
        assert not result.is_error, payload
        assert payload["meta"]["omitted_results"] == 0
        # A graph entity is a record_id "entity:<name>"; its body_handle holds the node id the CLI shows.
        mcp = [r["body_handle"].removeprefix("entity:") if r["kind"] == "entity" else r["record_id"]
               for r in payload["results"]]
        assert mcp, query
        assert cli_order(lab, query, lanes, limit) == mcp, query


def test_a_superseded_decision_ranks_below_its_successor_on_the_cli(lab: Path) -> None:
    out = json.loads(run_cli("search", "catalog JSON files decision", "--index", str(lab), "--project", "lab",
                             "--format", "json").stdout)
    paths = [h["path"] for h in out["hits"]]
    old, new = "notes/decisions/adr-000-json-files.md", "notes/decisions/adr-001-sqlite.md"
    assert old in paths and new in paths and paths.index(new) < paths.index(old)
    hit = next(h for h in out["hits"] if h["path"] == old)
    assert hit["superseded_by"] == [next(h for h in out["hits"] if h["path"] == new)["doc_id"]]
