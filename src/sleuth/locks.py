"""Exclusive ``flock`` locks on files, waited for with a bound. Standard library only (the thin
``sleuth serve`` imports it)."""

from __future__ import annotations

import fcntl
import os
import time
from pathlib import Path

#: How often a waiting process tries the lock again, in seconds.
LOCK_POLL_S = 0.05


def lock_exclusive(path: Path, timeout_s: float, poll_s: float = LOCK_POLL_S) -> int | None:
    """Open ``path`` (created with mode 0600 when missing) and take an exclusive ``flock`` on it,
    trying for at most ``timeout_s`` seconds (0: once).

    Returns:
        The open descriptor holding the lock (closing it, or the process ending, releases it), or
        None when another process held the lock the whole time.
    Raises:
        OSError: the file cannot be opened.
    """
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return fd
        except BlockingIOError:
            if time.monotonic() >= deadline:
                os.close(fd)
                return None
            time.sleep(poll_s)
