"""Settings of ``sleuth serve --http``: the address, the server's URL, the Host and Origin
allow lists, the request size limit and the per-token rate limit -- all checked before serving."""

from __future__ import annotations

import ipaddress
import os
import re
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

from sleuth.auth.tokens import canonical_resource, issuer_of
from sleuth.errors import ConfigError

#: Port of ``sleuth serve --http`` when only a host (or nothing) is given.
DEFAULT_HTTP_PORT = 8765
#: Host bound when ``--http`` names only a port: loopback, reachable from this machine only.
DEFAULT_HTTP_HOST = "127.0.0.1"
#: The MCP endpoint's path.
MCP_PATH = "/mcp"
#: Largest request body accepted, in bytes (larger ones get 413 before they are parsed).
HTTP_REQUEST_MAX_BYTES = 4 * 1024 * 1024
#: Requests per token per minute when ``--rate-limit`` is not given (and the burst allowed).
RATE_LIMIT_DEFAULT = "600/min"
#: Most MCP sessions open at once (the SDK answers 503 beyond).
HTTP_SESSIONS_MAX = 256
#: A session without requests for this long is closed, in seconds.
HTTP_SESSION_IDLE_S = 1800.0
#: Most MCP sessions one user may hold open; opening another closes their least recently used
#: idle one (429 with ``Retry-After`` when none of theirs is idle).
HTTP_SESSIONS_PER_USER_MAX = 32
#: Requests of one user served at once, event streams included (429 with ``Retry-After`` beyond),
#: so one user's slow calls never take every connection (``$SLEUTH_HTTP_REQUESTS_PER_USER``).
HTTP_REQUESTS_PER_USER_MAX = 64
#: Seconds a connection has to send a whole request head (408 and closed after;
#: ``$SLEUTH_HTTP_HEAD_TIMEOUT_S``).
HTTP_HEAD_TIMEOUT_S = 10.0
#: Seconds a request has to send its whole body once its head is in (408 and closed after;
#: ``$SLEUTH_HTTP_BODY_TIMEOUT_S``).
HTTP_BODY_TIMEOUT_S = 60.0
#: Connections one client address may hold that have not finished sending their request (503 beyond).
HTTP_PENDING_PER_CLIENT_MAX = 32
#: Largest request head (request line and headers), in bytes (400 beyond; h11's incomplete event size).
HTTP_HEAD_MAX_BYTES = 16 * 1024

_LOOPBACK_NAMES = ("localhost",)
_RATE_RE = re.compile(r"^\s*(\d{1,7})\s*/\s*(s|sec|second|m|min|minute|h|hour)\s*$")
_RATE_PERIOD_S = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0,
                  "h": 3600.0, "hour": 3600.0}


def is_loopback(host: str) -> bool:
    """True for ``localhost``, 127.0.0.0/8 and ::1."""
    if host.lower() in _LOOPBACK_NAMES:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def is_wildcard(host: str) -> bool:
    """True for ``0.0.0.0`` and ``::`` (every interface)."""
    try:
        return ipaddress.ip_address(host).is_unspecified
    except ValueError:
        return False


def parse_bind(text: str) -> tuple[str, int]:
    """``[HOST:]PORT`` (``[::1]:8765`` for IPv6) as (host, port); host defaults to loopback.

    Raises:
        ConfigError: not of that form, or a port outside 1-65535.
    """
    text = text.strip()
    found = re.fullmatch(r"(?:\[([0-9A-Fa-f:.]+)\]|([^:\[\]\s]*)):(\d{1,5})", text) or \
        re.fullmatch(r"()()(\d{1,5})", text)
    if not found:
        raise ConfigError(f"invalid --http {text!r}: use PORT, HOST:PORT or [IPV6]:PORT (e.g. 127.0.0.1:8765)")
    host = found.group(1) or found.group(2) or DEFAULT_HTTP_HOST
    port = int(found.group(3))
    if not 0 < port < 65536:
        raise ConfigError(f"invalid port {port} in --http: use 1-65535")
    return host, port


