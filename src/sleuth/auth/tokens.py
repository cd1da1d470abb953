"""Bearer tokens for ``sleuth serve --http``: HS256 JWTs (PyJWT) signed with the index's own key.

Claims (RFC 7519, RFC 9068's names): ``iss`` (the server's origin), ``aud`` (the server's MCP URL:
RFC 8707's resource, checked on every request), ``sub`` (the user name), ``scope``
(space-separated, :data:`sleuth.auth.users.SCOPES`), ``iat``, ``exp``, ``jti`` and ``gen`` (the
user's token generation, see :mod:`sleuth.auth.users`); the JWT header carries ``kid``, the
signing key's id. The algorithm is fixed to HS256 on both sides (no ``alg`` from the token is
trusted); the keys are 32 random bytes each in :data:`~sleuth.auth.keys.KEY_FILE` (mode 0600) in
the index folder, made on first use and rotated with a grace period (:mod:`sleuth.auth.keys`).

:class:`JwtVerifier` is the MCP SDK's ``TokenVerifier``: a token passes only with a good signature
by a key still valid, the right ``iss`` and ``aud``, an ``exp`` in the future (both checked with
:data:`CLOCK_LEEWAY_S` of tolerance), a ``sub`` that names a user who is not disabled and whose
generation it carries. The scopes granted are the token's, less any the user no longer holds.
With an external issuer (:mod:`sleuth.auth.external`), RS256/ES256 tokens of that issuer are
checked against its JWKS instead, and map to users by ``sub``.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import anyio
import jwt
from mcp.server.auth.provider import AccessToken

from sleuth.auth.keys import KEY_BYTES, KEY_FILE, KeyRing, SigningKey, current_key, ensure_keys
from sleuth.auth.users import SCOPE_READ, SCOPES, User, UserStore
from sleuth.errors import ConfigError

if TYPE_CHECKING:
    from sleuth.auth.external import ExternalIssuer

__all__ = ["KEY_BYTES", "KEY_FILE", "JwtVerifier", "Verdict", "mint_token", "signing_key", "token_for_cli"]

log = logging.getLogger("sleuth.auth")

#: The only signing algorithm made or accepted.
ALGORITHM = "HS256"
#: Lifetime of a token when ``--ttl`` is not given, in seconds (30 days).
TOKEN_TTL_DEFAULT_S = 30 * 86400
#: Longest lifetime a token may be given, in seconds (366 days).
TOKEN_TTL_MAX_S = 366 * 86400
#: Clock difference tolerated between this server and a token's issuer when checking ``exp``,
#: ``iat`` (and ``nbf``), in seconds: a token is accepted up to 30 s past its ``exp``.
CLOCK_LEEWAY_S = 30
#: Longest bearer token looked at, in characters (longer ones are refused unparsed).
TOKEN_MAX_CHARS = 4096
#: The reason (prefix) of a token signed with this key but for another server URL (``aud`` or
#: ``iss`` of another URL): told apart so that its 401 can say how to mint one for this URL.
AUDIENCE_MISMATCH = "wrong audience"
#: Claims every token must carry.
REQUIRED_CLAIMS = ("iss", "aud", "sub", "scope", "iat", "exp", "gen")

_TTL_RE = re.compile(r"^\s*(\d{1,9})\s*([smhdw]?)\s*$")
_TTL_UNITS_S = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_duration(text: str, allow_zero: bool = False) -> int:
    """A duration like ``90m``, ``12h``, ``30d``, ``2w`` or ``3600`` (seconds), in seconds.

    Raises:
        ConfigError: not a duration, zero (unless ``allow_zero``), or longer than :data:`TOKEN_TTL_MAX_S`.
    """
    found = _TTL_RE.match(text)
    if not found:
        raise ConfigError(f"invalid duration {text!r}: use a number with s, m, h, d or w (e.g. 12h, 30d)")
    seconds = int(found.group(1)) * _TTL_UNITS_S[found.group(2)]
    if not (0 if allow_zero else 1) <= seconds <= TOKEN_TTL_MAX_S:
        raise ConfigError(f"give {0 if allow_zero else 1} s to {TOKEN_TTL_MAX_S // 86400} days; got {text!r}")
    return seconds


def parse_ttl(text: str) -> int:
    """A token's lifetime (:func:`parse_duration`, at least 1 s). Raises ConfigError."""
    try:
        return parse_duration(text)
    except ConfigError as exc:
        if _TTL_RE.match(text):
            raise ConfigError(f"a token lives from 1 s to {TOKEN_TTL_MAX_S // 86400} days; got {text!r}") from None
        raise exc


