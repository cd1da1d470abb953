"""The HTTP checks in front of the MCP endpoint, as ASGI middleware (outermost first):

1. :class:`HostOriginGuard` -- every request: a ``Host`` not in the allow list gets **421**, an
   ``Origin`` (when sent) not in it gets **403** (MCP transport security; DNS rebinding). Always
   on, whatever address is bound: the SDK's own check switches itself off for non-loopback binds.
2. the SDK's ``AuthenticationMiddleware`` with :class:`BearerBackend` (the token verifier).
3. :class:`RequireBearer` -- the MCP endpoint only: no valid token gets **401** with
   ``WWW-Authenticate: Bearer resource_metadata="..."`` (RFC 6750, RFC 9728; ``error="invalid_token"``
   when a token was sent), a token without the read scope **403** ``insufficient_scope``; then the
   per-token rate limit (**429** with ``Retry-After``); then the body, read up to the size limit
   (**413** beyond), and a ``tools/call`` of a write tool without the write scope gets **403**
   ``insufficient_scope`` (its body a JSON-RPC error saying why: :func:`write_scope_error`); a
   request opening an MCP session when the user holds ``sessions_per_user_max`` busy ones gets
   **429** (:mod:`sleuth.httpd.sessions`). What passes goes on to the SDK with the body replayed.
   The page at ``/ui`` passes the same checks (:func:`bearer_refusal`) on each of its API calls.

Reasons for a refusal go to the server's log and, coalesced, to the audit log (``AuditLog.refusal``:
status, reason, the verified user or null, the client's address, never the token); the client
gets one generic description per status, never the user name or the token -- except that a token
signed by this server's key for another of its URLs is told this server's URL and how to mint a
token for it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import time
from collections import OrderedDict, deque
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser, BearerAuthBackend
from mcp.server.auth.provider import TokenVerifier
from starlette.authentication import AuthCredentials
from starlette.datastructures import Headers
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sleuth.auth.tokens import AUDIENCE_MISMATCH, JwtVerifier
from sleuth.auth.users import SCOPE_READ, SCOPE_WRITE
from sleuth.errors import shown
from sleuth.httpd.audit import AuditLog
from sleuth.httpd.sessions import SessionQuota
from sleuth.httpd.settings import HttpSettings

log = logging.getLogger("sleuth.http")

#: Rate-limit buckets kept at once (the least recently used are dropped beyond).
RATE_BUCKETS_MAX = 10_000
#: The scope key where :class:`BearerBackend` leaves why a sent token was refused.
AUTH_FAILURE_KEY = "sleuth.auth_failure"
#: The scope key where :class:`BearerBackend` leaves the verified subject of a refused token, if any.
AUTH_SUBJECT_KEY = "sleuth.auth_subject"
#: ``Retry-After`` of a 429 for a user whose sessions are all busy, in seconds.
SESSIONS_BUSY_RETRY_S = 5


def client_address(scope: Scope) -> str | None:
    """The peer's address of an ASGI connection scope (None when unknown)."""
    client = scope.get("client")
    return str(client[0]) if client else None


def audit_refusal(audit: AuditLog | None, scope: Scope, status: int, reason: str, user: str | None = None) -> None:
    """One refusal for the audit log (coalesced there), when there is one."""
    if audit is not None:
        audit.refusal(status, reason, user, client_address(scope))


async def send_json(send: Send, status: int, body: dict[str, Any], headers: Collection[tuple[str, str]] = ()) -> None:
    """A JSON response with ``status``, ``body`` and extra ``headers``."""
    data = json.dumps(body).encode("utf-8")
    raw = [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode("ascii")),
           *((k.encode("latin-1"), v.encode("latin-1")) for k, v in headers)]
    await send({"type": "http.response.start", "status": status, "headers": raw})
    await send({"type": "http.response.body", "body": data})


class HostOriginGuard:
    """421 for a ``Host`` outside ``settings.allowed_hosts``, 403 for an ``Origin`` outside
    ``settings.allowed_origins`` (a request without ``Origin`` -- not from a browser -- passes)."""

    def __init__(self, app: ASGIApp, settings: HttpSettings, *, audit: AuditLog | None = None) -> None:
        self.app, self.settings, self.audit = app, settings, audit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = Headers(scope=scope)
        host = (headers.get("host") or "").strip().lower()
        if host not in self.settings.allowed_hosts:
            log.warning("refused a request with Host %r (allowed: %s; add --allow-host)", host[:200],
                        ", ".join(sorted(self.settings.allowed_hosts)))
            audit_refusal(self.audit, scope, 421, "Host not allowed")
            await send_json(send, 421, {"error": "misdirected_request",
                                        "error_description": "Host header not allowed for this server"})
            return
        origin = headers.get("origin")
        if origin is not None and origin.strip().lower().rstrip("/") not in self.settings.allowed_origins:
            log.warning("refused a request with Origin %r (add --allow-origin)", origin[:200])
            audit_refusal(self.audit, scope, 403, "Origin not allowed")
            await send_json(send, 403, {"error": "forbidden_origin",
                                        "error_description": "Origin not allowed for this server"})
            return
        await self.app(scope, receive, send)


