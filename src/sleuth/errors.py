"""The one exception hierarchy of sleuth. Standard library only.

Every error sleuth raises on purpose is a :class:`SleuthError` whose message is meant for people.
Each class carries the process exit code the CLI ends with (``exit_code``) and the error code MCP
tools answer with (``code``); the CLI maps them in one place (``sleuth.cli.handle_errors``) and the
MCP layer in one place (``sleuth.mcp.errors``).

```
SleuthError (1, SLEUTH_ERROR)
├── QueryError (2, INVALID_ARGUMENT)          a query or argument is invalid
│   └── RequestNotFound (2, REQUEST_NOT_FOUND) no running or recent request has this id
├── ConfigError (2, CONFIG_ERROR)             a setting or option is invalid
├── NotFound (4, NOT_FOUND)                   an object does not exist or may not be seen
│   ├── IndexNotFound (3, INDEX_NOT_FOUND)
│   ├── ProjectNotFound (4, PROJECT_NOT_FOUND)
│   └── DocumentNotFound (4, RECORD_NOT_FOUND)
├── IndexBusy (5, INDEX_BUSY)                 another writer held the index too long
├── StorageError (6, STORAGE_ERROR)           the index cannot be read or written
│   ├── IndexFormatError (6, INDEX_FORMAT)    written by another version of sleuth
│   ├── IndexWriteError (8, STORAGE_ERROR)    a write failed for want of storage, rolled back
│   │   ├── StorageFull (8, STORAGE_FULL)     no space left, quota, file size limit
│   │   └── IndexReadOnly (9, INDEX_READ_ONLY) a read-only file system, no permission
│   └── IndexGone (10, INDEX_GONE)            the folder was deleted or moved while open
├── Unavailable (7, UNAVAILABLE)              a part cannot run here (a model, the broker)
├── QueryTimeout (11, QUERY_TIMEOUT)          no lane answered before the deadline
├── RequestCancelled (12, QUERY_CANCELLED)    the request was cancelled
└── InternalError (70, INTERNAL_ERROR)        a bug, reported without a traceback to the client
```

How a failed write of the operating system, SQLite or tantivy becomes a StorageError is here too
(:func:`storage_error`), so that every layer says the same: what ran out, and where.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import sqlite3
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

#: Characters of a caller's name or value shown in an error message before it is cut.
SHOWN_MAX_CHARS = 60
#: How an infinite number is shown in an error (JSON has none: it came from ``Infinity`` or from an
#: integer too long to read).
INFINITE_SHOWN = "a number too large to read (Infinity, or an integer of over 100 digits)"


def shown(text: str, max_chars: int = SHOWN_MAX_CHARS) -> str:
    """``text`` safe to put in an error message: at most ``max_chars`` characters, surrogates and
    other non-printable characters as ``\\uXXXX`` escapes (so the message always encodes as UTF-8)."""
    cut = text[:max_chars]
    out = "".join(c if c.isprintable() and not "\ud800" <= c <= "\udfff" else f"\\u{ord(c):04x}" for c in cut)
    return out + ("..." if len(text) > max_chars else "")


#: Names of a caller's list shown in an error message before the rest are counted.
SHOWN_MAX_ITEMS = 10


def shown_names(names: Sequence[str], max_items: int = SHOWN_MAX_ITEMS) -> str:
    """``names`` comma-separated for an error message: each as :func:`shown` makes it, at most
    ``max_items`` of them, then ``and N more``."""
    listed = ", ".join(shown(n) for n in names[:max_items])
    return listed + (f" and {len(names) - max_items:,} more" if len(names) > max_items else "")


def shown_value(value: Any, max_chars: int = SHOWN_MAX_CHARS) -> str:
    """``repr(value)`` for an error message, cut to ``max_chars``; an integer too long to print
    (Python refuses over 4,300 digits) as ``an integer of about N digits``; an infinite float as
    :data:`INFINITE_SHOWN` (MCP's JSON decoder reads ``Infinity`` and an integer of more than 100
    digits so: :mod:`sleuth.mcp.wire`)."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    if isinstance(value, float) and value in (float("inf"), float("-inf")):
        return INFINITE_SHOWN if value > 0 else INFINITE_SHOWN.replace("a number", "a negative number").replace(
            "Infinity", "-Infinity")
    try:
        text = repr(value)
    except ValueError:  # a container holding such an integer
        return type(value).__name__
    return text if len(text) <= max_chars else text[:max_chars] + "..."


