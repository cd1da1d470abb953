"""Issue 17.3 and 17.4 over real MCP stdio sessions: project_id optional with one project (or a
configured default), one kind vocabulary with enums in the schemas, bounded block ids, get_notebook
in pages, concise instructions; adr-tools and MADR records dated and ordered by supersession."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from sleuth.ingest.roles import FILTER_KINDS
from sleuth.mcp.project_tools import BLOCK_IDS_MAX
from tests.integration.conftest import run_cli
from tests.integration.mcp_session import session

LEXICAL = {"SLEUTH_MODEL": "none"}
LONG = "\n\n".join(f"## Part {i}\n\nThe quokka paragraph number {i} of a long page." for i in range(40))
FILES = {
    # adr-tools, as `adr new` writes records (ADR 2 superseded ADR 1).
    "doc/adr/0001-store-json-files.md": "# 1. Store json files\n\nDate: 2019-03-01\n\n## Status\n\n"
    "Superseded by [2. Use SQLite](0002-use-sqlite.md)\n\n## Context\n\nThe quokka catalog is stored as json files.\n",
    "doc/adr/0002-use-sqlite.md": "# 2. Use SQLite\n\nDate: 2021-06-15\n\n## Status\n\nAccepted\n\n"
    "Supersedes [1. Store json files](0001-store-json-files.md)\n\n## Context\n\nThe quokka catalog uses SQLite.\n",
    # MADR 2: bullets under the title.
    "docs/decisions/0003-use-markdown.md": "# Use Markdown for quokka records\n\n* Status: accepted\n"
    "* Date: 2023-02-01\n\n## Context and Problem Statement\n\nHow to write quokka records?\n",
    "guide/long.md": "# Long quokka guide\n\n" + LONG + "\n",
}


def write_tree(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
        os.utime(root / rel, (1_700_000_000, 1_700_000_000))  # 2023-11-14: the mtime dates would give


@pytest.fixture(scope="module")
def one(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("lab")
    write_tree(root, FILES)
    index = root.parent / f"{root.name}-idx"
    run_cli("index", str(root), "--project", "lab", "--index", str(index), env=LEXICAL)
    return index


def structured(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.structured_content
    return result.structured_content


def payload(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    return json.loads(result.content[0].text)


def test_one_project_needs_no_project_id_and_decisions_are_dated(one: Path) -> None:
    calls = [
        ("project_memory_search", {"query": "quokka catalog"}),
        ("project_memory_search", {"query": "quokka catalog json files", "filters": {"kinds": ["decision"]}}),
        ("project_memory_search", {"query": "quokka", "filters": {"kinds": ["decision"],
                                                                   "recorded_after": "2020-01-01T00:00:00Z",
                                                                   "recorded_before": "2022-01-01T00:00:00Z"}}),
        ("project_memory_search", {"query": "quokka", "filters": {"kinds": ["markdown"]}}),
    ]
    out = session(["--index", str(one), "--no-broker"], calls, env=LEXICAL)
    first, decisions, dated, bad = out["results"]
    assert structured(first)["meta"]["projects"] == ["lab"]
    ranked = [(r["path"], r["kind"], r["recorded_at"]) for r in structured(decisions)["results"]]
    # 0001 matches "json files" best, but 0002 supersedes it: the replacement ranks just above it.
    assert ranked[:2] == [("doc/adr/0002-use-sqlite.md", "decision", "2021-06-15T00:00:00Z"),
                          ("doc/adr/0001-store-json-files.md", "decision", "2019-03-01T00:00:00Z")]
    assert structured(decisions)["results"][1]["superseded_by"] == [structured(decisions)["results"][0]["record_id"]]
    assert [r["path"] for r in structured(dated)["results"]] == ["doc/adr/0002-use-sqlite.md"]
    assert bad.is_error and "filters.kinds[0] must be one of document, note, paper" in bad.structured_content[
        "error"]["message"]
    schema = out["tools"]["project_memory_search"].input_schema
    assert schema["properties"]["filters"]["properties"]["kinds"]["items"] == {"enum": list(FILTER_KINDS),
                                                                                "type": "string"}
    assert "required" not in schema


def test_search_project_items_and_get_notebook_pages(one: Path) -> None:
    calls = [("search_project", {"project_id": "lab", "query": "quokka paragraph number"})]
    out = session(["--index", str(one), "--no-broker"], calls, env=LEXICAL)
    item = payload(out["results"][0])["items"][0]
    assert item["item"]["path"] == "guide/long.md" and item["item"]["kind"] == "document"
    assert len(item["block_ids"]) == BLOCK_IDS_MAX < item["block_count"]
    assert item["item"]["location"].startswith("lines ")
    iid = item["markdown_item_id"]
    pages = session(["--index", str(one), "--no-broker"], [
        ("get_notebook", {"project_id": "lab", "item_id": iid, "max_chars": 1000}),
        ("get_notebook", {"project_id": "lab", "item_id": iid, "offset": 1000, "max_chars": 1000}),
        ("get_notebook", {"project_id": "lab", "item_id": iid, "offset": 10**8}),
        ("get_notebook", {"project_id": "lab", "item_id": "doc/adr/0002-use-sqlite.md"}),
    ], env=LEXICAL)["results"]
    first, second = payload(pages[0])["item"], payload(pages[1])["item"]
    text = FILES["guide/long.md"]
    assert first["text"] + second["text"] == text[:2000]
    assert (first["offset"], first["next_offset"], second["next_offset"], first["source_length"]) == (
        0, 1000, 2000, len(text))
    # Only the blocks on the page (of the page's 41 sections: the title's and 40 parts).
    assert first["blocks"] and all(b["chars"][0] < 1000 for b in first["blocks"]) and len(first["blocks"]) < 41
    assert second["blocks"][0]["chars"][0] < 1000 < second["blocks"][0]["chars"][1]
    assert pages[2].is_error and "offset 100000000 is past the end of the text" in pages[2].content[0].text
    adr = payload(pages[3])["item"]
    assert (adr["kind"], adr["status"], adr["recorded_at"]) == ("decision", "accepted", "2021-06-15T00:00:00Z")


def test_instructions_and_descriptions_are_concise(one: Path) -> None:
    out = session(["--index", str(one), "--no-broker"], [], env=LEXICAL)
    instructions = out["instructions"]
    assert instructions.count("sleuth searches a project's local knowledge") == 1
    texts = [instructions, *(t.description or "" for t in out["tools"].values())]
    texts += [json.dumps(t.input_schema) for t in out["tools"].values()]
    for text in texts:
        for internal in ("broker", "response gate", "Native reads"):
            assert internal not in text


def test_two_projects_need_a_project_id_unless_one_is_configured(tmp_path: Path) -> None:
    index = tmp_path / "idx"
    for name in ("alpha", "bravo"):
        write_tree(tmp_path / name, {"a.md": f"# {name}\n\nquokka {name}\n"})
        run_cli("index", str(tmp_path / name), "--project", name, "--index", str(index), env=LEXICAL)
    calls = [("project_memory_search", {"query": "quokka"})]
    out = session(["--index", str(index), "--no-broker"], calls, env=LEXICAL)
    error = out["results"][0].structured_content["error"]["message"]
    assert error == "project_id is required: the index holds 2 projects (alpha, bravo); pass one, or all_projects: true"
    (index / "config.toml").write_text('default_project = "bravo"\n', encoding="utf-8")
    out = session(["--index", str(index), "--no-broker"], calls, env=LEXICAL)
    assert [r["path"] for r in structured(out["results"][0])["results"]] == ["a.md"]
    assert structured(out["results"][0])["meta"]["projects"] == ["bravo"]
    out = session(["--index", str(index), "--no-broker", "--project", "alpha"], calls, env=LEXICAL)
    # the configured default is hidden from this server: passed over (never named), its only project searched
    hidden = structured(out["results"][0])
    assert hidden["meta"]["projects"] == ["alpha"] and "bravo" not in json.dumps(hidden)
