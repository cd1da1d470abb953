"""The broker's read/write gate: reads run together, writes one at a time in arrival order.

Which calls are which comes from each tool's own description (:func:`gate_kind`): a tool whose
annotations say ``readOnlyHint`` reads; a tool marked ``{"sleuth/gate": "control"}`` in its ``_meta``
only looks at or cancels running requests; every other tool -- a new one included -- writes.

A write waits until the reads already running have finished and keeps new reads waiting while it
runs, so a read sees the index before the write or after it, never half of it. Writes queue in
arrival order (anyio's lock is fair); a waiting write holds back new reads, so a stream of reads
never starves it. Control calls pass the gate untouched: a cancel must reach a slow read.

Reads that outlive :data:`WRITE_DRAIN_TIMEOUT_S` (a caller may give a search up to 300 s) do not
hold writes back for longer: past it the write goes ahead beside them, and the gate counts it
(``writes_beside_reads``), so one slow search cannot stall every session.

All of this runs on the broker's one event loop, so plain counters need no lock.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterable
from contextlib import asynccontextmanager

import anyio
from mcp.types import Tool

#: Longest time a write waits for running reads to finish before going ahead beside them, in seconds.
WRITE_DRAIN_TIMEOUT_S = 10.0
#: The ``_meta`` key and value that mark a control tool.
GATE_META_KEY = "sleuth/gate"
CONTROL_META = {GATE_META_KEY: "control"}

READ, WRITE, CONTROL = "read", "write", "control"


def gate_kind(tool: Tool) -> str:
    """``read``, ``write`` or ``control`` for a listed tool (see the module docstring)."""
    if (tool.meta or {}).get(GATE_META_KEY) == CONTROL:
        return CONTROL
    if tool.annotations is not None and tool.annotations.read_only_hint:
        return READ
    return WRITE


def gate_kinds(tools: Iterable[Tool]) -> dict[str, str]:
    """Tool name → :func:`gate_kind` for a server's listed tools."""
    return {t.name: gate_kind(t) for t in tools}


class ReadWriteGate:
    """Many readers or one writer, writers first-come first-served (see the module docstring).

    Args:
        drain_timeout_s: how long a writer waits for running readers (:data:`WRITE_DRAIN_TIMEOUT_S`).
    """

    def __init__(self, drain_timeout_s: float = WRITE_DRAIN_TIMEOUT_S) -> None:
        self.drain_timeout_s = drain_timeout_s
        self.readers = 0
        self.writing = False
        self.reads = 0
        self.writes = 0
        self.writes_beside_reads = 0
        self._writers = anyio.Lock()
        self._changed = anyio.Event()

    def _notify(self) -> None:
        self._changed.set()
        self._changed = anyio.Event()

    @asynccontextmanager
    async def read(self) -> AsyncIterator[None]:
        """Hold the gate for reading (waits while a write runs or waits)."""
        while self.writing:
            await self._changed.wait()
        self.readers += 1
        self.reads += 1
        try:
            yield
        finally:
            self.readers -= 1
            self._notify()

    @asynccontextmanager
    async def write(self, before: Callable[[], Awaitable[None]] | None = None) -> AsyncIterator[None]:
        """Hold the gate for writing: after the writes that came first, once running reads end.

        ``before`` is awaited once it is this write's turn but before reads are held back (the
        broker waits there for writers in other processes, so reads go on meanwhile); what it
        raises propagates and the write does not run.
        """
        async with self._writers:
            if before is not None:
                await before()
            self.writing = True
            try:
                with anyio.move_on_after(self.drain_timeout_s) as drain:
                    while self.readers:
                        await self._changed.wait()
                if drain.cancelled_caught:
                    self.writes_beside_reads += 1
                self.writes += 1
                yield
            finally:
                self.writing = False
                self._notify()

    def snapshot(self) -> dict[str, int | bool]:
        """Counters for ``sleuth broker status``."""
        return {"reads_running": self.readers, "writing": self.writing, "reads": self.reads,
                "writes": self.writes, "writes_beside_reads": self.writes_beside_reads}
