"""Issue 12, item 5 (broker liveness), over real processes speaking raw JSON-RPC: every tool of
every profile answers every malformed argument with a readable tool error (never a protocol error,
a traceback or silence), and one session's hostile calls -- a 1 MB query, the largest documents
list allowed, a lone surrogate, a message over the size limit -- never keep another session of the
same broker from starting and searching while they run."""

from __future__ import annotations

import copy
import json
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from sleuth.broker.client import stop_brokers
from sleuth.mcp.limits import (
    ARGUMENT_CAPS,
    TOOL_CALLS_PER_CALLER,
    TOOL_WORKER_THREADS,
    VALUE_MAX_CHARS,
    VALUE_MAX_ITEMS,
)
from sleuth.mcp.wire import MESSAGE_MAX_BYTES
from tests.guides.fixture import BASE_URL, write_content
from tests.integration.conftest import run_cli
from tests.integration.mcp_session import serve_env
from tests.integration.raw_session import Raw, RawSession, dumps, tool_text

NOTES = {
    "catalog.md": "---\ntitle: Catalog design\n---\n# Catalog design\n\nThe catalog lives in SQLite with a WAL.\n",
    "ledger.md": "---\ntitle: Ledger notes\ntags: [money]\n---\n# Ledger notes\n\nDouble-entry ledger, idempotent.\n",
}
ALL_PROFILES = "memory,project,guides,text"


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(index with project "lab", guides.json): what every profile needs."""
    root = tmp_path_factory.mktemp("limits")
    (root / "lab").mkdir()
    for name, text in NOTES.items():
        (root / "lab" / name).write_text(text, encoding="utf-8")
    index = root / "idx"
    run_cli("index", str(root / "lab"), "--project", "lab", "--index", str(index))
    guides = root / "guides.json"
    run_cli("guides", "build", str(write_content(root / "site")), "--base-url", BASE_URL, "-o", str(guides))
    return index, guides


@pytest.fixture(params=["in-process", "broker"])
def serve_env_of(request: pytest.FixtureRequest) -> Iterator[dict[str, str]]:
    """The environment of `sleuth serve`: in its own process, or through a broker (stopped after)."""
    if request.param == "in-process":
        yield serve_env({"SLEUTH_BROKER": "0"})
        return
    folder = tempfile.mkdtemp(prefix="sbl-", dir="/tmp")
    env = serve_env({"SLEUTH_BROKER": "1", "SLEUTH_BROKER_DIR": folder, "SLEUTH_BROKER_IDLE_S": "600"})
    yield env
    stop_brokers(None, env)
    shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------------------------- fuzz

_WRONG_TYPE: dict[str, Any] = {"string": {"not": "a string"}, "integer": [1], "number": [1], "array": 7,
                               "object": 7, "boolean": "yes"}


def _cap_chars(tool: str, pattern: str) -> int:
    cap = ARGUMENT_CAPS[tool].get(pattern)
    limit = (cap.chars or cap.total_chars) if cap else None
    return limit.value if limit else VALUE_MAX_CHARS


def _cap_items(tool: str, pattern: str) -> int:
    cap = ARGUMENT_CAPS[tool].get(pattern)
    return cap.items.value if cap and cap.items else VALUE_MAX_ITEMS


def malformed(tool: str, schema: dict[str, Any], pattern: str, good: Any) -> Iterator[tuple[str, Any]]:
    """(kind, bad value) pairs for one argument path of ``tool`` (``good``: a valid value for it)."""
    kind = schema.get("type")
    if kind in _WRONG_TYPE:
        yield "type", _WRONG_TYPE[kind]
    if kind in ("integer", "number"):
        if "maximum" in schema:
            yield "range", schema["maximum"] + 1
        if "minimum" in schema:
            yield "range", schema["minimum"] - 1
        yield "range", Raw("1e400")
        yield "range", Raw("NaN")
        yield "range", Raw("1" + "0" * 400)
        if kind == "integer" or schema.get("integer"):
            yield "range", 2.5
    if "enum" in schema or "enum" in schema.get("items", {}):
        yield "range", ["not-a-choice"] if kind == "array" else "not-a-choice"
    if kind == "string":
        if schema.get("minLength"):
            yield "range", ""
        yield "surrogate", "\ud800"
        yield "nul", "a\x00b"
        yield "long", "x" * (_cap_chars(tool, pattern) + 1)
    if kind == "array":
        items = schema.get("items", {})
        item = good[0] if isinstance(good, list) and good else "x"
        yield "long", [item] * (_cap_items(tool, pattern) + 1)
        cap = ARGUMENT_CAPS[tool].get(pattern)
        if cap and cap.total_chars:
            yield "long", ["y" * (cap.total_chars.value // 2 + 1)] * 2
        for bad_kind, bad in malformed(tool, items, f"{pattern}[]", item):
            yield bad_kind, [bad]
    if kind == "object":
        for name, sub in schema.get("properties", {}).items():
            inner = good.get(name) if isinstance(good, dict) else None
            for bad_kind, bad in malformed(tool, sub, f"{pattern}.{name}", inner):
                yield bad_kind, {**(good if isinstance(good, dict) else {}), name: bad}


#: What each tool is called with when one argument is made malformed (valid on their own).
def baselines(item_id: str, handle: str) -> dict[str, dict[str, Any]]:
    docs = ["rate limiting protects APIs", "authentication guide"]
    return {
        "search_project": {"project_id": "lab", "query": "catalog"},
        "get_notebook": {"project_id": "lab", "item_id": item_id},
        "get_projects": {},
        "search_guides": {"query": "vendor"},
        "search_documents": {"query": "rate", "documents": docs},
        "search_index_query": {"query": "rate", "documents": docs},
        "search_fuzzy": {"query": "pythn", "candidates": ["python", "java"]},
        "project_memory_search": {"query": "catalog", "project_id": "lab"},
        "query_status": {"request_id": "fuzz-1"},
        "query_cancel": {"request_id": "fuzz-1", "reason": "fuzz"},
        "project_memory_read": {"body_handle": handle, "offset": 0, "max_chars": 100},
        "project_memory_record": {"kind": "note", "title": "Fuzz", "body": "text", "project_id": "lab"},
        "project_memory_forget": {"record_id": "0" * 16, "project_id": "lab"},
        "project_memory_doctor": {"project_id": "lab"},
    }


#: A good value for optional arguments the baselines leave out (so their nested parts get fuzzed too).
OPTIONAL_GOOD: dict[tuple[str, str], Any] = {
    ("project_memory_search", "queries"): [{"id": "q1", "query": "catalog", "query_variants": ["sqlite"]}],
    ("project_memory_search", "query_variants"): ["sqlite"],
    ("project_memory_search", "include_project_ids"): ["lab"],
    ("project_memory_search", "filters"): {"kinds": ["note"], "recorded_after": "2020-01-01T00:00:00Z"},
    ("project_memory_record", "tags"): ["t"],
    ("project_memory_record", "related"): ["0" * 16],
    ("project_memory_record", "supersedes"): ["0" * 16],
}
#: Seed 001 answers these without an error: a query that is not a string searches as "", any limit
#: is clamped, and the schema allows other arguments.
TOLERATED = {("search_guides", "query", "type"), ("search_guides", "limit", "type"),
             ("search_guides", "limit", "range"), ("search_guides", "", "unknown")}


def fuzz_calls(tools: dict[str, dict[str, Any]], base: dict[str, dict[str, Any]]
               ) -> Iterator[tuple[str, str, str, Any]]:
    """(tool, argument, kind, arguments) for every malformed call made of one baseline."""
    for name, schema in tools.items():
        good = base[name]
        for arg, sub in schema.get("properties", {}).items():
            value = good.get(arg, OPTIONAL_GOOD.get((name, arg)))
            for kind, bad in malformed(name, sub, arg, value):
                arguments = copy.deepcopy(good)
                if arg == "queries":
                    arguments.pop("query", None)
                arguments[arg] = bad
                yield name, arg, kind, arguments
        yield name, "", "unknown", {**good, "zz_unknown": 1}
        yield name, "", "surrogate", {**good, "\udc00name": 1}
        yield name, "", "type", "not an object"
        yield name, "", "type", [1, 2]


def test_every_tool_of_every_profile_answers_malformed_arguments_with_a_tool_error(
        served: tuple[Path, Path], serve_env_of: dict[str, str], tmp_path: Path) -> None:
    index, guides = served
    args = ["--index", str(index), "--tools", ALL_PROFILES, "--guides", str(guides)]
    with RawSession(args, serve_env_of, tmp_path / "serve.log") as s:
        listed = s.call("tools/list", {})["result"]["tools"]
        tools = {t["name"]: t["inputSchema"] for t in listed}
        assert set(tools) == set(ARGUMENT_CAPS)  # every tool of every profile, each with its caps
        found = s.call_tool("search_project", {"project_id": "lab", "query": "catalog"})
        item_id = json.loads(tool_text(found))["items"][0]["markdown_item_id"]
        memory = s.call_tool("project_memory_search", {"project_id": "lab", "query": "catalog"})
        handle = memory["result"]["structuredContent"]["results"][0]["body_handle"]
        calls = list(fuzz_calls(tools, baselines(item_id, handle)))
        problems, tolerated = [], 0
        for name, arg, kind, arguments in calls:
            answer = s.call_tool(name, arguments)
            where = f"{name} {arg or '(arguments)'} {kind}: {dumps(arguments)[:120]}"
            if "error" in answer:
                problems.append(f"{where}: protocol error {answer['error']}")
                continue
            text = tool_text(answer)
            if (name, arg, kind) in TOLERATED:
                tolerated += 1
                if answer["result"].get("isError") or "guide" not in text:
                    problems.append(f"{where}: the seed's answer expected, got {text[:200]!r}")
                continue
            readable = (answer["result"].get("isError") is True and text and "Traceback" not in text
                        and text != f"Error executing tool {name}" and "internal error" not in text
                        and "INTERNAL_ERROR" not in json.dumps(answer["result"]))
            if not readable or arg.lower() not in text.lower():
                problems.append(f"{where}: {text[:300]!r}")
        # The session still answers normally after all of that.
        after = s.call_tool("search_fuzzy", {"query": "pythn", "candidates": ["python"]})
        assert after["result"]["structuredContent"]["best_match"] == "python"
    assert not problems, f"{len(problems)} of {len(calls)} calls:\n" + "\n".join(problems[:40])
    assert len(calls) > 300 and tolerated == 9
    print(f"{len(calls)} malformed calls over {len(tools)} tools: each a readable tool error "
          f"({tolerated} tolerated by seed 001)")


# ---------------------------------------------------------------------------------------------- liveness


def test_hostile_calls_of_one_session_never_stall_another(served: tuple[Path, Path], tmp_path: Path) -> None:
    index, guides = served
    folder = tempfile.mkdtemp(prefix="sbl-", dir="/tmp")
    # The delay only keeps session A's search running until B cancels it: the proof that B was
    # served while A's calls ran, without measuring time.
    env = serve_env({"SLEUTH_BROKER": "1", "SLEUTH_BROKER_DIR": folder, "SLEUTH_BROKER_IDLE_S": "600",
                     "SLEUTH_FAULT_LANE_DELAY_MS": "vector=240000"})
    args = ["--index", str(index), "--tools", ALL_PROFILES, "--guides", str(guides)]
    huge_documents = [f"document {n} about rate limiting and quotas " + "filler text " * 40 for n in range(10_000)]
    huge_documents = [d[:500] for d in huge_documents]  # 10,000 documents, 5,000,000 characters: the most allowed
    try:
        with RawSession(args, env, tmp_path / "a.log") as a:
            slow = a.send("tools/call", {"name": "project_memory_search", "arguments": {
                "query": "catalog", "project_id": "lab", "request_id": "slow-a", "response_deadline_ms": 300_000}})
            one_mb = a.send("tools/call", {"name": "search_guides", "arguments": {"query": "vendor " * 150_000}})
            documents = a.send("tools/call", {"name": "search_documents", "arguments": {
                "query": "rate limiting", "documents": huge_documents, "top_k": 3}})
            surrogate = a.send("tools/call", {"name": "search_project", "arguments": {
                "project_id": "lab", "query": "cat\ud800alog"}})
            too_big_line = (b'{"jsonrpc":"2.0","id":"too-big","method":"tools/call","params":{"name":"search_fuzzy",'
                            b'"arguments":{"query":"q","candidates":["' + b"c" * MESSAGE_MAX_BYTES + b'"]}}}')
            a.send_line(too_big_line)
            with RawSession(args, env, tmp_path / "b.log") as b:
                assert b.initialize["result"]["serverInfo"]["name"] == "sleuth"
                # A search of lanes without the injected delay (which every surface's pipeline applies).
                found = b.call_tool("project_memory_search", {"project_id": "lab", "query": "ledger",
                                                              "filters": {"retrieval_lanes": ["bm25"]}})
                assert found["result"]["structuredContent"]["results"][0]["title"] == "Ledger notes"
                status = b.call_tool("query_status", {"request_id": "slow-a"})["result"]["structuredContent"]
                assert status["query_status"]["state"] == "running"
                cancel = b.call_tool("query_cancel", {"request_id": "slow-a", "reason": "B was served"})
                assert cancel["result"]["structuredContent"]["query_status"]["cancel_requested"] is True
            slow_error = a.answer(slow)["result"]["structuredContent"]["error"]
            assert (slow_error["code"], slow_error["cancel_reason"]) == ("QUERY_CANCELLED", "B was served")
            assert tool_text(a.answer(one_mb)) == "query is 1050000 characters long; the limit is 4000"
            ranked = a.answer(documents)["result"]["structuredContent"]
            assert ranked["status"] == "ok" and len(ranked["results"]) == 3
            assert tool_text(a.answer(surrogate)) == ("query is not valid Unicode: it holds a lone surrogate code "
                                                      "point (U+D800) at character 3")
            too_big = a.answer("too-big")["result"]
            assert too_big["isError"] is True and tool_text({"result": too_big}).startswith(
                f"the message is {len(too_big_line)} bytes long; the limit is {MESSAGE_MAX_BYTES} bytes")
            # A is still served after all of it.
            again = a.call_tool("search_fuzzy", {"query": "pythn", "candidates": ["python"]})
            assert again["result"]["structuredContent"]["best_match"] == "python"
    finally:
        stop_brokers(None, env)
        shutil.rmtree(folder, ignore_errors=True)


def _running(b: RawSession, request_id: str) -> bool:
    """Whether ``request_id`` is a request of the index's registry that is still running."""
    answer = b.call_tool("query_status", {"request_id": request_id})["result"]["structuredContent"]
    return answer.get("query_status", {}).get("state") == "running"


