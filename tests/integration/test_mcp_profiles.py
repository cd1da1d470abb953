"""Profiles side by side on a real index: the default, and every family at once."""

from __future__ import annotations

from pathlib import Path

from tests.guides.fixture import BASE_URL, write_content
from tests.integration.conftest import run_cli
from tests.integration.mcp_session import envelope_of, session, text_of

PROJECT_TOOLS = ["search_project", "get_notebook", "get_projects"]
MEMORY_TOOLS = ["project_memory_search", "query_status", "query_cancel", "project_memory_read",
                "project_memory_record", "project_memory_forget", "project_memory_doctor"]


def test_default_profiles_are_memory_and_project(hugo_index: Path, tmp_path: Path) -> None:
    out = session(["--index", str(hugo_index)], [], cwd=tmp_path)
    assert list(out["tools"]) == [*MEMORY_TOOLS, *PROJECT_TOOLS]
    assert "project_memory_search" in out["instructions"] and "search_guides" not in out["instructions"]
    memory_only = session(["--index", str(hugo_index), "--tools", "memory"], [], cwd=tmp_path)
    assert list(memory_only["tools"]) == MEMORY_TOOLS


def test_every_profile_at_once(hugo_index: Path, tmp_path: Path) -> None:
    guides = tmp_path / "guides.json"
    run_cli("guides", "build", str(write_content(tmp_path / "blog")), "--base-url", BASE_URL, "-o", str(guides))
    out = session(
        ["--index", str(hugo_index), "--tools", "text,guides,project", "--guides", str(guides), "--project", "hugo"],
        [("search_project", {"project_id": "hugo", "query": "os.Getenv", "limit": 1}),
         ("search_guides", {"query": "vendor", "limit": 1}),
         ("search_fuzzy", {"query": "Getenv", "candidates": ["os.Getenv", "getenv", "Setenv"]})],
        cwd=tmp_path,
    )
    assert list(out["tools"]) == [*PROJECT_TOOLS, "search_guides", "search_documents", "search_index_query",
                                  "search_fuzzy"]
    project, guide, fuzzy = out["results"]
    assert envelope_of_project(project)["items"][0]["item"]["path"] == "functions/os/Getenv.md"
    assert text_of(guide).splitlines()[:2] == [
        '1 guide matched "vendor".',
        "1. Software Vendor Management for Non-Technical Executives: How to Stop Bleeding Budget on Development "
        "Partners"]
    assert envelope_of(fuzzy) == {"status": "ok", "query": "Getenv", "best_match": "getenv", "matches": [
        {"candidate": "getenv", "score": 1.0}, {"candidate": "Setenv", "score": 0.8333},
        {"candidate": "os.Getenv", "score": 0.6667}]}


def envelope_of_project(result: object) -> dict:
    import json

    assert not result.is_error  # type: ignore[attr-defined]
    return json.loads(text_of(result))
