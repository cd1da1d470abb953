"""Seed 004 over real MCP stdio sessions: project_memory_search and its companion tools, against a
real folder (markdown with wikilinks and front matter, code, a PDF) indexed by the real CLI."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from sleuth.mcp.memory_tools import SEARCH_INPUT_SCHEMA
from sleuth.pipeline.budget import result_bytes
from tests.integration.conftest import run_cli
from tests.pdf_samples import make_pdf

FILES = {
    "notes/decisions/adr-000-json-files.md": """---
title: Store the catalog as JSON files
date: 2026-08-01
---
# Store the catalog as JSON files

The catalog lives in JSON files on disk, one file per document.
""",
    "notes/decisions/adr-001-sqlite.md": """---
title: Use SQLite for the catalog
date: 2026-09-01
supersedes: [notes/decisions/adr-000-json-files.md]
entities: [SQLite]
---
# Use SQLite for the catalog

We keep documents and blocks in SQLite with the write-ahead log. The rollout follows [[Migration plan]].
""",
    "notes/plans/migration-plan.md": """---
title: Migration plan
date: 2026-09-10
---
# Migration plan

Copy every record into the new store over one weekend; keep a backup of the old files.
""",
    "notes/experiments/exp-7-compaction.md": """---
title: Compaction experiment
date: 2026-10-02
tags: [benchmark]
---
# Compaction experiment

Vacuum after bulk deletes shrank the database file by forty percent in our benchmark.
""",
    "src/catalog_store.py": '''def open_catalog(path):
    """Open the SQLite catalog in write-ahead-log mode."""
    import sqlite3
    connection = sqlite3.connect(path)
    connection.execute("PRAGMA journal_mode=WAL")
    return connection
''',
}
PDF_PAGES = ["Retrieval Augmented Memory\nA study of hybrid retrieval for agents.",
             "Results\nReciprocal rank fusion of lexical and dense retrievers improves recall of notes."]


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(root folder, index folder) of the project "lab", indexed with `sleuth index`."""
    root = tmp_path_factory.mktemp("lab")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    (root / "papers").mkdir()
    (root / "papers" / "ram.pdf").write_bytes(make_pdf(PDF_PAGES, title="Retrieval Augmented Memory"))
    index = tmp_path_factory.mktemp("lab-index") / "idx"
    run_cli("index", str(root), "--project", "lab", "--index", str(index))
    run_cli("index", str(root / "notes" / "plans"), "--project", "other", "--index", str(index))
    return root, index


def session(index: Path, script: Any, env: dict[str, str] | None = None) -> Any:
    """Run ``await script(session)`` in one real stdio session of `sleuth serve`."""

    async def main() -> Any:
        params = StdioServerParameters(command=sys.executable, args=["-m", "sleuth.cli", "serve", "--index",
                                                                     str(index)], env={**os.environ, **(env or {})})
        async with stdio_client(params) as (read, write), ClientSession(read, write) as s:
            await s.initialize()
            return await script(s)

    return anyio.run(main)


def ok(result: Any) -> dict[str, Any]:
    assert not result.is_error, result.content[0].text
    assert json.loads(result.content[0].text) == result.structured_content
    return result.structured_content


def paths(payload: dict[str, Any]) -> list[str]:
    return [r["path"] for r in payload["results"]]


