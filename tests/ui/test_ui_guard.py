"""The pure parts of `sleuth ui`: the Host/Origin guard's decisions, locations, skip reasons."""

from __future__ import annotations

import asyncio
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from sleuth.ui.api import skip_reason_key
from sleuth.ui.guard import HostOriginGuard, allowed_hosts, allowed_origins, refusal
from sleuth.ui.locations import PageIndex, location_label

PORT = 8765
HOSTS, ORIGINS = allowed_hosts(PORT), allowed_origins(PORT)


def scope(path: str = "/api/search", method: str = "GET", **headers: str) -> dict:
    return {"type": "http", "path": path, "method": method,
            "headers": [(k.replace("_", "-").encode(), v.encode()) for k, v in headers.items()]}


def test_loopback_hosts_at_the_port_only() -> None:
    assert HOSTS == {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"}
    assert ORIGINS == {"http://127.0.0.1:8765", "http://localhost:8765", "http://[::1]:8765"}
    assert allowed_hosts(80) == {"127.0.0.1:80", "localhost:80", "[::1]:80", "127.0.0.1", "localhost", "[::1]"}
    for host in ("127.0.0.1:8765", "LOCALHOST:8765", "[::1]:8765"):
        assert refusal(scope(host=host), HOSTS, ORIGINS) is None
    for host in ("", "127.0.0.1", "127.0.0.1:8766", "evil.example:8765", "127.0.0.1.nip.io:8765", "0.0.0.0:8765",
                 "127.0.0.2:8765"):
        assert refusal(scope(host=host), HOSTS, ORIGINS) == (
            403, "This page is served to its own loopback address only (the Host header names another).")


def test_a_repeated_host_or_origin_is_refused() -> None:
    twice = {"type": "http", "path": "/", "method": "GET",
             "headers": [(b"host", b"127.0.0.1:8765"), (b"host", b"evil.example")]}
    assert refusal(twice, HOSTS, ORIGINS) == (400, "The host header was sent more than once.")


def test_api_calls_from_other_origins_are_refused() -> None:
    assert refusal(scope(host="127.0.0.1:8765", origin="http://localhost:8765"), HOSTS, ORIGINS) is None
    for origin in ("http://evil.example", "null", "http://127.0.0.1:9999", "https://127.0.0.1:8765"):
        assert refusal(scope(host="127.0.0.1:8765", origin=origin), HOSTS, ORIGINS) == (
            403, "Requests from other sites' pages are refused (the Origin header names another site).")
    assert refusal(scope(host="127.0.0.1:8765", sec_fetch_site="cross-site"), HOSTS, ORIGINS) == (
        403, "Requests from other sites' pages are refused.")
    # the page itself may be opened from a link on another site; only its API is guarded by origin
    assert refusal(scope("/", host="127.0.0.1:8765", origin="http://evil.example"), HOSTS, ORIGINS) is None


def test_only_reads_are_served() -> None:
    for method in ("POST", "PUT", "DELETE", "OPTIONS"):
        assert refusal(scope(method=method, host="127.0.0.1:8765"), HOSTS, ORIGINS) == (
            405, "This server only answers GET requests.")


def test_pdf_pages_of_offsets() -> None:
    text = "page one\n\f\npage two\n\f\npage three"
    index = PageIndex(text)
    assert index.pages == 3
    assert [index.page_at(text.index(w)) for w in ("one", "two", "three")] == [1, 2, 3]
    assert index.page_at(len(text) + 10) == 3
    assert PageIndex("").pages == 1


@pytest.mark.parametrize(("args", "label"), [
    (("markdown", ["A", "B"], (3, 9)), "§ A > B · lines 3-9"),
    (("markdown", [], (4, 4)), "line 4"),
    (("code", [], (0, 0)), ""),
    (("pdf", ["page 2"], (600, 640), 2), "§ page 2"),
    (("pdf", [], (600, 640), 3), "page 3"),
    (("notebook", ["Experiments"], (3, 8)), "§ Experiments"),
    (("notebook", ["Experiments"], (3, 8), None, 4), "§ Experiments · cell 4"),
])
def test_location_labels(args: tuple, label: str) -> None:
    assert location_label(*args) == label


def test_skip_reasons_count_together_without_their_particulars() -> None:
    assert skip_reason_key("cannot parse: broken.ipynb: invalid notebook JSON (line 1)") == "cannot parse"
    assert skip_reason_key("too large (12.5 MB > 10 MB limit)") == "too large"
    assert skip_reason_key("too many pages: 2500 > 2000 page limit for PDF") == "too many pages"


def call(guard: HostOriginGuard, path: str) -> tuple[int, dict[bytes, bytes], bytes]:
    """One request through ``guard``: (status, headers, body)."""
    sent: list[dict] = []

    async def receive() -> dict:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: dict) -> None:
        sent.append(message)

    # In a thread of its own: a test session that drives a browser (Playwright's sync API) keeps an
    # event loop running in the main thread.
    with ThreadPoolExecutor(1) as pool:
        pool.submit(lambda: asyncio.run(guard(scope(path, host="127.0.0.1:8765"), receive, send))).result()
    return sent[0]["status"], dict(sent[0]["headers"]), b"".join(m.get("body", b"") for m in sent[1:])


async def ok_app(scope: dict, receive: object, send: object) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": [(b"content-type", b"text/plain")]})  # type: ignore[operator]
    await send({"type": "http.response.body", "body": b"ok"})  # type: ignore[operator]


def test_an_authorize_hook_guards_the_api_and_headers_are_added() -> None:
    """The hook a token check plugs into when the index is served over HTTP behind tokens."""
    guard = HostOriginGuard(ok_app, PORT, authorize=lambda s: "A bearer token is needed.")
    status, headers, body = call(guard, "/api/search")
    assert (status, json.loads(body)) == (401, {"error": "A bearer token is needed."})
    assert b"frame-ancestors 'none'" in headers[b"content-security-policy"]
    status, headers, body = call(guard, "/")  # the page itself holds nothing of the index
    assert (status, body) == (200, b"ok") and headers[b"x-content-type-options"] == b"nosniff"
    open_guard = HostOriginGuard(ok_app, PORT, authorize=lambda s: None)
    assert call(open_guard, "/api/search")[0] == 200
