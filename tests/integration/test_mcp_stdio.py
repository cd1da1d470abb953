"""A real MCP client session over stdio against `sleuth serve` (seed 000's contract)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from sleuth.mcp.project_tools import BLOCK_IDS_MAX, SEARCH_PROJECT_SCHEMA
from tests.integration.mcp_session import serve_env

TIMESTAMP_RE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$")


def session_calls(index: Path, calls: list[tuple[str, dict[str, Any]]], extra: list[str] = ()) -> dict[str, Any]:
    """Start `sleuth serve`, list tools, make ``calls`` in order; return what came back."""

    async def main() -> dict[str, Any]:
        # The test session's environment (its private broker folder, SLEUTH_BROKER=0): without env,
        # the SDK starts the server with a minimal environment of its own.
        params = StdioServerParameters(
            command=sys.executable, args=["-m", "sleuth.cli", "serve", "--index", str(index), *extra],
            env=serve_env(),
        )
        async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
            await session.initialize()
            tools = {t.name: t for t in (await session.list_tools()).tools}
            results = [await session.call_tool(name, args) for name, args in calls]
            return {"tools": tools, "results": results}

    return anyio.run(main)


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def error_text(result: Any) -> str:
    assert result.is_error
    return result.content[0].text


def test_tools_advertise_the_seed_contract(hugo_index: Path) -> None:
    out = session_calls(hugo_index, [])
    assert {"search_project", "get_notebook", "get_projects"} <= set(out["tools"])
    tool = out["tools"]["search_project"]
    assert tool.input_schema == SEARCH_PROJECT_SCHEMA
    assert tool.input_schema["required"] == ["project_id", "query"]
    assert tool.input_schema["properties"]["limit"] == {
        "type": "number", "integer": True, "minimum": 1, "maximum": 50,
        "description": "Maximum number of results to return. Defaults to 20.",
    }
    for t in (out["tools"][name] for name in ("search_project", "get_notebook", "get_projects")):
        assert (t.annotations.read_only_hint, t.annotations.open_world_hint, t.annotations.destructive_hint) == (
            True, False, False)


def test_search_project_envelope_and_items(hugo_index: Path) -> None:
    out = session_calls(hugo_index, [
        ("get_projects", {}),
        ("search_project", {"project_id": "hugo", "query": "MCP OAuth, Cloud Run! environment variable"}),
        ("search_project", {"project_id": "hugo", "query": "render hook", "limit": "5"}),
        ("search_project", {"project_id": "hugo", "query": "render hook", "limit": 2.0}),
        ("search_project", {"project_id": "hugo", "query": "zzyzx qwertyuiop"}),
    ])
    projects, env, five, two, empty = (payload(r) for r in out["results"])
    assert projects["success"] is True and [p["project_id"] for p in projects["items"]] == ["hugo"]
    assert set(env) == {"success", "result_count", "items", "timestamp"}
    assert env["success"] is True and TIMESTAMP_RE.match(env["timestamp"])
    assert env["result_count"] == len(env["items"]) <= 20
    first = env["items"][0]
    # The seed's fields, and block_count beside the bounded block_ids (issue 17).
    assert set(first) == {"markdown_item_id", "block_ids", "block_count", "score", "rank", "sources", "item"}
    assert len(first["block_ids"]) <= BLOCK_IDS_MAX and first["block_count"] >= len(first["block_ids"])
    assert first["rank"] == 1 and first["item"]["path"] == "functions/os/Getenv.md"
    assert first["markdown_item_id"] == first["item"]["item_id"]
    assert set(first["sources"]) <= {"bm25", "tfidf", "index", "rm3", "vector"}
    assert [i["score"] for i in env["items"]] == sorted((i["score"] for i in env["items"]), reverse=True)
    assert five["result_count"] == 5 and two["result_count"] == 2
    assert five["items"][0]["item"]["path"] == "render-hooks/_index.md"
    assert empty == {"success": True, "result_count": 0, "items": [], "timestamp": empty["timestamp"]}


def test_get_notebook_returns_the_item(hugo_index: Path, hugo_sample: Path) -> None:
    first = session_calls(hugo_index, [("search_project", {"project_id": "hugo", "query": "os.Getenv"})])
    item_id = payload(first["results"][0])["items"][0]["markdown_item_id"]
    out = session_calls(hugo_index, [
        ("get_notebook", {"project_id": "hugo", "item_id": item_id}),
        ("get_notebook", {"project_id": "hugo", "item_id": "0000000000000000"}),
    ])
    got = payload(out["results"][0])
    assert got["item"]["item_id"] == item_id
    assert got["item"]["text"] == (hugo_sample / "functions/os/Getenv.md").read_text(encoding="utf-8")
    assert error_text(out["results"][1]).endswith(": item not found or access denied: 0000000000000000")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"project_id": "hugo", "query": ""}, "Query is required"),
        ({"project_id": "hugo", "query": "   "}, "Query is required"),
        ({"project_id": "hugo"}, "Query is required"),
        ({"query": "hooks"}, "project_id is required"),
        ({"project_id": "other", "query": "hooks"}, "project not found or access denied: other"),
        ({"project_id": "hugo", "query": "hooks", "limit": 0}, "limit must be an integer from 1 to 50; got 0"),
        ({"project_id": "hugo", "query": "hooks", "limit": 51}, "limit must be an integer from 1 to 50; got 51"),
        ({"project_id": "hugo", "query": "hooks", "limit": "five"},
         "limit must be an integer from 1 to 50; got 'five'"),
        ({"project_id": "hugo", "query": "hooks", "limit": 2.5}, "limit must be an integer from 1 to 50; got 2.5"),
        ({"project_id": "hugo", "query": "x" * 10_000}, "query is 10000 characters long; the limit is 4000"),
    ],
)
def test_bad_input_gets_a_readable_tool_error(hugo_index: Path, args: dict[str, Any], message: str) -> None:
    out = session_calls(hugo_index, [("search_project", args)])
    assert message in error_text(out["results"][0])


def test_allowed_projects_restrict_access(hugo_index: Path) -> None:
    calls = [("get_projects", {}), ("search_project", {"project_id": "hugo", "query": "hooks"})]
    out = session_calls(hugo_index, calls, extra=["--project", "hugo"])
    assert payload(out["results"][0])["result_count"] == 1
    assert payload(out["results"][1])["result_count"] > 0


def test_query_without_searchable_terms_is_explained(hugo_index: Path) -> None:
    out = session_calls(hugo_index, [
        ("search_project", {"project_id": "hugo", "query": "?!) (*:"}),
        ("search_project", {"project_id": "hugo", "query": "the and of"}),
    ])
    for result, query in zip(out["results"], ["?!) (*:", "the and of"], strict=True):
        assert f"Query has no searchable terms: {query!r} holds only stop words" in error_text(result)


@pytest.mark.parametrize(
    ("tool", "args", "message"),
    [
        ("search_project", {"project_id": "hugo", "query": "hooks", "extra": 1},
         "unknown argument(s) extra; search_project takes limit, project_id, query"),
        ("get_projects", {"bogus": 1}, "unknown argument(s) bogus; get_projects takes no arguments"),
        ("search_project", {"project_id": 5, "query": "hooks"}, "project_id must be a string, got int"),
        ("search_project", {"project_id": "hugo", "query": ["hooks"]}, "query must be a string, got list"),
        ("get_notebook", {"project_id": "hugo", "item_id": 42}, "item_id must be a string, got int"),
    ],
)
def test_schema_violations_are_named(hugo_index: Path, tool: str, args: dict[str, Any], message: str) -> None:
    out = session_calls(hugo_index, [(tool, args)])
    assert message in error_text(out["results"][0])