def test_search_contract_fields_filters_graph_and_groups(lab: tuple[Path, Path]) -> None:
    root, index = lab

    async def script(s: ClientSession) -> dict[str, Any]:
        tools = {t.name: t for t in (await s.list_tools()).tools}
        calls = {
            "plain": {"query": "which database stores the catalog", "project_id": "lab"},
            "identifier": {"query": "where is open_catalog defined", "project_id": "lab", "limit": 3},
            "variants": {"query": "storage engine choice", "project_id": "lab", "limit": 5,
                         "query_variants": ["SQLite write-ahead log", "Engine.open_store"]},
            "variants_off": {"query": "storage engine choice", "project_id": "lab", "limit": 5},
            "papers": {"query": "rank fusion recall", "project_id": "lab", "filters": {"roles": ["paper"]}},
            "code": {"query": "catalog", "project_id": "lab", "filters": {"source_families": ["code"]}},
            "kinds": {"query": "catalog", "project_id": "lab", "filters": {"kinds": ["decision"]}},
            "recent": {"query": "catalog database plan experiment", "project_id": "lab",
                       "filters": {"recorded_after": "2026-09-05T00:00:00Z",
                                   "recorded_before": "2026-10-31T00:00:00Z"}},
            "graph_only": {"query": "SQLite write-ahead log", "project_id": "lab",
                           "filters": {"source_families": ["graph"]}},
            "lanes": {"query": "SQLite write-ahead log", "project_id": "lab",
                      "filters": {"retrieval_lanes": ["bm25"]}},
            "entity_kind": {"query": "SQLite", "project_id": "lab", "filters": {"kinds": ["entity"]}},
            "exact_only": {"query": "weekend", "project_id": "lab", "filters": {"retrieval_lanes": ["exact"]}},
            "grouped": {"queries": [{"id": "db", "query": "SQLite catalog", "limit": 2},
                                    {"id": "paper", "query": "hybrid retrieval for agents", "limit": 1,
                                     "query_variants": ["reciprocal rank fusion"]}],
                        "project_id": "lab"},
            "include": {"query": "weekend backup", "project_id": "lab", "include_project_ids": ["other"]},
            "all": {"query": "weekend backup", "all_projects": True},
        }
        return {"tools": tools, **{k: ok(await s.call_tool("project_memory_search", v)) for k, v in calls.items()}}

    out = session(index, script)
    tool = out["tools"]["project_memory_search"]
    assert tool.input_schema == SEARCH_INPUT_SCHEMA
    assert (tool.annotations.read_only_hint, tool.annotations.idempotent_hint, tool.annotations.open_world_hint) == (
        True, True, False)
    assert {"results", "groups", "meta", "error", "elapsed_ms"} <= set(tool.output_schema["properties"])

    plain = out["plain"]
    top = plain["results"][0]
    assert top["path"] == "notes/decisions/adr-001-sqlite.md"
    assert {"record_id", "revision_id", "body_handle", "source_span", "source_length", "truncated",
            "index_freshness", "summary", "role", "kind", "source_family"} <= set(top)
    assert (top["kind"], top["role"], top["source_family"], top["index_freshness"]) == (
        "decision", "report", "document", "current")
    assert top["body_handle"] == f"body:{top['record_id']}@{top['revision_id']}"
    text = (root / top["path"]).read_text()
    for passage in top["summary"]:
        span = passage["source_span"]
        assert text[span["start"]:span["end"]] == passage["text"]
        for s, e in passage["highlights"]:
            assert passage["text"][s:e].lower() in ("database", "stores", "catalog")
    assert top["source_length"] == len(text)
    # The superseded decision ranks below the one that replaces it.
    order = paths(plain)
    assert order.index("notes/decisions/adr-000-json-files.md") > order.index("notes/decisions/adr-001-sqlite.md")
    assert plain["meta"]["degraded_lanes"] == [] and plain["elapsed_ms"] > 0
    assert plain["meta"]["lanes"] == ["bm25", "vector", "graph"]  # exact: nothing to match verbatim
    assert list(plain["meta"]["skipped_lanes"]) == ["exact"]

    ident = out["identifier"]
    assert ident["meta"]["variants"] == ["where is open_catalog defined", "open_catalog"]
    assert paths(ident)[0] == "src/catalog_store.py" and "exact" in ident["results"][0]["lanes"]

    variants = out["variants"]
    assert variants["meta"]["variants"] == ["storage engine choice", "SQLite write-ahead log", "Engine.open_store"]
    # The variants bring the two documents on SQLite's write-ahead log; the primary query reranks them.
    assert {"notes/decisions/adr-001-sqlite.md", "src/catalog_store.py"} <= set(paths(variants))
    assert paths(variants) != paths(out["variants_off"])

    assert paths(out["papers"]) == ["papers/ram.pdf"]
    pdf = out["papers"]["results"][0]
    assert (pdf["kind"], pdf["role"], pdf["title"]) == ("paper", "paper", "Retrieval Augmented Memory")
    assert paths(out["code"]) == ["src/catalog_store.py"]
    assert set(paths(out["kinds"])) == {"notes/decisions/adr-000-json-files.md", "notes/decisions/adr-001-sqlite.md"}
    assert set(paths(out["recent"])) == {"notes/plans/migration-plan.md", "notes/experiments/exp-7-compaction.md"}

    graph_only = out["graph_only"]["results"]
    assert [r["source_family"] for r in graph_only] == ["graph"] * len(graph_only)
    assert graph_only[0]["record_id"] == "entity:SQLite" and graph_only[0]["lanes"] == ["graph"]
    assert [r["record_id"] for r in out["entity_kind"]["results"]] == ["entity:SQLite"]
    exact_only = out["exact_only"]
    assert exact_only["results"] == [] and exact_only["meta"]["notice"].startswith("nothing to match verbatim")
    assert out["lanes"]["meta"]["lanes"] == ["bm25"]
    assert all(r["lanes"] == ["bm25"] for r in out["lanes"]["results"])
    # The migration plan says nothing of SQLite: the graph lane brings it, linked from the decision.
    plan = next(r for r in out["plain"]["results"] if r["path"] == "notes/plans/migration-plan.md")
    assert "graph" in plan["lanes"]

    grouped = out["grouped"]
    assert [(g["id"], g["result_count"]) for g in grouped["groups"]] == [("db", 2), ("paper", 1)]
    assert grouped["groups"][1]["results"][0]["path"] == "papers/ram.pdf"
    assert grouped["meta"]["variants"]["paper"] == ["hybrid retrieval for agents", "reciprocal rank fusion"]

    assert {r["project_id"] for r in out["include"]["results"]} == {"lab", "other"}
    assert out["all"]["meta"]["projects"] == ["lab", "other"]


