"""The audit log of ``sleuth serve --http``: one JSON line per tool call, written off the request path.

Each line: ``{"time", "user", "tool", "project", "result_count", "ms", "ok"}`` (and ``"error"``, the
error code, when the call failed; ``"query"`` only with ``--audit-queries``). A call only puts its
line on a bounded queue; one daemon thread appends the lines to :data:`AUDIT_FILE` (mode 0600) in
the index folder, so a slow or full disk never delays or fails a search (lines beyond the queue are
dropped and counted, and the count is logged).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sleuth.errors import ConfigError

log = logging.getLogger("sleuth.audit")

#: The audit log, in the index folder.
AUDIT_FILE = "audit.jsonl"
#: Lines waiting to be written beyond this count are dropped.
AUDIT_QUEUE_MAX_LINES = 10_000
#: How long closing waits for queued lines, in seconds.
AUDIT_FLUSH_TIMEOUT_S = 5.0
#: Longest query text kept in a line, in characters.
AUDIT_QUERY_MAX_CHARS = 1000
#: Characters of a tool name, a user name and a project id kept in an audit line: a call names
#: whatever tool it likes (an unknown one is refused after), and a line must not grow with it.
AUDIT_NAME_MAX_CHARS = 200


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class AuditLog:
    """Appends audit lines to ``path`` from a daemon thread (see the module docstring).

    Args:
        path: the audit file (created with mode 0600 when missing).
        include_queries: keep each call's query text.
    Raises:
        ConfigError: the file cannot be opened for appending.
    """

    _STOP = object()

    def __init__(self, path: Path, include_queries: bool = False,
                 queue_max_lines: int = AUDIT_QUEUE_MAX_LINES) -> None:
        self.path = path
        self.include_queries = include_queries
        self.dropped = 0
        try:
            self._fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o600)
        except OSError as exc:
            raise ConfigError(f"cannot write the audit log {path}: {exc.strerror or exc}") from None
        self._queue: queue.Queue[object] = queue.Queue(maxsize=queue_max_lines)
        self._thread = threading.Thread(target=self._run, name="sleuth-audit", daemon=True)
        self._thread.start()

    def record(self, user: str, tool: str, project: str | None, result_count: int | None, ms: float,
               error: str | None = None, query: str | None = None) -> None:
        """Queue one line; never blocks and never raises."""
        line: dict[str, Any] = {"time": now_rfc3339(), "user": user[:AUDIT_NAME_MAX_CHARS],
                                "tool": tool[:AUDIT_NAME_MAX_CHARS],
                                "project": None if project is None else project[:AUDIT_NAME_MAX_CHARS],
                                "result_count": result_count, "ms": round(ms, 1), "ok": error is None}
        if error is not None:
            line["error"] = error
        if self.include_queries and query:
            line["query"] = query[:AUDIT_QUERY_MAX_CHARS]
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            if item is self._STOP:
                return
            data = (json.dumps(item, ensure_ascii=False) + "\n").encode("utf-8", "replace")
            try:
                os.write(self._fd, data)
            except OSError as exc:
                log.warning("audit line not written: %s", exc.strerror or exc)

    def close(self, timeout_s: float = AUDIT_FLUSH_TIMEOUT_S) -> None:
        """Write the queued lines (waiting at most ``timeout_s``), then stop and close the file."""
        try:
            self._queue.put(self._STOP, timeout=timeout_s)
        except queue.Full:
            pass
        self._thread.join(timeout_s)
        if self.dropped:
            log.warning("%d audit line(s) dropped: the queue was full", self.dropped)
        if not self._thread.is_alive():
            os.close(self._fd)
