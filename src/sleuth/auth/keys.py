"""The token-signing keys of an index's HTTP server, with rotation.

:data:`KEY_FILE` in the index folder (JSON, mode 0600, replaced atomically under the users lock)::

    {"version": 1, "keys": [{"kid": "<hex>", "secret": "<64 hex>", "created_at": 1764600000,
                             "expires_at": null}, ...]}

The key with ``expires_at`` null is the *current* one: new tokens are signed with it and carry
its ``kid`` in their JWT header. ``sleuth users rotate-key`` (:func:`rotate_keys`) makes a new
current key and gives the previous one ``expires_at`` = now + the grace period
(:data:`KEY_GRACE_DEFAULT_S` unless ``--grace``): tokens signed with it keep working until then,
and fail from then on; each rotation also drops the keys already past their ``expires_at``. The
server reads the file again whenever it changes (one ``stat`` per token checked).

A file of one hex line (sleuth before key rotation) is read as one *legacy* key: tokens made then
carry no ``kid`` and are checked with it, and only with it; once it is dropped, a token without
``kid`` is refused.
"""

from __future__ import annotations

import json
import os
import re
import secrets
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sleuth.auth.users import USERS_LOCK_FILE, USERS_LOCK_TIMEOUT_S, check_private, write_private
from sleuth.errors import ConfigError
from sleuth.locks import lock_exclusive

#: The signing keys, in the index folder.
KEY_FILE = "token-signing.key"
#: Bytes of randomness in a new signing key (HS256 wants at least 32).
KEY_BYTES = 32
#: Format version of the key file.
KEY_FILE_VERSION = 1
#: Largest key file read, in bytes.
KEY_FILE_MAX_BYTES = 1024 * 1024
#: How long the previous key stays valid after ``sleuth users rotate-key``, in seconds (24 h).
KEY_GRACE_DEFAULT_S = 24 * 3600
#: Longest grace period accepted, in seconds (366 days, a token's longest life).
KEY_GRACE_MAX_S = 366 * 86400
#: Most keys kept in the file (the current one and those in their grace period; oldest dropped beyond).
KEYS_MAX = 16

_KID_RE = re.compile(r"^[0-9a-f]{8,64}$")


@dataclass(frozen=True)
class SigningKey:
    """One signing key: its id (the tokens' ``kid``), secret, creation time and end of validity
    (epoch seconds; None for the current key). ``legacy``: read from a pre-rotation key file."""

    kid: str
    secret: bytes
    created_at: int
    expires_at: int | None = None
    legacy: bool = False

    def valid_at(self, now: float) -> bool:
        """True while tokens signed with this key are accepted."""
        return self.expires_at is None or now < self.expires_at

    def as_json(self) -> dict[str, Any]:
        return {"kid": self.kid, "secret": self.secret.hex(), "created_at": self.created_at,
                "expires_at": self.expires_at, **({"legacy": True} if self.legacy else {})}


def new_key(now: float | None = None) -> SigningKey:
    """A fresh random current key."""
    return SigningKey(secrets.token_hex(8), secrets.token_bytes(KEY_BYTES), int(time.time() if now is None else now))


def parse_keys(text: str, path: Path) -> list[SigningKey]:
    """The keys of a key file's ``text`` (JSON, or one legacy hex line).

    Raises:
        ConfigError: neither, a malformed entry, or no current key.
    """
    text = text.strip()
    if re.fullmatch(r"[0-9a-f]{64,}", text):
        secret = bytes.fromhex(text)
        return [SigningKey("legacy0", secret, 0, None, legacy=True)]
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):  # RecursionError: nested past the decoder's limit
        data = None
    if not isinstance(data, dict) or data.get("version") != KEY_FILE_VERSION or not isinstance(data.get("keys"), list):
        raise ConfigError(f"{path} is not a sleuth token-signing key file")
    keys = []
    for entry in data["keys"]:
        try:
            kid, secret, created = entry["kid"], bytes.fromhex(entry["secret"]), int(entry["created_at"])
            expires = entry.get("expires_at")
            if not isinstance(kid, str) or not (_KID_RE.fullmatch(kid) or kid == "legacy0") or len(secret) < KEY_BYTES \
                    or not (expires is None or isinstance(expires, int)):
                raise ValueError(kid)
        except (KeyError, TypeError, ValueError):
            raise ConfigError(f"{path}: a malformed key entry") from None
        keys.append(SigningKey(kid, secret, created, expires, bool(entry.get("legacy", False))))
    if not any(k.expires_at is None for k in keys):
        raise ConfigError(f"{path} holds no current key: run `sleuth users rotate-key`")
    return keys


