"""One small exception hierarchy. The CLI maps it to exit codes and the MCP layer to tool errors."""

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
