"""What tool families are registered from: the serve context (tools are added with
:func:`sleuth.mcp.sdk.add_tools`).

Each tool profile (``sleuth serve --tools``) is a function ``register(server, context)``; see
``sleuth.mcp.server.PROFILES``. This module has no profile of its own, so every tool module can
import it without an import cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from sleuth.mcp.events import ToolCallHook

if TYPE_CHECKING:
    from sleuth.engine import Engine
    from sleuth.pipeline.requests import RequestRegistry


@dataclass
class ServeContext:
    """The resources tool families are built from; what no selected profile needs stays ``None``.

    Attributes:
        engine: the open index (profiles with ``needs_index``).
        allowed_projects: project ids a client may access; ``None`` = every project.
        guides_path: the ``guides.json`` of the ``guides`` profile.
        on_tool_call: receives one event per guide search (wrapped so it can never block one).
        registry: running memory-search requests; one shared by several servers (a broker's
            sessions) lets query_status / query_cancel reach requests of the others. None: each
            server keeps its own.
        cleanups: called by :meth:`close` when the server is done (tool families add theirs).
        per_caller: project access comes from each call's verified caller
            (:data:`sleuth.mcp.access.CURRENT_CALLER`, HTTP), within ``allowed_projects``.
    """

    engine: Engine | None = None
    allowed_projects: Sequence[str] | None = None
    guides_path: Path | None = None
    on_tool_call: ToolCallHook | None = None
    registry: RequestRegistry | None = None
    cleanups: list[Callable[[], None]] = field(default_factory=list)
    per_caller: bool = False

    def close(self) -> None:
        """Run the cleanups (newest first); the engine is closed by whoever opened it."""
        while self.cleanups:
            self.cleanups.pop()()
