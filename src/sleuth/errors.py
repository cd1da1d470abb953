"""One small exception hierarchy. The CLI maps it to exit codes and the MCP layer to tool errors."""

from __future__ import annotations


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