def scale_package_missing(package: str, setting: str) -> ConfigError:
    """The error for a scale-out ``setting`` (``SLEUTH_CATALOG_URL``, ``milvus_uri``) whose client
    ``package`` (psycopg, pymilvus) is not installed: a venv made with ``pip install sleuth`` (or
    ``make demo``) has neither, and an ImportError read "cannot reach the catalog" or a traceback."""
    return ConfigError(f"{setting} is set, but the Python package {package} it needs is not installed:"
                       " pip install 'sleuth[scale]' (docs/SCALE.md)")


def not_found(kind: str, name: str) -> str:
    """``"<kind> not found or access denied: <name>"``: the one message for an object that does
    not exist and for one the caller may not see, so that no answer reveals that it exists."""
    return f"{kind} not found or access denied: {shown(name, 500)}"


NO_MODEL_REASON = "no embedding model configured (model = 'none')"
"""Why the vector lane is unavailable when the index has no model by choice (``model = "none"``)."""

class SleuthError(Exception):
    """Base of every error sleuth raises on purpose; its message is meant for people."""

    exit_code = 1
    code = "SLEUTH_ERROR"


class QueryError(SleuthError):
    """The query or a search parameter is invalid (empty, too long, out of range)."""

    exit_code = 2
    code = "INVALID_ARGUMENT"


class RequestNotFound(QueryError):
    """No running or recently finished request has this id (or it is another caller's)."""

    code = "REQUEST_NOT_FOUND"


class ConfigError(SleuthError):
    """A configuration value or command-line option is invalid."""

    exit_code = 2
    code = "CONFIG_ERROR"


class NotFound(SleuthError):
    """An object does not exist, or the caller may not see it (the two read the same)."""

    exit_code = 4
    code = "NOT_FOUND"


class IndexNotFound(NotFound):
    """No index directory was given or found."""

    exit_code = 3
    code = "INDEX_NOT_FOUND"


class ProjectNotFound(NotFound):
    """The project does not exist in the index, or the caller may not access it."""

    code = "PROJECT_NOT_FOUND"


class DocumentNotFound(NotFound):
    """No document has the requested id (in the projects the caller may access)."""

    code = "RECORD_NOT_FOUND"


class IndexBusy(SleuthError):
    """Another process holds the index's write lock and did not release it in time."""

    exit_code = 5
    code = "INDEX_BUSY"


class StorageError(SleuthError):
    """The index cannot be read or written (a full disk, a read-only or vanished folder, damage)."""

    exit_code = 6
    code = "STORAGE_ERROR"


class IndexFormatError(StorageError):
    """The catalog was written by another version of sleuth, in a format this one cannot read."""

    code = "INDEX_FORMAT"


class IndexWriteError(StorageError):
    """A write to the index folder failed for want of storage (see :func:`storage_error`). The
    write was rolled back: the index still answers from its last committed state."""

    exit_code = 8


class StorageFull(IndexWriteError):
    """The file system holding the index is full (ENOSPC), over its quota (EDQUOT) or past the
    process's file size limit (EFBIG)."""

    code = "STORAGE_FULL"


class IndexReadOnly(IndexWriteError):
    """The index folder cannot be written: a read-only file system (EROFS) or no permission."""

    exit_code = 9
    code = "INDEX_READ_ONLY"


class IndexGone(StorageError):
    """The index folder was deleted or moved while it was open."""

    exit_code = 10
    code = "INDEX_GONE"


class Unavailable(SleuthError):
    """A part sleuth needs cannot run here (the embedding model, the broker)."""

    exit_code = 7
    code = "UNAVAILABLE"


class QueryTimeout(SleuthError):
    """No retrieval lane answered before the request's deadline.

    Attributes:
        phase: the step the request was in; lanes: the lanes that were late.
    """

    exit_code = 11
    code = "QUERY_TIMEOUT"

    def __init__(self, message: str, phase: str = "retrieval", lanes: list[str] | None = None) -> None:
        super().__init__(message)
        self.phase, self.lanes = phase, list(lanes or [])


class RequestCancelled(SleuthError):
    """The request was cancelled (``reason``) while in ``phase``."""

    exit_code = 12
    code = "QUERY_CANCELLED"

    def __init__(self, reason: str, phase: str) -> None:
        super().__init__(f"request cancelled during {phase}: {reason}")
        self.reason, self.phase = reason, phase


class InternalError(SleuthError):
    """An unexpected failure (a bug, or the index changed under the process): details go to the log."""

    exit_code = 70
    code = "INTERNAL_ERROR"


def internal_error(exc: BaseException) -> InternalError:
    """An unexpected exception (a bug, a driver's error) as a readable :class:`InternalError`
    naming its type and words and pointing at the log, where the caller has written its traceback."""
    return InternalError(f"{type(exc).__name__}: {exc} (details in the server's log)")


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
