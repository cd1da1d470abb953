"""The users of an index's HTTP server: who may reach which projects with which scopes.

Kept in the index folder, in :data:`USERS_FILE` (JSON, mode 0600, replaced atomically under
:data:`USERS_LOCK_FILE`)::

    {"version": 1, "users": {"alice": {"projects": ["alpha"], "scopes": ["sleuth:read"],
                                       "disabled": false, "generation": "<hex>", "created_at": "..."}}}

The ACL stays here, server-side: a token names only its user (``sub``) and that user's
``generation``. The server reads this file again whenever it changes (one ``stat`` per request),
so removing, disabling or revoking a user, or changing their projects or scopes, holds from the
next request on. ``generation`` is drawn anew by :meth:`UserStore.revoke` (and for every user
added), so a token minted before a revocation -- or for an earlier user of the same name -- never
matches again.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import re
import secrets
import stat
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError, shown
from sleuth.locks import lock_exclusive

#: The users file, in the index folder.
USERS_FILE = "users.json"
#: Taken while the users file is rewritten (by ``sleuth users ...``).
USERS_LOCK_FILE = "users.lock"
#: How long a ``sleuth users`` command waits for another one, in seconds.
USERS_LOCK_TIMEOUT_S = 10.0
#: Format version of the users file.
USERS_FILE_VERSION = 1
#: Largest users file read, in bytes.
USERS_FILE_MAX_BYTES = 4 * 1024 * 1024

#: Scope of the read-only tools (searches, reads, status); every token carries it.
SCOPE_READ = "sleuth:read"
#: Scope of the tools that write the index (``project_memory_record``, ``project_memory_forget``).
SCOPE_WRITE = "sleuth:write"
SCOPES = (SCOPE_READ, SCOPE_WRITE)

#: A user name: a letter or digit, then letters, digits, ``.``, ``_``, ``@``, ``-`` (at most 64). Matched
#: with ``fullmatch``: ``$`` alone also matches before a final newline (``alice\n`` was a second alice).
USER_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")


@dataclass(frozen=True)
class User:
    """One user: their projects, scopes, whether they are disabled, and their token generation."""

    name: str
    projects: tuple[str, ...]
    scopes: tuple[str, ...] = (SCOPE_READ,)
    disabled: bool = False
    generation: str = field(default_factory=lambda: secrets.token_hex(8))
    created_at: str = field(default_factory=lambda: datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"))

    def as_json(self) -> dict[str, Any]:
        return {"projects": list(self.projects), "scopes": list(self.scopes), "disabled": self.disabled,
                "generation": self.generation, "created_at": self.created_at}

    @classmethod
    def from_json(cls, name: str, data: Any) -> User:
        """Raises ConfigError for a malformed entry."""
        if not isinstance(data, dict) or not USER_NAME_RE.fullmatch(name):
            raise ConfigError(f"malformed user entry {name!r} in {USERS_FILE}")
        projects, scopes = data.get("projects"), data.get("scopes", [SCOPE_READ])
        if not isinstance(projects, list) or not all(isinstance(p, str) and p for p in projects) \
                or not isinstance(scopes, list) or not all(s in SCOPES for s in scopes) \
                or not isinstance(data.get("generation"), str) or not data["generation"] \
                or not isinstance(data.get("disabled", False), bool):
            raise ConfigError(f"malformed user entry {name!r} in {USERS_FILE}")
        return cls(name, tuple(projects), tuple(s for s in SCOPES if s in scopes), data.get("disabled", False),
                   data["generation"], str(data.get("created_at", "")))


def check_user_name(name: str) -> str:
    """``name`` when it is a valid user name; ConfigError otherwise."""
    if not USER_NAME_RE.fullmatch(name):
        raise ConfigError(f"invalid user name {name!r}: use letters, digits, '.', '_', '@' and '-' "
                          "(at most 64, starting with a letter or digit)")
    return name


def write_private(path: Path, data: bytes) -> None:
    """Replace ``path`` atomically with ``data``, readable and writable by this user only (0600)."""
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "wb") as out:
            out.write(data)
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def check_private(path: Path, what: str) -> None:
    """Raise ConfigError when ``path`` may be read or written by other users (as ssh refuses keys)."""
    mode = path.stat().st_mode
    if mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise ConfigError(f"{what} {path} is accessible by other users (mode {stat.S_IMODE(mode):o}); "
                          f"run `chmod 600 {path}`")


class UserStore:
    """The users file of one index folder.

    Reading (:meth:`get`, :meth:`users`) re-reads the file when its identity, size or modification
    time changed since the last read; writing goes through :meth:`edit`.

    Args:
        index_dir: the index folder.
    """

    def __init__(self, index_dir: Path) -> None:
        self.index_dir = index_dir
        self.path = index_dir / USERS_FILE
        self._lock = threading.Lock()
        self._seen: tuple[int, int, int, int] | None = None
        self._users: dict[str, User] = {}

    def _identity(self) -> tuple[int, int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns

    def _read(self) -> dict[str, User]:
        # Not followed if a link, never waited on (a FIFO, or a link to /dev/stdin, held every
        # `sleuth index` that reads the grants, with the index's write lock): a regular file only.
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise ConfigError(f"{self.path} is a symbolic link: the users file must be a regular file") from None
            raise
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                raise ConfigError(f"{self.path} is not a regular file: the users file must be one")
            raw = f.read(USERS_FILE_MAX_BYTES + 1)
        if len(raw) > USERS_FILE_MAX_BYTES:
            raise ConfigError(f"{self.path} is larger than {USERS_FILE_MAX_BYTES} bytes")
        check_private(self.path, "the users file")
        try:
            data = json.loads(raw)
        except RecursionError:  # arrays or objects nested past the decoder's recursion limit
            raise ConfigError(f"{self.path} is not valid JSON (arrays or objects nested too deeply)") from None
        except ValueError as exc:
            raise ConfigError(f"{self.path} is not valid JSON ({exc})") from None
        if not isinstance(data, dict) or data.get("version") != USERS_FILE_VERSION \
                or not isinstance(data.get("users"), dict):
            raise ConfigError(f"{self.path} is not a sleuth users file (version {USERS_FILE_VERSION})")
        return {name: User.from_json(name, entry) for name, entry in data["users"].items()}

    def users(self) -> dict[str, User]:
        """Every user by name, as the file holds them now.

        Raises:
            ConfigError: the file is malformed or accessible by other users.
        """
        with self._lock:
            identity = self._identity()
            if identity != self._seen or identity is None:
                self._users = self._read() if identity is not None else {}
                self._seen = identity
            return self._users

    def get(self, name: str) -> User | None:
        """The user ``name`` as the file holds it now, None when there is none."""
        return self.users().get(name)

    @contextlib.contextmanager
    def edit(self) -> Iterator[dict[str, User]]:
        """Hold the users lock; yields the users by name to change in place, written back on exit.

        Raises:
            ConfigError: another ``sleuth users`` command held the lock for
                :data:`USERS_LOCK_TIMEOUT_S`, or the file is malformed.
        """
        fd = lock_exclusive(self.index_dir / USERS_LOCK_FILE, USERS_LOCK_TIMEOUT_S)
        if fd is None:
            raise ConfigError(f"another `sleuth users` command is changing {self.path}; try again")
        try:
            users = dict(self._read())
            yield users
            payload = {"version": USERS_FILE_VERSION,
                       "users": {name: users[name].as_json() for name in sorted(users)}}
            write_private(self.path, (json.dumps(payload, indent=2, ensure_ascii=False) + "\n").encode("utf-8"))
        finally:
            os.close(fd)

    def add(self, name: str, projects: Sequence[str], write: bool = False) -> User:
        """Add user ``name`` with access to ``projects`` (and the write scope when ``write``).

        Raises:
            ConfigError: a bad name, no project, or a user of that name exists.
        """
        check_user_name(name)
        if not projects:
            raise ConfigError("give at least one --project the user may access")
        with self.edit() as users:
            if name in users:
                raise ConfigError(f"user {name!r} exists; remove it first, or use `sleuth users revoke`")
            scopes = (SCOPE_READ, SCOPE_WRITE) if write else (SCOPE_READ,)
            users[name] = User(name, tuple(dict.fromkeys(projects)), scopes)
            return users[name]

    def remove(self, name: str) -> None:
        """Remove user ``name``; their tokens stop working at the server's next request.

        Raises:
            ConfigError: no such user.
        """
        with self.edit() as users:
            if users.pop(name, None) is None:
                raise ConfigError(f"no user {name!r}")

    def _replace(self, name: str, **changes: Any) -> User:
        with self.edit() as users:
            user = users.get(name)
            if user is None:
                raise ConfigError(f"no user {name!r}")
            fields = {**user.__dict__, **changes}
            users[name] = User(**fields)
            return users[name]

    def revoke(self, name: str) -> User:
        """Invalidate every token issued to ``name`` so far (a new generation). Raises ConfigError."""
        return self._replace(name, generation=secrets.token_hex(8))

    def set_disabled(self, name: str, disabled: bool) -> User:
        """Disable (or enable again) user ``name``: their tokens are refused while disabled."""
        return self._replace(name, disabled=disabled)


def grants_by_project(index_dir: Path) -> tuple[dict[str, list[str]], str]:
    """``({project_id: [user, ...]}, problem)``: the users of ``index_dir``'s users file by the
    projects they hold a grant on (names sorted), and ``""``; or ``({}, why)`` when the file exists
    but cannot be read (malformed, readable by others, not a regular file: what ``sleuth serve
    --http`` refuses it for). No file: ``({}, "")``. A removed project's grants stay, so
    ``sleuth index`` and ``sleuth projects remove`` ask this of the id they make or drop."""
    try:
        users = UserStore(index_dir).users()
    except (ConfigError, OSError) as exc:
        return {}, shown(str(exc), 300)
    out: dict[str, list[str]] = {}
    for user in sorted(users.values(), key=lambda u: u.name):
        for granted in user.projects:
            out.setdefault(granted, []).append(user.name)
    return out, ""

