"""Where a broker lives: a private folder of the user holding, per broker, a Unix socket and lock files.

The folder is ``$SLEUTH_BROKER_DIR``, else ``$XDG_RUNTIME_DIR/sleuth``, else ``<tmp>/sleuth-<uid>``;
it is created with mode 0700 and refused when another user owns it or can enter it. A broker is
named by a *key*: 16 hex digits of SHA-256 over the index folder, the sleuth version and install,
the ``SLEUTH_*`` settings that change what the engine answers (lanes, model, fault injection,
...) and the stamp of the index's ``config.toml``, so sessions that would get different answers
never share a broker (a session after an edit of ``config.toml`` gets a new one). Per key:

- ``<key>.sock``: the socket (mode 0600); nothing listens on the network.
- ``<key>.lock``: ``flock``-ed by the running broker for its whole life. A killed broker's lock
  dies with it, so a stale socket (connection refused) or lock file never blocks a new broker.
- ``<key>.spawn``: ``flock``-ed by a session while it starts a broker, so two sessions starting
  at once start one broker.
- ``<key>.json``: the index and pid, for ``sleuth broker status|stop``.
- ``<key>.log``: the broker's stderr.

Standard library only (imported by the thin ``sleuth serve``).
"""

from __future__ import annotations

import hashlib
import os
import stat
import sys
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from sleuth import __version__
from sleuth.errors import SleuthError

#: Environment variable choosing the brokers' folder (tests use a private one).
BROKER_DIR_ENV = "SLEUTH_BROKER_DIR"
#: Longest socket path the kernel accepts, in bytes (``sun_path`` is 108 bytes with the final NUL).
SOCKET_PATH_MAX_BYTES = 107
#: ``SLEUTH_*`` variables that are per session (or choose whether to use a broker at all) and so do
#: not distinguish brokers; every other ``SLEUTH_*`` variable is part of the key.
SESSION_ENV = frozenset({"SLEUTH_TOOLS", "SLEUTH_GUIDES", "SLEUTH_INDEX", "SLEUTH_BROKER", BROKER_DIR_ENV})


class BrokerUnavailable(SleuthError):
    """No broker can be used (folder not creatable or not private, socket path too long, start
    failed); the message says why, and ``sleuth serve`` then serves in its own process."""

    exit_code = 7


def broker_dir(env: Mapping[str, str] | None = None) -> Path:
    """The brokers' folder (not created): ``$SLEUTH_BROKER_DIR``, ``$XDG_RUNTIME_DIR/sleuth`` or
    ``<tmp>/sleuth-<uid>``."""
    env = os.environ if env is None else env
    if env.get(BROKER_DIR_ENV):
        return Path(env[BROKER_DIR_ENV]).expanduser().absolute()
    runtime = env.get("XDG_RUNTIME_DIR")
    if runtime and os.path.isdir(runtime):
        return Path(runtime) / "sleuth"
    return Path(tempfile.gettempdir()) / f"sleuth-{os.getuid()}"


def ensure_private_dir(folder: Path) -> Path:
    """Create ``folder`` (mode 0700) when missing and check that only this user can use it.

    Raises:
        BrokerUnavailable: it cannot be created, is not a folder (or is a symlink), belongs to
            another user, or others may enter it and its mode cannot be tightened.
    """
    try:
        try:
            folder.mkdir(mode=0o700, parents=True)
        except FileExistsError:
            pass  # checked below, whatever it is
        st = os.lstat(folder)
    except OSError as exc:
        raise BrokerUnavailable(f"cannot create the broker folder {folder}: {exc.strerror or exc}") from exc
    _check_own_folder(folder, st)
    if st.st_mode & 0o077:
        try:
            os.chmod(folder, 0o700)
        except OSError as exc:
            raise BrokerUnavailable(f"the broker folder {folder} is open to other users and cannot be "
                                    f"made private: {exc.strerror or exc}") from exc
    return folder


def check_private_dir(folder: Path) -> None:
    """Check, without creating it, that ``folder`` is what :func:`ensure_private_dir` makes (a
    folder of this user that others cannot enter) when it exists: only then are the sockets and
    files in it trusted (a folder another user made first, e.g. ``<tmp>/sleuth-<uid>``, could
    hold a socket that spoofs a broker, or an info file naming a process to stop).

    Raises:
        BrokerUnavailable: it exists and is not a private folder of this user.
    """
    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        return
    except OSError as exc:
        raise BrokerUnavailable(f"cannot read the broker folder {folder}: {exc.strerror or exc}") from exc
    _check_own_folder(folder, st)
    if st.st_mode & 0o077:
        raise BrokerUnavailable(f"the broker folder {folder} is open to other users")


