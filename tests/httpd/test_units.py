"""The pure parts of `sleuth serve --http`: address and rate parsing, Host/Origin allow lists, the
token bucket, the tool-call scan, and the token verifier over a real users file and key."""

from __future__ import annotations

import os
import time
from pathlib import Path

import jwt
import pytest

from sleuth.auth.tokens import JwtVerifier, canonical_resource, mint_token, parse_ttl, signing_key
from sleuth.auth.users import SCOPE_READ, SCOPE_WRITE, UserStore
from sleuth.errors import ConfigError, QueryError
from sleuth.httpd.guards import RateLimiter, tool_calls
from sleuth.httpd.settings import http_settings, parse_bind, parse_rate


def test_parse_bind() -> None:
    assert parse_bind("8765") == ("127.0.0.1", 8765)
    assert parse_bind("0.0.0.0:80") == ("0.0.0.0", 80)
    assert parse_bind("[::1]:9000") == ("::1", 9000)
    assert parse_bind("kb.lan:9000") == ("kb.lan", 9000)
    for bad in ("", "host", "1:2:3", "70000", "x:0"):
        with pytest.raises(ConfigError):
            parse_bind(bad)


def test_parse_rate_and_ttl() -> None:
    assert parse_rate("600/min") == (600, 60.0)
    assert parse_rate("5 / s") == (5, 1.0)
    assert parse_rate("3/hour") == (3, 3600.0)
    for bad in ("0/s", "5", "5/day", "-1/s"):
        with pytest.raises(ConfigError):
            parse_rate(bad)
    assert parse_ttl("90m") == 5400 and parse_ttl("30d") == 30 * 86400 and parse_ttl("3600") == 3600
    for bad in ("0", "367d", "1y", ""):
        with pytest.raises(ConfigError):
            parse_ttl(bad)


def test_allow_lists() -> None:
    loopback = http_settings("127.0.0.1:8765")
    assert loopback.resource == "http://127.0.0.1:8765/mcp"
    assert loopback.allowed_hosts == {"127.0.0.1:8765", "localhost:8765", "[::1]:8765"}
    assert "http://localhost:8765" in loopback.allowed_origins and "http://evil.example" not in loopback.allowed_origins
    proxied = http_settings("0.0.0.0:8765", url="https://KB.example.com/mcp/", allow_origins=["https://app.example"])
    assert proxied.resource == "https://kb.example.com/mcp"
    assert proxied.metadata_url == "https://kb.example.com/.well-known/oauth-protected-resource/mcp"
    assert proxied.allowed_hosts == {"kb.example.com", "kb.example.com:443"}  # never every Host
    assert {"https://kb.example.com", "https://app.example"} <= proxied.allowed_origins
    with pytest.raises(ConfigError, match="--url"):
        http_settings("0.0.0.0:8765")
    with pytest.raises(ConfigError):
        canonical_resource("ftp://x/mcp")


def test_rate_limiter_buckets_per_token() -> None:
    limiter = RateLimiter(2, 60.0)
    assert [limiter.take("a", now=0.0) for _ in range(2)] == [0.0, 0.0]
    assert limiter.take("a", now=0.0) == pytest.approx(30.0)
    assert limiter.take("b", now=0.0) == 0.0
    assert limiter.take("a", now=30.0) == 0.0  # one request refilled after 30 s
    small = RateLimiter(1, 1.0, max_buckets=2)
    for key in ("x", "y", "z"):
        small.take(key, now=0.0)
    assert len(small._buckets) == 2


def test_tool_calls_scan() -> None:
    call = b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"project_memory_record"}}'
    assert tool_calls(call) == ["project_memory_record"]
    assert tool_calls(b"[" + call + b',{"method":"tools/list"}]') == ["project_memory_record"]
    assert tool_calls(b"not json") == [] and tool_calls(b'{"method":"tools/call","params":5}') == [""]


