"""The per-user cap on open MCP sessions of ``sleuth serve --http``.

The SDK's session manager caps sessions for the whole server (``HTTP_SESSIONS_MAX``, 503 beyond),
so one token could open them all and lock every other user out. :class:`SessionQuota` runs before
a request that opens a session (a POST without ``Mcp-Session-Id``): when the caller already holds
``per_user_max`` sessions, their least recently used *idle* session (no request in flight, no open
GET stream) is closed to make room -- as a connection pool drops its oldest idle connection -- and
when none of theirs is idle the request is refused (429 with ``Retry-After``).

The SDK keeps no public list of sessions and their owners; this reads the session manager's
``_server_instances`` / ``_session_owners`` and each transport's in-flight count and idle deadline
(mcp 2.3, pinned ``<3``; ``tests/httpd/test_limits.py`` fails if they change).
"""

from __future__ import annotations

import logging
import math
from typing import Any

log = logging.getLogger("sleuth.http")


class SessionQuota:
    """At most ``per_user_max`` open sessions per token subject (see the module docstring).

    Args:
        manager: the SDK's ``StreamableHTTPSessionManager``.
        per_user_max: sessions one user may hold.
    """

    def __init__(self, manager: Any, per_user_max: int) -> None:
        self.manager, self.per_user_max = manager, per_user_max

    def owned(self, subject: str) -> list[tuple[str, Any]]:
        """(session id, transport) of every open session opened with a token of ``subject``."""
        owners: dict[str, Any] = getattr(self.manager, "_session_owners", {})
        instances: dict[str, Any] = getattr(self.manager, "_server_instances", {})
        return [(sid, instances[sid]) for sid, owner in list(owners.items())
                if isinstance(owner, dict) and owner.get("subject") == subject and sid in instances]

    @staticmethod
    def _idle_since(transport: Any) -> float | None:
        """When the session's idle countdown ends (earlier = used less recently); None while busy."""
        scope = getattr(transport, "idle_scope", None)
        if scope is None or getattr(transport, "_requests_in_flight", 1) or getattr(transport, "is_terminated", False):
            return None
        deadline = float(scope.deadline)
        return None if math.isinf(deadline) else deadline

    async def admit(self, subject: str) -> bool:
        """Make room for one more session of ``subject``: True when it may open one (after closing
        their least recently used idle sessions as needed), False when all of theirs are busy."""
        owned = self.owned(subject)
        excess = len(owned) - self.per_user_max + 1
        if excess <= 0:
            return True
        idle = sorted((since, sid, transport) for sid, transport in owned
                      if (since := self._idle_since(transport)) is not None)
        if len(idle) < excess:
            return False
        for _, sid, transport in idle[:excess]:
            log.info("closing an idle session of %s: they hold %d (HTTP_SESSIONS_PER_USER_MAX)", subject, len(owned))
            await self.manager._discard_session(sid, transport)
        return True
