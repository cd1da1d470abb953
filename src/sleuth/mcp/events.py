"""Per-call events of MCP tools (seed 001's ``webmcp_tool_call`` push), kept off the request path.

A tool reports each call to a hook before it searches. :class:`NonBlockingHook` queues the event
and returns at once; one daemon thread hands events to the real hook. A slow, failing or
missing hook therefore never delays or breaks a search: a full queue drops the event, and a
hook that raises is logged to stderr. :class:`JsonLinesSink` is the hook ``sleuth serve
--events FILE`` installs: one JSON object per line, ``{"event", "tool_name", "time"}``.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

from sleuth.errors import ConfigError

logger = logging.getLogger(__name__)

#: Events waiting for the hook beyond this count are dropped (never waited for).
EVENT_QUEUE_MAX_EVENTS = 1_000
#: How long closing waits for queued events to reach the hook, in seconds.
EVENT_FLUSH_TIMEOUT_S = 2.0


@dataclass(frozen=True)
class ToolCallEvent:
    """One tool call: which tool, and when (RFC 3339 UTC, milliseconds). Never the arguments."""

    tool_name: str
    time: str
    event: str = "mcp_tool_call"

    @classmethod
    def now(cls, tool_name: str) -> ToolCallEvent:
        """An event for a call of ``tool_name`` happening now."""
        return cls(tool_name, datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z")

    def as_json(self) -> dict[str, str]:
        """``{"event", "tool_name", "time"}``."""
        return {"event": self.event, "tool_name": self.tool_name, "time": self.time}


ToolCallHook = Callable[[ToolCallEvent], None]
"""Receives one :class:`ToolCallEvent` per call; may be slow or raise (see :class:`NonBlockingHook`)."""


class NonBlockingHook:
    """Wraps a hook so that calling it only enqueues the event.

    Args:
        hook: the receiver, run on a daemon thread, one event at a time, in call order.
        queue_max_events: events beyond this many waiting are dropped (counted in ``dropped``).
    """

    _STOP = object()

    def __init__(self, hook: ToolCallHook, queue_max_events: int = EVENT_QUEUE_MAX_EVENTS) -> None:
        self.hook = hook
        self.dropped = 0
        self._queue: queue.Queue[object] = queue.Queue(maxsize=queue_max_events)
        self._thread = threading.Thread(target=self._run, name="sleuth-tool-events", daemon=True)
        self._thread.start()

    def __call__(self, event: ToolCallEvent) -> None:
        """Enqueue ``event``; never blocks and never raises."""
        try:
            self._queue.put_nowait(event)
        except queue.Full:
            self.dropped += 1

    def _run(self) -> None:
        while True:
            event = self._queue.get()
            if event is self._STOP:
                return
            try:
                self.hook(event)  # type: ignore[arg-type]
            except Exception:
                logger.warning("tool-call event hook failed; the call itself was not affected", exc_info=True)

    def close(self, timeout_s: float = EVENT_FLUSH_TIMEOUT_S) -> None:
        """Let queued events reach the hook (waiting at most ``timeout_s`` seconds), then stop."""
        try:
            self._queue.put(self._STOP, timeout=timeout_s)
        except queue.Full:
            return
        self._thread.join(timeout_s)


class JsonLinesSink:
    """A hook appending each event as one JSON line to ``path`` (created when missing).

    Raises:
        ConfigError: at construction, when ``path`` cannot be opened for appending.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            with path.open("a", encoding="utf-8"):
                pass
        except OSError as exc:
            raise ConfigError(f"cannot write the events file {path}: {exc.strerror or exc}") from None

    def __call__(self, event: ToolCallEvent) -> None:
        with self.path.open("a", encoding="utf-8") as out:
            out.write(json.dumps(event.as_json(), ensure_ascii=False) + "\n")
