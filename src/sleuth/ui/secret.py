"""The per-run secret of ``sleuth ui``: only who holds the URL it printed may read the index.

A loopback address keeps other machines out, not the other accounts of this one: any local user
could read the whole index through an unguarded page. So, as Jupyter does, each run of ``sleuth ui``
makes a random token (:func:`new_token`) and prints the page's URL with it
(``http://127.0.0.1:PORT/?token=...``, :func:`tokened_url`). The page (``/`` and ``/static/*``: the
application's code, shipped in the package, no data of the index) is served to anyone; it takes the
token from its address into the tab's ``sessionStorage`` (kept per origin, so per port), removes it
from the address bar, and sends it with every ``/api/`` call as an ``Authorization: Bearer`` header.
Every ``/api/`` request without the right token is refused with 401 and a sentence saying to open the
URL ``sleuth ui`` printed (the page then asks for the token). No cookie is set: browsers send a host's
cookies to every port of it, so a cookie would reach another local account's server on another port
(an attack round's finding against the first version of this guard). Tokens are compared with
:func:`hmac.compare_digest`. :class:`TokenGuard` is the ASGI middleware; :func:`token_verdict` its
pure decision. ``sleuth serve --http`` mounts the page at ``/ui`` behind its own bearer tokens
instead (:mod:`sleuth.httpd.ui`), without this guard.
"""

from __future__ import annotations

import hmac
import json
import secrets
import urllib.parse
from dataclasses import dataclass

from sleuth.ui.guard import ASGIApp, Receive, Scope, Send

#: Random bytes in a token (``secrets.token_urlsafe``: 43 URL-safe characters).
UI_TOKEN_BYTES = 32
#: The query parameter the printed URL carries the token in (read by the page's script, not the server).
TOKEN_PARAMETER = "token"
#: Longest token looked at, in characters (anything longer is wrong without being compared).
UI_TOKEN_MAX_CHARS = 256
#: The paths that answer with the index's data, and so need the token.
GUARDED_PREFIX = "/api/"

NO_TOKEN_MESSAGE = ("This page needs the token of the URL `sleuth ui` printed when it started "
                    "(http://...:PORT/?token=...): open that URL. Scripts may send the token as an "
                    "`Authorization: Bearer` header.")
WRONG_TOKEN_MESSAGE = ("This token is not this server's (`sleuth ui` makes a new one each time it starts): "
                       "open the URL `sleuth ui` printed.")


def new_token() -> str:
    """A fresh random token: :data:`UI_TOKEN_BYTES` bytes from :mod:`secrets`, URL-safe base64 (43 chars)."""
    return secrets.token_urlsafe(UI_TOKEN_BYTES)


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
    """What :func:`token_verdict` decided for one request: ``status`` 0 serve it, 401 refuse with ``message``."""

    status: int
    message: str = ""


SERVE = TokenVerdict(0)


def _headers(scope: Scope, name: bytes) -> list[str]:
    return [value.decode("latin-1") for key, value in scope.get("headers", []) if key == name]


def guarded(path: str) -> bool:
    """Whether a request for ``path`` (decoded, as the router sees it) needs the token: under ``/api/``,
    however written (``//api/``, ``/API/`` are not routes, but are refused alike rather than trusted),
    and any path not starting with ``/`` (an absolute-form target, ``http://host/api/status``: the
    router answers it 404 today; the guard does not rely on that)."""
    return not path.startswith("/") or ("/" + path.lstrip("/")).lower().startswith(GUARDED_PREFIX)


def token_verdict(scope: Scope, token: str) -> TokenVerdict:
    """Whether the request of ``scope`` may be served (see the module docstring): a path outside
    ``/api/`` is; one under it needs exactly one ``Authorization: Bearer <token>`` header with the
    run's token (else 401: :data:`NO_TOKEN_MESSAGE` without a header, :data:`WRONG_TOKEN_MESSAGE`
    with a wrong one). Pure: reads only ``scope``."""
    if not guarded(scope.get("path", "/")):
        return SERVE
    authorization = _headers(scope, b"authorization")
    if not authorization:
        return TokenVerdict(401, message=NO_TOKEN_MESSAGE)
    scheme, _, credential = authorization[0].strip().partition(" ")
    if len(authorization) == 1 and scheme.lower() == "bearer" and same_token(credential.strip(), token):
        return SERVE
    return TokenVerdict(401, message=WRONG_TOKEN_MESSAGE)


class TokenGuard:
    """ASGI middleware: serves ``/api/`` requests only when they hold the run's token (:func:`token_verdict`).

    Args:
        app: the application behind the guard.
        token: the run's token (:func:`new_token`).

    Raises:
        ValueError: ``token`` is empty.

    A refusal answers 401, JSON ``{"error": sentence}``, ``no-store``, with ``WWW-Authenticate: Bearer``.
    Non-HTTP scopes pass untouched.
    """

    def __init__(self, app: ASGIApp, token: str) -> None:
        if not token:
            raise ValueError("the page's token must not be empty")
        self.app = app
        self.token = token

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        verdict = token_verdict(scope, self.token)
        if verdict.status == 0:
            await self.app(scope, receive, send)
            return
        body = json.dumps({"error": verdict.message}).encode()
        headers = [(b"cache-control", b"no-store"), (b"content-type", b"application/json"),
                   (b"www-authenticate", b'Bearer realm="sleuth ui"'),
                   (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": verdict.status, "headers": headers})
        await send({"type": "http.response.body", "body": body})
