"""The per-run token of `sleuth ui` (an attack: every account of the machine could read the whole
index through the loopback page). Over a real server process, at the HTTP level: an `/api/` call
without the token, or with a wrong one, is refused (401, a sentence saying to open the printed URL);
the page's own files (no data of the index) are served to anyone; a bearer header with the token is
served; no cookie is ever set (a second attack round: a cookie reaches every port of the host, so
another local account's server on another port read the first version's cookie). In headless
chromium: the printed URL opens the page, the token moves to the tab's session storage and out of the
address bar, and a tab without it is asked for it. And the attack's own repro: another uid asking the
API gets nothing of the index."""

from __future__ import annotations

import http.client
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from sleuth.ui.secret import (
    NO_TOKEN_MESSAGE,
    SERVE,
    WRONG_TOKEN_MESSAGE,
    TokenVerdict,
    guarded,
    new_token,
    same_token,
    token_verdict,
    tokened_url,
)
from tests.ui.conftest import UiServer, open_page

DATA_PATHS = ("/api/search?q=zebrafinch", "/api/status", "/api/facets", "/api/document?id=fusion.md",
              "/api/nothing", "//api/status", "/API/status")
PAGE_PATHS = ("/", "/static/app.js", "/static/index.html")


def request(server: UiServer, path: str, headers: dict[str, str] | None = None,
            method: str = "GET") -> tuple[int, dict[str, str], bytes]:
    """One request, redirects not followed: (status, headers lowercased, body)."""
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    try:
        conn.request(method, path, headers=headers or {})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        conn.close()


def assert_refused(server: UiServer, headers: dict[str, str], message: str) -> None:
    for path in DATA_PATHS:
        status, got, body = request(server, path, headers)
        assert status == 401, path
        assert got["cache-control"] == "no-store" and got["www-authenticate"] == 'Bearer realm="sleuth ui"'
        assert (got["content-type"], json.loads(body)) == ("application/json", {"error": message}), path
        assert "set-cookie" not in got


def test_the_printed_url_holds_a_fresh_token(ui_server: UiServer, ui_index: Path) -> None:
    assert ui_server.url == f"http://127.0.0.1:{ui_server.port}/?token={ui_server.token}"
    assert len(ui_server.token) == 43 and set(ui_server.token) <= set(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_")
    other = UiServer(ui_index)
    try:
        assert other.token != ui_server.token
        # one run's token is refused by another run
        assert other.get("/api/status", {"Authorization": f"Bearer {ui_server.token}"}) == (
            401, {"error": WRONG_TOKEN_MESSAGE})
        assert other.get("/api/status")[0] == 200
    finally:
        other.stop()


def test_without_a_token_no_data_is_served(ui_server: UiServer) -> None:
    assert_refused(ui_server, {}, NO_TOKEN_MESSAGE)
    assert_refused(ui_server, {"Cookie": f"sleuth-ui-{ui_server.port}={ui_server.token}"}, NO_TOKEN_MESSAGE)
    # the token in the query is for the page's script, never taken by the server
    assert_refused(ui_server, {}, NO_TOKEN_MESSAGE)
    status, got, _ = request(ui_server, f"/api/status?token={ui_server.token}")
    assert status == 401 and "set-cookie" not in got


def test_a_wrong_token_is_refused(ui_server: UiServer) -> None:
    wrong = new_token()
    assert_refused(ui_server, {"Authorization": f"Bearer {wrong}"}, WRONG_TOKEN_MESSAGE)
    assert_refused(ui_server, {"Authorization": f"Basic {ui_server.token}"}, WRONG_TOKEN_MESSAGE)
    assert_refused(ui_server, {"Authorization": f"Bearer {ui_server.token}x"}, WRONG_TOKEN_MESSAGE)


def test_the_page_files_hold_no_data_and_set_no_cookie(ui_server: UiServer) -> None:
    for path in PAGE_PATHS + (f"/?token={ui_server.token}",):
        status, got, body = request(ui_server, path)
        assert status == 200, path
        assert "set-cookie" not in got and b"zebrafinch" not in body and b"okapiwombat" not in body
    status, _, body = request(ui_server, f"/?token={ui_server.token}")
    assert b'<script src="static/app.js"></script>' in body and ui_server.token.encode() not in body


def test_a_bearer_header_is_served(ui_server: UiServer) -> None:
    for headers in ({"Authorization": f"Bearer {ui_server.token}"}, {"Authorization": f"bearer  {ui_server.token} "}):
        status, got, body = request(ui_server, "/api/search?q=zebrafinch", headers)
        assert status == 200 and "set-cookie" not in got
        assert sorted(h["path"] for h in json.loads(body)["hits"]) == ["fusion.md", "notes/lanes.md", "secret.md"]
        status, _, body = request(ui_server, "/api/status", headers)
        assert status == 200 and json.loads(body)["documents"] > 0
    # the Host and Origin checks still come first, token or not
    assert request(ui_server, "/api/status", {"Authorization": f"Bearer {ui_server.token}",
                                              "Host": "evil.example"})[0] == 403
    assert request(ui_server, "/api/status", {"Authorization": f"Bearer {ui_server.token}",
                                              "Origin": "http://evil.example"})[0] == 403


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("setpriv") or not shutil.which("curl"),
                    reason="needs root, setpriv and curl to ask as another uid")