class BearerBackend(BearerAuthBackend):
    """The SDK's bearer backend (expiry and RFC 8707 resource checks included) over a
    :class:`~sleuth.auth.tokens.JwtVerifier`, noting why a sent token was refused."""

    def __init__(self, token_verifier: TokenVerifier, *, resource_server_url: Any = None) -> None:
        super().__init__(token_verifier, resource_server_url=resource_server_url)

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, AuthenticatedUser] | None:
        header = conn.headers.get("authorization")
        if header is None:
            return None
        if not header.lower().startswith("bearer ") or not header[7:].strip():
            conn.scope[AUTH_FAILURE_KEY] = "malformed authorization header"
            return None
        verifier = self.token_verifier
        if isinstance(verifier, JwtVerifier):  # it checks expiry and audience itself
            verdict = await verifier.check_async(header[7:].strip())
            if verdict.token is None:
                conn.scope[AUTH_FAILURE_KEY] = verdict.reason
                conn.scope[AUTH_SUBJECT_KEY] = verdict.subject
                return None
            return AuthCredentials(verdict.token.scopes), AuthenticatedUser(verdict.token)
        result = await super().authenticate(conn)
        if result is None:
            conn.scope[AUTH_FAILURE_KEY] = "refused"
        return result


class RateLimiter:
    """Token buckets per bearer token: ``requests`` per ``period_s`` seconds, bursts up to ``requests``.

    Keys are SHA-256 digests of the tokens (the tokens themselves are not kept).
    """

    def __init__(self, requests: int, period_s: float, max_buckets: int = RATE_BUCKETS_MAX) -> None:
        self.capacity = float(requests)
        self.rate_per_s = requests / period_s
        self.max_buckets = max_buckets
        self._buckets: OrderedDict[str, tuple[float, float]] = OrderedDict()

    def take(self, token: str, now: float | None = None) -> float:
        """Spend one request of ``token``'s bucket: 0.0 when allowed, else the seconds to wait."""
        now = time.monotonic() if now is None else now
        key = hashlib.sha256(token.encode("utf-8", "replace")).hexdigest()
        level, last = self._buckets.pop(key, (self.capacity, now))
        level = min(self.capacity, level + (now - last) * self.rate_per_s)
        wait = 0.0
        if level >= 1.0:
            level -= 1.0
        else:
            wait = (1.0 - level) / self.rate_per_s
        self._buckets[key] = (level, now)
        while len(self._buckets) > self.max_buckets:
            self._buckets.popitem(last=False)
        return wait


