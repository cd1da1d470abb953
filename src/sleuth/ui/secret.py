"""The per-run secret of ``sleuth ui``: only who holds the URL it printed may use the page.

A loopback address keeps other machines out, not the other accounts of this one: any local user
could read the whole index through an unguarded page. So, as Jupyter does, each run of ``sleuth ui``
makes a random token (:func:`new_token`) and prints the page's URL with it
(``http://127.0.0.1:PORT/?token=...``, :func:`tokened_url`). The first request that carries the
right token in its query is answered with a redirect to the same URL without it (it does not stay
in the browser's history) that sets an ``HttpOnly``, ``SameSite=Strict`` cookie for ``/``
(:func:`cookie_name`: one per port, as cookies are not told apart by port). A browser that came
from another site's link (``Sec-Fetch-Site: cross-site``) would not send a ``SameSite=Strict``
cookie anywhere along that redirect, nor on a reload of it; so it gets a short page instead that
sets the cookie and moves on to the same URL by itself (``<meta http-equiv="refresh">``, a
navigation of the page's own site). From then on every
request -- the page, its files and every ``/api/`` call -- needs that cookie or an
``Authorization: Bearer <token>`` header (for scripts); otherwise it is refused with 403 and a
sentence saying to open the URL ``sleuth ui`` printed. Tokens are compared with
:func:`hmac.compare_digest`. :class:`TokenGuard` is the ASGI middleware; :func:`token_verdict` its
pure decision. ``sleuth serve --http`` mounts the page at ``/ui`` behind its own bearer tokens
instead (:mod:`sleuth.httpd.ui`), without this guard.
"""

from __future__ import annotations

import hmac
import html
import json
import secrets
import urllib.parse
from dataclasses import dataclass

from sleuth.ui.guard import ASGIApp, Receive, Scope, Send

#: Random bytes in a token (``secrets.token_urlsafe``: 43 URL-safe characters).
UI_TOKEN_BYTES = 32
#: The query parameter the printed URL carries the token in.
TOKEN_PARAMETER = "token"
#: Longest token looked at, in characters (anything longer is wrong without being compared).
UI_TOKEN_MAX_CHARS = 256

NO_TOKEN_MESSAGE = ("This page needs the token of the URL `sleuth ui` printed when it started "
                    "(http://...:PORT/?token=...): open that URL. Scripts may send the token as an "
                    "`Authorization: Bearer` header.")
WRONG_TOKEN_MESSAGE = ("This token is not this server's (`sleuth ui` makes a new one each time it starts): "
                       "open the URL `sleuth ui` printed.")


def new_token() -> str:
    """A fresh random token: :data:`UI_TOKEN_BYTES` bytes from :mod:`secrets`, URL-safe base64 (43 chars)."""
    return secrets.token_urlsafe(UI_TOKEN_BYTES)


def cookie_name(port: int) -> str:
    """The name of the cookie that holds the token of a server on ``port`` (``sleuth-ui-8765``).

    Browsers send a host's cookies to every port of it, so two ``sleuth ui`` on one machine use two names."""
    return f"sleuth-ui-{port}"


def tokened_url(url: str, token: str) -> str:
    """``url`` (the page's, ending in ``/``, no query) with ``?token=<token>`` appended."""
    return f"{url}?{TOKEN_PARAMETER}={urllib.parse.quote(token, safe='')}"


def same_token(given: str, token: str) -> bool:
    """Whether ``given`` is ``token``, compared in constant time (:func:`hmac.compare_digest` on UTF-8)."""
    if len(given) > UI_TOKEN_MAX_CHARS:
        return False
    return hmac.compare_digest(given.encode("utf-8", "surrogateescape"), token.encode("utf-8"))


@dataclass(frozen=True)
class TokenVerdict:
    """What :func:`token_verdict` decided for one request.

    ``status`` 0: serve it; 303: redirect to ``location`` setting the cookie; 403: refuse with ``message``.
    """

    status: int
    location: str = ""
    message: str = ""


SERVE = TokenVerdict(0)


def _headers(scope: Scope, name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope.get("headers", []) if key == name]


def _cookie_values(scope: Scope, name: str) -> list[str]:
    values: list[str] = []
    for header in _headers(scope, b"cookie"):
        for pair in header.split(";"):
            key, eq, value = pair.strip().partition("=")
            if eq and key == name:
                values.append(value.strip().strip('"'))
    return values


