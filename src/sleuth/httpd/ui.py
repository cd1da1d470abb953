"""The page of ``sleuth ui`` inside ``sleuth serve --http``, at ``/ui``, behind the server's tokens.

The page's files (``/ui/``, ``/ui/static/*``) hold no data and are served to anyone the server's
``Host``/``Origin`` guard lets in. Every call of its JSON API (``/ui/api/*``) needs a bearer token
in an ``Authorization`` header -- the same tokens, checks, rate limit and answers as ``/mcp``
(:func:`sleuth.httpd.guards.bearer_refusal`) -- and is served with the projects of that token's
user as the users file says now (within ``--project``): another user's project is not listed,
searched, nor its documents shown, exactly as over MCP. The page asks for the token once and keeps
it in ``sessionStorage`` (gone with the tab), never in a URL or a cookie, so no other site's page
can make the browser send it (no CSRF). Each API call passes the server's read/write gate (a read
sees a memory write entirely or not at all) and writes an audit line (``ui.search``, ...). The
index page leaves out what is index-wide (:func:`sleuth.ui.api.status_json` with ``remote``).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from starlette.requests import Request
from starlette.responses import RedirectResponse, Response
from starlette.routing import BaseRoute, Mount, Route, Router
from starlette.types import ASGIApp

from sleuth.auth.users import UserStore
from sleuth.broker.gate import ReadWriteGate
from sleuth.engine import Engine
from sleuth.errors import ConfigError, SleuthError
from sleuth.httpd.audit import AuditLog
from sleuth.httpd.guards import INVALID_TOKEN_DESCRIPTION, RateLimiter, bearer_refusal, challenge
from sleuth.httpd.settings import HttpSettings
from sleuth.ui.app import UI_CONCURRENT_CALLS, PageRefused, page_routes
from sleuth.ui.guard import HostOriginGuard

#: Where the page is served.
UI_PATH = "/ui"


def ui_routes(engine: Engine, settings: HttpSettings, users: UserStore, limiter: RateLimiter,
              gate: ReadWriteGate, audit: AuditLog | None,
              allowed_projects: Sequence[str] | None = None) -> list[BaseRoute]:
    """``/ui`` (redirected to ``/ui/``) and the page mounted at ``/ui/`` (see the module docstring).

    Args:
        settings: the server's (metadata URL for the challenges, rate limit).
        users: the users file, read again when it changes.
        limiter: the per-token rate limiter the MCP endpoint uses too.
        gate: the server's read/write gate.
        audit: where audit lines go (None: none).
        allowed_projects: ``--project`` (None: every project a user holds).
    """
    server_allowed = None if allowed_projects is None else frozenset(allowed_projects)
    limit = anyio.CapacityLimiter(UI_CONCURRENT_CALLS)

    def user_of(request: Request) -> str:
        user = request.scope.get("user")
        return user.access_token.subject or "" if isinstance(user, AuthenticatedUser) else ""

    def access(request: Request) -> list[str]:
        refused = bearer_refusal(request.scope, settings, limiter, audit)
        if refused is not None:
            raise PageRefused(refused.status, str(refused.body.get("error_description", refused.body["error"])),
                              dict(refused.headers))
        try:
            record = users.get(user_of(request))
        except (ConfigError, OSError):
            record = None
        if record is None or record.disabled:  # removed or disabled since the token was checked
            raise PageRefused(401, INVALID_TOKEN_DESCRIPTION,
                              dict([challenge(settings, "invalid_token", INVALID_TOKEN_DESCRIPTION)]))
        projects = set(record.projects) & set(engine.project_ids())
        if server_allowed is not None:
            projects &= server_allowed
        return sorted(projects)

    async def run(request: Request, kind: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        started = time.perf_counter()
        error: str | None = None
        body: dict[str, Any] | None = None
        try:
            async with gate.read():
                body = await anyio.to_thread.run_sync(work, limiter=limit)
            return body
        except SleuthError as exc:
            error = exc.code
            raise
        except Exception:
            error = "INTERNAL"
            raise
        finally:
            if audit is not None:
                params = request.query_params
                count = body.get("result_count") if body is not None and kind == "search" else None
                query = params.get("q") if kind == "search" else None
                audit.record(user_of(request), f"ui.{kind}", params.get("project") or None,
                             count if isinstance(count, int) else None,
                             (time.perf_counter() - started) * 1000, error, query)

    page: ASGIApp = HostOriginGuard(Router(routes=page_routes(engine, access, remote=True, run=run)), None,
                                    prefix=UI_PATH)

    async def to_page(request: Request) -> Response:
        return RedirectResponse(f"{UI_PATH}/", status_code=308)

    return [Route(UI_PATH, to_page, methods=["GET", "HEAD"]), Mount(UI_PATH, app=page)]