def _check_own_folder(folder: Path, st: os.stat_result) -> None:
    """Raise BrokerUnavailable unless ``st`` (``folder``'s lstat) is a folder, not a link, of this user."""
    if not stat.S_ISDIR(st.st_mode):
        raise BrokerUnavailable(f"the broker folder {folder} is not a folder (or is a symlink)")
    if st.st_uid != os.getuid():
        raise BrokerUnavailable(f"the broker folder {folder} belongs to another user (uid {st.st_uid})")


def config_stamp(index_dir: Path) -> str:
    """What tells one version of ``<index_dir>/config.toml`` from another without reading it: its
    modification and change times (ns), size and inode, or ``absent``. A broker reads the file once,
    when it starts; a session after an edit gets a broker of the new settings (:func:`broker_key`).
    The change time catches an edit of the same size whose modification time was put back
    (``touch -r``)."""
    try:
        st = os.stat(index_dir / "config.toml")
    except OSError:
        return "absent"
    return f"{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_size}:{st.st_ino}"


def broker_key(index_dir: Path, env: Mapping[str, str] | None = None) -> str:
    """16 hex digits naming the broker of ``index_dir`` (a resolved path) under ``env``'s settings
    and the index's ``config.toml`` as it is now (:func:`config_stamp`)."""
    env = os.environ if env is None else env
    settings = sorted((k, v) for k, v in env.items() if k.startswith("SLEUTH_") and k not in SESSION_ENV)
    install = os.path.dirname(os.path.abspath(__file__))
    text = "\0".join([str(index_dir), __version__, install, sys.executable, f"config={config_stamp(index_dir)}",
                      *(f"{k}={v}" for k, v in settings)])
    return hashlib.sha256(text.encode("utf-8", "surrogateescape")).hexdigest()[:16]


@dataclass(frozen=True)
class BrokerPaths:
    """The files of one broker (see the module docstring)."""

    folder: Path
    key: str

    @property
    def socket(self) -> Path:
        return self.folder / f"{self.key}.sock"

    @property
    def run_lock(self) -> Path:
        return self.folder / f"{self.key}.lock"

    @property
    def spawn_lock(self) -> Path:
        return self.folder / f"{self.key}.spawn"

    @property
    def info(self) -> Path:
        return self.folder / f"{self.key}.json"

    @property
    def log(self) -> Path:
        return self.folder / f"{self.key}.log"

    @classmethod
    def for_index(cls, index_dir: Path, env: Mapping[str, str] | None = None, key: str | None = None,
                  create: bool = True) -> BrokerPaths:
        """The paths of the broker of ``index_dir`` (``key``: given, else :func:`broker_key`).

        Raises:
            BrokerUnavailable: the folder is not usable (``create``), exists and is not private
                (not ``create``: :func:`check_private_dir`), or the socket path would be longer
                than :data:`SOCKET_PATH_MAX_BYTES`.
        """
        folder = broker_dir(env)
        paths = cls(folder, key or broker_key(index_dir, env))
        if len(os.fsencode(paths.socket)) > SOCKET_PATH_MAX_BYTES:
            raise BrokerUnavailable(f"the socket path {paths.socket} is longer than {SOCKET_PATH_MAX_BYTES} "
                                    f"bytes; set {BROKER_DIR_ENV} to a shorter folder")
        if create:
            ensure_private_dir(folder)
        else:
            check_private_dir(folder)
        return paths


def all_broker_paths(env: Mapping[str, str] | None = None) -> list[BrokerPaths]:
    """The paths of every broker that left an info file in the brokers' folder (running or not);
    none when the folder is not a private folder of this user (:func:`check_private_dir`)."""
    folder = broker_dir(env)
    try:
        check_private_dir(folder)
        names = sorted(os.listdir(folder))
    except (OSError, BrokerUnavailable):
        return []
    return [BrokerPaths(folder, name[: -len(".json")]) for name in names if name.endswith(".json")]