def test_a_burst_from_one_session_waits_for_its_own_calls(served: tuple[Path, Path], tmp_path: Path) -> None:
    """One session sends more searches than the broker has tool threads, each held by a vector lane
    that hangs (the injected delay): it gets TOOL_CALLS_PER_CALLER of them working at once, the rest
    wait their turn, and another session is served meanwhile (its bm25 lane on its own threads)."""
    index, _guides = served
    folder = tempfile.mkdtemp(prefix="sbl-", dir="/tmp")
    env = serve_env({"SLEUTH_BROKER": "1", "SLEUTH_BROKER_DIR": folder, "SLEUTH_BROKER_IDLE_S": "600",
                     "SLEUTH_FAULT_LANE_DELAY_MS": "vector=240000"})
    args = ["--index", str(index), "--tools", "memory"]
    burst = [f"slow-{n}" for n in range(TOOL_WORKER_THREADS + 2)]
    try:
        with RawSession(args, env, tmp_path / "a.log") as a:
            sent = {rid: a.send("tools/call", {"name": "project_memory_search", "arguments": {
                "query": "catalog", "project_id": "lab", "request_id": rid, "response_deadline_ms": 300_000}})
                for rid in burst}
            with RawSession(args, env, tmp_path / "b.log") as b:
                found = b.call_tool("project_memory_search", {"project_id": "lab", "query": "ledger",
                                                              "filters": {"retrieval_lanes": ["bm25"]}})
                assert found["result"]["structuredContent"]["results"][0]["title"] == "Ledger notes"
                # A's first calls hold its share; the others have not started (no such request yet).
                running: list[str] = []
                for _poll in range(10_000):  # safety net only: each poll is one round trip
                    running = [rid for rid in burst if _running(b, rid)]
                    assert len(running) <= TOOL_CALLS_PER_CALLER
                    if len(running) == TOOL_CALLS_PER_CALLER:
                        break
                assert len(running) == TOOL_CALLS_PER_CALLER
                # Cancelling one lets the next start: every call of the burst runs in turn.
                cancelled = 0
                while cancelled < len(burst):
                    for rid in [r for r in burst if _running(b, r)]:
                        status = b.call_tool("query_cancel", {"request_id": rid, "reason": "next"})
                        cancelled += status["result"]["structuredContent"]["query_status"]["cancel_requested"]
                        assert len([r for r in burst if _running(b, r)]) <= TOOL_CALLS_PER_CALLER
            for rid, call in sent.items():
                error = a.answer(call)["result"]["structuredContent"]["error"]
                assert (error["code"], error["cancel_reason"], error.get("request_id", rid)) == (
                    "QUERY_CANCELLED", "next", rid)
    finally:
        stop_brokers(None, env)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.mark.parametrize("depth", [300, 100_000])
