"""Issue 12, item 6 (access), over real MCP sessions of one broker: a `sleuth serve --project alpha`
session of an index holding projects alpha and bravo-secret calls every tool with bravo's ids,
paths, records, entities and requests. Each answer is byte-identical to the answer for an id that
exists nowhere, and no answer holds anything of bravo (its id, root, paths, titles, words,
document, record, entity or request ids, kinds) beyond what the caller itself sent."""

from __future__ import annotations

import json
import re
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.broker.client import stop_brokers
from sleuth.engine import Engine
from sleuth.ingest.roles import FILTER_KINDS
from sleuth.lanes.graph import entity_node_id
from tests.integration.conftest import run_cli
from tests.integration.mcp_session import serve_env
from tests.integration.raw_session import RawSession, tool_text

ALPHA, BRAVO = "alpha", "bravo-secret"
FILES = {
    "alpha/notes/alpha-guide.md": "---\ntitle: Alpha guide\nentities: [Zeppelin]\n---\n# Alpha guide\n\n"
                                  "The zeppelin hangar manual, shared words: lighthouse signal.\n",
    "alpha/notes/alpha-drift.md": "# Alpha drift\n\nThis file changes after indexing.\n",
    "alpha/alpha-broken.pdf": "%PDF-1.4 not really",
    "bravo/plans/bravo-plan.md": "---\ntitle: Bravo covert plan\nentities: [Nebulon]\n---\n# Bravo covert plan\n\n"
                                 "The quasar lighthouse signal, see [[Bravo drift]].\n",
    "bravo/bravo-drift.md": "# Bravo drift\n\nThis bravo file changes after indexing: quasar.\n",
    "bravo/bravo-broken.pdf": "%PDF-1.4 not really either",
    "bravo/src/bravo_tool.py": "def quasar_signal():\n    return 'bravo'\n",
}
#: What may never appear in an alpha session's answer unless the session sent it itself.
BRAVO_WORDS = ("bravo", "quasar", "nebulon")
MISSING_DOC = "f0f0f0f0f0f0f0f0"
MISSING_ENTITY = "entity-f0f0f0f0f0f0f0f0"


