"""One small exception hierarchy. The CLI maps it to exit codes and the MCP layer to tool errors."""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path


class SleuthError(Exception):
    """Base of every error sleuth raises on purpose; its message is meant for people."""

    exit_code = 1


class QueryError(SleuthError):
    """The query or a search parameter is invalid (empty, too long, out of range)."""

    exit_code = 2


class ConfigError(SleuthError):
    """A configuration value or command-line option is invalid."""

    exit_code = 2


class IndexNotFound(SleuthError):
    """No index directory was given or found."""

    exit_code = 3


class ProjectNotFound(SleuthError):
    """The project does not exist in the index, or the caller may not access it."""

    exit_code = 4


class DocumentNotFound(SleuthError):
    """No document has the requested id (in the projects the caller may access)."""

    exit_code = 4


class IndexBusy(SleuthError):
    """Another process holds the index's write lock and did not release it in time."""

    exit_code = 5


class IndexWriteError(SleuthError):
    """A write to the index folder failed for want of storage (see :func:`storage_error`). The
    write was rolled back: the index still answers from its last committed state."""

    exit_code = 8


class StorageFull(IndexWriteError):
    """The file system holding the index is full (ENOSPC), over its quota (EDQUOT) or past the
    process's file size limit (EFBIG)."""

    exit_code = 8


class IndexReadOnly(IndexWriteError):
    """The index folder cannot be written: a read-only file system (EROFS) or no permission."""

    exit_code = 9


class IndexGone(SleuthError):
    """The index folder was deleted or moved while it was open."""

    exit_code = 10


#: errno → (what ran out, the error class) for the failures :func:`storage_error` translates.
_FULL_ERRNOS = {errno.ENOSPC: "no space left on device", errno.EDQUOT: "disk quota exceeded",
                errno.EFBIG: "file too large (the process's file size limit)"}
_READ_ONLY_ERRNOS = {errno.EROFS: "read-only file system", errno.EACCES: "permission denied",
                     errno.EPERM: "operation not permitted"}
#: How tantivy (Rust) reports an OS error inside its messages: ``... (os error 28)``, or
#: ``IoError(Os { code: 30, kind: ReadOnlyFilesystem, ... })``.
_RUST_OS_ERROR_RE = re.compile(r"\(os error (\d+)\)|\bOs \{ code: (\d+)")
#: SQLite's primary result codes (the low byte of ``sqlite3.Error.sqlite_errorcode``).
_SQLITE_READONLY, _SQLITE_IOERR, _SQLITE_FULL, _SQLITE_CANTOPEN = 8, 10, 13, 14
#: SQLITE_READONLY_DBMOVED: the database file was unlinked or renamed while open.
_SQLITE_READONLY_DBMOVED = 8 | (4 << 8)


def _errno_of(exc: BaseException) -> int | None:
    """The OS error number behind ``exc``: an OSError's, one named in a tantivy message, SQLite's
    result code mapped to the errno it stands for; None when there is none."""
    if isinstance(exc, OSError) and exc.errno is not None:
        return exc.errno
    if isinstance(exc, sqlite3.Error):
        code = getattr(exc, "sqlite_errorcode", None)
        if code == _SQLITE_READONLY_DBMOVED:
            return errno.ESTALE  # the file open is no longer the one at its path
        primary = None if code is None else code & 0xFF
        if primary == _SQLITE_FULL:
            return errno.ENOSPC
        if primary == _SQLITE_READONLY:
            return errno.EROFS
        if primary in (_SQLITE_IOERR, _SQLITE_CANTOPEN):
            return -1  # an I/O error or a file that cannot be opened: the folder decides (see below)
        return None
    found = _RUST_OS_ERROR_RE.search(str(exc))
    return int(found.group(1) or found.group(2)) if found else None


def _folder_state(folder: Path) -> int | None:
    """What the folder's file system says when an error does not: ENOENT (folder gone), EROFS
    (mounted read-only), ENOSPC (no block or inode left for this process); None otherwise."""
    try:
        st = os.statvfs(folder)
    except FileNotFoundError:
        return errno.ENOENT
    except OSError:
        return None
    if st.f_flag & os.ST_RDONLY:
        return errno.EROFS
    blocks, inodes = (st.f_bfree, st.f_ffree) if os.geteuid() == 0 else (st.f_bavail, st.f_favail)
    if blocks == 0 or (st.f_files and inodes == 0):
        return errno.ENOSPC
    return None


def index_gone(index_dir: Path, during: str = "while it was open",
               hint: str = "run `sleuth index` to make it again") -> IndexGone:
    """The error for an index folder deleted or moved (or made anew) ``during`` some use of it."""
    return IndexGone(f"the index folder {index_dir} was deleted or moved {during}: {hint}")


def storage_error(exc: BaseException, index_dir: Path, what: str,
                  retry: str = "run `sleuth index` again") -> SleuthError | None:
    """The error to report for a failed write of ``what`` (e.g. ``"the postings"``) in ``index_dir``.

    Recognises OS errors (``OSError.errno``), SQLite's result codes and the ``(os error N)`` in
    tantivy's messages; when they say nothing precise (SQLite's "disk I/O error", a tantivy worker
    that died), the folder's file system decides (``statvfs``). ``retry`` is what to do once space
    is freed.

    Returns:
        StorageFull, IndexReadOnly or IndexGone with a message saying what ran out and where, or
        None when ``exc`` is none of these (the caller re-raises it).
    """
    code = _errno_of(exc)
    if code is None and not isinstance(exc, ValueError | RuntimeError):  # tantivy and usearch raise these
        return None
    if code not in _FULL_ERRNOS and code not in _READ_ONLY_ERRNOS:
        code = _folder_state(index_dir) or code
    if code == errno.ESTALE or (code == errno.ENOENT and not index_dir.is_dir()):
        return index_gone(index_dir)
    if code in _FULL_ERRNOS:
        return StorageFull(f"{_FULL_ERRNOS[code]} while writing {what} in {index_dir}: free some space and {retry};"
                           " the index still answers from its last committed state")
    if code in _READ_ONLY_ERRNOS:
        return IndexReadOnly(f"cannot write {what} in {index_dir} ({_READ_ONLY_ERRNOS[code]}): make the folder"
                             f" writable and {retry}, or pass another --index; the index still answers searches")
    return None


@contextlib.contextmanager
def storage_errors(index_dir: Path, what: str, retry: str = "run `sleuth index` again") -> Iterator[None]:
    """Raise :func:`storage_error`'s translation of a failure inside the block (chained to the
    original), and any other failure unchanged."""
    try:
        yield
    except SleuthError:
        raise
    except Exception as exc:
        translated = storage_error(exc, index_dir, what, retry)
        if translated is None:
            raise
        raise translated from exc
