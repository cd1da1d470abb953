"""Issue 15 over a real `sleuth serve --http` process and the official Python SDK's streamable HTTP
client: alice (alpha, read-only) reads alpha and is denied beta; every bad token kind gets 401
with the resource-metadata challenge; a write tool without the write scope gets 403
insufficient_scope; the metadata document; bad Origin 403, bad Host 421; a session id sent with
another user's token is refused; requests, caches and the audit log are per user."""

from __future__ import annotations

import json
import os
import stat
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from sleuth.auth.keys import KeyRing
from sleuth.auth.tokens import mint_token
from sleuth.auth.users import UserStore
from tests.integration.conftest import run_cli
from tests.integration.http_server import INIT, HttpServer, free_port, http_server, sse_json, token

FILES = {
    "alpha/alpha-guide.md": "# Alpha guide\n\nThe zeppelin hangar manual: lighthouse signal.\n",
    "alpha/alpha-notes.md": "# Alpha notes\n\nMore about the lighthouse keeper of alpha.\n",
    "beta/beta-plan.md": "# Beta covert plan\n\nThe quasar lighthouse signal of beta.\n",
}
#: Words of beta that must never reach alice.
BETA_WORDS = ("beta", "quasar", "covert")
#: What a client is told when its token lacks sleuth:write for the write tool {}.
WRITE_REFUSED = ("this token may only read: the tool {} needs the scope sleuth:write; ask for a token with it:"
                 " `sleuth users token NAME` without --read-only, for a user added with"
                 " `sleuth users add NAME --project P --write`")