def tool_calls(body: bytes) -> list[str]:
    """Names of the tools a JSON-RPC body calls (a message or a batch); [] when it is not JSON."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return []
    messages = data if isinstance(data, list) else [data]
    names = []
    for message in messages:
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params")
            name = params.get("name") if isinstance(params, dict) else None
            names.append(name if isinstance(name, str) else "")
    return names


def single_request_id(body: bytes) -> str | int | None:
    """The ``id`` of the one JSON-RPC request ``body`` holds; None for a batch, a notification, an
    id that is neither a string nor an integer, or a body that is not JSON."""
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return None
    request_id = data.get("id") if isinstance(data, dict) else None
    return request_id if isinstance(request_id, str | int) and not isinstance(request_id, bool) else None


#: The JSON-RPC error code of a tool call the token's scope does not allow (-32000 to -32099 are
#: left to implementations by JSON-RPC 2.0).
INSUFFICIENT_SCOPE_CODE = -32003


def write_scope_message(tool: str) -> str:
    """Why a token without :data:`SCOPE_WRITE` may not call the write tool ``tool``, and how to get
    a token that may (it names no user: the client is never told the token's user)."""
    return (f"this token may only read: the tool {shown(tool)} needs the scope {SCOPE_WRITE}; ask for a token"
            f" with it: `sleuth users token NAME` without --read-only, for a user added with"
            f" `sleuth users add NAME --project P --write`")


def write_scope_error(request_id: str | int, tool: str) -> dict[str, Any]:
    """The body of the 403 ``insufficient_scope`` answering a ``tools/call`` of the write tool
    ``tool`` with a token lacking :data:`SCOPE_WRITE`: a JSON-RPC error response to the request
    ``request_id`` (``error.message``: :func:`write_scope_message`; ``error.data``: the OAuth
    ``error``, ``error_description`` and ``scope``). The status and the ``WWW-Authenticate``
    challenge are the spec's (MCP authorization, insufficient scope: 403, ``error="insufficient_scope"``,
    ``scope``); the body is a JSON-RPC error because the MCP SDK clients show a JSON-RPC error found in
    a non-2xx JSON body, where an OAuth body became -32603 "Server returned an error response"
    (python SDK 2.3.0), the reason only in the server's audit log."""
    needed = f"{SCOPE_READ} {SCOPE_WRITE}"
    return {"jsonrpc": "2.0", "id": request_id, "error": {
        "code": INSUFFICIENT_SCOPE_CODE, "message": write_scope_message(tool),
        "data": {"error": "insufficient_scope", "error_description": f"this call needs the scope(s) {needed}",
                 "scope": needed}}}


#: The 401 description of a token that is not (or no longer) good, whatever the reason.
INVALID_TOKEN_DESCRIPTION = "The access token is invalid, revoked or not issued for this server"
#: The 401 description of an expired token.
EXPIRED_TOKEN_DESCRIPTION = "The access token expired"


def audience_description(resource: str) -> str:
    """The 401 description of a token signed by this index's key but minted for another server URL:
    how to mint one for this server (RFC 6750 ``error_description``: printable ASCII without
    quotes or backslashes). It names only this server's own URL, never the token's user."""
    return (f"token audience does not match this server ({resource}); "
            f"mint one with `sleuth users token NAME --url {resource}`")


def challenge(settings: HttpSettings, error: str | None = None, description: str | None = None,
              scope: str = SCOPE_READ) -> tuple[str, str]:
    """The ``WWW-Authenticate`` header of a 401/403 (RFC 6750 section 3, RFC 9728 section 5.1)."""
    parts = ['realm="sleuth"']
    if error:
        parts.append(f'error="{error}"')
    if description:
        parts.append(f'error_description="{description}"')
    parts.append(f'scope="{scope}"')
    parts.append(f'resource_metadata="{settings.metadata_url}"')
    return "WWW-Authenticate", "Bearer " + ", ".join(parts)


@dataclass(frozen=True)
class Refusal:
    """An answer instead of the request: HTTP ``status``, JSON ``body`` (``error`` and
    ``error_description``) and extra ``headers``."""

    status: int
    body: dict[str, Any]
    headers: tuple[tuple[str, str], ...] = ()


def insufficient_scope(settings: HttpSettings, needed: str) -> Refusal:
    """403 ``insufficient_scope`` naming the scope(s) ``needed``."""
    description = f"this call needs the scope(s) {needed}"
    return Refusal(403, {"error": "insufficient_scope", "error_description": description},
                   (challenge(settings, "insufficient_scope", description, needed),))


def bearer_refusal(scope: Scope, settings: HttpSettings, limiter: RateLimiter,
                   audit: AuditLog | None = None) -> Refusal | None:
    """Why a request is refused before it is served -- no valid token (401), no read scope (403),
    over the token's rate (429) -- or None. Spends one request of the token's rate bucket; a
    refusal is counted in ``audit`` (:func:`audit_refusal`).

    Every refused token gets one generic description, except an expired one and one minted for
    another URL of this server (:func:`audience_description`); the reason goes to the log.
    """
    user = scope.get("user")
    if not isinstance(user, AuthenticatedUser):
        failure = scope.get(AUTH_FAILURE_KEY)
        if failure is None:
            audit_refusal(audit, scope, 401, "no bearer token")
            return Refusal(401, {"error": "invalid_request", "error_description": "a bearer token is required"},
                           (challenge(settings),))
        log.warning("refused a bearer token: %s", failure)
        subject = scope.get(AUTH_SUBJECT_KEY)
        audit_refusal(audit, scope, 401, f"token refused: {failure}", subject if isinstance(subject, str) else None)
        if failure == "expired":
            description = EXPIRED_TOKEN_DESCRIPTION
        elif str(failure).startswith(AUDIENCE_MISMATCH):
            description = audience_description(settings.resource)
        else:
            description = INVALID_TOKEN_DESCRIPTION
        return Refusal(401, {"error": "invalid_token", "error_description": description},
                       (challenge(settings, "invalid_token", description),))
    name = user.access_token.subject
    if SCOPE_READ not in set(user.scopes):
        audit_refusal(audit, scope, 403, f"insufficient scope: {SCOPE_READ}", name)
        return insufficient_scope(settings, SCOPE_READ)
    wait = limiter.take(user.access_token.token)
    if wait > 0:
        audit_refusal(audit, scope, 429, "rate limit", name)
        return Refusal(429, {"error": "rate_limited", "error_description":
                             f"more than {settings.rate_requests} requests per "
                             f"{settings.rate_period_s:g} s for this token"},
                       (("Retry-After", str(max(1, math.ceil(wait)))),))
    return None


class RequireBearer:
    """The MCP endpoint's gate (see the module docstring).

    Args:
        app: the SDK's streamable HTTP app.
        settings: the server's settings (metadata URL, size and rate limits).
        write_tools: tools that need :data:`SCOPE_WRITE`.
        limiter: the per-token rate limiter (shared with the page at ``/ui``); a new one when None.
        audit: where refusals are counted (None: nowhere).
        sessions: the per-user session cap (None: none).
    """

    def __init__(self, app: ASGIApp, settings: HttpSettings, write_tools: Collection[str],
                 limiter: RateLimiter | None = None, *, audit: AuditLog | None = None,
                 sessions: SessionQuota | None = None) -> None:
        self.app, self.settings, self.audit, self.sessions = app, settings, audit, sessions
        self.write_tools = frozenset(write_tools)
        self.limiter = limiter or RateLimiter(settings.rate_requests, settings.rate_period_s)
        #: Requests of each user being served now (HTTP_REQUESTS_PER_USER_MAX each: one user's slow
        #: calls never hold every connection the server takes).
        self.in_flight: dict[str, int] = {}

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        refused = bearer_refusal(scope, self.settings, self.limiter, self.audit)
        if refused is not None:
            await send_json(send, refused.status, refused.body, refused.headers)
            return
        user = scope["user"]
        scopes = set(user.scopes)
        name = user.access_token.subject
        if self.in_flight.get(name, 0) >= self.settings.requests_per_user_max:
            audit_refusal(self.audit, scope, 429, "requests in flight per user", name)
            await send_json(send, 429, {"error": "too_many_requests", "error_description":
                                        f"this user has {self.settings.requests_per_user_max} requests in "
                                        "flight; wait for their answers"}, [("Retry-After", "1")])
            return
        self.in_flight[name] = self.in_flight.get(name, 0) + 1
        try:
            await self._authorized(scope, receive, send, scopes, name)
        finally:
            self.in_flight[name] -= 1
            if not self.in_flight[name]:
                del self.in_flight[name]

    async def _authorized(self, scope: Scope, receive: Receive, send: Send, scopes: set[str], name: str) -> None:
        if scope.get("method") != "POST":
            await self.app(scope, receive, send)
            return
        body, rest = await self._read_body(scope, receive, send)
        if body is None:
            if rest is None:  # answered 413
                audit_refusal(self.audit, scope, 413, "request body too large", name)
            return
        writes = [tool for tool in tool_calls(body) if tool in self.write_tools]
        if SCOPE_WRITE not in scopes and writes:
            audit_refusal(self.audit, scope, 403, f"insufficient scope: {SCOPE_WRITE}", name)
            refused = insufficient_scope(self.settings, f"{SCOPE_READ} {SCOPE_WRITE}")
            request_id = single_request_id(body)
            answer: dict[str, Any] = refused.body if request_id is None else write_scope_error(request_id, writes[0])
            await send_json(send, refused.status, answer, refused.headers)
            return
        if self.sessions is not None and name and Headers(scope=scope).get("mcp-session-id") is None \
                and not await self.sessions.admit(name):
            audit_refusal(self.audit, scope, 429, "session limit per user", name)
            await send_json(send, 429, {"error": "too_many_sessions", "error_description":
                                        f"this user holds {self.sessions.per_user_max} open sessions, all "
                                        "busy; close one (HTTP DELETE) or retry later"},
                            [("Retry-After", str(SESSIONS_BUSY_RETRY_S))])
            return
        replay: deque[Message] = deque([{"type": "http.request", "body": body, "more_body": False}, *(rest or [])])

        async def replayed() -> Message:
            return replay.popleft() if replay else await receive()

        await self.app(scope, replayed, send)

    async def _read_body(self, scope: Scope, receive: Receive,
                         send: Send) -> tuple[bytes | None, list[Message] | None]:
        """The whole body and any message read past it; (None, None) after answering 413,
        (None, []) when the client went away before sending it all."""
        limit = self.settings.max_request_bytes
        too_large = {"error": "request_too_large",
                     "error_description": f"the request body is larger than {limit} bytes (--max-request-bytes)"}
        declared = Headers(scope=scope).get("content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await send_json(send, 413, too_large)
            return None, None
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None, []
            if message["type"] != "http.request":
                return bytes(body), [message]
            body.extend(message.get("body", b""))
            if len(body) > limit:
                await send_json(send, 413, too_large)
                return None, None
            if not message.get("more_body", False):
                return bytes(body), []