def test_budget_bounds_the_result_array(lab: tuple[Path, Path]) -> None:
    _, index = lab

    async def script(s: ClientSession) -> list[dict[str, Any]]:
        return [ok(await s.call_tool("project_memory_search", {"query": "catalog records plan", "project_id": "lab",
                                                                 "limit": 10, "response_budget_bytes": budget}))
                for budget in (1000, 2500, 100_000)]

    small, medium, large = session(index, script)
    for payload, budget in ((small, 1000), (medium, 2500), (large, 100_000)):
        assert result_bytes([payload["results"]]) == payload["meta"]["result_bytes"] <= budget
        assert payload["meta"]["response_budget_bytes"] == budget
    assert small["meta"]["omitted_results"] > 0 or small["meta"]["summary_passages_per_result"] == 0
    assert large["meta"]["summary_passages_per_result"] == 3 and large["meta"]["omitted_results"] == 0


#: Deadlines and injected delays of the degradation tests, in milliseconds. Nothing here depends on
#: how fast the machine is: a lane that must answer gets a deadline far beyond what any search
#: takes on a busy machine, and a lane that must be late is delayed far beyond that deadline (the
#: delay ends when the server closes, so the sessions still end at once).
ROOMY_DEADLINE_MS = 20_000
LATE_MS = 600_000