def canonical_resource(url: str) -> str:
    """The server's MCP URL as tokens name it (``aud``): scheme and host lower case, no trailing
    ``/``, no query or fragment.

    Raises:
        ConfigError: not an http(s) URL with a host.
    """
    parts = urlsplit(url.strip())
    if parts.scheme.lower() not in ("http", "https") or not parts.hostname or parts.query or parts.fragment:
        raise ConfigError(f"invalid server URL {url!r}: use http(s)://HOST[:PORT]/PATH, without query or fragment")
    netloc = parts.netloc.lower()
    path = parts.path.rstrip("/")
    return f"{parts.scheme.lower()}://{netloc}{path}"


def issuer_of(resource: str) -> str:
    """The ``iss`` of tokens for ``resource``: its origin (``scheme://host[:port]``)."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}"


def signing_key(index_dir: Path, create: bool = False) -> bytes:
    """The index's current token-signing key's secret (the key file made when missing and ``create``).

    Raises:
        ConfigError: no key and not ``create``; a key file readable by other users or malformed.
    """
    if create:
        return current_key(ensure_keys(index_dir)).secret
    return KeyRing(index_dir).current().secret


def mint_token(key: bytes | SigningKey, user: User, resource: str, ttl_s: int, scopes: tuple[str, ...] | None = None,
               now: float | None = None) -> str:
    """A signed token for ``user`` at ``resource`` (canonical URL) living ``ttl_s`` seconds.

    ``key``: a :class:`~sleuth.auth.keys.SigningKey` (its ``kid`` goes in the header), or a bare
    secret (no ``kid``). ``scopes``: a subset of the user's (None: all of them); the read scope is
    always included.
    Raises:
        ConfigError: a scope the user does not hold, or a disabled user.
    """
    if user.disabled:
        raise ConfigError(f"user {user.name!r} is disabled; enable it first (`sleuth users enable`)")
    wanted = tuple(scopes) if scopes is not None else user.scopes
    missing = [s for s in wanted if s not in user.scopes]
    if missing:
        raise ConfigError(f"user {user.name!r} does not hold scope(s) {', '.join(missing)}")
    granted = [s for s in SCOPES if s in wanted or s == SCOPE_READ]
    issued = int(now if now is not None else time.time())
    claims = {"iss": issuer_of(resource), "aud": resource, "sub": user.name, "scope": " ".join(granted),
              "iat": issued, "exp": issued + ttl_s, "jti": secrets.token_hex(8), "gen": user.generation}
    if isinstance(key, SigningKey):
        headers = None if key.legacy else {"kid": key.kid}
        return jwt.encode(claims, key.secret, algorithm=ALGORITHM, headers=headers)
    return jwt.encode(claims, key, algorithm=ALGORITHM)


@dataclass(frozen=True)
class Verdict:
    """What :meth:`JwtVerifier.check` made of a token: the access token, or why it was refused
    (and, when its signature held, whose it was: ``subject``, for the audit log)."""

    token: AccessToken | None
    reason: str = ""
    subject: str | None = None


def decode_failure(exc: jwt.PyJWTError) -> str:
    """The log reason of a PyJWT refusal."""
    # The issuer is checked before the audience: a token of this key for another host or port.
    for kind, reason in ((jwt.ExpiredSignatureError, "expired"), (jwt.InvalidAudienceError, AUDIENCE_MISMATCH),
                         (jwt.InvalidIssuerError, f"{AUDIENCE_MISMATCH} (and issuer)"),
                         (jwt.ImmatureSignatureError, "issued in the future"),
                         (jwt.InvalidSignatureError, "bad signature")):
        if isinstance(exc, kind):
            return reason
    return f"malformed ({type(exc).__name__})"


def expired_subject(token: str, key: Any, algorithms: list[str]) -> str | None:
    """The ``sub`` of a token refused as expired (its signature verified again), for the audit log."""
    try:
        claims = jwt.decode(token, key, algorithms=algorithms, options={"verify_exp": False, "verify_aud": False,
                                                                        "verify_iss": False})
    except (jwt.PyJWTError, TypeError, ValueError):
        return None
    sub = claims.get("sub")
    return sub if isinstance(sub, str) else None


class JwtVerifier:
    """The MCP SDK's ``TokenVerifier`` for tokens of :func:`mint_token` (see the module docstring).

    Args:
        key: the signing keys (a :class:`~sleuth.auth.keys.KeyRing`), or one bare secret.
        resource: the server's canonical MCP URL (the required ``aud``).
        users: the users file, read again when it changes.
        external: an external OAuth issuer whose tokens are accepted too (None: none).
    """

    def __init__(self, key: bytes | KeyRing, resource: str, users: UserStore,
                 external: ExternalIssuer | None = None) -> None:
        self.keys = key if isinstance(key, KeyRing) else KeyRing.fixed(key)
        self.resource = resource
        self.issuer = issuer_of(resource)
        self.users = users
        self.external = external

    def _is_external(self, token: str) -> bool:
        if self.external is None:
            return False
        try:
            return jwt.get_unverified_header(token).get("alg") in self.external.algorithms
        except jwt.PyJWTError:
            return False

    def check(self, token: str) -> Verdict:
        """Verify ``token``; never raises (a reason for the log instead)."""
        try:
            return self._check(token)
        except Exception as exc:  # noqa: BLE001 - a library's unexpected error on a hostile token: refused, not a 500
            log.warning("token check failed: %s", type(exc).__name__)
            return Verdict(None, f"malformed ({type(exc).__name__})")

    def _check(self, token: str) -> Verdict:
        if not token or len(token) > TOKEN_MAX_CHARS:
            return Verdict(None, "malformed")
        if self.external is not None and self._is_external(token):
            return self.external.check(token, self)
        try:
            header = jwt.get_unverified_header(token)
            key = self.keys.for_token(header.get("kid"))
        except jwt.PyJWTError as exc:
            return Verdict(None, decode_failure(exc))
        except (ConfigError, OSError) as exc:  # fail closed: a broken key file lets nobody in
            log.error("token-signing key unusable, refusing every token: %s", exc)
            return Verdict(None, "signing key unusable")
        if key is None:
            return Verdict(None, "unknown or retired signing key")
        try:
            claims = jwt.decode(token, key.secret, algorithms=[ALGORITHM], audience=self.resource,
                                issuer=self.issuer, leeway=CLOCK_LEEWAY_S,
                                options={"require": list(REQUIRED_CLAIMS)})
        except jwt.PyJWTError as exc:
            reason = decode_failure(exc)
            subject = expired_subject(token, key.secret, [ALGORITHM]) if reason == "expired" else None
            return Verdict(None, reason, subject)
        return self.grant(token, claims, self.issuer, check_generation=True)

    def grant(self, token: str, claims: dict[str, Any], issuer: str, check_generation: bool) -> Verdict:
        """The access token for verified ``claims`` when ``sub`` names a user who is enabled (and,
        with ``check_generation``, whose token generation ``gen`` is); the scopes are the
        ``scope`` claim's that the user holds."""
        sub, scope = claims.get("sub"), claims.get("scope")
        if not isinstance(sub, str) or not isinstance(scope, str) or not isinstance(claims.get("iat"), int):
            return Verdict(None, "malformed claims")
        if claims["iat"] > time.time() + CLOCK_LEEWAY_S:
            return Verdict(None, "issued in the future", sub)
        try:
            user = self.users.get(sub)
        except ConfigError as exc:  # fail closed: a broken users file lets nobody in
            log.error("users file unusable, refusing every token: %s", exc)
            return Verdict(None, "users file unusable", sub)
        except OSError as exc:
            log.error("users file unreadable, refusing every token: %s", exc)
            return Verdict(None, "users file unreadable", sub)
        if user is None:
            return Verdict(None, "unknown user", sub)
        if user.disabled:
            return Verdict(None, "disabled user", sub)
        if check_generation and not secrets.compare_digest(str(claims.get("gen")), user.generation):
            return Verdict(None, "revoked", sub)
        scopes = [s for s in scope.split() if s in user.scopes]
        return Verdict(AccessToken(token=token, client_id=sub, scopes=scopes, expires_at=int(claims["exp"]),
                                   resource=self.resource, subject=sub,
                                   claims={"iss": issuer, "jti": claims.get("jti")}))

    async def check_async(self, token: str) -> Verdict:
        """:meth:`check` off the event loop when the token is an external issuer's (its JWKS may
        have to be fetched); in line otherwise."""
        if self._is_external(token):
            return await anyio.to_thread.run_sync(self.check, token)
        return self.check(token)

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's ``TokenVerifier`` method: the access token, or None when refused."""
        return (await self.check_async(token)).token


def token_for_cli(index_dir: Path, name: str, url: str, ttl_s: int, scopes: tuple[str, ...] | None) -> str:
    """``sleuth users token``: a token for user ``name`` of ``index_dir`` at server ``url``.

    Raises:
        ConfigError: no such user, a bad URL or scope, a disabled user.
    """
    user = UserStore(index_dir).get(name)
    if user is None:
        raise ConfigError(f"no user {name!r} (see `sleuth users list`)")
    return mint_token(current_key(ensure_keys(index_dir)), user, canonical_resource(url), ttl_s, scopes)


def default_server_url() -> str:
    """The URL ``sleuth users token`` mints for without ``--url``: ``$SLEUTH_HTTP_URL`` or the
    default ``sleuth serve --http`` address."""
    from sleuth.httpd.settings import DEFAULT_HTTP_PORT

    return os.environ.get("SLEUTH_HTTP_URL") or f"http://127.0.0.1:{DEFAULT_HTTP_PORT}/mcp"
