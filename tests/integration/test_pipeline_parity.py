"""One pipeline behind every surface: the CLI's `sleuth search --format json` and the MCP tool
`project_memory_search` (real processes, a real stdio session) return the same documents in the same
order for the same query, lanes and project, supersession order included; and the CLI, the Python
API (`Engine.search`), `search_project` and `project_memory_search` rank one query alike at the same
limit, which is also the head of what `sleuth eval` ranks (limit 100): one rank window for all."""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import pytest

from sleuth.config import Config
from sleuth.engine import Engine
from sleuth.types import SearchRequest
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


#: Words of the harbor notes: every note holds some, so each lane's list of a query runs long.
HARBOR_WORDS = ("harbor crane cargo tide anchor ship dock rope sail storm lantern pier ferry hull mast "
                "keel buoy wharf tugboat freight").split()
HARBOR_QUERIES = ["harbor crane at the pier", "storm lantern ferry", "cargo ship anchor", "rope keel buoy wharf"]


@pytest.fixture(scope="module")
def harbor(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """300 seeded notes (a title of 2 words, a body of 8-80), indexed by the CLI with the default lanes."""
    root = tmp_path_factory.mktemp("harbor")
    rng = random.Random(7)
    for i in range(300):
        title = " ".join(rng.sample(HARBOR_WORDS, 2))
        body = " ".join(rng.choice(HARBOR_WORDS) for _ in range(rng.randint(8, 80)))
        (root / f"n{i:03d}.md").write_text(f"# {title.title()}\n\n{body}\n", encoding="utf-8")
    index = root.parent / f"{root.name}-idx"
    run_cli("index", str(root), "--project", "harbor", "--index", str(index))
    return index


def cli_hits(index: Path, query: str, limit: int, lanes: str | None = None) -> list[str]:
    out = run_cli("search", query, "--index", str(index), "--project", "harbor", "--limit", str(limit),
                  "--format", "json", *(("--lanes", lanes) if lanes else ()), env={"SLEUTH_BROKER": "0"}).stdout
    return [h["doc_id"] for h in json.loads(out)["hits"]]


def test_cli_api_and_mcp_rank_one_query_alike_at_the_same_limit(harbor: Path) -> None:
    lexical_vector = "bm25,index,vector"  # project_memory_search's families bm25 and vector (its default lanes)
    calls = [(tool, args) for q in HARBOR_QUERIES for limit in (10, 50) for tool, args in (
        ("search_project", {"project_id": "harbor", "query": q, "limit": limit}),
        ("project_memory_search", {"query": q, "project_id": "harbor", "limit": limit,
                                   "filters": {"retrieval_lanes": ["bm25", "vector"]},
                                   "response_budget_bytes": 1_000_000}))]
    results = iter(session(["--index", str(harbor), "--no-broker"], calls)["results"])
    lane_sets: dict[str | None, list[str] | None] = {None: None, lexical_vector: lexical_vector.split(",")}
    with Engine.open(harbor) as engine:
        api = {(q, limit, key): [h.doc_id for h in engine.search(SearchRequest(
                   query=q, projects=["harbor"], limit=limit, lanes=lanes)).hits]
               for q in HARBOR_QUERIES for limit in (10, 50, 100) for key, lanes in lane_sets.items()}
    with Engine.open(harbor, Config(lane_depth_blocks_per_result=1)) as shallow:
        # The case is met: lanes half as deep (the 100 blocks MCP's limit 10 once got, where the CLI
        # got 500) rank these queries otherwise, so surfaces of different depths would disagree.
        assert any([h.doc_id for h in shallow.search(SearchRequest(query=q, projects=["harbor"], limit=10)).hits]
                   != api[(q, 10, None)] for q in HARBOR_QUERIES)
    for q in HARBOR_QUERIES:
        for limit in (10, 50):
            project = next(results).structured_content
            memory = next(results).structured_content
            assert memory["meta"]["omitted_results"] == 0
            default, lexical = api[(q, limit, None)], api[(q, limit, lexical_vector)]
            assert len(default) == limit and len(lexical) == limit
            assert cli_hits(harbor, q, limit) == default, (q, limit)
            assert [i["markdown_item_id"] for i in project["items"]] == default, (q, limit)
            assert cli_hits(harbor, q, limit, lexical_vector) == lexical, (q, limit)
            assert [r["record_id"] for r in memory["results"]] == lexical, (q, limit)
            # what `sleuth eval` ranks (limit 100) begins with what a client at this limit gets
            assert api[(q, 100, None)][:limit] == default and api[(q, 100, lexical_vector)][:limit] == lexical