def test_verifier(tmp_path: Path) -> None:
    store = UserStore(tmp_path)
    store.add("alice", ["alpha"], write=True)
    key = signing_key(tmp_path, create=True)
    url = "http://127.0.0.1:8765/mcp"
    verifier = JwtVerifier(key, url, store)
    alice = store.get("alice")
    assert alice is not None
    good = verifier.check(mint_token(key, alice, url, 60))
    assert good.token is not None and good.token.subject == "alice" and good.token.client_id == "alice"
    assert good.token.scopes == [SCOPE_READ, SCOPE_WRITE] and good.token.claims == {
        "iss": "http://127.0.0.1:8765", "jti": jwt.decode(good.token.token, options={"verify_signature": False})["jti"]}
    read_only = verifier.check(mint_token(key, alice, url, 60, scopes=(SCOPE_READ,)))
    assert read_only.token is not None and read_only.token.scopes == [SCOPE_READ]
    claims = jwt.decode(good.token.token, key, algorithms=["HS256"], audience=url)
    assert set(claims) == {"iss", "aud", "sub", "scope", "iat", "exp", "jti", "gen"}
    assert verifier.check(mint_token(key, alice, url, 60, now=time.time() - 3600)).reason == "expired"
    assert verifier.check(mint_token(key, alice, "http://127.0.0.1:8765/other", 60)).reason == "wrong audience"
    assert verifier.check(mint_token(key, alice, "http://127.0.0.1:9/mcp", 60)).reason == "wrong audience (and issuer)"
    assert verifier.check(mint_token(b"k" * 32, alice, url, 60)).reason == "bad signature"
    future = jwt.encode({**claims, "iat": int(time.time()) + 3600, "exp": int(time.time()) + 7200}, key)
    assert verifier.check(future).reason == "issued in the future"
    no_gen = jwt.encode({k: v for k, v in claims.items() if k != "gen"}, key)
    assert verifier.check(no_gen).reason.startswith("malformed")
    assert verifier.check("x" * 5000).reason == "malformed"
    store.revoke("alice")
    assert verifier.check(good.token.token).reason == "revoked"
    store.remove("alice")
    store.add("alice", ["alpha"])  # the same name again: the old tokens stay dead
    assert verifier.check(good.token.token).reason == "revoked"
    fresh = store.get("alice")
    assert fresh is not None
    downgraded = verifier.check(mint_token(key, fresh, url, 60))
    assert downgraded.token is not None and downgraded.token.scopes == [SCOPE_READ]
    with pytest.raises(ConfigError, match="does not hold"):
        mint_token(key, fresh, url, 60, scopes=(SCOPE_WRITE,))
    (tmp_path / "users.json").write_text("{broken")
    assert verifier.check(mint_token(key, fresh, url, 60)).reason == "users file unusable"  # fails closed


def test_an_audit_line_does_not_grow_with_the_names_a_call_gives(tmp_path: Path) -> None:
    """A call may name any tool (3 MiB of "X"): its audit line keeps AUDIT_NAME_MAX_CHARS of it."""
    import json

    from sleuth.httpd.audit import AUDIT_NAME_MAX_CHARS, AuditLog

    log = AuditLog(tmp_path / "audit.jsonl")
    log.record("alice", "X" * (3 << 20), "p" * 10_000, None, 1.0, "UNKNOWN_TOOL")
    log.close()
    (line,) = (tmp_path / "audit.jsonl").read_text(encoding="utf-8").splitlines()
    entry = json.loads(line)
    assert entry["tool"] == "X" * AUDIT_NAME_MAX_CHARS and entry["project"] == "p" * AUDIT_NAME_MAX_CHARS
    assert len(line) < 1000


def test_refusals_are_coalesced_per_window_and_bounded() -> None:
    """A flood of refusals of 1,000 kinds in one window: each kind's first line at once up to
    AUDIT_REFUSAL_KINDS_MAX kinds, the rest counted; when the window closes, one line per kind with
    repeats and one for the others -- every refusal counted, at most 2 * kinds + 1 lines."""
    from sleuth.httpd.audit import RefusalCoalescer

    coalescer = RefusalCoalescer(window_s=60.0, kinds_max=50)
    lines = []
    for i in range(3000):
        lines += coalescer.add((401, "token refused: bad signature", None, f"10.0.{i % 1000 // 250}.{i % 250}"),
                               now=i / 100)
    assert len(lines) == 50 and all(line["count"] == 1 and "window_s" not in line for line in lines)
    assert coalescer.due(now=59.0) == []  # the window is not over yet
    closing = coalescer.due(now=60.0)
    assert len(closing) == 51 and {line["window_s"] for line in closing} == {60.0}
    assert sum(line["count"] for line in lines + closing) == 3000
    assert closing[-1]["status"] == "other" and closing[-1]["count"] == 3000 - 50 * 3
    assert coalescer.add((403, "Origin not allowed", None, "10.0.0.1"), now=61.0)[0]["count"] == 1  # a new window
    assert coalescer.due(now=200.0) == []  # nothing repeated in it