def test_slow_lane_is_degraded_and_timeout_and_cancel(lab: tuple[Path, Path]) -> None:
    _, index = lab

    async def script(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["degraded"] = await s.call_tool("project_memory_search", {
            "query": "SQLite catalog", "project_id": "lab", "response_deadline_ms": ROOMY_DEADLINE_MS,
            "request_id": "slow-1"})
        out["status_after"] = await s.call_tool("query_status", {"request_id": "slow-1"})

        async def long_search() -> None:
            out["cancelled"] = await s.call_tool("project_memory_search", {
                "query": "SQLite catalog", "project_id": "lab", "request_id": "long-1",
                "response_deadline_ms": 300_000})

        async with anyio.create_task_group() as tg:
            tg.start_soon(long_search)
            with anyio.fail_after(120):  # a safety net: the request shows up as soon as it starts
                while True:
                    status = await s.call_tool("query_status", {"request_id": "long-1"})
                    if not status.is_error and status.structured_content["query_status"]["lanes"].get(
                            "vector") == "running":
                        break
                    await anyio.sleep(0.05)
            out["status"] = status
            out["cancel"] = await s.call_tool("query_cancel", {"request_id": "long-1", "reason": "user moved on"})
        out["cancel_again"] = await s.call_tool("query_cancel", {"request_id": "long-1"})
        out["unknown"] = await s.call_tool("query_status", {"request_id": "never"})
        return out

    out = session(index, script, env={"SLEUTH_FAULT_LANE_DELAY_MS": f"vector={LATE_MS}"})
    degraded = ok(out["degraded"])
    # The graph lane runs in the little time kept after retrieval; a busy machine may make it late too.
    assert degraded["meta"]["degraded_lanes"] in (["vector"], ["graph", "vector"])
    assert degraded["results"][0]["path"] == "notes/decisions/adr-001-sqlite.md"
    assert "vector" not in degraded["results"][0]["lanes"]
    status = ok(out["status_after"])["query_status"]
    assert status["state"] == "completed_degraded" and status["lanes"]["vector"] == "settling"

    running = ok(out["status"])["query_status"]
    assert (running["state"], running["phase"], running["lanes"]["vector"]) == ("running", "retrieval", "running")
    assert ok(out["cancel"])["query_status"]["cancel_requested"] is True
    cancelled = out["cancelled"]
    assert cancelled.is_error
    assert cancelled.structured_content["error"] == {
        "code": "QUERY_CANCELLED", "message": "request cancelled during retrieval: user moved on",
        "request_id": "long-1", "cancel_reason": "user moved on", "phase": "retrieval"}
    again = ok(out["cancel_again"])["query_status"]
    assert again["state"] == "cancelled" and again["cancel_requested"] is False
    assert out["unknown"].is_error and out["unknown"].structured_content["error"]["code"] == "REQUEST_NOT_FOUND"

    async def timeout_script(s: ClientSession) -> Any:
        return await s.call_tool("project_memory_search", {"query": "SQLite", "project_id": "lab",
                                                            "response_deadline_ms": 1000, "request_id": "t-1"})

    async def empty_script(s: ClientSession) -> Any:
        return await s.call_tool("project_memory_search", {
            "query": "how often do we rotate", "project_id": "lab", "response_deadline_ms": ROOMY_DEADLINE_MS,
            "filters": {"retrieval_lanes": ["vector", "exact"]}})

    # The exact lane has nothing to match and the vector lane is late: a timeout, not "nothing found".
    empty = session(index, empty_script, env={"SLEUTH_FAULT_LANE_DELAY_MS": f"vector={LATE_MS}"})
    assert empty.is_error and empty.structured_content["error"]["code"] == "QUERY_TIMEOUT"
    assert empty.structured_content["meta"]["degraded_lanes"] == ["vector"]

    # Every retrieval lane late: the shortest deadline allowed passes first, however busy the machine.
    timed_out = session(index, timeout_script,
                        env={"SLEUTH_FAULT_LANE_DELAY_MS": f"exact={LATE_MS},bm25={LATE_MS},vector={LATE_MS}"})
    assert timed_out.is_error
    error = timed_out.structured_content["error"]
    assert (error["code"], error["request_id"], error["phase"]) == ("QUERY_TIMEOUT", "t-1", "retrieval")
    assert timed_out.structured_content["meta"]["degraded_lanes"] == ["bm25", "exact", "vector"]


def test_records_read_forget_and_doctor(lab: tuple[Path, Path]) -> None:
    root, index = lab

    async def script(s: ClientSession) -> dict[str, Any]:
        out: dict[str, Any] = {}
        first = ok(await s.call_tool("project_memory_search", {"query": "SQLite catalog", "project_id": "lab",
                                                                "limit": 1}))
        old_id = first["results"][0]["record_id"]
        out["record"] = ok(await s.call_tool("project_memory_record", {
            "project_id": "lab", "kind": "decision", "title": "Use DuckDB for the catalog",
            "body": "We replace SQLite with DuckDB for the catalog: columnar scans are faster.",
            "supersedes": [old_id], "tags": ["storage"]}))["record"]
        out["search"] = ok(await s.call_tool("project_memory_search", {"query": "catalog database decision",
                                                                        "project_id": "lab"}))
        out["revise"] = ok(await s.call_tool("project_memory_record", {
            "project_id": "lab", "kind": "decision", "title": "Use DuckDB for the catalog",
            "body": "We replace SQLite with DuckDB for the catalog, after the compaction experiment.",
            "record_id": out["record"]["record_id"], "supersedes": [old_id]}))["record"]
        handle = next(r["body_handle"] for r in ok(await s.call_tool("project_memory_search", {
            "query": "DuckDB", "project_id": "lab", "limit": 1}))["results"])
        out["page1"] = ok(await s.call_tool("project_memory_read", {"body_handle": handle, "max_chars": 40}))["body"]
        out["page2"] = ok(await s.call_tool("project_memory_read", {"body_handle": handle, "offset": 40,
                                                                     "max_chars": 20000}))["body"]
        out["file_text"] = Path(out["revise"]["file"]).read_text(encoding="utf-8")
        out["forget"] = ok(await s.call_tool("project_memory_forget", {"record_id": out["record"]["record_id"]}))
        out["after"] = ok(await s.call_tool("project_memory_search", {"query": "DuckDB", "project_id": "lab"}))
        out["read_gone"] = await s.call_tool("project_memory_read", {"body_handle": handle})
        out["forget_file"] = await s.call_tool("project_memory_forget", {"record_id": old_id})
        out["inbox"] = ok(await s.call_tool("project_memory_record", {"kind": "note", "title": "Loose thought",
                                                                       "body": "Try zstd for the backups."}))
        inbox_id = out["inbox"]["record"]["record_id"]
        out["nul"] = await s.call_tool("project_memory_record", {"kind": "note", "title": "zero\u0000byte",
                                                                  "body": "nul", "project_id": "lab"})
        out["control"] = await s.call_tool("project_memory_record", {"kind": "note", "title": "bell\u0007",
                                                                      "body": "bel", "project_id": "lab"})
        out["self"] = await s.call_tool("project_memory_record", {"kind": "note", "title": "Loose thought",
                                                                   "body": "again", "record_id": inbox_id,
                                                                   "supersedes": [inbox_id]})
        out["revise_no_project"] = ok(await s.call_tool("project_memory_record", {
            "kind": "note", "title": "Loose thought", "body": "Try zstd, level 3.", "record_id": inbox_id}))
        out["forget_wrong_project"] = await s.call_tool("project_memory_forget", {"record_id": inbox_id,
                                                                                  "project_id": "lab"})
        (root / "notes/plans/migration-plan.md").write_text("# Migration plan\n\nChanged on disk.\n")
        out["stale"] = ok(await s.call_tool("project_memory_search", {"query": "migration plan", "project_id": "lab",
                                                                       "limit": 1}))
        out["doctor"] = ok(await s.call_tool("project_memory_doctor", {"project_id": "lab"}))["doctor"]
        out["all_projects"] = ok(await s.call_tool("project_memory_search", {"query": "zstd backups",
                                                                              "all_projects": True}))
        return out

    out = session(index, script)
    record = out["record"]
    assert record["created"] is True and record["path"].startswith("decisions/") and record["kind"] == "decision"
    results = out["search"]["results"]
    new_rank = next(r["rank"] for r in results if r["record_id"] == record["record_id"])
    old = next(r for r in results if r["path"] == "notes/decisions/adr-001-sqlite.md")
    assert old["superseded_by"] == [record["record_id"]] and old["rank"] > new_rank
    revised = out["revise"]
    assert revised["record_id"] == record["record_id"] and revised["revision_id"] != record["revision_id"]
    assert revised["created"] is False
    page1, page2 = out["page1"], out["page2"]
    assert page1["text"] + page2["text"] == out["file_text"]
    assert (page1["offset"], page1["end"], page1["next_offset"]) == (0, 40, 40) and page2["next_offset"] is None
    assert page2["end"] == page2["source_length"] and page1["revision_id"] == revised["revision_id"]
    assert out["forget"]["forget"]["removed"] is True
    assert record["record_id"] not in [r["record_id"] for r in out["after"]["results"]]
    assert not Path(record["file"]).exists()
    assert out["read_gone"].structured_content["error"]["code"] == "RECORD_NOT_FOUND"
    assert out["forget_file"].is_error and "not a record" in out["forget_file"].content[0].text
    assert out["stale"]["results"][0]["index_freshness"] == "stale"
    doctor = out["doctor"]
    assert doctor["stale_document_count"] == 1
    assert doctor["stale_documents"][0]["path"] == "notes/plans/migration-plan.md"
    assert doctor["lanes"]["vector"]["available"] is True and doctor["projects"][0]["project_id"] == "lab"
    assert out["nul"].structured_content["error"] == {
        "code": "INVALID_ARGUMENT",
        "message": "title holds a NUL character (U+0000) at character 4; arguments must be text"}
    assert out["control"].structured_content["error"] == {
        "code": "INVALID_ARGUMENT", "message": "title holds a control character (e.g. NUL); records are text"}
    assert not list((index / "memory" / "lab" / "notes").glob("*zero*")) if (index / "memory" / "lab" / "notes"
                                                                              ).exists() else True
    assert "cannot relate to or supersede itself" in out["self"].content[0].text
    assert out["revise_no_project"]["record"]["project_id"] == "inbox"
    assert "belongs to project inbox, not lab" in out["forget_wrong_project"].content[0].text
    # The Inbox holds records filed without a project, and all_projects leaves it out.
    assert out["inbox"]["record"]["project_id"] == "inbox"
    assert "inbox" not in out["all_projects"]["meta"]["projects"]


BAD_INPUT = [
    ({"query": "x", "project_id": "lab", "filters": {"kinds": ["nonsense"]}}, "INVALID_ARGUMENT",
     "filters.kinds[0] must be one of document, note, paper, decision, plan, experiment, result, log, code,"),
    ({"query": "x", "project_id": "lab", "filters": {"recorded_after": "0000-01-01T00:00:00Z"}}, "INVALID_ARGUMENT",
     "filters.recorded_after must be a date-time from year 0001 to 9999"),
    ({"query": "x", "project_id": "nope"}, "PROJECT_NOT_FOUND", "project not found or access denied: nope"),
    ({"query": "x", "project_id": "lab", "limit": 51}, "INVALID_ARGUMENT", "limit must be an integer from 1 to 50"),
    ({"query": "the of and", "project_id": "lab"}, "INVALID_ARGUMENT", "no searchable terms"),
    ({"query": "x", "project_id": "lab", "filters": {"roles": ["boss"]}}, "INVALID_ARGUMENT", "filters.roles[0]"),
    ({"query": "x", "project_id": "lab", "surprise": 1}, "INVALID_ARGUMENT", "unknown argument(s) surprise"),
]


def test_bad_input_gets_a_readable_error(lab: tuple[Path, Path]) -> None:
    _, index = lab

    async def script(s: ClientSession) -> list[Any]:
        return [await s.call_tool("project_memory_search", args) for args, _, _ in BAD_INPUT]

    for result, (_, code, message) in zip(session(index, script), BAD_INPUT, strict=True):
        assert result.is_error and message in result.content[0].text
        if code is not None:
            assert result.structured_content["error"]["code"] == code


def test_doctor_command_reports_stale_and_skipped(tmp_path: Path) -> None:
    root = tmp_path / "notes"
    root.mkdir()
    (root / "a.md").write_text("# A\n\nalpha\n")
    (root / "b.md").write_text("# B\n\nbeta\n")
    (root / "broken.pdf").write_bytes(b"%PDF-1.4 not really")
    index = tmp_path / "idx"
    run_cli("index", str(root), "--project", "notes", "--index", str(index))
    # All is well (a skipped file is reported, not a fault): exit 0.
    well = run_cli("doctor", "--index", str(index), check=False)
    assert (well.returncode, well.stdout.splitlines()[0]) == (0, f"index {index}: ok")
    (root / "a.md").unlink()
    # Something needs attention: the report says what, and the exit status is 1 (a new user's trial:
    # it was 0, so a script or CI step could not tell).
    proc = run_cli("doctor", "--index", str(index), "--format", "json", check=False)
    assert proc.returncode == 1
    report = json.loads(proc.stdout)
    assert report["ok"] is False and report["stale_document_count"] == 1
    assert [(d["path"], d["project_id"]) for d in report["stale_documents"]] == [("a.md", "notes")]
    assert [s["path"] for s in report["skipped_files"]] == ["broken.pdf"]
    proc = run_cli("doctor", "--index", str(index), check=False)
    text = proc.stdout
    assert (proc.returncode, text.splitlines()[0], proc.stderr) == (1, f"index {index}: needs attention", "")
    assert "stale: notes a.md" in text and "  1 failed file(s):\n    1 " in text and " (broken.pdf)" in text
    help_text = " ".join(run_cli("doctor", "--help").stdout.split())
    assert 'Exits 0 when all is well ("ok"), 1 when anything needs attention' in help_text
    missing = run_cli("doctor", "--project", "nope", "--index", str(index), check=False)
    assert missing.returncode == 4 and "project not found: nope" in missing.stderr


def test_the_inbox_is_left_out_of_a_search_of_every_project_by_mcp_and_the_cli_alike(tmp_path: Path) -> None:
    """A new user's trial: a record filed without a project goes to the Inbox, which
    project_memory_search's all_projects leaves out (seed 004: "Excludes Inbox"), while `sleuth
    search` without --project found it. Both leave it out now; the CLI says so, and naming the
    Inbox searches it."""
    notes = tmp_path / "notes"
    notes.mkdir()
    (notes / "a.md").write_text("# Tides\n\nThe zephyrwombat tide table for the harbour.\n", encoding="utf-8")
    index, env = tmp_path / "idx", {"SLEUTH_MODEL": "none"}
    run_cli("index", str(notes), "--project", "notes", "--index", str(index), env=env)

    async def script(s: ClientSession) -> dict[str, Any]:
        out = {"record": ok(await s.call_tool("project_memory_record", {
            "kind": "note", "title": "Loose thought", "body": "Try the quokkabyte codec for the backups."}))}
        for name, args in (("all", {"all_projects": True}), ("default", {}), ("inbox", {"project_id": "inbox"})):
            out[name] = ok(await s.call_tool("project_memory_search", {"query": "quokkabyte codec", **args}))
        return out

    out = session(index, script, env)
    assert out["record"]["record"]["project_id"] == "inbox"
    assert [paths(out[name]) for name in ("all", "default")] == [[], []]
    assert paths(out["inbox"]) == [out["record"]["record"]["path"]]
    text = run_cli("search", "quokkabyte codec", "--index", str(index), env=env).stdout
    assert text.splitlines()[-1] == (
        "no results for 'quokkabyte codec': no word of the query occurs in the searched documents; the inbox project"
        " (1 record(s) filed without a project) is left out of a search of every project; name it to search it"
        " (--project inbox)")
    found = json.loads(run_cli("search", "quokkabyte codec", "--index", str(index), "--format", "json", env=env).stdout)
    assert (found["hits"], found["projects"]) == ([], ["notes"])
    named = json.loads(run_cli("search", "quokkabyte codec", "--project", "inbox", "--index", str(index),
                               "--format", "json", env=env).stdout)
    assert [(h["project"], h["path"]) for h in named["hits"]] == [("inbox", out["record"]["record"]["path"])]
    assert named["notice"] is None
    other = json.loads(run_cli("search", "zephyrwombat", "--index", str(index), "--format", "json", env=env).stdout)
    assert [h["path"] for h in other["hits"]] == ["a.md"] and "inbox project (1 record(s)" in other["notice"]
    assert other["inbox_left_out"] == 1
    # The text names the Inbox where it explains an empty answer, not under every search that found something
    shown = run_cli("search", "zephyrwombat", "--index", str(index), env=env).stdout.splitlines()
    assert shown[0].startswith(" 1. a.md  [notes]  ") and not any("inbox" in line for line in shown)
