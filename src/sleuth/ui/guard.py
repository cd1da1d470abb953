"""Who may talk to the page's server: loopback hosts only, and no other site's pages.

A server on 127.0.0.1 is still reachable from any web page the user opens: a foreign page can send
requests to it (CSRF) or, with DNS rebinding, make its own name point at 127.0.0.1 and read the
answers. Two checks close both (the MCP specification's advice for local HTTP servers, and what
Jupyter does): the ``Host`` header must name a loopback address or ``localhost`` at the served port
(a rebound name fails), and a request under ``/api/`` that carries an ``Origin`` (or a
``Sec-Fetch-Site: cross-site``) must come from the page's own origin. Only ``GET`` and ``HEAD`` are
served: the page never writes. Every answer carries a strict Content-Security-Policy (scripts,
styles and connections only from the page itself) and forbids framing.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterable, MutableMapping
from typing import Any

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

#: Host names a loopback page may be reached by (the host part of ``Host``, lowercased).
LOOPBACK_HOST_NAMES: tuple[str, ...] = ("127.0.0.1", "localhost", "[::1]")

#: Headers sent with every answer.
SECURITY_HEADERS: tuple[tuple[bytes, bytes], ...] = (
    (b"content-security-policy",
     b"default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self' data:; connect-src 'self'; "
     b"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cross-origin-resource-policy", b"same-origin"),
)

#: Methods served (the page only reads).
ALLOWED_METHODS = frozenset({"GET", "HEAD"})


def allowed_hosts(port: int, names: Iterable[str] = LOOPBACK_HOST_NAMES) -> frozenset[str]:
    """Every ``Host`` header value accepted for a server on ``port``: ``name:port`` for each name
    (lowercase), and the bare name for port 80."""
    hosts = {f"{n.lower()}:{port}" for n in names}
    if port == 80:
        hosts |= {n.lower() for n in names}
    return frozenset(hosts)


def allowed_origins(port: int, names: Iterable[str] = LOOPBACK_HOST_NAMES) -> frozenset[str]:
    """The page's own origins: ``http://name:port`` for each name."""
    return frozenset(f"http://{h}" for h in allowed_hosts(port, names))


def refusal(scope: Scope, hosts: frozenset[str] | None, origins: frozenset[str] | None,
            prefix: str = "") -> tuple[int, str] | None:
    """Why the request of ``scope`` is refused, as (HTTP status, one sentence), or None when it may go on.

    ``hosts`` / ``origins`` None: those headers are checked in front (``sleuth serve --http``'s own
    guard, against its allow lists); ``prefix``: where the page is mounted (``/ui`` over HTTP).
    Pure: reads only ``scope`` (method, path and headers).
    """
    headers: dict[bytes, bytes] = {}
    for key, value in scope.get("headers", []):
        if key in headers:  # a repeated Host or Origin is an attack or a broken client
            if key in (b"host", b"origin"):
                return 400, f"The {key.decode()} header was sent more than once."
        headers[key] = value
    host = headers.get(b"host", b"").decode("latin-1").strip().lower()
    if hosts is not None and host not in hosts:
        return 403, "This page is served to its own loopback address only (the Host header names another)."
    if scope.get("method", "GET") not in ALLOWED_METHODS:
        return 405, "This server only answers GET requests."
    if scope.get("path", "").startswith(prefix + "/api/"):
        origin = headers.get(b"origin")
        if origins is not None and origin is not None and origin.decode("latin-1").strip().lower() not in origins:
            return 403, "Requests from other sites' pages are refused (the Origin header names another site)."
        if headers.get(b"sec-fetch-site", b"").lower() == b"cross-site":
            return 403, "Requests from other sites' pages are refused."
    return None


class HostOriginGuard:
    """ASGI middleware: refuses what :func:`refusal` refuses with a JSON ``{"error": sentence}``, and
    adds :data:`SECURITY_HEADERS` to every answer.

    Args:
        app: the application behind the guard.
        port: the port the server listens on (the ``Host`` must name it); None when the page is
            mounted in ``sleuth serve --http``, whose own guard checks ``Host`` and ``Origin``
            against its allow lists (see :mod:`sleuth.httpd.ui`).
        authorize: optional check of an ``/api/`` request's scope; it returns None to let the
            request in, else the sentence of a 401 answer.
        prefix: the path the page is mounted at (``""``, or ``/ui`` over HTTP).
    """

    def __init__(self, app: ASGIApp, port: int | None, authorize: Callable[[Scope], str | None] | None = None,
                 prefix: str = "") -> None:
        self.app = app
        self.hosts = allowed_hosts(port) if port is not None else None
        self.origins = allowed_origins(port) if port is not None else None
        self.authorize = authorize
        self.prefix = prefix

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":  # lifespan; websockets are not served
            if scope["type"] == "websocket":
                await send({"type": "websocket.close", "code": 1008})
                return
            await self.app(scope, receive, send)
            return
        refused = refusal(scope, self.hosts, self.origins, self.prefix)
        if refused is None and self.authorize is not None and scope.get("path", "").startswith(self.prefix + "/api/"):
            why = self.authorize(scope)
            refused = None if why is None else (401, why)
        if refused is not None:
            await _send_json(send, refused[0], {"error": refused[1]})
            return

        async def send_with_headers(message: Message) -> None:
            if message["type"] == "http.response.start":
                message["headers"] = [*message.get("headers", []), *SECURITY_HEADERS]
            await send(message)

        await self.app(scope, receive, send_with_headers)


async def _send_json(send: Send, status: int, body: dict[str, str]) -> None:
    data = json.dumps(body).encode()
    await send({"type": "http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode()),
                            (b"cache-control", b"no-store"), *SECURITY_HEADERS]})
    await send({"type": "http.response.body", "body": data})
