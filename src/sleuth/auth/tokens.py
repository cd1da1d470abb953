"""Bearer tokens for ``sleuth serve --http``: HS256 JWTs (PyJWT) signed with the index's own key.

Claims (RFC 7519, RFC 9068's names): ``iss`` (the server's origin), ``aud`` (the server's MCP URL:
RFC 8707's resource, checked on every request), ``sub`` (the user name), ``scope``
(space-separated, :data:`sleuth.auth.users.SCOPES`), ``iat``, ``exp``, ``jti`` and ``gen`` (the
user's token generation, see :mod:`sleuth.auth.users`). The algorithm is fixed to HS256 on both
sides (no ``alg`` from the token is trusted); the key is 32 random bytes in :data:`KEY_FILE`
(mode 0600) in the index folder, made on first use.

:class:`JwtVerifier` is the MCP SDK's ``TokenVerifier``: a token passes only with a good signature,
the right ``iss`` and ``aud``, an ``exp`` in the future, a ``sub`` that names a user who is not
disabled and whose generation it carries. The scopes granted are the token's, less any the user no
longer holds.
"""

from __future__ import annotations

import logging
import os
import re
import secrets
import time
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

import jwt
from mcp.server.auth.provider import AccessToken

from sleuth.auth.users import SCOPE_READ, SCOPES, User, UserStore, check_private, write_private
from sleuth.errors import ConfigError

log = logging.getLogger("sleuth.auth")

#: The signing key, in the index folder.
KEY_FILE = "token-signing.key"
#: Bytes of randomness in a new signing key (HS256 wants at least 32).
KEY_BYTES = 32
#: The only signing algorithm made or accepted.
ALGORITHM = "HS256"
#: Lifetime of a token when ``--ttl`` is not given, in seconds (30 days).
TOKEN_TTL_DEFAULT_S = 30 * 86400
#: Longest lifetime a token may be given, in seconds (366 days).
TOKEN_TTL_MAX_S = 366 * 86400
#: Clock difference tolerated when checking ``exp`` and ``iat``, in seconds.
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


def parse_ttl(text: str) -> int:
    """A duration like ``90m``, ``12h``, ``30d``, ``2w`` or ``3600`` (seconds), in seconds.

    Raises:
        ConfigError: not a duration, zero, or longer than :data:`TOKEN_TTL_MAX_S`.
    """
    found = _TTL_RE.match(text)
    if not found:
        raise ConfigError(f"invalid duration {text!r}: use a number with s, m, h, d or w (e.g. 12h, 30d)")
    seconds = int(found.group(1)) * _TTL_UNITS_S[found.group(2)]
    if not 0 < seconds <= TOKEN_TTL_MAX_S:
        raise ConfigError(f"a token lives from 1 s to {TOKEN_TTL_MAX_S // 86400} days; got {text!r}")
    return seconds


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
    """The index's token-signing key (made when missing and ``create``).

    Raises:
        ConfigError: no key and not ``create``; a key file readable by other users or malformed.
    """
    path = index_dir / KEY_FILE
    if not path.exists():
        if not create:
            raise ConfigError(f"no token-signing key in {index_dir}: add a user with `sleuth users add` first")
        try:
            write_private(path, secrets.token_hex(KEY_BYTES).encode("ascii") + b"\n")
        except FileExistsError:
            pass
    check_private(path, "the token-signing key")
    text = path.read_text(encoding="ascii", errors="replace").strip()
    if not re.fullmatch(r"[0-9a-f]{64,}", text):
        raise ConfigError(f"{path} is not a sleuth token-signing key")
    return bytes.fromhex(text)


