"""Nothing outside a project's roots is read: symlinks judged against the roots, files opened so that
a swapped path cannot lead the reader elsewhere.

The walker never follows a symlink (see :mod:`sleuth.ingest.walk`): a symlinked folder is not
entered, and a symlinked file is reported, not read. :func:`link_reason` says why: its target lies
outside every root of the project (:data:`LINK_OUTSIDE_REASON`, as ripgrep and git leave such links
alone), or it is another file of the roots, which is indexed once, under its own path
(:data:`LINK_ALIAS_REASON`: a ``README.md -> index.md`` in every folder would otherwise make two
documents of each page, and a watcher would leave the copy stale).

Every file is then opened with :func:`open_file`: ``O_NOFOLLOW`` (a path whose last part became a
symlink fails), ``O_NONBLOCK`` (a path that became a FIFO cannot hang the reader), and the opened
descriptor is checked with ``fstat``: a regular file, and the very file the walker listed (same
device and inode), so that a folder swapped for a symlink between the walk and the read leads
nowhere. Where the listing is not at hand (a freshness check), the path the descriptor really
names (``/proc/self/fd``) must lie inside the roots.
"""

from __future__ import annotations

import fcntl
import os
import stat
from collections.abc import Iterable
from pathlib import Path

from sleuth.ingest.names import index_name

#: The skip reason of a symlinked file whose target is outside every root of the project.
LINK_OUTSIDE_REASON = "symlink to a file outside the project's roots"
#: The skip reason of a symlinked file whose target is another file inside the roots (``{target}``:
#: the target's path, relative to the root that holds it).
LINK_ALIAS_REASON = "symlink to {target}: each file is indexed once, under its own path"

_OPEN_FLAGS = (os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
               | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0))
#: Bytes read per ``read`` call.
_READ_CHUNK_BYTES = 1024 * 1024


class ConfinementError(OSError):
    """A path that would lead outside the roots, or that changed between the walk and the read.
    An ``OSError``, so that every caller that reports unreadable files reports these too; its text
    is the reason alone."""


class Roots:
    """The real (symlink-free) paths of a project's roots, to tell whether a path lies inside them.

    A root may be a folder (everything under it is inside) or a single file (only that file is).
    """

    def __init__(self, roots: Iterable[str | os.PathLike[str]]) -> None:
        self.real: tuple[str, ...] = tuple(dict.fromkeys(os.path.realpath(r) for r in roots))

    @classmethod
    def from_real(cls, real: Iterable[str]) -> Roots:
        """Roots from paths already real (``Roots.real`` of another instance): no ``realpath``."""
        roots = cls(())
        roots.real = tuple(real)
        return roots

    def root_of(self, real_path: str) -> str | None:
        """The root (a real path) that holds the real path ``real_path``, else None."""
        for root in self.real:
            if real_path == root or real_path.startswith(root.rstrip(os.sep) + os.sep):
                return root
        return None

    def contains(self, real_path: str) -> bool:
        """True when the real path ``real_path`` is a root or lies under a folder root."""
        return self.root_of(real_path) is not None


def link_reason(path: str | os.PathLike[str], roots: Roots) -> str:
    """Why the symlinked file at ``path`` is not read (see the module docstring): its target is
    outside ``roots`` (:data:`LINK_OUTSIDE_REASON`), or inside them (:data:`LINK_ALIAS_REASON`
    naming the target in index form, relative to its root)."""
    target = os.path.realpath(path)
    root = roots.root_of(target)
    if root is None:
        return LINK_OUTSIDE_REASON
    shown = os.path.relpath(target, root) if target != root else os.path.basename(target)
    return LINK_ALIAS_REASON.format(target=index_name(shown.replace(os.sep, "/")))


def opened_path(fd: int) -> str | None:
    """The path the open descriptor ``fd`` really names (Linux ``/proc/self/fd``; macOS
    ``F_GETPATH``), or None where the system cannot say."""
    try:
        return os.readlink(f"/proc/self/fd/{fd}")
    except OSError:
        pass
    getpath = getattr(fcntl, "F_GETPATH", None)
    if getpath is None:
        return None
    try:
        return os.fsdecode(fcntl.fcntl(fd, getpath, b"\0" * 1024).rstrip(b"\0"))
    except OSError:
        return None


