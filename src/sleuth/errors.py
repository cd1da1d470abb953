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
│   └── IndexFormatError (6, INDEX_FORMAT)    written by another version of sleuth
├── Unavailable (7, UNAVAILABLE)              a part cannot run here (a model, the broker)
├── QueryTimeout (8, QUERY_TIMEOUT)           no lane answered before the deadline
├── RequestCancelled (9, QUERY_CANCELLED)     the request was cancelled
└── InternalError (70, INTERNAL_ERROR)        a bug, reported without a traceback to the client
```
"""

from __future__ import annotations

from typing import Any

#: Characters of a caller's name or value shown in an error message before it is cut.
SHOWN_MAX_CHARS = 60


def shown(text: str, max_chars: int = SHOWN_MAX_CHARS) -> str:
    """``text`` safe to put in an error message: at most ``max_chars`` characters, surrogates and
    other non-printable characters as ``\\uXXXX`` escapes (so the message always encodes as UTF-8)."""
    cut = text[:max_chars]
    out = "".join(c if c.isprintable() and not "\ud800" <= c <= "\udfff" else f"\\u{ord(c):04x}" for c in cut)
    return out + ("..." if len(text) > max_chars else "")


def shown_value(value: Any, max_chars: int = SHOWN_MAX_CHARS) -> str:
    """``repr(value)`` for an error message, cut to ``max_chars``; an integer too long to print
    (Python refuses over 4,300 digits) as ``an integer of about N digits``."""
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 64:
        return f"an integer of about {int(value.bit_length() * 0.30103) + 1} digits"
    try:
        text = repr(value)
    except ValueError:  # a container holding such an integer
        return type(value).__name__
    return text if len(text) <= max_chars else text[:max_chars] + "..."


def not_found(kind: str, name: str) -> str:
    """``"<kind> not found or access denied: <name>"``: the one message for an object that does
    not exist and for one the caller may not see, so that no answer reveals that it exists."""
    return f"{kind} not found or access denied: {shown(name, 500)}"


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


class Unavailable(SleuthError):
    """A part sleuth needs cannot run here (the embedding model, the broker)."""

    exit_code = 7
    code = "UNAVAILABLE"


class QueryTimeout(SleuthError):
    """No retrieval lane answered before the request's deadline.

    Attributes:
        phase: the step the request was in; lanes: the lanes that were late.
    """

    exit_code = 8
    code = "QUERY_TIMEOUT"

    def __init__(self, message: str, phase: str = "retrieval", lanes: list[str] | None = None) -> None:
        super().__init__(message)
        self.phase, self.lanes = phase, list(lanes or [])


class RequestCancelled(SleuthError):
    """The request was cancelled (``reason``) while in ``phase``."""

    exit_code = 9
    code = "QUERY_CANCELLED"

    def __init__(self, reason: str, phase: str) -> None:
        super().__init__(f"request cancelled during {phase}: {reason}")
        self.reason, self.phase = reason, phase


class InternalError(SleuthError):
    """An unexpected failure (a bug, or the index changed under the process): details go to the log."""

    exit_code = 70
    code = "INTERNAL_ERROR"
