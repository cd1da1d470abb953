"""Recording a memory leaves the paths of the project's files as they were (a new user's trial:
after one project_memory_record, `docs/a.md` was shown as `proj/docs/a.md`, since the memory
folder counted as the project's second root). The real CLI (`sleuth index`, `sleuth search`,
`sleuth get`) and a real MCP stdio session (project_memory_search, project_memory_record)."""

from __future__ import annotations

import json
import os
import re
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from sleuth.engine import Engine
from sleuth.ui.api import facets_json
from tests.integration.conftest import run_cli

FILES = {"docs/a.md": "# Lighthouse keepers\n\nThe keepers trimmed the lighthouse lamp at dusk.\n",
         "b.md": "# Lamps\n\nA lighthouse lamp burns oil.\n"}


def _folder(root: Path, files: dict[str, str]) -> Path:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    return root


def _cli_paths(index: Path, query: str) -> list[str]:
    """The paths `sleuth search` shows (text output), in rank order."""
    out = run_cli("search", query, "--index", str(index), "--lanes", "bm25").stdout
    return re.findall(r"^ *\d+\. (\S+)  \[", out, flags=re.MULTILINE)


def _mcp(index: Path, calls: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    """The structured answers of ``calls``, made in order in one real `sleuth serve` session."""

    async def main() -> list[dict[str, Any]]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "sleuth.cli", "serve", "--index",
                                                                     str(index)], env=dict(os.environ))
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            answers = []
            for name, args in calls:
                result = await s.call_tool(name, args)
                assert not result.is_error, result.content[0].text
                assert json.loads(result.content[0].text) == result.structured_content
                answers.append(result.structured_content)
            return answers

    return anyio.run(main)


def _search(query: str, project: str) -> tuple[str, dict[str, Any]]:
    return ("project_memory_search", {"query": query, "project_id": project,
                                      "filters": {"retrieval_lanes": ["bm25"]}})


def test_recording_a_memory_keeps_the_paths_of_a_one_folder_project(tmp_path: Path) -> None:
    root = _folder(tmp_path / "proj", FILES)
    index = tmp_path / "idx"
    run_cli("index", str(root), "--project", "p", "--index", str(index))
    assert _cli_paths(index, "lighthouse") == ["docs/a.md", "b.md"]

    before, record, after = _mcp(index, [
        _search("lighthouse lamp", "p"),
        ("project_memory_record", {"project_id": "p", "kind": "note", "title": "Lighthouse note",
                                   "body": "The lighthouse lamp was replaced in 1921."}),
        _search("lighthouse lamp", "p")])
    receipt = record["record"]
    note = receipt["path"]
    assert re.fullmatch(r"notes/\d{4}-\d\d-\d\d-lighthouse-note\.md", note)
    assert Path(receipt["file"]) == index.resolve() / "memory" / "p" / note
    assert sorted((r["path"], "root" in r) for r in before["results"]) == [("b.md", False), ("docs/a.md", False)]
    assert sorted((r["path"], "root" in r) for r in after["results"]) == [
        ("b.md", False), ("docs/a.md", False), (note, False)]

    # The memory folder is a root of the project, yet the CLI shows every path as before, and the
    # record's path as its receipt gives it; `sleuth get` takes the paths shown.
    (project,) = json.loads(run_cli("projects", "--index", str(index), "--format", "json").stdout)["projects"]
    assert project["roots"] == [str(root.resolve()), str(index.resolve() / "memory" / "p")]
    assert sorted(_cli_paths(index, "lighthouse")) == sorted(["b.md", "docs/a.md", note])
    assert run_cli("get", "docs/a.md", "--index", str(index)).stdout.splitlines()[1].startswith("(p: docs/a.md, ")
    assert run_cli("get", note, "--index", str(index)).stdout.splitlines()[1].startswith(f"(p: {note}, ")
    with Engine(index) as engine:
        assert engine.multi_root_projects() == set()
        assert facets_json(engine)["qualified"] == []


def test_a_project_with_two_folders_still_names_their_roots_and_the_memory_folder(tmp_path: Path) -> None:
    en = _folder(tmp_path / "site" / "en", {"publish.md": "# Publish\n\nPublish the lighthouse pages.\n"})
    ja = _folder(tmp_path / "site" / "ja", {"publish.md": "# Publish\n\nPublish the lighthouse pages in Japanese.\n"})
    index = tmp_path / "idx"
    run_cli("index", str(en), str(ja), "--project", "site", "--index", str(index))
    (record,) = _mcp(index, [("project_memory_record", {
        "project_id": "site", "kind": "note", "title": "Lighthouse pages", "body": "Publish the lighthouse pages."})])
    note = record["record"]["path"]
    assert sorted(_cli_paths(index, "publish lighthouse")) == sorted(["en/publish.md", "ja/publish.md",
                                                                       f"site/{note}"])
    with Engine(index) as engine:
        assert engine.multi_root_projects() == {"site"}
        assert facets_json(engine)["qualified"] == ["site"]