def test_signing_keys_rotate_with_a_grace_period_and_read_legacy_files(tmp_path: Path) -> None:
    """A pre-rotation key file (one hex line) still verifies its tokens (no kid); rotating keeps the
    old key for the grace period given, then drops it; new tokens carry the new key's kid."""
    from sleuth.auth.keys import KEY_FILE, KeyRing, rotate_keys

    store = UserStore(tmp_path)
    store.add("alice", ["alpha"])
    alice = store.get("alice")
    assert alice is not None
    url = "http://127.0.0.1:8765/mcp"
    secret = bytes(range(32))
    (tmp_path / KEY_FILE).write_text(secret.hex() + "\n")
    os.chmod(tmp_path / KEY_FILE, 0o600)
    ring = KeyRing(tmp_path)
    verifier = JwtVerifier(ring, url, store)
    legacy_token = mint_token(secret, alice, url, 600)
    assert verifier.check(legacy_token).token is not None
    fresh, kept = rotate_keys(tmp_path, grace_s=3600, now=time.time())
    assert [k.legacy for k in kept] == [True] and ring.current().kid == fresh.kid
    new_token = mint_token(ring.current(), alice, url, 600)
    assert jwt.get_unverified_header(new_token)["kid"] == fresh.kid
    assert verifier.check(legacy_token).token is not None and verifier.check(new_token).token is not None
    assert ring.for_token(None, now=time.time() + 3601) is None  # past the grace period
    rotate_keys(tmp_path, grace_s=0, now=time.time() + 3601)
    assert verifier.check(legacy_token).reason == "unknown or retired signing key"
    assert verifier.check(new_token).reason == "unknown or retired signing key"
    forged = jwt.encode({"sub": "alice"}, secret, algorithm="HS256", headers={"kid": "legacy0"})
    assert verifier.check(forged).reason == "unknown or retired signing key"
    (tmp_path / KEY_FILE).write_text("{}")
    assert verifier.check(new_token).reason == "signing key unusable"  # fails closed


def test_users_and_key_files_nested_too_deeply_are_readable_errors(tmp_path: Path) -> None:
    """Attack session 32 (low): a users.json or token-signing.key of arrays nested past the JSON
    decoder's recursion limit (well within their size limits) ended `sleuth users list`, `users
    token` and `users add` with a RecursionError traceback; now the files' usual ConfigError."""
    store = UserStore(tmp_path)
    store.add("alice", ["alpha"])
    (tmp_path / "users.json").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    with pytest.raises(ConfigError) as users:
        store.users()
    assert str(users.value) == f"{tmp_path / 'users.json'} is not valid JSON (arrays or objects nested too deeply)"
    (tmp_path / "token-signing.key").write_text("[" * 100_000 + "]" * 100_000, encoding="utf-8")
    (tmp_path / "token-signing.key").chmod(0o600)
    with pytest.raises(ConfigError) as key:
        signing_key(tmp_path)
    assert str(key.value) == f"{tmp_path / 'token-signing.key'} is not a sleuth token-signing key file"


def test_names_ids_and_times_with_a_final_newline_are_refused(tmp_path: Path) -> None:
    """Attack session 34 (low): the validators matched ``^...$`` with ``re.match``, and ``$`` also
    matches before a final newline: ``sleuth users add $'alice\\n'`` made a second "alice"; a key id
    or an RFC 3339 time ending in a newline passed too."""
    import json
    import subprocess
    import sys

    from sleuth.auth.keys import KEY_FILE, new_key, parse_keys
    from sleuth.memory.arguments import parse_rfc3339_ns

    def sleuth(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run([sys.executable, "-m", "sleuth.cli", *args, "--index", str(index)], capture_output=True,
                              text=True, timeout=300, env={**os.environ, "SLEUTH_MODEL": "none", "SLEUTH_BROKER": "0"})

    (tmp_path / "alpha").mkdir()
    (tmp_path / "alpha/a.md").write_text("# A\n")
    index = tmp_path / "idx"
    assert sleuth("index", str(tmp_path / "alpha"), "--project", "alpha").returncode == 0
    store = UserStore(index)
    store.add("alice", ["alpha"])
    with pytest.raises(ConfigError) as bad:
        store.add("alice\n", ["alpha"])
    assert str(bad.value) == ("invalid user name 'alice\\n': use letters, digits, '.', '_', '@' and '-' (at most 64, "
                              "starting with a letter or digit)")
    assert list(store.users()) == ["alice"]
    proc = sleuth("users", "add", "alice\n", "--project", "alpha")
    assert (proc.returncode, proc.stdout) == (2, "")
    assert proc.stderr.startswith("error: invalid user name 'alice\\n': ")
    assert list(store.users()) == ["alice"]

    data = json.loads((index / "users.json").read_text(encoding="utf-8"))
    data["users"]["bob\n"] = data["users"]["alice"]
    (index / "users.json").write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(ConfigError, match=r"malformed user entry 'bob\\n'"):
        UserStore(index).users()

    entry = new_key(now=1_000_000.0).as_json()
    good = json.dumps({"version": 1, "keys": [entry]})
    assert [k.kid for k in parse_keys(good, tmp_path / KEY_FILE)] == [entry["kid"]]
    with pytest.raises(ConfigError, match="a malformed key entry"):
        parse_keys(json.dumps({"version": 1, "keys": [{**entry, "kid": entry["kid"] + "\n"}]}), tmp_path / KEY_FILE)

    assert parse_rfc3339_ns("2026-09-01T00:00:00Z", "since") == 1_788_220_800 * 10**9
    with pytest.raises(QueryError) as late:
        parse_rfc3339_ns("2026-09-01T00:00:00Z\n", "since")
    assert str(late.value) == ("since must be an RFC 3339 date-time with a time zone, e.g. 2026-09-01T00:00:00Z; "
                               "got '2026-09-01T00:00:00Z\\n'")