def read_keys(path: Path) -> list[SigningKey]:
    """The keys in ``path``. Raises ConfigError (malformed, too large or readable by others),
    FileNotFoundError (none)."""
    with open(path, "rb") as f:
        raw = f.read(KEY_FILE_MAX_BYTES + 1)
    if len(raw) > KEY_FILE_MAX_BYTES:
        raise ConfigError(f"{path} is larger than {KEY_FILE_MAX_BYTES} bytes")
    check_private(path, "the token-signing key")
    return parse_keys(raw.decode("ascii", "replace"), path)


def write_keys(path: Path, keys: list[SigningKey]) -> None:
    """Replace the key file atomically (mode 0600)."""
    payload = {"version": KEY_FILE_VERSION, "keys": [k.as_json() for k in keys]}
    write_private(path, (json.dumps(payload, indent=2) + "\n").encode("ascii"))


def current_key(keys: list[SigningKey]) -> SigningKey:
    """The newest key without ``expires_at``."""
    return max((k for k in keys if k.expires_at is None), key=lambda k: k.created_at)


def ensure_keys(index_dir: Path) -> list[SigningKey]:
    """The index's keys, making a first key file when there is none.

    Raises:
        ConfigError: a malformed or shared key file, or the users lock held too long.
    """
    path = index_dir / KEY_FILE
    try:
        return read_keys(path)
    except FileNotFoundError:
        pass
    with _locked(index_dir):
        if not path.exists():
            write_keys(path, [new_key()])
    return read_keys(path)


class _locked:
    def __init__(self, index_dir: Path) -> None:
        self.index_dir = index_dir

    def __enter__(self) -> None:
        fd = lock_exclusive(self.index_dir / USERS_LOCK_FILE, USERS_LOCK_TIMEOUT_S)
        if fd is None:
            raise ConfigError("another `sleuth users` command is changing the users or keys; try again")
        self.fd = fd

    def __exit__(self, *_: object) -> None:
        os.close(self.fd)


def rotate_keys(index_dir: Path, grace_s: int = KEY_GRACE_DEFAULT_S,
                now: float | None = None) -> tuple[SigningKey, list[SigningKey]]:
    """``sleuth users rotate-key``: a new current key; the previous current key (and a legacy one)
    valid ``grace_s`` more seconds; keys past their end dropped. Returns (the new key, the older
    keys kept).

    Raises:
        ConfigError: a grace outside 0 to :data:`KEY_GRACE_MAX_S`, a malformed or shared key file.
    """
    if not 0 <= grace_s <= KEY_GRACE_MAX_S:
        raise ConfigError(f"the grace period is 0 to {KEY_GRACE_MAX_S // 86400} days")
    at = time.time() if now is None else now
    path = index_dir / KEY_FILE
    with _locked(index_dir):
        try:
            keys = read_keys(path)
        except FileNotFoundError:
            keys = []
        until = int(at) + grace_s
        kept = []
        for key in keys:
            if key.expires_at is None:
                key = SigningKey(key.kid, key.secret, key.created_at, until, key.legacy)
            if key.valid_at(at):
                kept.append(key)
        kept = sorted(kept, key=lambda k: k.created_at)[-(KEYS_MAX - 1):]
        fresh = new_key(at)
        write_keys(path, [*kept, fresh])
    return fresh, kept


class KeyRing:
    """The signing keys of an index folder, read again when the file changes.

    Args:
        index_dir: the index folder (None with ``keys``: a fixed set, for tests and tools).
        keys: a fixed set of keys instead of a file.
    Raises:
        ConfigError: (on first use) no key file, or a malformed or shared one.
    """

    def __init__(self, index_dir: Path | None, keys: list[SigningKey] | None = None) -> None:
        self.path = None if index_dir is None else index_dir / KEY_FILE
        self._keys = list(keys or [])
        self._seen: tuple[int, int, int, int] | None = None
        self._lock = threading.Lock()

    @classmethod
    def fixed(cls, secret: bytes) -> KeyRing:
        """One legacy key: tokens without ``kid``, signed with ``secret``."""
        return cls(None, [SigningKey("legacy0", secret, 0, None, legacy=True)])

    def keys(self) -> list[SigningKey]:
        """Every key, as the file holds them now."""
        if self.path is None:
            return self._keys
        with self._lock:
            try:
                st = os.stat(self.path)
            except FileNotFoundError:
                raise ConfigError(f"no token-signing key {self.path}: add a user with `sleuth users add`") from None
            identity = (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns)
            if identity != self._seen:
                self._keys = read_keys(self.path)
                self._seen = identity
            return self._keys

    def current(self) -> SigningKey:
        """The key new tokens are signed with."""
        return current_key(self.keys())

    def for_token(self, kid: object, now: float | None = None) -> SigningKey | None:
        """The key a token with header ``kid`` (None: no ``kid``) is checked with; None when there
        is no such key or it is past its grace period."""
        at = time.time() if now is None else now
        keys = self.keys()
        if kid is None:
            found = next((k for k in keys if k.legacy), None)
        else:
            found = next((k for k in keys if k.kid == kid and not k.legacy), None)
        return found if found is not None and found.valid_at(at) else None
