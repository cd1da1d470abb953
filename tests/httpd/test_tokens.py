"""Tokens of `sleuth serve --http` over a real server process: signing-key rotation with a grace
period (time moved by editing the stored key's end, never by sleeping), an external OAuth issuer
whose JWKS a local HTTP server serves, and refusals (401, 403, 421, 429) in the audit log."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx2
import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from jwt.algorithms import ECAlgorithm, RSAAlgorithm

from sleuth.auth.users import write_private
from tests.httpd.conftest import audit_lines
from tests.integration.conftest import run_cli
from tests.integration.http_server import INIT, HttpServer, free_port, http_server, sse_json, token

#: The external issuer's identifier (its tokens' ``iss``; never fetched).
ISSUER = "https://idp.example.com/realms/team"
GENERIC_401 = "The access token is invalid, revoked or not issued for this server"


def status_and_description(response: httpx2.Response) -> tuple[int, str]:
    return response.status_code, response.json().get("error_description", "") if response.status_code >= 400 else ""


def test_a_rotated_key_keeps_working_for_its_grace_period_then_fails(index: Path, tmp_path: Path) -> None:
    with http_server(index, log_dir=tmp_path) as server:
        old = token(index, "alice", server.url)
        old_kid = jwt.get_unverified_header(old)["kid"]
        assert server.post(INIT, old).status_code == 200
        rotated = run_cli("users", "rotate-key", "--index", str(index))
        new = token(index, "alice", server.url)
        new_kid = jwt.get_unverified_header(new)["kid"]
        assert new_kid != old_kid and rotated.stdout.splitlines()[0] == f"new signing key {new_kid}"
        assert rotated.stdout.splitlines()[1].startswith(f"key {old_kid}: its tokens work until ")
        path = index / "token-signing.key"
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        stored = json.loads(path.read_text())
        (previous,) = [k for k in stored["keys"] if k["kid"] == old_kid]
        assert 86400 - 600 < previous["expires_at"] - time.time() <= 86400  # the default grace: 24 h
        # During the grace period both tokens work (the running server read the new file).
        assert (server.post(INIT, old).status_code, server.post(INIT, new).status_code) == (200, 200)
        # The grace period ends: the stored key's end moved to the past.
        previous["expires_at"] = int(time.time()) - 1
        write_private(path, json.dumps(stored).encode())
        assert status_and_description(server.post(INIT, old)) == (401, GENERIC_401)
        assert server.post(INIT, new).status_code == 200
        # Rotating with --grace 0 drops the previous key at once, and the expired one with it.
        run_cli("users", "rotate-key", "--grace", "0", "--index", str(index))
        kids = [k["kid"] for k in json.loads(path.read_text())["keys"]]
        assert len(kids) == 1 and old_kid not in kids and new_kid not in kids
        assert status_and_description(server.post(INIT, new)) == (401, GENERIC_401)
        assert server.post(INIT, token(index, "alice", server.url)).status_code == 200
    bad = run_cli("users", "rotate-key", "--grace", "1y", "--index", str(index), check=False)
    assert bad.returncode == 2 and "invalid duration '1y'" in bad.stderr


class Jwks:
    """A JWKS served over HTTP on a free loopback port, counting its fetches."""

    def __init__(self, keys: list[dict[str, Any]]) -> None:
        self.body = json.dumps({"keys": keys}).encode()
        self.fetches = 0
        jwks = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                jwks.fetches += 1
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(jwks.body)))
                self.end_headers()
                self.wfile.write(jwks.body)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.http = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/jwks.json"
        self.thread = threading.Thread(target=self.http.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.http.shutdown()
        self.http.server_close()


@pytest.fixture()
def idp() -> Iterator[tuple[Jwks, Any, Any]]:
    """The issuer's JWKS (an RSA key ``rsa-1`` and an EC P-256 key ``ec-1``) and the private keys."""
    rsa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    ec_key = ec.generate_private_key(ec.SECP256R1())
    rsa_jwk = {**json.loads(RSAAlgorithm.to_jwk(rsa_key.public_key())), "kid": "rsa-1",
               "use": "sig", "alg": "RS256"}
    ec_jwk = {**json.loads(ECAlgorithm.to_jwk(ec_key.public_key())), "kid": "ec-1",
              "use": "sig", "alg": "ES256"}
    jwks = Jwks([rsa_jwk, ec_jwk])
    yield jwks, rsa_key, ec_key
    jwks.close()


def external_token(key: Any, server: HttpServer, kid: str = "rsa-1", alg: str = "RS256", **claims: Any) -> str:
    now = int(time.time())
    body = {"iss": ISSUER, "aud": server.url, "sub": "alice", "scope": "openid sleuth:read", "iat": now,
            "exp": now + 600, **claims}
    return jwt.encode({k: v for k, v in body.items() if v is not None}, key, algorithm=alg, headers={"kid": kid})


def projects_of(server: HttpServer, tok: str) -> list[str]:
    """The projects get_projects lists in a session opened with ``tok``."""
    opened = server.post(INIT, tok)
    assert opened.status_code == 200, opened.text
    headers = {"mcp-session-id": opened.headers["mcp-session-id"], "mcp-protocol-version": "2025-06-18"}
    server.post({"jsonrpc": "2.0", "method": "notifications/initialized"}, tok, headers=headers)
    call = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "get_projects", "arguments": {}}}
    answer = sse_json(server.post(call, tok, headers=headers))
    return [p["project_id"] for p in answer["result"]["structuredContent"]["items"]]