def test_arguments_nested_deep_get_a_tool_error(served: tuple[Path, Path], serve_env_of: dict[str, str],
                                                tmp_path: Path, depth: int) -> None:
    """Nesting past the decoder's reach (100,000 levels) gets the same kind of answer as nesting it
    can decode (300 levels): a tool error stating the limit, never a parse error, and the session goes on."""
    index, _guides = served
    with RawSession(["--index", str(index), "--tools", "text"], serve_env_of, tmp_path / "s.log") as s:
        nested = "[" * depth + "]" * depth
        s.send_line(('{"jsonrpc":"2.0","id":"deep","method":"tools/call","params":{"name":"search_fuzzy",'
                     '"arguments":{"query":"q","candidates":' + nested + '}}}').encode())
        answer = s.answer("deep")["result"]
        assert answer["isError"] is True
        assert "the limit is 8" in tool_text({"result": answer})
        again = s.call_tool("search_fuzzy", {"query": "pythn", "candidates": ["python"]})
        assert again["result"]["structuredContent"]["best_match"] == "python"


def test_hostile_sessions_that_hold_every_thread_never_lock_out_another(served: tuple[Path, Path],
                                                                        tmp_path: Path) -> None:
    """More hostile sessions than the shared threads can serve, each with its share of searches
    held by a lane that hangs: a new session still starts and searches (its only call has a
    thread of its own), and the searches of sessions that went away are cancelled."""
    index, _guides = served
    folder = tempfile.mkdtemp(prefix="sbl-", dir="/tmp")
    env = serve_env({"SLEUTH_BROKER": "1", "SLEUTH_BROKER_DIR": folder, "SLEUTH_BROKER_IDLE_S": "600",
                     "SLEUTH_FAULT_LANE_DELAY_MS": "vector=240000"})
    args = ["--index", str(index), "--tools", "memory"]
    hostile = TOOL_WORKER_THREADS // TOOL_CALLS_PER_CALLER + 1
    ids = {h: [f"h{h}-{n}" for n in range(TOOL_CALLS_PER_CALLER)] for h in range(hostile)}
    try:
        sessions = [RawSession(args, env, tmp_path / f"h{h}.log") for h in range(hostile)]
        for h, s in enumerate(sessions):
            for rid in ids[h]:
                s.send("tools/call", {"name": "project_memory_search", "arguments": {
                    "query": "catalog", "project_id": "lab", "request_id": rid, "response_deadline_ms": 300_000}})
        with RawSession(args, env, tmp_path / "b.log") as b:
            every = [rid for h in ids for rid in ids[h]]
            for _poll in range(10_000):  # safety net only: wait until every hostile search runs
                if all(_running(b, rid) for rid in every):
                    break
            assert all(_running(b, rid) for rid in every)  # more than the shared threads: 4 sessions' worth + 1
            found = b.call_tool("project_memory_search", {"project_id": "lab", "query": "ledger",
                                                          "filters": {"retrieval_lanes": ["bm25"]}})
            assert found["result"]["structuredContent"]["results"][0]["title"] == "Ledger notes"
            for s in sessions:
                s.close()  # gone without cancelling: the broker cancels what they left running
            for _poll in range(10_000):
                if not any(_running(b, rid) for rid in every):
                    break
            assert not any(_running(b, rid) for rid in every)  # their threads are free again
            ended = {rid: b.call_tool("query_status", {"request_id": rid})["result"]["structuredContent"]
                     ["query_status"] for rid in every}
            assert {(st["state"], st.get("cancel_reason")) for st in ended.values()} == {
                ("cancelled", "the session that sent it ended")}  # stopped at once, not after the 240 s hang
    finally:
        stop_brokers(None, env)
        shutil.rmtree(folder, ignore_errors=True)
