"""The page's server: a starlette application over one open Engine, and ``serve_ui`` to run it.

Routes: ``/`` (the page), ``/static/*`` (its files, shipped in the package), and the JSON API the
page uses -- ``/api/search``, ``/api/document``, ``/api/status``, ``/api/facets`` (see
:mod:`sleuth.ui.api`). Every request passes :class:`sleuth.ui.guard.HostOriginGuard` first.
Engine calls run in worker threads, at most ``UI_CONCURRENT_CALLS`` at a time, never on the event
loop. A SleuthError answers ``{"error": message}`` with a status that fits it; anything else answers
``{"error": "internal error"}`` (500) and is logged, never shown.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from sleuth import errors
from sleuth.engine import Engine
from sleuth.ui import UI_DEFAULT_PORT, api
from sleuth.ui.guard import HostOriginGuard, Scope

logger = logging.getLogger(__name__)

#: The page's files.
STATIC_DIR = Path(__file__).parent / "static"
#: Engine calls running at once (the rest wait their turn).
UI_CONCURRENT_CALLS = 4

_STATUS_OF: tuple[tuple[type[errors.SleuthError], int], ...] = (
    (errors.NotFound, 404),
    (errors.QueryError, 400),
    (errors.ConfigError, 400),
    (errors.IndexBusy, 503),
    (errors.Unavailable, 503),
    (errors.QueryTimeout, 504),
    (errors.RequestCancelled, 409),
)


def _status_of(exc: errors.SleuthError) -> int:
    return next((status for kind, status in _STATUS_OF if isinstance(exc, kind)), 500)


def _params(request: Request) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for key, value in request.query_params.multi_items():
        out.setdefault(key, []).append(value)
    return out


def create_app(engine: Engine, port: int, allowed_projects: Sequence[str] | None = None,
               authorize: Callable[[Scope], str | None] | None = None) -> HostOriginGuard:
    """The page's ASGI application over ``engine``, for a server listening on loopback ``port``.

    Args:
        allowed_projects: the projects the page may show (None: every project of the index).
        authorize: see :class:`sleuth.ui.guard.HostOriginGuard` (a token check, when served behind one).
    """
    limiter = anyio.CapacityLimiter(UI_CONCURRENT_CALLS)
    allowed = list(allowed_projects) if allowed_projects is not None else None

    async def call(work: Callable[[], dict[str, Any]]) -> Response:
        try:
            body = await anyio.to_thread.run_sync(work, limiter=limiter)
        except errors.SleuthError as exc:
            return JSONResponse({"error": str(exc)}, status_code=_status_of(exc), headers={"cache-control": "no-store"})
        except Exception:
            logger.exception("ui api call failed")
            return JSONResponse({"error": "internal error"}, status_code=500, headers={"cache-control": "no-store"})
        return JSONResponse(body, headers={"cache-control": "no-store"})

    async def search(request: Request) -> Response:
        params = _params(request)
        return await call(lambda: api.search_json(engine, params, allowed))

    async def document(request: Request) -> Response:
        params = _params(request)
        doc_id = api._one(params, "id")  # the same parameter rules
        marked = [b for raw in params.get("block", []) for b in raw.split(",") if b]
        return await call(lambda: api.document_json(engine, doc_id, marked, allowed))

    async def status(request: Request) -> Response:
        files = api._one(_params(request), "files") in ("1", "true")
        return await call(lambda: api.status_json(engine, files, allowed))

    async def facets(request: Request) -> Response:
        return await call(lambda: api.facets_json(engine, allowed))

    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"cache-control": "no-cache"})

    async def not_found(request: Request) -> Response:
        return JSONResponse({"error": f"no such API call: {request.url.path[:100]}"}, status_code=404)

    app = Starlette(routes=[
        Route("/", page, methods=["GET", "HEAD"]),
        Route("/api/search", search, methods=["GET"]),
        Route("/api/document", document, methods=["GET"]),
        Route("/api/status", status, methods=["GET"]),
        Route("/api/facets", facets, methods=["GET"]),
        Route("/api/{rest:path}", not_found, methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ])
    return HostOriginGuard(app, port, authorize)


def serve_ui(engine: Engine, port: int = UI_DEFAULT_PORT, host: str = "127.0.0.1",
             allowed_projects: Sequence[str] | None = None,
             ready: Callable[[str], None] | None = None) -> None:
    """Serve the page on ``host:port`` (a loopback address) until interrupted.

    Args:
        port: the TCP port; 0 picks a free one (``ready`` is told the URL once listening).
        ready: called with the page's URL once the server listens.
    Raises:
        ConfigError: ``host`` is not a loopback address; the port is in use.
    """
    import socket

    import uvicorn

    if host not in ("127.0.0.1", "::1", "localhost"):
        raise errors.ConfigError(f"the page is served on loopback only (127.0.0.1, ::1 or localhost), not {host!r}")
    family = socket.AF_INET6 if host == "::1" else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind(("127.0.0.1" if host == "localhost" else host, port))
    except OSError as exc:
        sock.close()
        raise errors.ConfigError(f"cannot listen on {host} port {port}: {exc.strerror or exc}; "
                                 "pass another --port") from None
    sock.listen(128)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if host == "::1" else host
    config = uvicorn.Config(create_app(engine, bound, allowed_projects), log_level="warning", access_log=False,
                            lifespan="off", server_header=False, date_header=False)
    server = uvicorn.Server(config)
    if ready is not None:
        ready(f"http://{shown}:{bound}/")
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