def _without_token(scope: Scope) -> str:
    """The request's path and query, the token parameter left out (the other parameters as sent)."""
    raw_path = scope.get("raw_path")
    path = raw_path.decode("latin-1") if isinstance(raw_path, bytes) and raw_path else \
        urllib.parse.quote(scope.get("path", "/"))
    path = "/" + path.lstrip("/")  # never "//host": that would redirect to another site
    query = scope.get("query_string", b"").decode("latin-1")
    kept = [pair for pair in query.split("&")
            if pair and urllib.parse.unquote_plus(pair.partition("=")[0]) != TOKEN_PARAMETER]
    return path + ("?" + "&".join(kept) if kept else "")


def token_verdict(scope: Scope, token: str, cookie: str) -> TokenVerdict:
    """Whether the request of ``scope`` holds ``token`` (see the module docstring).

    In order: a ``token`` query parameter decides (the right one, given once: 303 to the URL without
    it; else 403); then an ``Authorization`` header (``Bearer <token>``: serve; else 403); then the
    cookie named ``cookie`` (one with the token: serve; else 403). Pure: reads only ``scope``.
    """
    query = scope.get("query_string", b"").decode("latin-1")
    given = [value for key, value in urllib.parse.parse_qsl(query, keep_blank_values=True)
             if key == TOKEN_PARAMETER]
    if given:
        if len(given) == 1 and same_token(given[0], token):
            return TokenVerdict(303, location=_without_token(scope))
        return TokenVerdict(403, message=WRONG_TOKEN_MESSAGE)
    authorization = _headers(scope, b"authorization")
    if authorization:
        scheme, _, credential = authorization[0].strip().partition(" ")
        if len(authorization) == 1 and scheme.lower() == "bearer" and same_token(credential.strip(), token):
            return SERVE
        return TokenVerdict(403, message=WRONG_TOKEN_MESSAGE)
    cookies = _cookie_values(scope, cookie)
    if any(same_token(value, token) for value in cookies):
        return SERVE
    return TokenVerdict(403, message=WRONG_TOKEN_MESSAGE if cookies else NO_TOKEN_MESSAGE)


class TokenGuard:
    """ASGI middleware: serves only requests that hold the run's token (:func:`token_verdict`).

    Args:
        app: the application behind the guard.
        token: the run's token (:func:`new_token`).
        port: the port the server listens on (names the cookie, :func:`cookie_name`).

    A refusal under ``/api/`` answers JSON ``{"error": sentence}``, elsewhere the sentence as plain
    text (it is read in a browser); both 403, ``no-store``. Non-HTTP scopes pass untouched.
    """

    def __init__(self, app: ASGIApp, token: str, port: int) -> None:
        if not token:
            raise ValueError("the page's token must not be empty")
        self.app = app
        self.token = token
        self.cookie = cookie_name(port)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        verdict = token_verdict(scope, self.token, self.cookie)
        if verdict.status == 0:
            await self.app(scope, receive, send)
            return
        headers: list[tuple[bytes, bytes]] = [(b"cache-control", b"no-store")]
        status = verdict.status
        if status == 303:
            body = b""
            headers.append((b"set-cookie", f"{self.cookie}={self.token}; Path=/; HttpOnly; SameSite=Strict".encode()))
            if _cross_site(scope):  # see the module docstring
                status, body = 200, _moving_on(verdict.location)
                headers.append((b"content-type", b"text/html; charset=utf-8"))
            else:
                headers.append((b"location", verdict.location.encode("latin-1")))
        elif scope.get("path", "").startswith("/api/"):
            body = json.dumps({"error": verdict.message}).encode()
            headers.append((b"content-type", b"application/json"))
        else:
            body = verdict.message.encode()
            headers.append((b"content-type", b"text/plain; charset=utf-8"))
        headers.append((b"content-length", str(len(body)).encode()))
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": body})


def _cross_site(scope: Scope) -> bool:
    return any(value.strip().lower() == "cross-site" for value in _headers(scope, b"sec-fetch-site"))


def _moving_on(location: str) -> bytes:
    """The page that sends a browser on to ``location`` (the page's own path, the token left out)."""
    where = html.escape(location, quote=True)
    return (f'<!doctype html><meta charset="utf-8"><meta http-equiv="refresh" content="0; url={where}">'
            f'<title>sleuth</title><p><a href="{where}">Open the page</a></p>\n').encode()