def mint_token(key: bytes, user: User, resource: str, ttl_s: int, scopes: tuple[str, ...] | None = None,
               now: float | None = None) -> str:
    """A signed token for ``user`` at ``resource`` (canonical URL) living ``ttl_s`` seconds.

    ``scopes``: a subset of the user's (None: all of them); the read scope is always included.
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
    return jwt.encode(claims, key, algorithm=ALGORITHM)


@dataclass(frozen=True)
class Verdict:
    """What :meth:`JwtVerifier.check` made of a token: the access token, or why it was refused."""

    token: AccessToken | None
    reason: str = ""


class JwtVerifier:
    """The MCP SDK's ``TokenVerifier`` for tokens of :func:`mint_token` (see the module docstring).

    Args:
        key: the signing key.
        resource: the server's canonical MCP URL (the required ``aud``).
        users: the users file, read again when it changes.
    """

    def __init__(self, key: bytes, resource: str, users: UserStore) -> None:
        self.key = key
        self.resource = resource
        self.issuer = issuer_of(resource)
        self.users = users

    def check(self, token: str) -> Verdict:
        """Verify ``token``; never raises (a reason for the log instead)."""
        if not token or len(token) > TOKEN_MAX_CHARS:
            return Verdict(None, "malformed")
        try:
            claims = jwt.decode(token, self.key, algorithms=[ALGORITHM], audience=self.resource,
                                issuer=self.issuer, leeway=CLOCK_LEEWAY_S,
                                options={"require": list(REQUIRED_CLAIMS)})
        except jwt.ExpiredSignatureError:
            return Verdict(None, "expired")
        except jwt.InvalidAudienceError:
            return Verdict(None, AUDIENCE_MISMATCH)
        except jwt.InvalidIssuerError:  # checked before aud: a token for another host or port
            return Verdict(None, f"{AUDIENCE_MISMATCH} (and issuer)")
        except jwt.ImmatureSignatureError:
            return Verdict(None, "issued in the future")
        except jwt.InvalidSignatureError:
            return Verdict(None, "bad signature")
        except jwt.InvalidTokenError as exc:
            return Verdict(None, f"malformed ({type(exc).__name__})")
        sub, scope = claims.get("sub"), claims.get("scope")
        if not isinstance(sub, str) or not isinstance(scope, str) or not isinstance(claims.get("iat"), int):
            return Verdict(None, "malformed claims")
        if claims["iat"] > time.time() + CLOCK_LEEWAY_S:
            return Verdict(None, "issued in the future")
        try:
            user = self.users.get(sub)
        except ConfigError as exc:  # fail closed: a broken users file lets nobody in
            log.error("users file unusable, refusing every token: %s", exc)
            return Verdict(None, "users file unusable")
        except OSError as exc:
            log.error("users file unreadable, refusing every token: %s", exc)
            return Verdict(None, "users file unreadable")
        if user is None:
            return Verdict(None, "unknown user")
        if user.disabled:
            return Verdict(None, "disabled user")
        if not secrets.compare_digest(str(claims.get("gen")), user.generation):
            return Verdict(None, "revoked")
        scopes = [s for s in scope.split() if s in user.scopes]
        return Verdict(AccessToken(token=token, client_id=sub, scopes=scopes, expires_at=int(claims["exp"]),
                                   resource=self.resource, subject=sub,
                                   claims={"iss": self.issuer, "jti": claims.get("jti")}))

    async def verify_token(self, token: str) -> AccessToken | None:
        """The SDK's ``TokenVerifier`` method: the access token, or None when refused."""
        return self.check(token).token


def token_for_cli(index_dir: Path, name: str, url: str, ttl_s: int, scopes: tuple[str, ...] | None) -> str:
    """``sleuth users token``: a token for user ``name`` of ``index_dir`` at server ``url``.

    Raises:
        ConfigError: no such user, a bad URL or scope, a disabled user.
    """
    user = UserStore(index_dir).get(name)
    if user is None:
        raise ConfigError(f"no user {name!r} (see `sleuth users list`)")
    return mint_token(signing_key(index_dir, create=True), user, canonical_resource(url), ttl_s, scopes)


def default_server_url() -> str:
    """The URL ``sleuth users token`` mints for without ``--url``: ``$SLEUTH_HTTP_URL`` or the
    default ``sleuth serve --http`` address."""
    from sleuth.httpd.settings import DEFAULT_HTTP_PORT

    return os.environ.get("SLEUTH_HTTP_URL") or f"http://127.0.0.1:{DEFAULT_HTTP_PORT}/mcp"
