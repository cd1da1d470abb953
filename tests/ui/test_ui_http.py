"""The page at ``/ui`` of a real `sleuth serve --http` process, behind its bearer tokens: no token
gets 401; alice's token sees only alpha and bob's only beta (facets, search, documents, the index
page), another user's project answered exactly like a missing one; a token for another URL is told
how to mint one for this server; and headless chromium enters a token once and searches."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.integration.conftest import run_cli
from tests.integration.http_server import HttpServer, free_port, http_server, token
from tests.ui.test_ui_browser import wait_until

FILES = {
    "alpha/alpha-guide.md": "# Alpha guide\n\nThe zeppelin hangar manual: lighthouse signal.\n",
    "alpha/alpha-notes.md": "# Alpha notes\n\nMore about the lighthouse keeper of alpha.\n",
    "beta/beta-plan.md": "# Beta covert plan\n\nThe quasar lighthouse signal of beta.\n",
}
#: Words of beta that must never reach alice.
BETA_WORDS = ("beta", "quasar", "covert")
#: A generous safety net for one answer (the machine is shared), in seconds.
ANSWER_WAIT_S = 120.0


@pytest.fixture(scope="module")
def index(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """alpha and beta; alice holds alpha, bob holds beta."""
    root = tmp_path_factory.mktemp("http-ui")
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text, encoding="utf-8")
    idx = root / "idx"
    run_cli("index", str(root / "alpha"), "--project", "alpha", "--index", str(idx))
    run_cli("index", str(root / "beta"), "--project", "beta", "--index", str(idx))
    run_cli("users", "add", "alice", "--project", "alpha", "--index", str(idx))
    run_cli("users", "add", "bob", "--project", "beta", "--index", str(idx))
    return idx


@pytest.fixture(scope="module")
def server(index: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[HttpServer]:
    with http_server(index, "--audit-queries", log_dir=tmp_path_factory.mktemp("logs")) as running:
        yield running


@pytest.fixture(scope="module")
def tokens(index: Path, server: HttpServer) -> dict[str, str]:
    return {name: token(index, name, server.url) for name in ("alice", "bob")}


def api(server: HttpServer, path: str, tok: str | None = None, **params: str) -> httpx2.Response:
    headers = {"authorization": f"Bearer {tok}"} if tok else {}
    return httpx2.get(f"{server.base}/ui/api/{path}", params=params, headers=headers, timeout=ANSWER_WAIT_S)


def test_the_page_is_served_but_its_api_needs_a_token(server: HttpServer) -> None:
    page = httpx2.get(f"{server.base}/ui/", timeout=ANSWER_WAIT_S)
    assert page.status_code == 200 and '<input id="token"' in page.text
    assert "default-src 'none'" in page.headers["content-security-policy"]
    moved = httpx2.get(f"{server.base}/ui", timeout=ANSWER_WAIT_S)
    assert (moved.status_code, moved.headers["location"]) == (308, "/ui/")
    for path in ("facets", "search", "document", "status"):
        answer = api(server, path, q="lighthouse", id="x")
        assert answer.status_code == 401, path
        assert answer.json() == {"error": "a bearer token is required"}
        assert answer.headers["www-authenticate"] == (
            f'Bearer realm="sleuth", scope="sleuth:read", resource_metadata="{server.metadata_url}"')
        assert answer.headers["cache-control"] == "no-store"
    junk = api(server, "facets", "not-a-jwt")
    assert junk.status_code == 401
    assert junk.json() == {"error": "The access token is invalid, revoked or not issued for this server"}
    # The page never writes: POST is refused before any token check.
    assert httpx2.post(f"{server.base}/ui/api/search", timeout=ANSWER_WAIT_S).status_code == 405


def test_a_token_for_another_url_is_told_how_to_mint_one_here(server: HttpServer, index: Path) -> None:
    elsewhere = token(index, "alice", f"http://127.0.0.1:{free_port()}/mcp")
    answer = api(server, "facets", elsewhere)
    assert answer.status_code == 401
    assert answer.json() == {"error": f"token audience does not match this server ({server.url}); mint one with "
                                      f"`sleuth users token NAME --url {server.url}`"}
    assert answer.headers["www-authenticate"].startswith(
        f'Bearer realm="sleuth", error="invalid_token", error_description="token audience does not match this '
        f'server ({server.url}); mint one with `sleuth users token NAME --url {server.url}`"')
    # The server says at start which URL tokens must name; the CLI's help says what --url is.
    assert f"tokens for it: sleuth users token NAME --url {server.url}" in server.log.read_text()
    help_text = " ".join(run_cli("users", "token", "--help").stdout.split())
    assert "the server's --url, else http://HOST:PORT/mcp of its --http" in help_text
    assert "A server refuses a token for another URL with 401, naming its own URL." in help_text


def test_each_user_sees_only_their_projects(server: HttpServer, index: Path, tokens: dict[str, str]) -> None:
    alice, bob = tokens["alice"], tokens["bob"]
    assert api(server, "facets", alice).json()["projects"] == ["alpha"]
    assert api(server, "facets", bob).json()["projects"] == ["beta"]
    found = api(server, "search", alice, q="lighthouse signal").json()
    assert sorted(h["path"] for h in found["hits"]) == ["alpha-guide.md", "alpha-notes.md"]
    assert {h["project"] for h in found["hits"]} == {"alpha"}
    assert not any(word in json.dumps(found).lower() for word in BETA_WORDS)
    theirs = api(server, "search", bob, q="lighthouse signal").json()
    assert [h["path"] for h in theirs["hits"]] == ["beta-plan.md"]
    beta_doc = theirs["hits"][0]["doc_id"]
    # Another user's project, or one of its documents, is answered word for word like a missing one.
    denied = api(server, "search", alice, q="lighthouse", project="beta")
    missing = api(server, "search", alice, q="lighthouse", project="gamma")
    assert (denied.status_code, denied.json()) == (404, {"error": "project not found: 'beta'"})
    assert (missing.status_code, missing.json()) == (404, {"error": "project not found: 'gamma'"})
    hidden = api(server, "document", alice, id=beta_doc)
    unknown = api(server, "document", alice, id="0" * 16)
    assert hidden.status_code == unknown.status_code == 404
    assert hidden.json()["error"].replace(beta_doc, "ID") == unknown.json()["error"].replace("0" * 16, "ID")
    assert api(server, "document", bob, id=beta_doc).json()["path"] == "beta-plan.md"
    # The index page: alice's project only, and nothing index-wide (folder, generations, writer, counts).
    status = api(server, "status", alice).json()
    assert [p["project_id"] for p in status["projects"]] == ["alpha"]
    assert {c["project"] for c in status["coverage"]} == {"alpha"}
    assert (status["documents"], status["index_dir"], status["generation"], status["writer"]) == (2, "", None, None)
    assert status["embedding"]["blocks"] is None
    assert str(index) not in json.dumps(status)


def test_search_hits_and_documents_name_their_root_by_its_folder_only(server: HttpServer, index: Path,
                                                                      tokens: dict[str, str]) -> None:
    """Attack session 32 (medium): /ui/api/search's hits and /ui/api/document gave a remote user each
    document's ``root`` as the server's absolute folder (``/srv/notes/alpha``), which the index
    page, the facets and the MCP tools hide. Now the folder's name, as MCP's ``root`` shows it."""
    found = api(server, "search", tokens["alice"], q="lighthouse signal").json()
    assert [h["root"] for h in found["hits"]] == ["alpha", "alpha"]
    doc = api(server, "document", tokens["alice"], id=found["hits"][0]["doc_id"]).json()
    assert (doc["root"], doc["path"]) == ("alpha", found["hits"][0]["path"])
    assert str(index.parent) not in json.dumps(found) + json.dumps(doc)


def test_a_remote_user_cannot_name_a_document_by_its_server_path(server: HttpServer, index: Path,
                                                                   tokens: dict[str, str]) -> None:
    """Attack session 32 (low): /ui/api/document took a document's absolute server path, so a remote
    user could confirm a guess at where the server keeps its files. It now reads as a path naming
    nothing, word for word; the path as results show it still works."""
    real = str(index.parent / "alpha" / "alpha-guide.md")
    made_up = str(index.parent / "alpha" / "no-such.md")
    answers = [api(server, "document", tokens["alice"], id=ref) for ref in (real, made_up)]
    assert [a.status_code for a in answers] == [404, 404]
    assert [a.json()["error"] for a in answers] == [
        f"document not found: {ref!r} (give a document id, a block id or a path relative to its root, as "
        "`sleuth search` shows them)" for ref in (real, made_up)]
    assert api(server, "document", tokens["alice"], id="alpha-guide.md").json()["path"] == "alpha-guide.md"


def test_ui_calls_are_audited_per_user(server: HttpServer, index: Path, tokens: dict[str, str]) -> None:
    import time

    api(server, "search", tokens["alice"], q="zeppelin hangar")
    deadline = time.monotonic() + ANSWER_WAIT_S
    while time.monotonic() < deadline:
        lines = [json.loads(line) for line in (index / "audit.jsonl").read_text().splitlines()]
        mine = [line for line in lines if line.get("tool") == "ui.search" and line.get("query") == "zeppelin hangar"]
        if mine:
            break
        time.sleep(0.1)
    assert [(m["user"], m["result_count"], m["ok"]) for m in mine] == [("alice", 1, True)]


def test_chromium_enters_a_token_once_and_searches(browser: Any, server: HttpServer, tokens: dict[str, str]) -> None:
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    tab = context.new_page()
    failures: list[str] = []
    tab.on("pageerror", lambda exc: failures.append(str(exc)))
    seen: list[tuple[str, str | None]] = []
    tab.on("request", lambda request: seen.append((request.url, request.headers.get("authorization"))))
    try:
        tab.goto(f"{server.base}/ui/")
        tab.wait_for_selector("#token-view:not([hidden])")
        assert tab.evaluate("document.activeElement.id") == "token"
        assert "a bearer token is required" in tab.inner_text("#token-why")
        tab.keyboard.type(tokens["alice"])
        tab.keyboard.press("Enter")
        tab.wait_for_selector("html[data-ready='1']")
        assert tab.is_hidden("#token-view") and tab.is_visible("#search-view")
        options = tab.eval_on_selector_all("#f-project option", "els => els.map(e => e.value)")
        assert options == ["", "alpha"]
        tab.focus("#q")
        tab.keyboard.type("lighthouse signal")
        tab.keyboard.press("Enter")
        wait_until(tab, "document.querySelectorAll('.hit').length === 2")
        titles = tab.eval_on_selector_all(".hit h3", "els => els.map(e => e.textContent)")
        assert sorted(titles) == ["Alpha guide", "Alpha notes"]
        # Kept in this tab's session storage, sent as a header; never in a URL, never a cookie.
        assert tab.evaluate("sessionStorage.getItem('sleuth.token')") == tokens["alice"]
        assert tab.evaluate("document.cookie") == "" and context.cookies() == []
        api_calls = [(url, auth) for url, auth in seen if "/ui/api/" in url]
        assert api_calls and all(tokens["alice"] not in url for url, _ in seen)
        assert api_calls[-1][1] == f"Bearer {tokens['alice']}"
        # A reload in the same tab asks for nothing; forgetting the token asks again.
        tab.reload()
        tab.wait_for_selector("html[data-ready='1']")
        assert tab.is_hidden("#token-view")
        tab.click("#sign-out")
        tab.wait_for_selector("#token-view:not([hidden])")
        assert tab.evaluate("sessionStorage.getItem('sleuth.token')") is None
    finally:
        context.close()
    assert failures == []


def test_a_path_outside_the_users_roots_is_not_found_alike_and_a_nul_is_refused(
        index: Path, server: HttpServer, tokens: dict[str, str], tmp_path: Path) -> None:
    """An attack: alice's /ui/api/document of a path through a symlink loop outside every root got
    500 (other paths 404: the server resolved any path it was given and told loops apart), and of
    a path with a NUL byte 500. Now every path outside her roots, in beta's root or in a loop in
    her own, answers the same 404, and a NUL byte 400 in words."""
    root = index.parent
    loops = [tmp_path / "loop", root / "beta" / "loop", root / "alpha" / "loop"]
    for loop in loops:
        loop.symlink_to(loop)
    try:
        refs = [str(tmp_path / "loop" / "x.md"), str(tmp_path / "nothing.md"), str(root / "beta" / "loop" / "x.md"),
                str(root / "beta" / "beta-plan.md"), str(root / "alpha" / "loop" / "x.md")]
        for ref in refs:
            answer = api(server, "document", tokens["alice"], id=ref)
            assert (answer.status_code, answer.json()) == (404, {"error": (
                f"document not found: {ref!r} (give a document id, a block id or a path relative to its root, as "
                "`sleuth search` shows them)")}), ref
        nul = api(server, "document", tokens["alice"], id="/tmp/a\0b")
        assert (nul.status_code, nul.json()) == (400, {"error": "a document reference cannot hold a NUL byte, got "
                                                                "'/tmp/a\\x00b'"})
        # her own document by its server path too, since attack session 32 (a remote user names
        # documents as results show them: test_a_remote_user_cannot_name_a_document_by_its_server_path)
        own_ref = str(root / "alpha" / "alpha-guide.md")
        own = api(server, "document", tokens["alice"], id=own_ref)
        assert (own.status_code, own.json()) == (404, {"error": (
            f"document not found: {own_ref!r} (give a document id, a block id or a path relative to its root, as "
            "`sleuth search` shows them)")})
        assert api(server, "document", tokens["alice"], id="alpha-guide.md").json()["path"] == "alpha-guide.md"
    finally:
        for loop in loops:
            loop.unlink()