def parse_rate(text: str) -> tuple[int, float]:
    """``N/s``, ``N/min`` or ``N/hour`` as (requests, period in seconds); N >= 1.

    Raises:
        ConfigError: not of that form.
    """
    found = _RATE_RE.match(text)
    if not found or int(found.group(1)) < 1:
        raise ConfigError(f"invalid --rate-limit {text!r}: use N/s, N/min or N/hour with N >= 1 (e.g. 600/min)")
    return int(found.group(1)), _RATE_PERIOD_S[found.group(2)]


def _host_port(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


@dataclass(frozen=True)
class HttpSettings:
    """Everything ``sleuth serve --http`` needs besides the index.

    Attributes:
        host, port: the address bound.
        resource: the server's canonical MCP URL (tokens' ``aud``, the metadata's ``resource``).
        issuer: tokens' ``iss`` (the resource's origin).
        allowed_hosts: ``Host`` header values accepted (others get 421), lower case.
        allowed_origins: ``Origin`` header values accepted when one is sent (others get 403).
        max_request_bytes: largest request body accepted (413 beyond).
        rate_requests, rate_period_s: each token may make ``rate_requests`` requests per
            ``rate_period_s`` seconds (a token bucket of that size; 429 beyond).
        audit_queries: the audit log records query texts too.
        head_timeout_s, body_timeout_s: time a connection has for its request head, then its body.
        pending_per_client_max: unfinished requests one client address may hold open.
        sessions_per_user_max: MCP sessions one user may hold open.
        issuer_url, jwks_url: an external OAuth issuer whose RS256/ES256 tokens are accepted too
            (:mod:`sleuth.auth.external`); None: only this server's own tokens.
    """

    host: str
    port: int
    resource: str
    issuer: str
    allowed_hosts: frozenset[str]
    allowed_origins: frozenset[str]
    max_request_bytes: int = HTTP_REQUEST_MAX_BYTES
    rate_requests: int = 600
    rate_period_s: float = 60.0
    audit_queries: bool = False
    head_timeout_s: float = HTTP_HEAD_TIMEOUT_S
    body_timeout_s: float = HTTP_BODY_TIMEOUT_S
    pending_per_client_max: int = HTTP_PENDING_PER_CLIENT_MAX
    sessions_per_user_max: int = HTTP_SESSIONS_PER_USER_MAX
    requests_per_user_max: int = HTTP_REQUESTS_PER_USER_MAX
    issuer_url: str | None = None
    jwks_url: str | None = None

    @property
    def metadata_url(self) -> str:
        """RFC 9728 section 3.1: ``/.well-known/oauth-protected-resource`` + the resource's path."""
        parts = urlsplit(self.resource)
        return f"{parts.scheme}://{parts.netloc}/.well-known/oauth-protected-resource{parts.path}"

    @property
    def mcp_path(self) -> str:
        """The path the MCP endpoint is served at (the resource URL's, ``/mcp`` by default)."""
        return urlsplit(self.resource).path or MCP_PATH


def http_settings(bind: str, url: str | None = None, allow_hosts: Sequence[str] = (),
                  allow_origins: Sequence[str] = (), max_request_bytes: int = HTTP_REQUEST_MAX_BYTES,
                  rate_limit: str = RATE_LIMIT_DEFAULT, audit_queries: bool = False,
                  issuer_url: str | None = None, jwks_url: str | None = None) -> HttpSettings:
    """Checked settings from the command line.

    Args:
        bind: ``--http [HOST:]PORT``.
        url: ``--url``: the URL clients reach the MCP endpoint at (behind a TLS proxy, its
            ``https://`` URL); default ``http://HOST:PORT/mcp``. Needed when binding every interface.
        allow_hosts: more ``Host`` values to accept (``--allow-host``; ``name`` or ``name:port``).
        allow_origins: more ``Origin`` values to accept (``--allow-origin``, e.g. ``https://app.example``).
        max_request_bytes, rate_limit, audit_queries: see :class:`HttpSettings`.
        issuer_url, jwks_url: ``--issuer-url`` / ``--jwks-url`` (both or neither).
    Raises:
        ConfigError: a bad address, URL, rate or size; one of the issuer URLs without the other.
    """
    if bool(issuer_url) != bool(jwks_url):
        raise ConfigError("--issuer-url and --jwks-url go together: give both (or neither)")
    if issuer_url and jwks_url:
        from sleuth.auth.external import check_issuer_url

        issuer_url, jwks_url = check_issuer_url(issuer_url, "--issuer-url"), check_issuer_url(jwks_url, "--jwks-url")
    host, port = parse_bind(bind)
    if is_wildcard(host) and not url:
        raise ConfigError(f"--http {bind} listens on every interface: give --url with the address clients use "
                          "(e.g. --url https://kb.example.com/mcp), so tokens and Host checks name it")
    resource = canonical_resource(url or f"http://{_host_port(host, port)}{MCP_PATH}")
    if max_request_bytes < 1024:
        raise ConfigError("--max-request-bytes must be at least 1024")
    requests, period = parse_rate(rate_limit)
    public = urlsplit(resource)
    hosts = {public.netloc.lower()}
    if public.port is None:  # a default port may be sent with or without it
        hosts.add(f"{public.hostname}:{443 if public.scheme == 'https' else 80}")
    if not is_wildcard(host):
        hosts.add(_host_port(host, port).lower())
    if is_loopback(host):
        hosts |= {f"127.0.0.1:{port}", f"localhost:{port}", f"[::1]:{port}"}
    for extra in allow_hosts:
        value = extra.strip().lower()
        if not value or any(c in value for c in "/ ,"):
            raise ConfigError(f"invalid --allow-host {extra!r}: give a host name, optionally with :port")
        hosts.add(value)
    origins = {f"{scheme}://{h}" for h in hosts for scheme in ("http", "https")}
    for extra in allow_origins:
        parts = urlsplit(extra.strip())
        if parts.scheme not in ("http", "https") or not parts.netloc or parts.path not in ("", "/"):
            raise ConfigError(f"invalid --allow-origin {extra!r}: give scheme://host[:port], e.g. https://app.example")
        origins.add(f"{parts.scheme}://{parts.netloc.lower()}")
    return HttpSettings(host=host, port=port, resource=resource, issuer=issuer_of(resource),
                        allowed_hosts=frozenset(hosts), allowed_origins=frozenset(origins),
                        max_request_bytes=max_request_bytes, rate_requests=requests, rate_period_s=period,
                        audit_queries=audit_queries, issuer_url=issuer_url or None, jwks_url=jwks_url or None,
                        head_timeout_s=_seconds_from_env("SLEUTH_HTTP_HEAD_TIMEOUT_S", HTTP_HEAD_TIMEOUT_S),
                        body_timeout_s=_seconds_from_env("SLEUTH_HTTP_BODY_TIMEOUT_S", HTTP_BODY_TIMEOUT_S),
                        requests_per_user_max=_count_from_env("SLEUTH_HTTP_REQUESTS_PER_USER",
                                                              HTTP_REQUESTS_PER_USER_MAX))


def _count_from_env(name: str, default: int) -> int:
    """A positive count from environment variable ``name`` (``default`` when unset).

    Raises:
        ConfigError: not a whole number from 1 to 100,000.
    """
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    if not raw.isdigit() or not 1 <= int(raw) <= 100_000:
        raise ConfigError(f"${name} must be a whole number from 1 to 100000; got {raw[:40]!r}")
    return int(raw)


#: Longest head or body timeout accepted from the environment, in seconds.
HTTP_TIMEOUT_MAX_S = 3600.0


def _seconds_from_env(name: str, default: float) -> float:
    """``$name`` as seconds (0 < s <= :data:`HTTP_TIMEOUT_MAX_S`), ``default`` when unset.

    Raises:
        ConfigError: set but not such a number.
    """
    text = os.environ.get(name, "").strip()
    if not text:
        return default
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 < value <= HTTP_TIMEOUT_MAX_S:
        raise ConfigError(f"invalid ${name} {text!r}: give seconds from 0 to {HTTP_TIMEOUT_MAX_S:g}")
    return value
