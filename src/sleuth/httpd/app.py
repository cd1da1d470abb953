"""``sleuth serve --http``: the tool profiles of ``sleuth serve`` over MCP streamable HTTP.

One process opens the index (the same :class:`~sleuth.engine.Engine` the broker would) and serves
every user's sessions with one MCP server from the official SDK: its streamable HTTP session
manager at ``/mcp`` (``mcp.server.streamable_http_manager``), behind the checks of
:mod:`sleuth.httpd.guards` and the SDK's bearer ``AuthenticationMiddleware``, on uvicorn. The
server is an OAuth 2.1 resource server as the MCP authorization spec has it: RFC 9728 Protected
Resource Metadata at ``/.well-known/oauth-protected-resource`` (root and path form), tokens
checked for signature, ``iss``, ``aud`` (this server's URL), expiry, user and revocation on every
request (:class:`sleuth.auth.tokens.JwtVerifier`).

The SDK binds each protocol session to the ``(client_id, iss, sub)`` of the token that opened it
and answers 404 to a session id sent with another user's token; project access is decided inside
each call from that call's own token (:mod:`sleuth.httpd.caller`). The search page of
``sleuth ui`` is served at ``/ui`` behind the same tokens (:mod:`sleuth.httpd.ui`).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import sys
import threading
from collections.abc import AsyncIterator, Iterator, Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware
from mcp.server.auth.routes import cors_middleware
from mcp.server.mcpserver import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import ProtectedResourceMetadata
from pydantic import AnyHttpUrl
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.routing import Route

from sleuth.auth.keys import KeyRing
from sleuth.auth.tokens import JwtVerifier
from sleuth.auth.users import SCOPES, UserStore
from sleuth.broker.gate import WRITE, ReadWriteGate, gate_kinds
from sleuth.engine import Engine
from sleuth.httpd.audit import AUDIT_FILE, AuditLog
from sleuth.httpd.caller import CallerMiddleware, CallerRegistry
from sleuth.httpd.connections import guarded_protocol
from sleuth.httpd.guards import BearerBackend, HostOriginGuard, RateLimiter, RequireBearer
from sleuth.httpd.sessions import SessionQuota
from sleuth.httpd.settings import HTTP_HEAD_MAX_BYTES, HTTP_SESSION_IDLE_S, HTTP_SESSIONS_MAX, HttpSettings, is_loopback
from sleuth.httpd.ui import UI_PATH, ui_routes
from sleuth.mcp.registry import ServeContext
from sleuth.mcp.server import build_server, check_allowed_projects, needs_index

log = logging.getLogger("sleuth.http")

#: Seconds uvicorn keeps an idle keep-alive connection open.
HTTP_KEEP_ALIVE_S = 5
#: Most connections uvicorn serves at once (503 beyond); one client address's unfinished requests
#: take at most ``HTTP_PENDING_PER_CLIENT_MAX`` of them (:mod:`sleuth.httpd.connections`).
HTTP_CONNECTIONS_MAX = 512
#: Seconds a stopping server waits for open connections and sessions.
HTTP_SHUTDOWN_WAIT_S = 10


def metadata_routes(settings: HttpSettings) -> list[Route]:
    """RFC 9728 Protected Resource Metadata at the path form
    (``/.well-known/oauth-protected-resource/mcp``) and the root form
    (``/.well-known/oauth-protected-resource``), one document, served by the SDK's handler. Its
    ``authorization_servers`` names the external issuer when there is one, else this server."""
    metadata = ProtectedResourceMetadata(resource=AnyHttpUrl(settings.resource),
                                         authorization_servers=[AnyHttpUrl(settings.issuer_url or settings.issuer)],
                                         scopes_supported=list(SCOPES), resource_name="sleuth")
    endpoint = cors_middleware(ProtectedResourceMetadataHandler(metadata).handle, ["GET", "OPTIONS"])
    root = "/.well-known/oauth-protected-resource"
    paths = dict.fromkeys([urlsplit(settings.metadata_url).path, root])
    return [Route(path, endpoint=endpoint, methods=["GET", "OPTIONS"]) for path in paths]


async def build_app(server: MCPServer[Any], engine: Engine, settings: HttpSettings, users: UserStore,
                    verifier: JwtVerifier, audit: AuditLog | None,
                    allowed_projects: Sequence[str] | None = None, page: bool = True) -> Starlette:
    """The ASGI app: guards, bearer authentication, metadata, the SDK's MCP endpoint and (with
    ``page``) the search page at ``/ui`` behind the same tokens (:mod:`sleuth.httpd.ui`)."""
    kinds = gate_kinds(await server.list_tools())
    gate = ReadWriteGate()
    limiter = RateLimiter(settings.rate_requests, settings.rate_period_s)
    server.middleware.append(CallerMiddleware(users, kinds, gate, audit, engine.index_dir / "write.lock"))
    security = TransportSecuritySettings(enable_dns_rebinding_protection=True,
                                         allowed_hosts=sorted(settings.allowed_hosts),
                                         allowed_origins=sorted(settings.allowed_origins))
    inner = server.streamable_http_app(streamable_http_path=settings.mcp_path,
                                       max_request_body_size=settings.max_request_bytes,
                                       session_idle_timeout=HTTP_SESSION_IDLE_S, max_sessions=HTTP_SESSIONS_MAX,
                                       transport_security=security, host=settings.host)
    sessions = SessionQuota(server.session_manager, settings.sessions_per_user_max)
    endpoint = RequireBearer(inner, settings, [name for name, kind in kinds.items() if kind == WRITE], limiter,
                             audit=audit, sessions=sessions)
    extra = ui_routes(engine, settings, users, limiter, gate, audit, allowed_projects) if page else []

    @contextlib.asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        async with server.session_manager.run():
            yield

    return Starlette(
        routes=[*metadata_routes(settings), Route(settings.mcp_path, endpoint=endpoint), *extra],
        middleware=[Middleware(HostOriginGuard, settings=settings, audit=audit),
                    Middleware(AuthenticationMiddleware, backend=BearerBackend(verifier)),
                    Middleware(AuthContextMiddleware)],
        lifespan=lifespan,
    )


@contextlib.contextmanager
def _sigterm_returns() -> Iterator[None]:
    """While serving: uvicorn stops gracefully on SIGTERM, restores the handler it found and raises
    the signal again; with the default handler that would kill the process before the audit log
    is flushed and the index closed. A no-op handler in its place lets ``run_http`` return. A
    handler the caller set is kept (``sleuth serve --http``'s,
    :func:`sleuth.interrupts.stopped_by_signals`: its ``KeyboardInterrupt`` unwinds through the
    closing of the audit log and the index)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None):
        yield
        return
    previous = signal.signal(signal.SIGTERM, lambda *_: None)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_http(settings: HttpSettings, profiles: Sequence[str], index: str | Path | None = None,
             allowed_projects: Sequence[str] | None = None, guides_path: Path | None = None) -> None:
    """Serve ``profiles`` over streamable HTTP until SIGINT/SIGTERM (see the module docstring).

    The index is opened whatever the profiles: its folder holds the users, the signing key and the
    audit log (profiles without ``needs_index`` still serve only verified users).

    Raises:
        ConfigError: no users or no signing key, a users file or key readable by others, an
            unknown ``--project`` (or one without an index profile).
        IndexNotFound: no index.
    """
    import uvicorn

    logging.basicConfig(stream=sys.stderr, level=logging.WARNING,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    log.setLevel(logging.INFO)
    engine = Engine.open(index, serving=True)  # always: the users, the signing key and the audit log live in its folder
    context = ServeContext(allowed_projects=allowed_projects, guides_path=guides_path,
                           engine=engine if needs_index(profiles) else None, registry=CallerRegistry(),
                           per_caller=True)
    audit: AuditLog | None = None
    try:
        check_allowed_projects(profiles, engine, allowed_projects)
        users = UserStore(engine.index_dir)
        if not users.users():
            from sleuth.errors import ConfigError

            raise ConfigError(f"no users in {users.path}: add one with `sleuth users add NAME --project P`")
        keys = KeyRing(engine.index_dir)
        keys.current()  # no key file, or a malformed or shared one: refuse to start
        external = None
        if settings.issuer_url and settings.jwks_url:
            from sleuth.auth.external import ExternalIssuer

            external = ExternalIssuer(settings.issuer_url, settings.jwks_url)
        verifier = JwtVerifier(keys, settings.resource, users, external)
        audit = AuditLog(engine.index_dir / AUDIT_FILE, settings.audit_queries)
        server = build_server(context, profiles)
        page = needs_index(profiles)
        app = anyio.run(build_app, server, engine, settings, users, verifier, audit, allowed_projects, page)
        if not is_loopback(settings.host) and not settings.resource.startswith("https://"):
            log.warning("listening on %s without TLS: bearer tokens cross the network in clear text; put a TLS "
                        "proxy in front and pass its https:// URL with --url (docs/MCP.md: 'Serving a team over HTTP')",
                        settings.host)
        log.info("serving MCP at %s (metadata %s); users from %s; tokens for it: "
                 "sleuth users token NAME --url %s", settings.resource, settings.metadata_url, users.path,
                 settings.resource)
        if page:
            log.info("the search page: %s%s/ (asks for a token once)", settings.issuer, UI_PATH)
        refused = audit.refusal
        protocol = guarded_protocol(settings.head_timeout_s, settings.body_timeout_s, settings.pending_per_client_max,
                                    lambda status, reason, client: refused(status, reason, None, client),
                                    HTTP_HEAD_MAX_BYTES)
        config = uvicorn.Config(app, host=settings.host, port=settings.port, log_level="warning", lifespan="on",
                                http=protocol, h11_max_incomplete_event_size=HTTP_HEAD_MAX_BYTES,
                                timeout_keep_alive=HTTP_KEEP_ALIVE_S, limit_concurrency=HTTP_CONNECTIONS_MAX,
                                timeout_graceful_shutdown=HTTP_SHUTDOWN_WAIT_S, server_header=False,
                                proxy_headers=False)
        with _sigterm_returns():
            uvicorn.Server(config).run()
    finally:
        context.close()
        if audit is not None:
            audit.close()
        engine.close()
