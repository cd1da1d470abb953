"""The page's server: a starlette application over one open Engine, and ``serve_ui`` to run it.

Routes (:func:`page_routes`): ``/`` (the page), ``/static/*`` (its files, shipped in the package),
and the JSON API the page uses -- ``/api/search``, ``/api/document``, ``/api/status``,
``/api/facets`` (see :mod:`sleuth.ui.api`). Every request passes
:class:`sleuth.ui.guard.HostOriginGuard` first, then, under ``sleuth ui``,
:class:`sleuth.ui.secret.TokenGuard` (the run's token, from the printed URL, as a bearer header
on every ``/api/`` call). ``sleuth serve --http`` mounts the same routes at
``/ui`` behind its bearer tokens (:mod:`sleuth.httpd.ui`).
Engine calls run in worker threads, at most ``UI_CONCURRENT_CALLS`` at a time, never on the event
loop. A SleuthError answers ``{"error": message}`` with a status that fits it; anything else answers
``{"error": "internal error"}`` (500) and is logged, never shown.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import anyio
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route
from starlette.staticfiles import StaticFiles

from sleuth import errors
from sleuth.engine import Engine
from sleuth.scaleout import hide_locations, remote_message
from sleuth.ui import UI_DEFAULT_PORT, api
from sleuth.ui.guard import HostOriginGuard, Scope
from sleuth.ui.secret import TokenGuard, new_token, tokened_url

logger = logging.getLogger(__name__)

#: The keys of a page answer (search, status) whose values quote lanes' errors, which name where
#: Milvus and the PostgreSQL catalog are: hidden from a remote user (:func:`sleuth.scaleout.hide_locations`).
LANE_MESSAGE_KEYS = frozenset({"notice", "word_notice", "unavailable_lanes", "failed_lanes", "skipped_lanes",
                               "lanes"})

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


class PageRefused(Exception):
    """Raised by an access function: the request is answered ``status`` with ``{"error": message}``
    (and ``headers``), never served (a missing or refused bearer token over HTTP)."""

    def __init__(self, status: int, message: str, headers: Mapping[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.headers = status, message, dict(headers or {})


#: Who a request is served for: the projects it may see (None: every project of the index), or
#: :class:`PageRefused`. Over HTTP, the verified user's projects as the users file says now.
AccessOf = Callable[[Request], Sequence[str] | None]
#: Runs one read of the page (``kind``: search, document, status, facets) for ``request``; the
#: default runs it in a worker thread. Over HTTP it also passes the server's read/write gate and
#: writes an audit line.
ReadRunner = Callable[[Request, str, Callable[[], dict[str, Any]]], Awaitable[dict[str, Any]]]


def page_routes(engine: Engine, access: AccessOf, remote: bool = False,
                run: ReadRunner | None = None) -> list[BaseRoute]:
    """The page's routes over ``engine`` (``/``, ``/api/*``, ``/static/*``), relative to where they
    are mounted.

    Args:
        access: the projects each request may see (see :data:`AccessOf`); called on every API call.
        remote: served to remote users (``sleuth serve --http``): the index page leaves out what is
            index-wide (folder, generations, the writer, embedding counts), see :func:`api.status_json`,
            and the lanes' errors and the error messages name no location of Milvus or the catalog
            (``LANE_MESSAGE_KEYS``).
        run: see :data:`ReadRunner`.
    """
    limiter = anyio.CapacityLimiter(UI_CONCURRENT_CALLS)

    async def in_thread(request: Request, kind: str, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        return await anyio.to_thread.run_sync(work, limiter=limiter)

    runner = run or in_thread

    async def call(request: Request, kind: str, work: Callable[[Sequence[str] | None], dict[str, Any]]) -> Response:
        headers = {"cache-control": "no-store"}
        try:
            allowed = access(request)
            body = await runner(request, kind, lambda: work(allowed))
        except PageRefused as exc:
            return JSONResponse({"error": exc.message}, status_code=exc.status, headers={**headers, **exc.headers})
        except errors.SleuthError as exc:
            message = remote_message(exc, engine) if remote else str(exc)
            return JSONResponse({"error": message}, status_code=_status_of(exc), headers=headers)
        except Exception:
            logger.exception("ui api call failed")
            return JSONResponse({"error": "internal error"}, status_code=500, headers=headers)
        if remote:  # the lanes' errors, not the documents' text (a host name may be a word of it)
            body = {k: hide_locations(v, engine) if k in LANE_MESSAGE_KEYS else v for k, v in body.items()}
        return JSONResponse(body, headers=headers)

    async def search(request: Request) -> Response:
        params = _params(request)
        return await call(request, "search", lambda allowed: api.search_json(engine, params, allowed, remote))

    async def document(request: Request) -> Response:
        params = _params(request)
        doc_id = api._one(params, "id")  # the same parameter rules
        marked = [b for raw in params.get("block", []) for b in raw.split(",") if b]
        return await call(request, "document", lambda allowed: api.document_json(engine, doc_id, marked, allowed,
                                                                                   remote))

    async def status(request: Request) -> Response:
        files = api._one(_params(request), "files") in ("1", "true")
        return await call(request, "status", lambda allowed: api.status_json(engine, files, allowed, remote=remote))

    async def facets(request: Request) -> Response:
        return await call(request, "facets", lambda allowed: api.facets_json(engine, allowed, remote=remote))

    async def page(request: Request) -> Response:
        return FileResponse(STATIC_DIR / "index.html", headers={"cache-control": "no-cache"})

    async def not_found(request: Request) -> Response:
        return JSONResponse({"error": f"no such API call: {request.url.path[:100]}"}, status_code=404)

    return [
        Route("/", page, methods=["GET", "HEAD"]),
        Route("/api/search", search, methods=["GET"]),
        Route("/api/document", document, methods=["GET"]),
        Route("/api/status", status, methods=["GET"]),
        Route("/api/facets", facets, methods=["GET"]),
        Route("/api/{rest:path}", not_found, methods=["GET"]),
        Mount("/static", StaticFiles(directory=STATIC_DIR), name="static"),
    ]


def create_app(engine: Engine, port: int, token: str, allowed_projects: Sequence[str] | None = None,
               authorize: Callable[[Scope], str | None] | None = None) -> HostOriginGuard:
    """The page's ASGI application over ``engine``, for a server listening on loopback ``port``.

    Args:
        token: the run's secret (:func:`sleuth.ui.secret.new_token`); every ``/api/`` request must hold it
            (:class:`sleuth.ui.secret.TokenGuard`), after the ``Host``/``Origin`` checks.
        allowed_projects: the projects the page may show (None: every project of the index).
        authorize: see :class:`sleuth.ui.guard.HostOriginGuard`.
    Raises:
        ValueError: ``token`` is empty.
    """
    allowed = list(allowed_projects) if allowed_projects is not None else None
    app = Starlette(routes=page_routes(engine, lambda request: allowed))
    return HostOriginGuard(TokenGuard(app, token), port, authorize)


def serve_ui(engine: Engine, port: int = UI_DEFAULT_PORT, host: str = "127.0.0.1",
             allowed_projects: Sequence[str] | None = None,
             ready: Callable[[str], None] | None = None, token: str | None = None) -> None:
    """Serve the page on ``host:port`` (a loopback address) until interrupted.

    Args:
        port: the TCP port; 0 picks a free one (``ready`` is told the URL once listening).
        ready: called with the page's URL, token included (``http://127.0.0.1:PORT/?token=...``),
            once the server listens; the only way the token is made known.
        token: the secret ``/api/`` requests must hold (None: a new random one, :func:`sleuth.ui.secret.new_token`).
    Raises:
        ConfigError: ``host`` is not a loopback address; the port is in use.
    """
    import socket

    import uvicorn

    if host not in ("127.0.0.1", "::1", "localhost"):
        raise errors.ConfigError(f"the page is served on loopback only (127.0.0.1, ::1 or localhost), not {host!r}")
    secret = token or new_token()
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
    config = uvicorn.Config(create_app(engine, bound, secret, allowed_projects), log_level="warning",
                            access_log=False, lifespan="off", server_header=False, date_header=False)
    server = uvicorn.Server(config)
    if ready is not None:
        ready(tokened_url(f"http://{shown}:{bound}/", secret))
    try:
        server.run(sockets=[sock])
    finally:
        sock.close()