#: Polls of the audit file (written by a thread, off the request path): a safety net, in seconds.
AUDIT_WAIT_S = 60.0


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An index of alpha and beta with users alice (alpha, read), bob (beta, read+write),
    carol (alpha, read+write) and dave, erin, frank, gina (alpha, read; revoked/removed/disabled later)."""
    root = tmp_path_factory.mktemp("http")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    idx = root / "idx"
    run_cli("index", str(root / "alpha"), "--project", "alpha", "--index", str(idx))
    run_cli("index", str(root / "beta"), "--project", "beta", "--index", str(idx))
    run_cli("users", "add", "alice", "--project", "alpha", "--index", str(idx))
    run_cli("users", "add", "bob", "--project", "beta", "--write", "--index", str(idx))
    run_cli("users", "add", "carol", "--project", "alpha", "--write", "--index", str(idx))
    for name in ("dave", "erin", "frank", "gina"):
        run_cli("users", "add", name, "--project", "alpha", "--index", str(idx))
    return idx


@pytest.fixture(scope="module")
def server(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with http_server(index, log_dir=tmp_path_factory.mktemp("logs")) as running:
        yield running


@pytest.fixture(scope="module")
def tokens(index: Path, server: HttpServer) -> dict[str, str]:
    return {name: token(index, name, server.url) for name in ("alice", "bob", "carol", "dave", "erin", "frank", "gina")}


def session(server: HttpServer, tok: str, calls: list[tuple[str, dict[str, Any]]], mode: str = "legacy") -> list[Any]:
    """A real SDK client session with ``tok``: the results of ``calls``, in order."""

    async def main() -> list[Any]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tok}"}, timeout=120) as http, \
                Client(streamable_http_client(server.url, http_client=http), mode=mode) as client:
            return [await client.call_tool(name, arguments) for name, arguments in calls]

    return anyio.run(main)


def text(result: Any) -> str:
    return "\n".join(block.text for block in result.content)


def answer(result: Any) -> str:
    """Everything a result shows the caller (text and structured content)."""
    return text(result) + json.dumps(result.structured_content or {})


@pytest.mark.parametrize("mode", ["legacy", "auto"])
def test_alice_reads_alpha_and_is_denied_beta(server: HttpServer, tokens: dict[str, str], mode: str) -> None:
    results = session(server, tokens["alice"], [
        ("search_project", {"project_id": "alpha", "query": "lighthouse signal"}),
        ("search_project", {"project_id": "beta", "query": "lighthouse signal"}),
        ("search_project", {"project_id": "gamma-missing", "query": "lighthouse signal"}),
        ("get_projects", {}),
        ("project_memory_search", {"project_id": "alpha", "query": "lighthouse"}),
        ("project_memory_search", {"project_id": "beta", "query": "lighthouse"}),
        ("project_memory_search", {"project_id": "gamma-missing", "query": "lighthouse"}),
        ("project_memory_search", {"project_id": "alpha", "include_project_ids": ["beta"], "query": "lighthouse"}),
        ("project_memory_search", {"all_projects": True, "query": "lighthouse signal"}),
        ("project_memory_doctor", {}),
        ("project_memory_doctor", {"project_id": "beta"}),
    ], mode=mode)
    alpha, beta, missing, projects, mem_alpha, mem_beta, mem_missing, mem_include, mem_all, doctor, doc_beta = results
    assert not alpha.is_error
    assert {i["item"]["title"] for i in alpha.structured_content["items"]} == {"Alpha guide", "Alpha notes"}
    assert beta.is_error and text(beta) == "Error executing tool search_project: project not found or access " \
        "denied: beta"
    assert text(missing) == text(beta).replace("beta", "gamma-missing")
    assert [p["project_id"] for p in projects.structured_content["items"]] == ["alpha"]
    assert not mem_alpha.is_error and mem_alpha.structured_content["meta"]["projects"] == ["alpha"]
    assert mem_beta.is_error and mem_beta.structured_content["error"] == {
        "code": "PROJECT_NOT_FOUND", "message": "project not found or access denied: beta"}
    assert mem_missing.structured_content["error"]["message"] == "project not found or access denied: gamma-missing"
    assert mem_include.is_error and mem_include.structured_content["error"]["message"].endswith(": beta")
    assert mem_all.structured_content["meta"]["projects"] == ["alpha"]
    assert not doctor.is_error and doc_beta.is_error
    report = doctor.structured_content["doctor"]  # nothing index-wide: when beta is written, where the index is
    assert (report["generation"], report["postings_generation"], report["index_dir"]) == (0, 0, "")
    assert report["catalog"] == {"backend": "sqlite", "location": ""} and "milvus" not in report  # nor where it is
    for result in (alpha, projects, mem_alpha, mem_all, doctor):
        shown = answer(result).lower()
        assert not any(word in shown for word in BETA_WORDS), shown


def test_bob_sees_only_beta(server: HttpServer, tokens: dict[str, str]) -> None:
    projects, alpha = session(server, tokens["bob"], [
        ("get_projects", {}), ("search_project", {"project_id": "alpha", "query": "lighthouse"})])
    assert [p["project_id"] for p in projects.structured_content["items"]] == ["beta"]
    assert alpha.is_error and "access denied: alpha" in text(alpha)


def test_a_user_id_argument_is_refused_as_unknown(server: HttpServer, tokens: dict[str, str]) -> None:
    search, memory = session(server, tokens["alice"], [
        ("search_project", {"project_id": "beta", "query": "lighthouse", "user_id": "bob"}),
        ("project_memory_search", {"project_id": "beta", "query": "lighthouse", "user_id": "bob"}),
    ])
    assert search.is_error and "unknown argument(s) user_id" in text(search)
    assert memory.is_error and memory.structured_content["error"]["code"] == "INVALID_ARGUMENT"
    assert "unknown argument(s) user_id" in memory.structured_content["error"]["message"]


def _challenge(response: httpx2.Response) -> str:
    return response.headers.get("www-authenticate", "")


def test_no_token_gets_401_with_the_metadata_challenge(server: HttpServer) -> None:
    response = server.post(INIT)
    assert response.status_code == 401
    assert _challenge(response) == (f'Bearer realm="sleuth", scope="sleuth:read", '
                                    f'resource_metadata="{server.metadata_url}"')


def test_every_bad_token_kind_gets_401(server: HttpServer, index: Path, tokens: dict[str, str]) -> None:
    key = KeyRing(index).current()
    alice = UserStore(index).get("alice")
    assert alice is not None
    expired = mint_token(key, alice, server.url, ttl_s=3600, now=time.time() - 86400)
    other_key = mint_token(b"\x01" * 32, alice, server.url, ttl_s=3600)
    wrong_audience = token(index, "alice", f"http://127.0.0.1:{free_port()}/mcp")
    other_path = token(index, "alice", f"{server.base}/other")
    # Revoked, removed and disabled users: their tokens worked until the change, and fail from the next request on.
    for name in ("dave", "erin", "frank"):
        assert server.post(INIT, tokens[name]).status_code == 200
    run_cli("users", "revoke", "dave", "--index", str(index))
    run_cli("users", "remove", "erin", "--index", str(index))
    run_cli("users", "disable", "frank", "--index", str(index))
    bad = {"junk": "not-a-jwt", "alg none": _alg_none(tokens["alice"]), "other key": other_key,
           "expired": expired, "wrong audience": wrong_audience, "other path": other_path,
           "revoked": tokens["dave"], "removed": tokens["erin"], "disabled": tokens["frank"]}
    for kind, tok in bad.items():
        response = server.post(INIT, tok)
        assert response.status_code == 401, kind
        description = "The access token expired" if kind == "expired" else \
            "The access token is invalid, revoked or not issued for this server"
        if kind in ("wrong audience", "other path"):  # minted here for another URL: told how to mint one for this
            description = (f"token audience does not match this server ({server.url}); "
                           f"mint one with `sleuth users token NAME --url {server.url}`")
        assert _challenge(response) == (f'Bearer realm="sleuth", error="invalid_token", error_description='
                                        f'"{description}", scope="sleuth:read", '
                                        f'resource_metadata="{server.metadata_url}"'), kind
        assert response.json() == {"error": "invalid_token", "error_description": description}
    assert server.post(INIT, headers={"authorization": "Basic YWxpY2U6eA=="}).status_code == 401
    run_cli("users", "enable", "frank", "--index", str(index))
    assert server.post(INIT, tokens["frank"]).status_code == 200
    fresh = token(index, "dave", server.url)
    assert server.post(INIT, fresh).status_code == 200


def _alg_none(tok: str) -> str:
    """``tok``'s claims under an unsigned ``alg: none`` header."""
    import base64

    header = base64.urlsafe_b64encode(b'{"alg":"none","typ":"JWT"}').rstrip(b"=").decode()
    return f"{header}.{tok.split('.')[1]}."


