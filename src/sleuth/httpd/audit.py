"""The audit log of ``sleuth serve --http``: one JSON line per tool call and per refusal, written
off the request path.

A call's line: ``{"time", "user", "tool", "project", "result_count", "ms", "ok"}`` (and ``"error"``,
the error code, when the call failed; ``"query"`` only with ``--audit-queries``).

A refusal's line (400, 401, 403, 408, 413, 421, 429, 503 answered before any tool runs):
``{"time", "event": "refused", "status", "reason", "user", "client", "count"}`` -- ``user`` only when
the token was verified (else null), ``client`` the peer's address, never any token text. Refusals
are coalesced (:class:`RefusalCoalescer`) so that a flood cannot fill the disk: in each window of
:data:`AUDIT_REFUSAL_WINDOW_S`, the first refusal of each kind (status, reason, user, client) is
written at once with ``count`` 1, and the repeats of that kind as one line with their ``count``
and ``"window_s"`` when the window closes; beyond :data:`AUDIT_REFUSAL_KINDS_MAX` kinds in a
window, the rest are counted in one line with ``status`` and ``reason`` "other". So refusals
add at most ``2 * AUDIT_REFUSAL_KINDS_MAX + 1`` lines per window, whatever their number.

Every line is put on a bounded queue; one daemon thread appends the lines to :data:`AUDIT_FILE`
(mode 0600) in the index folder, so a slow or full disk never delays or fails a search (lines
beyond the queue are dropped and counted, and the count is logged).
"""

from __future__ import annotations

import json
import logging
import os
import queue
import threading
import time
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
#: Refusals are coalesced per window of this many seconds (see the module docstring).
AUDIT_REFUSAL_WINDOW_S = 60.0
#: Kinds of refusal (status, reason, user, client) written one by one per window; more are counted together.
AUDIT_REFUSAL_KINDS_MAX = 50
#: Characters of a client address kept in a refusal line.
AUDIT_CLIENT_MAX_CHARS = 64

RefusalKind = tuple[int, str, str | None, str | None]


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def refusal_line(kind: RefusalKind | None, count: int, window_s: float | None = None) -> dict[str, Any]:
    """The audit line of ``count`` refusals of ``kind`` (None: the refusals beyond the kinds kept)."""
    status, reason, user, client = kind if kind is not None else ("other", "other", None, None)
    line: dict[str, Any] = {"time": now_rfc3339(), "event": "refused", "status": status, "reason": reason,
                            "user": user, "client": client, "count": count}
    if window_s is not None:
        line["window_s"] = window_s
    return line


class RefusalCoalescer:
    """Refusal lines, coalesced per window (see the module docstring); pure, time passed in.

    Args:
        window_s: the window, in seconds.
        kinds_max: kinds written one by one per window.
    """

    def __init__(self, window_s: float = AUDIT_REFUSAL_WINDOW_S, kinds_max: int = AUDIT_REFUSAL_KINDS_MAX) -> None:
        self.window_s, self.kinds_max = window_s, kinds_max
        self._start: float | None = None
        self._repeats: dict[RefusalKind, int] = {}
        self._others = 0

    def add(self, kind: RefusalKind, now: float) -> list[dict[str, Any]]:
        """Count one refusal at ``now`` (seconds, monotonic): the lines to write now."""
        lines = self.due(now)
        if self._start is None:
            self._start = now
        if kind in self._repeats:
            self._repeats[kind] += 1
        elif len(self._repeats) < self.kinds_max:
            self._repeats[kind] = 0
            lines.append(refusal_line(kind, 1))
        else:
            self._others += 1
        return lines

    def due(self, now: float, force: bool = False) -> list[dict[str, Any]]:
        """The repeat lines of the window when it is over at ``now`` (or ``force``), closing it."""
        if self._start is None or (not force and now - self._start < self.window_s):
            return []
        lines = [refusal_line(kind, n, self.window_s) for kind, n in self._repeats.items() if n]
        if self._others:
            lines.append(refusal_line(None, self._others, self.window_s))
        self._start, self._repeats, self._others = None, {}, 0
        return lines


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
        self._refusals = RefusalCoalescer()
        self._refusals_lock = threading.Lock()
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
        self._put(line)

    def refusal(self, status: int, reason: str, user: str | None, client: str | None) -> None:
        """Count one refusal (coalesced, see the module docstring); never blocks and never raises."""
        kind = (status, reason[:AUDIT_NAME_MAX_CHARS], None if user is None else user[:AUDIT_NAME_MAX_CHARS],
                None if client is None else client[:AUDIT_CLIENT_MAX_CHARS])
        with self._refusals_lock:
            lines = self._refusals.add(kind, time.monotonic())
        for line in lines:
            self._put(line)

    def _put(self, line: dict[str, Any]) -> None:
        try:
            self._queue.put_nowait(line)
        except queue.Full:
            self.dropped += 1

    def _due_refusals(self, force: bool = False) -> list[dict[str, Any]]:
        with self._refusals_lock:
            return self._refusals.due(time.monotonic(), force)

    def _write(self, item: object) -> None:
        data = (json.dumps(item, ensure_ascii=False) + "\n").encode("utf-8", "replace")
        try:
            os.write(self._fd, data)
        except OSError as exc:
            log.warning("audit line not written: %s", exc.strerror or exc)

    def _run(self) -> None:
        while True:
            try:
                item = self._queue.get(timeout=self._refusals.window_s / 4)
            except queue.Empty:
                item = None
            for line in self._due_refusals(force=item is self._STOP):
                self._write(line)
            if item is self._STOP:
                return
            if item is not None:
                self._write(item)

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