@pytest.fixture(scope="module")
def two_projects(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of alpha and bravo-secret, each with a stale file, a skipped file and an entity."""
    root = tmp_path_factory.mktemp("access")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    index = root / "idx"
    run_cli("index", str(root / "alpha"), "--project", ALPHA, "--index", str(index))
    run_cli("index", str(root / "bravo"), "--project", BRAVO, "--index", str(index))
    (root / "alpha/notes/alpha-drift.md").write_text("# Alpha drift\n\nChanged.\n", encoding="utf-8")
    (root / "bravo/bravo-drift.md").write_text("# Bravo drift\n\nChanged.\n", encoding="utf-8")
    return index


@pytest.fixture
def broker_env() -> Iterator[dict[str, str]]:
    folder = tempfile.mkdtemp(prefix="sba-", dir="/tmp")
    env = serve_env({"SLEUTH_BROKER": "1", "SLEUTH_BROKER_DIR": folder, "SLEUTH_BROKER_IDLE_S": "600"})
    yield env
    stop_brokers(None, env)
    shutil.rmtree(folder, ignore_errors=True)


def ok(answer: dict[str, Any]) -> dict[str, Any]:
    result = answer["result"]
    assert not result.get("isError"), tool_text(answer)
    return result.get("structuredContent") or json.loads(tool_text(answer))


def canonical(answer: dict[str, Any], swap: dict[str, str]) -> str:
    """The answer's result as JSON text with each ``swap`` key replaced by its value (the id sent)."""
    text = json.dumps(answer["result"], sort_keys=True, ensure_ascii=False)
    for old, new in swap.items():
        text = text.replace(old, new)
    return text


def strings_in(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for k, v in value.items():
            yield k
            yield from strings_in(v)
    elif isinstance(value, list):
        for v in value:
            yield from strings_in(v)


def test_a_project_limited_session_sees_nothing_of_another_project(two_projects: Path, broker_env: dict[str, str],
                                                                   tmp_path: Path) -> None:
    index = two_projects
    with Engine.open(index) as engine:
        bravo_docs = list(engine.catalog.documents_for_projects([BRAVO]))
    plan = next(d for d in bravo_docs if d.title == "Bravo covert plan")
    nebulon = entity_node_id(BRAVO, "Nebulon")
    args = ["--index", str(index), "--tools", "memory,project"]

    with RawSession(args, broker_env, tmp_path / "all.log") as everyone:
        # An unrestricted session writes a bravo record and runs a bravo request (kept as recent).
        record = ok(everyone.call_tool("project_memory_record", {
            "project_id": BRAVO, "kind": "decision", "title": "Bravo vault decision", "body": "The quasar vault."}))
        bravo_record = record["record"]["record_id"]
        ok(everyone.call_tool("project_memory_search", {"query": "quasar", "project_id": BRAVO,
                                                         "request_id": "req-bravo"}))
        bravo_ids = {d.doc_id for d in bravo_docs} | {bravo_record, nebulon} | {d.revision for d in bravo_docs}
        missing_record = "e" * len(bravo_record)

        with RawSession([*args, "--project", ALPHA], broker_env, tmp_path / "alpha.log") as alpha:
            answers: list[tuple[dict[str, Any], dict[str, Any]]] = []

            def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
                answer = alpha.call_tool(name, arguments)
                answers.append((arguments, answer))
                return answer

            def same(name: str, hidden: dict[str, Any], missing: dict[str, Any], swap: dict[str, str]) -> None:
                """The answer for bravo's ``hidden`` arguments equals the one for ``missing`` ones."""
                got, expected = call(name, hidden), call(name, missing)
                assert "error" not in got and got["result"]["isError"] is True, (name, hidden, got)
                assert canonical(got, swap) == canonical(expected, {}), (name, hidden)

            body = {"kind": "note", "title": "Probe", "body": "probe"}
            handle = f"body:{plan.doc_id}@{plan.revision}"
            missing_handle = f"body:{MISSING_DOC}@{plan.revision}"
            record_handle = f"body:{bravo_record}@{record['record']['revision_id']}"
            cases = [
                ("search_project", {"project_id": BRAVO, "query": "quasar"}, {"project_id": "nowhere-prj",
                                                                              "query": "quasar"}),
                ("get_notebook", {"project_id": BRAVO, "item_id": plan.doc_id},
                 {"project_id": "nowhere-prj", "item_id": plan.doc_id}),
                ("get_notebook", {"project_id": ALPHA, "item_id": plan.doc_id},
                 {"project_id": ALPHA, "item_id": MISSING_DOC}),
                ("project_memory_search", {"query": "quasar", "project_id": BRAVO},
                 {"query": "quasar", "project_id": "nowhere-prj"}),
                ("project_memory_search", {"query": "quasar", "project_id": ALPHA, "include_project_ids": [BRAVO]},
                 {"query": "quasar", "project_id": ALPHA, "include_project_ids": ["nowhere-prj"]}),
                ("project_memory_read", {"body_handle": handle}, {"body_handle": missing_handle}),
                ("project_memory_read", {"body_handle": record_handle},
                 {"body_handle": record_handle.replace(bravo_record, missing_record)}),
                ("project_memory_read", {"body_handle": f"entity:{nebulon}"},
                 {"body_handle": f"entity:{MISSING_ENTITY}"}),
                ("project_memory_record", {**body, "project_id": BRAVO}, {**body, "project_id": "nowhere-prj"}),
                ("project_memory_record", {**body, "record_id": bravo_record}, {**body, "record_id": missing_record}),
                ("project_memory_record", {**body, "project_id": ALPHA, "record_id": bravo_record},
                 {**body, "project_id": ALPHA, "record_id": missing_record}),
                ("project_memory_record", {**body, "project_id": ALPHA, "related": [plan.doc_id]},
                 {**body, "project_id": ALPHA, "related": [MISSING_DOC]}),
                ("project_memory_record", {**body, "project_id": ALPHA, "supersedes": [bravo_record]},
                 {**body, "project_id": ALPHA, "supersedes": [missing_record]}),
                ("project_memory_forget", {"record_id": bravo_record}, {"record_id": missing_record}),
                ("project_memory_forget", {"record_id": plan.doc_id}, {"record_id": MISSING_DOC}),
                ("project_memory_forget", {"record_id": bravo_record, "project_id": ALPHA},
                 {"record_id": missing_record, "project_id": ALPHA}),
                ("project_memory_forget", {"record_id": MISSING_DOC, "project_id": BRAVO},
                 {"record_id": MISSING_DOC, "project_id": "nowhere-prj"}),
                ("project_memory_doctor", {"project_id": BRAVO}, {"project_id": "nowhere-prj"}),
                ("query_status", {"request_id": "req-bravo"}, {"request_id": "req-nowhere"}),
                ("query_cancel", {"request_id": "req-bravo"}, {"request_id": "req-nowhere"}),
            ]
            ids = {handle: missing_handle, plan.doc_id: MISSING_DOC, bravo_record: missing_record,
                   nebulon: MISSING_ENTITY, BRAVO: "nowhere-prj", "req-bravo": "req-nowhere"}
            for name, hidden, missing in cases:
                pairs = [(h, m) for h, m in zip(strings_in(hidden), strings_in(missing), strict=True) if h != m]
                swap = {k: v for h, m in pairs for k, v in ids.items() if k in h and v in m}
                same(name, hidden, missing, dict(sorted(swap.items(), key=lambda kv: -len(kv[0]))))

            # What the session may see: alpha only, everywhere.
            projects = ok(call("get_projects", {}))
            assert [p["project_id"] for p in projects["items"]] == [ALPHA]
            doctor = ok(call("project_memory_doctor", {}))["doctor"]
            assert [p["project_id"] for p in doctor["projects"]] == [ALPHA]
            assert [d["path"] for d in doctor["stale_documents"]] == ["notes/alpha-drift.md"]
            assert [s["path"] for s in doctor["skipped_files"]] == ["alpha-broken.pdf"]
            assert doctor["lanes"]["graph"]["details"]["entities"] == 1  # alpha's Zeppelin
            everything = ok(call("project_memory_search", {"query": "quasar lighthouse signal", "all_projects": True}))
            assert everything["meta"]["projects"] == [ALPHA]
            assert {r["project_id"] for r in everything["results"]} == {ALPHA}
            kinds = call("project_memory_search", {"query": "x", "project_id": ALPHA, "filters": {"kinds": ["zzz"]}})
            # One fixed kind vocabulary (issue 17): the error names it, nothing of any project's documents.
            assert tool_text(kinds).endswith(f"must be one of {', '.join(FILTER_KINDS)}; got 'zzz'")
            for query in ("quasar", "nebulon"):
                hits = ok(call("search_project", {"project_id": ALPHA, "query": query}))
                assert hits["result_count"] == 0
                found = ok(call("project_memory_search", {"query": query, "project_id": ALPHA}))
                assert found["result_count"] == 0

        # Nothing of bravo in any answer, beyond the strings the session sent in that call.
        leaks = []
        for arguments, answer in answers:
            text = json.dumps(answer, ensure_ascii=False)
            sent = {s for value in strings_in(arguments) for s in (value, *re.split(r"[^A-Za-z0-9]+", value))}
            for part in sorted(sent, key=len, reverse=True):
                if len(part) > 3:
                    text = re.sub(re.escape(json.dumps(part, ensure_ascii=False)[1:-1]), "<SENT>", text,
                                  flags=re.IGNORECASE)
            found = [w for w in (*BRAVO_WORDS, *bravo_ids) if re.search(re.escape(w), text, re.IGNORECASE)]
            if found:
                leaks.append(f"{json.dumps(arguments)[:100]}: {found} in {text[:300]}")
        assert not leaks, "\n".join(leaks)
        # The unrestricted session still sees bravo (the filter is per session, not a loss).
        assert ok(everyone.call_tool("query_status", {"request_id": "req-bravo"}))["query_status"]["state"] \
            == "completed"