def test_a_write_tool_without_the_write_scope_gets_403(server: HttpServer, index: Path,
                                                       tokens: dict[str, str]) -> None:
    record = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "project_memory_record", "arguments": {"kind": "note", "title": "t", "body": "b",
                                                       "project_id": "alpha"}}}
    read_only_carol = token(index, "carol", server.url, "--read-only")
    for tok in (tokens["alice"], read_only_carol):
        response = server.post(record, tok)
        assert response.status_code == 403
        assert _challenge(response) == (
            'Bearer realm="sleuth", error="insufficient_scope", error_description="this call needs the scope(s) '
            f'sleuth:read sleuth:write", scope="sleuth:read sleuth:write", resource_metadata="{server.metadata_url}"')
        assert response.json() == {"jsonrpc": "2.0", "id": 7, "error": {
            "code": -32003, "message": WRITE_REFUSED.format("project_memory_record"),
            "data": {"error": "insufficient_scope", "error_description": "this call needs the scope(s) sleuth:read "
                     "sleuth:write", "scope": "sleuth:read sleuth:write"}}}
    forget = {**record, "params": {"name": "project_memory_forget", "arguments": {"record_id": "x"}}}
    batch = server.post([forget], tokens["alice"])  # inside a batch too
    assert (batch.status_code, batch.json()["error"]) == (403, "insufficient_scope")
    written, found, denied = session(server, tokens["carol"], [
        ("project_memory_record", {"kind": "note", "title": "Carol note", "body": "The heliograph of alpha.",
                                   "project_id": "alpha"}),
        ("project_memory_search", {"project_id": "alpha", "query": "heliograph"}),
        ("project_memory_record", {"kind": "note", "title": "x", "body": "y", "project_id": "beta"}),
    ])
    assert not written.is_error and written.structured_content["record"]["project_id"] == "alpha"
    assert [r["title"] for r in found.structured_content["results"]][:1] == ["Carol note"]
    assert denied.is_error and denied.structured_content["error"]["message"] == \
        "project not found or access denied: beta"