def test_another_account_of_the_machine_reads_nothing(ui_server: UiServer) -> None:
    """The attack's repro (uid 65534 asking with curl) now answers 401 and no hit."""
    for path in ("/api/search?q=zebrafinch", "/api/status"):
        proc = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "curl", "-s",
                               "-w", "\n%{http_code}", f"{ui_server.base.rstrip('/')}{path}"],
                              capture_output=True, text=True, timeout=60)
        body, code = proc.stdout.rsplit("\n", 1)
        assert (code, json.loads(body)) == ("401", {"error": NO_TOKEN_MESSAGE})


def test_chromium_opens_the_printed_url_and_keeps_the_token_out_of_it(browser: Any, ui_server: UiServer) -> None:
    context = browser.new_context()
    tab = context.new_page()
    failures: list[str] = []
    tab.on("pageerror", lambda exc: failures.append(str(exc)))
    seen: list[str] = []
    tab.on("request", lambda r: seen.append(r.url))
    try:
        open_page(tab, ui_server.url + "#/search?q=okapiwombat")
        tab.wait_for_selector(".hit")
        assert tab.url == ui_server.base + "#/search?q=okapiwombat"  # the token left the address bar
        assert tab.evaluate("window.sessionStorage.getItem('sleuth.token')") == ui_server.token
        assert context.cookies() == [] and tab.evaluate("document.cookie") == ""
        assert [u for u in seen if ui_server.token in u] == [ui_server.url]  # the page request only (no fragment)
        assert any("/api/search?" in u for u in seen)
        tab.reload()  # the tab keeps its token
        tab.wait_for_selector(".hit")
        assert failures == []
    finally:
        context.close()
    fresh = browser.new_context()  # no token: the page loads and asks for it, no data shown
    try:
        tab = fresh.new_page()
        response = tab.goto(ui_server.base)
        assert response is not None and response.status == 200
        tab.wait_for_selector("#token-view:not([hidden])")
        assert tab.inner_text("#token-why") == NO_TOKEN_MESSAGE
    finally:
        fresh.close()


def scope(path: str = "/", **headers: str) -> dict:
    return {"type": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
            "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]}


def test_token_verdicts() -> None:
    token = "abc-DEF_123"
    assert tokened_url("http://127.0.0.1:8765/", token) == "http://127.0.0.1:8765/?token=abc-DEF_123"
    assert token_verdict(scope("/"), token) == SERVE and token_verdict(scope("/static/app.js"), token) == SERVE
    assert token_verdict(scope("/api/status"), token) == TokenVerdict(401, message=NO_TOKEN_MESSAGE)
    assert token_verdict(scope("/api/status", authorization=f"Bearer {token}"), token) == SERVE
    assert token_verdict(scope("/api/status", authorization="Bearer bad"), token) == TokenVerdict(
        401, message=WRONG_TOKEN_MESSAGE)
    assert token_verdict(scope("/api/status", cookie=f"sleuth-ui-1={token}"), token).status == 401
    assert [guarded(p) for p in ("/api/x", "//api/x", "/API/x", "/apix", "/", "/static/a.js",
                                 "http://127.0.0.1:1/api/x", "")] == [True, True, True, False, False, False, True, True]
    assert same_token(token, token) and not same_token(token + "x", token) and not same_token("é", token)
    assert not same_token(token * 100, token)