def test_an_external_issuers_tokens_map_to_users_by_sub(index: Path, tmp_path: Path,
                                                        idp: tuple[Jwks, Any, Any]) -> None:
    jwks, rsa_key, ec_key = idp
    with http_server(index, "--issuer-url", ISSUER, "--jwks-url", jwks.url, log_dir=tmp_path) as server:
        metadata = httpx2.get(server.metadata_url, timeout=60).json()
        assert metadata["authorization_servers"] == [ISSUER]
        assert projects_of(server, external_token(rsa_key, server)) == ["alpha"]
        assert projects_of(server, external_token(ec_key, server, kid="ec-1", alg="ES256", sub="gina")) == ["alpha"]
        assert projects_of(server, token(index, "bob", server.url)) == ["alpha"]  # local tokens still work
        other_rsa = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        refused = {
            "sub not a user": external_token(rsa_key, server, sub="mallory"),
            "wrong audience": external_token(rsa_key, server, aud=f"http://127.0.0.1:{free_port()}/mcp"),
            "wrong issuer": external_token(rsa_key, server, iss="https://evil.example.com"),
            "no sub": external_token(rsa_key, server, sub=None),
            "other key": external_token(other_rsa, server),
            "key of another kind": external_token(ec_key, server, kid="rsa-1", alg="ES256"),
        }
        for kind, tok in refused.items():
            assert status_and_description(server.post(INIT, tok)) == (401, GENERIC_401), kind
        fetched = jwks.fetches
        for _ in range(5):  # a kid the JWKS does not hold: fetched again at most once a minute, not per token
            assert status_and_description(server.post(INIT, external_token(rsa_key, server, kid="rsa-9"))) == (
                401, GENERIC_401)
        assert fetched >= 1 and jwks.fetches - fetched <= 1
        expired = external_token(rsa_key, server, iat=int(time.time()) - 7200, exp=int(time.time()) - 3600)
        assert status_and_description(server.post(INIT, expired)) == (401, "The access token expired")
        no_scope = server.post(INIT, external_token(rsa_key, server, scope="openid profile"))
        assert no_scope.status_code == 403 and no_scope.json()["error"] == "insufficient_scope"
        run_cli("users", "disable", "gina", "--index", str(index))
        try:
            gina = server.post(INIT, external_token(ec_key, server, kid="ec-1", alg="ES256", sub="gina"))
            assert status_and_description(gina) == (401, GENERIC_401)
        finally:
            run_cli("users", "enable", "gina", "--index", str(index))
    bad = run_cli("serve", "--http", str(free_port()), "--issuer-url", "http://idp.example.com", "--jwks-url",
                  jwks.url, "--index", str(index), check=False)
    assert bad.returncode == 2 and "use an https:// URL" in bad.stderr
    alone = run_cli("serve", "--http", str(free_port()), "--issuer-url", ISSUER, "--index", str(index), check=False)
    assert alone.returncode == 2 and "--issuer-url and --jwks-url go together" in alone.stderr


def test_refusals_are_in_the_audit_log_coalesced_and_without_tokens(index: Path, tmp_path: Path) -> None:
    with http_server(index, "--rate-limit", "3/hour", log_dir=tmp_path) as server:
        before = len(audit_lines(index, lambda _: True))
        gina, wendy = token(index, "gina", server.url), token(index, "wendy", server.url, "--read-only")
        record = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
            "name": "project_memory_record", "arguments": {"kind": "note", "title": "t", "body": "b"}}}
        junk = "eyJhbGciOiJIUzI1NiJ9.junk-token-text.c2ln"
        statuses = [server.post(INIT).status_code, server.post(INIT, junk).status_code,
                    server.post(record, wendy).status_code,
                    server.post(INIT, gina, headers={"origin": "http://evil.example"}).status_code,
                    server.post(INIT, gina, headers={"host": "evil.example"}).status_code]
        statuses += [server.post(INIT, gina).status_code for _ in range(4)]
        flood = [server.post(INIT, f"{junk}{i}").status_code for i in range(100)]
        assert statuses == [401, 401, 403, 403, 421, 200, 200, 200, 429] and set(flood) == {401}

        def refusals(lines: list[dict[str, Any]]) -> list[dict[str, Any]]:
            return [ln for ln in lines[before:] if ln.get("event") == "refused"]

        lines = refusals(audit_lines(index, lambda ls: len(refusals(ls)) >= 6))
        assert sorted((ln["status"], ln["reason"], ln["user"], ln["client"], ln["count"]) for ln in lines) == [
            (401, "no bearer token", None, "127.0.0.1", 1),
            (401, "token refused: malformed (DecodeError)", None, "127.0.0.1", 1),
            (403, "Origin not allowed", None, "127.0.0.1", 1),
            (403, "insufficient scope: sleuth:write", "wendy", "127.0.0.1", 1),
            (421, "Host not allowed", None, "127.0.0.1", 1),
            (429, "rate limit", "gina", "127.0.0.1", 1)]
        assert all(set(ln) == {"time", "event", "status", "reason", "user", "client", "count"} for ln in lines)
    # At shutdown the window closes: the 100 repeats of the junk token's kind are one line.
    lines = refusals(audit_lines(index, lambda ls: len(refusals(ls)) >= 7))
    (repeats,) = [ln for ln in lines if "window_s" in ln]
    assert (repeats["status"], repeats["reason"], repeats["count"]) == (401, "token refused: malformed (DecodeError)",
                                                                        100)
    text = (index / "audit.jsonl").read_text()
    assert "junk-token-text" not in text and gina not in text and wendy.split(".")[1] not in text