def test_the_sdk_client_shows_why_a_write_tool_is_refused(server: HttpServer, tokens: dict[str, str]) -> None:
    """A new user's trial: a read-only token calling a write tool got, in the SDK client, JSON-RPC
    -32603 "Server returned an error response" (the reason only in the server's audit log). The
    403 now carries a JSON-RPC error, which the SDK client raises as it is; the session goes on."""

    async def main(mode: str) -> tuple[list[tuple[int, str]], Any]:
        refusals = []
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tokens['alice']}"}, timeout=120) as http, \
                Client(streamable_http_client(server.url, http_client=http), mode=mode) as client:
            for name, arguments in (("project_memory_record", {"kind": "note", "title": "t", "body": "b"}),
                                    ("project_memory_forget", {"record_id": "x"})):
                try:
                    await client.call_tool(name, arguments)
                except MCPError as exc:
                    refusals.append((exc.error.code, exc.error.message))
            return refusals, await client.call_tool("project_memory_search", {"project_id": "alpha",
                                                                              "query": "lighthouse"})

    for mode in ("legacy", "auto"):
        refusals, found = anyio.run(main, mode)
        assert refusals == [(-32003, WRITE_REFUSED.format("project_memory_record")),
                            (-32003, WRITE_REFUSED.format("project_memory_forget"))], mode
        assert not found.is_error and found.structured_content["results"][0]["title"].startswith("Alpha"), mode


def test_the_protected_resource_metadata(server: HttpServer) -> None:
    expected = {"resource": server.url, "authorization_servers": [f"{server.base}/"],
                "scopes_supported": ["sleuth:read", "sleuth:write"], "bearer_methods_supported": ["header"],
                "resource_name": "sleuth"}
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        response = httpx2.get(server.base + path, timeout=60)
        assert response.status_code == 200 and response.json() == expected, path


def test_bad_origin_403_and_bad_host_421(server: HttpServer, tokens: dict[str, str]) -> None:
    evil = server.post(INIT, tokens["alice"], headers={"origin": "http://evil.example"})
    assert evil.status_code == 403 and evil.json()["error"] == "forbidden_origin"
    host = server.post(INIT, tokens["alice"], headers={"host": f"evil.example:{server.port}"})
    assert host.status_code == 421
    metadata = httpx2.get(server.metadata_url, headers={"host": "evil.example"}, timeout=60)
    assert metadata.status_code == 421
    for origin in (server.base, f"http://localhost:{server.port}"):
        assert server.post(INIT, tokens["alice"], headers={"origin": origin}).status_code == 200


def test_a_session_id_sent_with_another_users_token_is_refused(server: HttpServer, tokens: dict[str, str]) -> None:
    opened = server.post(INIT, tokens["alice"])
    assert opened.status_code == 200
    sid = opened.headers["mcp-session-id"]
    headers = {"mcp-session-id": sid, "mcp-protocol-version": "2025-06-18"}
    assert server.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, tokens["alice"],
                       headers=headers).status_code == 202
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_projects", "arguments": {}}}
    stolen = server.post(call, tokens["bob"], headers=headers)
    assert stolen.status_code == 404 and "alpha" not in stolen.text
    own = server.post(call, tokens["alice"], headers=headers)
    assert own.status_code == 200
    assert [p["project_id"] for p in sse_json(own)["result"]["structuredContent"]["items"]] == ["alpha"]


