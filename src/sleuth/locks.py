"""Exclusive ``flock`` locks on files, waited for with a bound. Standard library only (the thin
``sleuth serve`` imports it)."""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol

#: How often a waiting process tries the lock again, in seconds.
LOCK_POLL_S = 0.05


def retry_until(attempt: Callable[[], bool], timeout_s: float, poll_s: float = LOCK_POLL_S,
                waiting: Callable[[], None] | None = None, clock: Callable[[], float] = time.monotonic,
                sleep: Callable[[float], None] = time.sleep) -> bool:
    """Call ``attempt`` until it returns True, for at most ``timeout_s`` seconds (0: once), sleeping
    ``poll_s`` seconds between tries (the last pause no longer than the time left); whether it did.
    What ``attempt`` (or ``waiting``) raises is raised. The wait of every lock of sleuth: a file's
    ``flock`` (:func:`lock_exclusive`), PostgreSQL's advisory lock (:class:`sleuth.store.pg.PgWriteLock`).

    Args:
        waiting: called before each pause (e.g. to show what the holder is doing).
        clock, sleep: seconds, monotonic, and a pause (injected in tests).
    """
    deadline = clock() + timeout_s
    while True:
        if attempt():
            return True
        now = clock()
        if now >= deadline:
            return False
        if waiting is not None:
            waiting()
        sleep(min(poll_s, deadline - now))


def lock_exclusive(path: Path, timeout_s: float, poll_s: float = LOCK_POLL_S,
                   waiting: Callable[[], None] | None = None, clock: Callable[[], float] = time.monotonic,
                   sleep: Callable[[float], None] = time.sleep) -> int | None:
    """Open ``path`` (created with mode 0600 when missing) and take an exclusive ``flock`` on it,
    trying for at most ``timeout_s`` seconds (0: once); ``waiting``, ``clock``, ``sleep``: as
    :func:`retry_until`.

    Returns:
        The open descriptor holding the lock (closing it, or the process ending, releases it), or
        None when another process held the lock the whole time.
    Raises:
        NotALockFile: it is not a regular file: a symbolic link (which could point anywhere: the
            holder writes into its lock file), a folder, a FIFO or a device, which a cloned
            repository could plant in its index folder.
        OSError: the file cannot be opened or locked.
    """
    fd = open_lock_file(path)

    def take() -> bool:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    try:
        if retry_until(take, timeout_s, poll_s, waiting, clock, sleep):
            return fd
    except BaseException:
        os.close(fd)
        raise
    os.close(fd)
    return None


