"""An external OAuth authorization server (a team's identity provider) for ``sleuth serve --http``.

With ``--issuer-url`` and ``--jwks-url``, the server also accepts access tokens (JWTs, RFC 9068)
of that issuer, signed with RS256 or ES256 by a key of its JWKS (fetched with PyJWT's
``PyJWKClient``: cached for :data:`JWKS_CACHE_S`, fetched again for an unknown ``kid`` at most
every :data:`JWKS_REFETCH_MIN_S`, each fetch bounded by :data:`JWKS_FETCH_TIMEOUT_S`). Such a
token passes with ``iss`` = the issuer URL, ``aud`` = this server's URL (RFC 8707, as for local
tokens), ``exp``/``iat`` within :data:`~sleuth.auth.tokens.CLOCK_LEEWAY_S`, and a ``sub`` that
names a user of ``users.json`` who is not disabled; its scopes are those of its ``scope`` claim
the user holds. A ``sub`` not in ``users.json`` gets the generic 401. The Protected Resource
Metadata then names the issuer in ``authorization_servers``, so OAuth clients can log in there.
"""

from __future__ import annotations

import ipaddress
import logging
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import jwt

from sleuth.errors import ConfigError

if TYPE_CHECKING:
    from sleuth.auth.tokens import JwtVerifier, Verdict

log = logging.getLogger("sleuth.auth")

#: Signing algorithms accepted from an external issuer (asymmetric only; never ``none`` or HS*).
EXTERNAL_ALGORITHMS = ("RS256", "ES256")
#: Seconds one JWKS fetch may take.
JWKS_FETCH_TIMEOUT_S = 5.0
#: Seconds a fetched JWKS is used before it is fetched again.
JWKS_CACHE_S = 300.0
#: Least seconds between two fetches caused by tokens naming a ``kid`` not in the JWKS.
JWKS_REFETCH_MIN_S = 60.0
#: Claims an external token must carry.
EXTERNAL_REQUIRED_CLAIMS = ("iss", "aud", "sub", "iat", "exp")


def check_issuer_url(url: str, what: str) -> str:
    """``url`` when it is https (or http to a loopback host), without query or fragment.

    Raises:
        ConfigError: otherwise (the MCP spec wants authorization servers on HTTPS).
    """
    parts = urlsplit(url.strip())
    loopback = False
    if parts.hostname:
        try:
            loopback = ipaddress.ip_address(parts.hostname).is_loopback
        except ValueError:
            loopback = parts.hostname.lower() == "localhost"
    if not parts.hostname or parts.fragment or not (parts.scheme == "https" or (parts.scheme == "http" and loopback)):
        raise ConfigError(f"invalid {what} {url!r}: use an https:// URL (http:// only to a loopback host)")
    return url.strip()


class ExternalIssuer:
    """Tokens of one external issuer, checked against its JWKS (see the module docstring).

    Args:
        issuer: the issuer's identifier (its tokens' ``iss``, exactly).
        jwks_url: where its JSON Web Key Set is served.
    Raises:
        ConfigError: a URL that is not https (or http to loopback).
    """

    algorithms = EXTERNAL_ALGORITHMS

    def __init__(self, issuer: str, jwks_url: str) -> None:
        self.issuer = check_issuer_url(issuer, "--issuer-url")
        self.jwks_url = check_issuer_url(jwks_url, "--jwks-url")
        self.client = jwt.PyJWKClient(self.jwks_url, cache_jwk_set=True, lifespan=JWKS_CACHE_S,
                                      timeout=JWKS_FETCH_TIMEOUT_S, cooldown_duration=JWKS_REFETCH_MIN_S)

    def check(self, token: str, verifier: JwtVerifier) -> Verdict:
        """Verify an RS256/ES256 ``token`` of this issuer for ``verifier``'s resource and users.
        Blocks while the JWKS is fetched (call it off the event loop); never raises."""
        from sleuth.auth.tokens import AUDIENCE_MISMATCH, CLOCK_LEEWAY_S, Verdict, decode_failure, expired_subject

        try:
            signing = self.client.get_signing_key_from_jwt(token)
        except jwt.PyJWKClientConnectionError as exc:
            log.warning("JWKS of %s not fetched: %s", self.issuer, exc)
            return Verdict(None, "issuer keys unavailable")
        except jwt.PyJWTError as exc:  # no such kid, a malformed token or JWKS
            return Verdict(None, f"no issuer key for the token ({type(exc).__name__})")
        try:
            # The PyJWK itself, not its key: PyJWT then holds the header's alg to the key's own.
            claims = jwt.decode(token, signing, algorithms=list(EXTERNAL_ALGORITHMS), audience=verifier.resource,
                                issuer=self.issuer, leeway=CLOCK_LEEWAY_S,
                                options={"require": list(EXTERNAL_REQUIRED_CLAIMS)})
        except (jwt.PyJWTError, TypeError, ValueError) as exc:  # a key of another kind may raise any of them
            reason = decode_failure(exc) if isinstance(exc, jwt.PyJWTError) else "key of another kind"
            if reason.startswith(AUDIENCE_MISMATCH):  # not one of ours: no hint to mint one with `sleuth users token`
                reason = f"external issuer's token: {reason}"
            subject = expired_subject(token, signing, list(EXTERNAL_ALGORITHMS)) if reason == "expired" else None
            return Verdict(None, reason, subject)
        claims.setdefault("scope", "")
        return verifier.grant(token, claims, self.issuer, check_generation=False)