def test_query_status_and_cancel_see_only_the_callers_requests(server: HttpServer, tokens: dict[str, str]) -> None:
    (searched,) = session(server, tokens["alice"], [
        ("project_memory_search", {"project_id": "alpha", "query": "lighthouse", "request_id": "shared-17"})])
    assert not searched.is_error
    bob_status, bob_cancel, bob_search = session(server, tokens["bob"], [
        ("query_status", {"request_id": "shared-17"}), ("query_cancel", {"request_id": "shared-17"}),
        ("project_memory_search", {"project_id": "beta", "query": "lighthouse", "request_id": "shared-17"})])
    for result in (bob_status, bob_cancel):
        assert result.is_error and result.structured_content["error"] == {
            "code": "REQUEST_NOT_FOUND", "message": "request not found or access denied: shared-17",
            "request_id": "shared-17"}
    assert not bob_search.is_error  # the same request_id is bob's own
    (alice_status,) = session(server, tokens["alice"], [("query_status", {"request_id": "shared-17"})])
    status = alice_status.structured_content["query_status"]
    assert status["request_id"] == "shared-17" and status["query"] == "lighthouse"
    assert status["state"] == "completed"


def _audit_lines(index: Path, wanted: int, user: str | None = None) -> list[dict[str, Any]]:
    """The audit lines once there are ``wanted`` (with ``user``: ``wanted`` call lines of theirs,
    not counting refusal lines, which may come late: repeats are coalesced per window)."""
    path = index / "audit.jsonl"
    deadline = time.monotonic() + AUDIT_WAIT_S
    while True:
        lines = [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []
        counted = lines if user is None else [ln for ln in lines if ln["user"] == user and ln.get("event") != "refused"]
        if len(counted) >= wanted or time.monotonic() > deadline:
            return lines
        time.sleep(0.1)


def test_one_audit_line_per_call_without_query_texts(server: HttpServer, index: Path,
                                                     tokens: dict[str, str]) -> None:
    before = len(_audit_lines(index, 0))
    session(server, tokens["gina"], [("search_project", {"project_id": "alpha", "query": "zeppelin hangar"}),
                                     ("search_project", {"project_id": "beta", "query": "quasar"})])
    lines = [line for line in _audit_lines(index, 2, user="gina")[before:] if line["user"] == "gina"]
    assert [(ln["tool"], ln["project"], ln["result_count"], ln["ok"]) for ln in lines] == [
        ("search_project", "alpha", 1, True), ("search_project", "beta", None, False)]
    assert all(set(ln) >= {"time", "user", "tool", "project", "result_count", "ms"} and "query" not in ln
               for ln in lines)
    assert stat.S_IMODE(os.stat(index / "audit.jsonl").st_mode) == 0o600


def test_rate_limit_size_limit_and_audited_queries(index: Path, tmp_path: Path) -> None:
    with http_server(index, "--rate-limit", "8/hour", "--max-request-bytes", "2048", "--audit-queries",
                     log_dir=tmp_path) as limited:
        alice, gina = token(index, "alice", limited.url), token(index, "gina", limited.url)
        assert [limited.post(INIT, alice).status_code for _ in range(8)] == [200] * 8
        refused = limited.post(INIT, alice)
        assert refused.status_code == 429 and int(refused.headers["retry-after"]) > 0
        assert limited.post(INIT, gina).status_code == 200  # per token
        big = {"jsonrpc": "2.0", "id": 1, "method": "tools/call",
               "params": {"name": "search_project", "arguments": {"project_id": "alpha", "query": "x" * 3000}}}
        assert limited.post(big, gina).status_code == 413
        before = len(_audit_lines(index, 0))
        calls_before = len([ln for ln in _audit_lines(index, 0)[:before] if ln["user"] == "gina"
                            and ln.get("event") != "refused"])
        session(limited, gina, [("search_project", {"project_id": "alpha", "query": "zeppelin hangar"})])
        (line,) = [ln for ln in _audit_lines(index, calls_before + 1, user="gina")[before:]
                   if ln["user"] == "gina" and ln.get("event") != "refused"]  # the 413's line may come late
        assert line["query"] == "zeppelin hangar" and line["result_count"] == 1


def test_users_files_are_private_and_the_cli_checks_its_input(index: Path) -> None:
    for name in ("users.json", "token-signing.key"):
        assert stat.S_IMODE(os.stat(index / name).st_mode) == 0o600, name
    listed = json.loads(run_cli("users", "list", "--format", "json", "--index", str(index)).stdout)
    alice = next(u for u in listed["users"] if u["name"] == "alice")
    assert (alice["projects"], alice["scopes"], alice["disabled"]) == (["alpha"], ["sleuth:read"], False)
    assert "generation" not in alice
    unknown = run_cli("users", "add", "zed", "--project", "nope", "--index", str(index), check=False)
    assert unknown.returncode == 2 and "unknown project(s): nope" in unknown.stderr
    # the Inbox may be granted before its first record (as `search --project inbox` names it then)
    inbox = run_cli("users", "add", "ines", "--project", "inbox", "--index", str(index)).stdout
    assert inbox.startswith("added ines: projects inbox; scopes sleuth:read")
    bad_name = run_cli("users", "add", "../x", "--project", "alpha", "--index", str(index), check=False)
    assert bad_name.returncode == 2 and "invalid user name" in bad_name.stderr
    twice = run_cli("users", "add", "alice", "--project", "alpha", "--index", str(index), check=False)
    assert twice.returncode == 2 and "exists" in twice.stderr
    missing = run_cli("users", "token", "nobody", "--index", str(index), check=False)
    assert missing.returncode == 2 and "no user 'nobody'" in missing.stderr
    ttl = run_cli("users", "token", "alice", "--ttl", "400d", "--index", str(index), check=False)
    assert ttl.returncode == 2 and "366 days" in ttl.stderr


def test_serving_refuses_unsafe_or_empty_settings(index: Path, tmp_path: Path) -> None:
    wildcard = run_cli("serve", "--http", f"0.0.0.0:{free_port()}", "--index", str(index), check=False)
    assert wildcard.returncode == 2 and "--url" in wildcard.stderr
    http_only = run_cli("serve", "--rate-limit", "5/s", "--index", str(index), check=False)
    assert http_only.returncode == 2 and "only apply with --http" in http_only.stderr
    empty = tmp_path / "empty"
    (empty / "docs").mkdir(parents=True)
    (empty / "docs" / "a.md").write_text("# A\n\ntext\n")
    run_cli("index", str(empty / "docs"), "--project", "docs", "--index", str(empty / "idx"))
    no_users = run_cli("serve", "--http", str(free_port()), "--index", str(empty / "idx"), check=False)
    assert no_users.returncode == 2 and "no users" in no_users.stderr
    run_cli("users", "add", "x", "--project", "docs", "--index", str(empty / "idx"))
    os.chmod(empty / "idx" / "users.json", 0o644)
    shared = run_cli("serve", "--http", str(free_port()), "--index", str(empty / "idx"), check=False)
    assert shared.returncode == 2 and "chmod 600" in shared.stderr


def test_index_free_profiles_serve_verified_users_only(index: Path, tmp_path: Path) -> None:
    with http_server(index, "--tools", "text", log_dir=tmp_path) as text_only:
        (found,) = session(text_only, token(index, "alice", text_only.url), [
            ("search_documents", {"query": "lighthouse", "documents": ["the lighthouse keeper", "a quasar"]})])
        assert found.structured_content["status"] == "ok"
        assert [r["doc_id"] for r in found.structured_content["results"]] == ["0"]
        assert text_only.post(INIT).status_code == 401


def test_ids_from_beta_answer_alice_like_missing_ones(server: HttpServer, tokens: dict[str, str]) -> None:
    search, memory, record = session(server, tokens["bob"], [
        ("search_project", {"project_id": "beta", "query": "quasar lighthouse"}),
        ("project_memory_search", {"project_id": "beta", "query": "quasar lighthouse"}),
        ("project_memory_record", {"kind": "note", "title": "Bob note", "body": "quasar notes", "project_id": "beta"}),
    ])
    item = search.structured_content["items"][0]["markdown_item_id"]
    handle = memory.structured_content["results"][0]["body_handle"]
    record_id = record.structured_content["record"]["record_id"]
    missing_item, missing_handle, missing_record = "0" * 16, handle[:-4] + "0000", "f" * 16
    results = session(server, tokens["carol"], [
        ("get_notebook", {"project_id": "alpha", "item_id": item}),
        ("get_notebook", {"project_id": "alpha", "item_id": missing_item}),
        ("project_memory_read", {"body_handle": handle}),
        ("project_memory_read", {"body_handle": missing_handle}),
        ("project_memory_forget", {"record_id": record_id}),
        ("project_memory_forget", {"record_id": missing_record}),
        ("project_memory_record", {"kind": "note", "title": "t", "body": "b", "record_id": record_id}),
    ])
    hidden_nb, missing_nb, hidden_body, missing_body, hidden_forget, missing_forget, hidden_revise = results
    assert text(hidden_nb).replace(item, "ID") == text(missing_nb).replace(missing_item, "ID")
    assert "not found or access denied" in text(hidden_nb)
    assert hidden_body.is_error and missing_body.is_error
    assert text(hidden_body).replace(handle, "H") == text(missing_body).replace(missing_handle, "H")
    assert hidden_forget.structured_content["error"]["message"] == f"record not found or access denied: {record_id}"
    assert missing_forget.structured_content["error"]["message"].replace(missing_record, record_id) == \
        hidden_forget.structured_content["error"]["message"]
    assert hidden_revise.is_error and "not found or access denied" in text(hidden_revise)
    for result in results:
        assert not any(word in answer(result).lower() for word in ("quasar", "bob note", "covert"))
    (still,) = session(server, tokens["bob"], [
        ("project_memory_search", {"project_id": "beta", "query": "quasar notes"})])
    assert "Bob note" in [r["title"] for r in still.structured_content["results"]]


def test_a_remote_caller_cannot_name_an_item_by_its_server_path(server: HttpServer, index: Path,
                                                                 tokens: dict[str, str]) -> None:
    """Attack session 32 (low): get_notebook over HTTP took an item's absolute server path, so a caller
    could confirm a guess at where the server keeps its files. It reads as an id naming nothing."""
    real, made_up = str(index.parent / "alpha" / "alpha-guide.md"), str(index.parent / "alpha" / "nothing.md")
    by_path, by_made_up, relative = session(server, tokens["alice"], [
        ("get_notebook", {"project_id": "alpha", "item_id": real}),
        ("get_notebook", {"project_id": "alpha", "item_id": made_up}),
        ("get_notebook", {"project_id": "alpha", "item_id": "alpha-guide.md"})])
    assert by_path.is_error and by_made_up.is_error and not relative.is_error
    assert text(by_path).replace(real, "P") == text(by_made_up).replace(made_up, "P")
    assert "zeppelin" in answer(relative) and "zeppelin" not in answer(by_path)


def tool_names(server: HttpServer, tok: str) -> list[str]:
    """The tools a real SDK client session with ``tok`` is offered."""

    async def main() -> list[str]:
        async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {tok}"}, timeout=120) as http, \
                Client(streamable_http_client(server.url, http_client=http), mode="legacy") as client:
            return sorted(t.name for t in (await client.list_tools()).tools)

    return anyio.run(main)


def test_a_read_only_token_is_not_offered_the_write_tools(server: HttpServer, tokens: dict[str, str]) -> None:
    offered, writer = tool_names(server, tokens["alice"]), tool_names(server, tokens["carol"])
    assert set(writer) - set(offered) == {"project_memory_record", "project_memory_forget"}
    assert "project_memory_search" in offered


def test_a_remote_caller_sees_no_absolute_server_path(server: HttpServer, index: Path,
                                                      tokens: dict[str, str]) -> None:
    projects, doctor, written = session(server, tokens["carol"], [
        ("get_projects", {}),
        ("project_memory_doctor", {}),
        ("project_memory_record", {"kind": "note", "title": "Path check", "body": "Where am I?",
                                   "project_id": "alpha"}),
    ])
    shown = [answer(r) for r in (projects, doctor, written)]
    server_folder = str(index.parent)
    assert all(server_folder not in s and str(index) not in s for s in shown), shown
    (alpha,) = [p for p in projects.structured_content["items"] if p["project_id"] == "alpha"]
    assert alpha["roots"][0] == "alpha"  # the root's folder name, as results label it
    assert written.structured_content["record"]["file"].startswith("alpha/notes/")