def open_lock_file(path: Path) -> int:
    """``path`` opened read-write (created with mode 0600 when missing), never through a symbolic
    link and only when it is a regular file.

    Raises:
        NotALockFile: it is not a regular file (the message names it and says to remove it).
        OSError: it cannot be opened.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, 0o600)
    except OSError as exc:
        if exc.errno in (errno.ELOOP, errno.EISDIR, errno.ENXIO, errno.ENODEV):
            raise _not_a_lock_file(path) from None
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise _not_a_lock_file(path)
    return fd


class NotALockFile(OSError):
    """A lock file that is not a regular file (a symbolic link, a folder, a FIFO, a device):
    ``strerror`` names it and says to remove it, ``filename`` is its path (errno EINVAL)."""


def _not_a_lock_file(path: Path) -> NotALockFile:
    return NotALockFile(errno.EINVAL, f"{path.name} is not a regular file (a symbolic link, a folder, a FIFO or a "
                                      f"device): sleuth will not use it as a lock; remove it", str(path))


#: How long a writer waits for another to release an index, in seconds (overridden by the
#: environment variable ``SLEUTH_WRITE_LOCK_TIMEOUT_S``).
WRITE_LOCK_TIMEOUT_S = 30.0
WRITE_LOCK_TIMEOUT_ENV = "SLEUTH_WRITE_LOCK_TIMEOUT_S"
#: The longest wait ``$SLEUTH_WRITE_LOCK_TIMEOUT_S`` may ask for, in seconds (a day): every wait is bounded.
WRITE_LOCK_TIMEOUT_MAX_S = 86_400.0


def write_lock_timeout_s() -> float:
    """``$SLEUTH_WRITE_LOCK_TIMEOUT_S`` when set (seconds, 0 to ``WRITE_LOCK_TIMEOUT_MAX_S``), else
    ``WRITE_LOCK_TIMEOUT_S``.

    Raises:
        ConfigError: the variable is not a number of seconds in that range (``inf`` and ``1e999``
            included: a wait without end).
    """
    from sleuth.errors import ConfigError, shown

    raw = os.environ.get(WRITE_LOCK_TIMEOUT_ENV, "").strip()
    if not raw:
        return WRITE_LOCK_TIMEOUT_S
    try:
        value = float(raw)
    except ValueError:
        value = -1.0
    if not 0 <= value <= WRITE_LOCK_TIMEOUT_MAX_S:
        raise ConfigError(f"{WRITE_LOCK_TIMEOUT_ENV} must be a number of seconds from 0 to "
                          f"{WRITE_LOCK_TIMEOUT_MAX_S:,.0f}, got {shown(raw)!r}")
    return value


#: The most of a lock file's holder text a message quotes, in characters (the holder writes
#: ``process PID (command)``, the command cut to 200; a planted file may hold anything).
HOLDER_MAX_CHARS = 240


class _Waiting(Protocol):
    on_wait: Callable[[str], None] | None

    def holder(self) -> str: ...


def once_waiting(lock: _Waiting) -> Callable[[], None] | None:
    """The ``waiting`` callback of :func:`retry_until` that calls ``lock.on_wait(lock.holder())``
    before the first pause only; None when ``lock.on_wait`` is None."""
    on_wait = lock.on_wait
    if on_wait is None:
        return None
    said: list[bool] = []

    def waiting() -> None:
        if not said:
            said.append(True)
            on_wait(lock.holder() or "another process")

    return waiting


class WriteLock:
    """An exclusive ``flock`` on ``<index>/write.lock``, waited for at most ``timeout_s`` seconds.

    The holder writes ``process PID (command)`` into the file, so a writer that waits in vain can
    say who holds the index.

    Attributes:
        on_wait: called once with the holder (:meth:`holder`) when :meth:`acquire` has to wait (a
            command says what it waits for, as cargo's "Blocking waiting for file lock").
        taken: whether :meth:`held` has taken the lock since this object was made (a command
            stopped before it did wrote nothing).
    """

    def __init__(self, path: Path, timeout_s: float) -> None:
        self.path, self.timeout_s = path, timeout_s
        self._fd: int | None = None
        self.on_wait: Callable[[str], None] | None = None
        self.taken = False

    def acquire(self, blocking: bool = True) -> bool:
        """Take the lock (waiting at most ``timeout_s`` when ``blocking``); False when not taken."""
        fd = lock_exclusive(self.path, self.timeout_s if blocking else 0, waiting=once_waiting(self))
        if fd is None:
            return False
        self._fd = fd
        with contextlib.suppress(OSError):  # who holds it, for the message of a writer that waits
            os.ftruncate(fd, 0)
            holder = f"process {os.getpid()} ({' '.join(sys.argv[:3])[:200]})"
            # A path in argv that is not UTF-8 (a surrogate-escaped byte) is written escaped.
            os.pwrite(fd, holder.encode(errors="backslashreplace"), 0)
        return True

    def release(self) -> None:
        if self._fd is not None:
            fcntl.flock(self._fd, fcntl.LOCK_UN)
            os.close(self._fd)
            self._fd = None

    def holder(self) -> str:
        """Who took the lock last (``process PID (command)``), or ``""``; NULs left out, at most
        ``HOLDER_MAX_CHARS`` characters."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return ""
        try:
            if not stat.S_ISREG(os.fstat(fd).st_mode):
                return ""
            text = os.pread(fd, 4096, 0).decode("utf-8", errors="replace")
            return text.replace("\x00", "").strip()[:HOLDER_MAX_CHARS]
        except OSError:
            return ""
        finally:
            os.close(fd)

    @contextlib.contextmanager
    def held(self) -> Iterator[None]:
        """Hold the lock for the block; raises IndexBusy (naming the holder) when it is not free in time."""
        from sleuth.errors import IndexBusy, storage_errors

        with storage_errors(self.path.parent, f"the lock file {self.path.name}"):
            got = self.acquire()
        if not got:
            holder = self.holder() or "another process"
            raise IndexBusy(
                f"{holder} is writing to the index {self.path.parent}; waited {self.timeout_s:g} s for it: try again"
                f" when it has finished (or wait longer: ${WRITE_LOCK_TIMEOUT_ENV}=seconds)"
            )
        self.taken = True
        try:
            yield
        finally:
            self.release()

    @contextlib.contextmanager
    def held_or_skip(self) -> Iterator[bool]:
        """Yields whether this process may write lane files now: it already holds the lock, or took
        it here without waiting (released after the block); False when another process holds it or
        the folder is read-only."""
        if self._fd is not None:
            yield True
            return
        try:
            got = self.acquire(blocking=False)
        except OSError:  # a read-only index folder
            got = False
        try:
            yield got
        finally:
            if got:
                self.release()