def open_file(path: str | os.PathLike[str], identity: tuple[int, int] | None = None,
              roots: Roots | None = None, *, check: bool = True) -> int:
    """Open the regular file ``path`` for reading without following a symlink; returns the descriptor.

    Args:
        identity: ``(st_dev, st_ino)`` the walker saw; the opened file must be that one.
        roots: when given, the opened file must really lie inside them, checked on the descriptor
            (``/proc/self/fd``) even when ``identity`` matched: the walker's stat and this open
            both resolve the path's folders, so a folder swapped for a symlink meanwhile would
            lead both to the same file outside the roots.
        check: False skips the ``fstat`` checks (for a peek at the first bytes of a file the walker
            has just seen to be regular: ``O_NOFOLLOW`` and ``O_NONBLOCK`` still apply).
    Raises:
        ConfinementError: the last part of ``path`` is a symlink, the file is not a regular file,
            it is not the file the walker listed, or it lies outside ``roots``.
        OSError: the file cannot be opened (missing, permission denied, ...).
    """
    try:
        fd = os.open(path, _OPEN_FLAGS)
    except OSError:
        if os.path.islink(path):
            raise ConfinementError("is a symlink (not followed)") from None
        raise
    if not check:
        return fd
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise ConfinementError("not a regular file")
        if identity is not None and (st.st_dev, st.st_ino) != tuple(identity):
            raise ConfinementError("the file was replaced while being indexed")
        if roots is not None:
            real = opened_path(fd) or os.path.realpath(path)
            if not roots.contains(real):
                raise ConfinementError("outside the project's roots")
    except BaseException:
        os.close(fd)
        raise
    return fd


class FileTooLarge(OSError):
    """A file over its size limit at the time it is read."""

    def __init__(self, size_bytes: int, max_bytes: int) -> None:
        super().__init__(f"too large: {size_bytes} bytes > {max_bytes} byte limit")


def read_file(path: str | os.PathLike[str], max_bytes: int, identity: tuple[int, int] | None = None,
              roots: Roots | None = None) -> bytes:
    """The bytes of the regular file ``path``, opened with :func:`open_file`.

    Raises:
        ConfinementError, OSError: as :func:`open_file`.
        FileTooLarge: the file holds more than ``max_bytes`` bytes (it may have grown since the walk).
    """
    fd = open_file(path, identity, roots)
    try:
        chunks: list[bytes] = []
        total = 0
        while True:
            chunk = os.read(fd, min(_READ_CHUNK_BYTES, max_bytes + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > max_bytes:  # it grew since the walk (or nobody checked its size)
                raise FileTooLarge(max(total, os.fstat(fd).st_size), max_bytes)
        return b"".join(chunks)
    finally:
        os.close(fd)


def confined_path(root: str, rel_path: str, roots: Roots) -> bool:
    """True when the file of an indexed document (``root`` and ``rel_path`` as the catalog holds them;
    the archive file for a member) does not lead outside ``roots``: its path holds no ``..`` and is
    not absolute, and, if it exists, it really lies inside the roots. Records without a file
    (``root == ""``) always are. One ``realpath`` (a few ``lstat``); never raises."""
    if not root:
        return True
    parts = rel_path.split("/")
    if rel_path.startswith("/") or ".." in parts or "\0" in rel_path:
        return False
    from sleuth.ingest.names import fs_name

    path = Path(root) / fs_name(rel_path) if os.path.isdir(root) else Path(root)
    for _ in parts:  # an archive member: its archive is the file on disk
        if os.path.lexists(path):
            return roots.contains(os.path.realpath(path))
        if path == path.parent:
            break
        path = path.parent
    return True


__all__ = [
    "LINK_ALIAS_REASON",
    "LINK_OUTSIDE_REASON",
    "ConfinementError",
    "FileTooLarge",
    "Roots",
    "confined_path",
    "link_reason",
    "open_file",
    "opened_path",
    "read_file",
]
