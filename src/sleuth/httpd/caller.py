"""Who each MCP call of ``sleuth serve --http`` is served for, and what follows from it.

:class:`CallerMiddleware` (an MCP server middleware) runs around every ``tools/call``: it takes the
user from *that message's* HTTP request (``ctx.request.user``, which the bearer middleware set
from the verified token -- never from an argument, and not from the session's first request,
python-sdk#2208), reads the user's projects from the users file as it is now, and serves the call
with :data:`sleuth.mcp.access.CURRENT_CALLER` set, so every tool's :class:`~sleuth.mcp.access.Access`
sees only those projects. It also passes the call through the read/write gate (as the broker does)
and queues one audit line.

:class:`CallerRegistry` keeps one request table per user, so ``query_status`` / ``query_cancel``
see only the caller's own requests, and one user's ``request_id`` never collides with another's.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import Any

import anyio
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from pydantic import BaseModel

from sleuth.auth.users import SCOPE_WRITE, UserStore
from sleuth.broker.gate import CONTROL, READ, WRITE, ReadWriteGate
from sleuth.errors import ConfigError, SleuthError
from sleuth.httpd.audit import AuditLog
from sleuth.httpd.guards import write_scope_message
from sleuth.locks import WRITE_LOCK_TIMEOUT_S
from sleuth.mcp.access import CURRENT_CALLER, Caller, caller_key
from sleuth.mcp.errors import structured_error, text_result
from sleuth.mcp.limits import CALLER_CALLS, new_caller_limiter
from sleuth.pipeline.requests import RequestRegistry, RequestState


class CallerRegistry(RequestRegistry):
    """A :class:`RequestRegistry` per caller (:func:`sleuth.mcp.access.caller_key`)."""

    def __init__(self) -> None:
        super().__init__()
        self._tables: dict[str | None, RequestRegistry] = {}
        self._tables_lock = threading.Lock()

    def table(self) -> RequestRegistry:
        """The current caller's table."""
        key = caller_key()
        with self._tables_lock:
            table = self._tables.get(key)
            if table is None:
                table = self._tables[key] = RequestRegistry()
            return table

    def start(self, request_id: str | None, summary: str, deadline_ms: int) -> RequestState:
        return self.table().start(request_id, summary, deadline_ms)

    def finish(self, state: RequestState, outcome: str, error: str | None = None) -> None:
        self.table().finish(state, outcome, error)

    def get(self, request_id: str) -> RequestState:
        return self.table().get(request_id)

    def cancel(self, request_id: str, reason: str) -> tuple[RequestState, bool]:
        return self.table().cancel(request_id, reason)

    def running(self) -> list[str]:
        with self._tables_lock:
            tables = list(self._tables.values())
        return [rid for table in tables for rid in table.running()]


def _dump(result: HandlerResult) -> dict[str, Any]:
    if isinstance(result, BaseModel):
        return result.model_dump(by_alias=True, exclude_none=True)
    return result if isinstance(result, dict) else {}


def outcome(result: HandlerResult) -> tuple[int | None, str | None]:
    """(result count, error code or None) of a tool call's result, for the audit line."""
    data = _dump(result)
    structured = data.get("structuredContent")
    structured = structured if isinstance(structured, dict) else {}
    if data.get("isError"):
        error = structured.get("error")
        code = error.get("code") if isinstance(error, dict) else None
        return None, str(code or "TOOL_ERROR")
    count = structured.get("result_count")
    if isinstance(count, int) and not isinstance(count, bool):
        return count, None
    groups = structured.get("groups")
    if isinstance(groups, list):
        return sum(int(g.get("result_count", 0) or 0) for g in groups if isinstance(g, dict)), None
    return None, None


def audited_project(arguments: Mapping[str, Any]) -> str | None:
    """The project(s) a call names: ``project_id`` (with ``include_project_ids``), ``*`` for
    ``all_projects``; None when it names none."""
    if arguments.get("all_projects") is True:
        return "*"
    named = [arguments.get("project_id"), *(arguments.get("include_project_ids") or [])]
    shown = [p for p in named if isinstance(p, str) and p]
    return ",".join(shown)[:400] or None


def audited_query(arguments: Mapping[str, Any]) -> str | None:
    """The query text(s) of a call (``query``, else the ``queries``' joined by `` | ``)."""
    if isinstance(arguments.get("query"), str):
        return arguments["query"]
    queries = arguments.get("queries")
    if isinstance(queries, list):
        return " | ".join(q["query"] for q in queries if isinstance(q, dict) and isinstance(q.get("query"), str))
    return None


class CallerMiddleware:
    """MCP server middleware for HTTP: caller, gate and audit around each ``tools/call``.

    Args:
        users: the users file (read again when it changes).
        kinds: tool name → ``read|write|control`` (:func:`sleuth.broker.gate.gate_kinds`).
        gate: the read/write gate shared by every session of the server.
        audit: where audit lines go (None: none).
        write_lock: the index's write lock file (a write waits for other processes' writers).
    """

    def __init__(self, users: UserStore, kinds: Mapping[str, str], gate: ReadWriteGate,
                 audit: AuditLog | None, write_lock: Any) -> None:
        self.users, self.kinds, self.gate, self.audit = users, dict(kinds), gate, audit
        self.write_lock = write_lock
        self._calls: dict[str, anyio.CapacityLimiter] = {}

    def _calls_of(self, user: str) -> anyio.CapacityLimiter:
        """``user``'s limiter of tool calls working at once (:data:`sleuth.mcp.limits.TOOL_CALLS_PER_CALLER`),
        shared by all their sessions (one per user name: the users file bounds how many there are)."""
        limiter = self._calls.get(user)
        if limiter is None:
            limiter = self._calls[user] = new_caller_limiter()
        return limiter

    def caller(self, ctx: ServerRequestContext[Any, Any]) -> Caller | None:
        """The verified caller of this message, with their projects as the users file says now."""
        request = ctx.request
        scope = getattr(request, "scope", None)
        user = scope.get("user") if isinstance(scope, dict) else None
        if not isinstance(user, AuthenticatedUser) or not user.access_token.subject:
            return None
        try:
            record = self.users.get(user.access_token.subject)
        except (ConfigError, OSError):
            return None
        if record is None or record.disabled:
            return None
        return Caller(record.name, frozenset(record.projects), frozenset(user.access_token.scopes))

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method == "tools/list":
            return self._listed(ctx, await call_next(ctx))
        if ctx.method != "tools/call":
            return await call_next(ctx)
        params = ctx.params or {}
        name = str(params.get("name"))
        arguments = params.get("arguments") if isinstance(params.get("arguments"), dict) else {}
        kind = self.kinds.get(name, READ)
        caller = self.caller(ctx)
        if caller is None:  # the HTTP layer refused such requests already: never served unverified
            return text_result("not authenticated: send a valid bearer token", is_error=True)
        if kind == WRITE and SCOPE_WRITE not in caller.scopes:
            return text_result(write_scope_message(name), is_error=True)  # the HTTP layer answers 403 first
        started = time.perf_counter()
        token = CURRENT_CALLER.set(caller)
        calls = CALLER_CALLS.set(self._calls_of(caller.user))
        result: HandlerResult = None
        try:
            result = await self._gated(kind, ctx, call_next)
            return result
        finally:
            CALLER_CALLS.reset(calls)
            CURRENT_CALLER.reset(token)
            if self.audit is not None:
                count, error = outcome(result) if result is not None else (None, "CALL_FAILED")
                args = arguments if isinstance(arguments, dict) else {}
                self.audit.record(caller.user, name, audited_project(args), count,
                                  (time.perf_counter() - started) * 1000, error, audited_query(args))

    def _listed(self, ctx: ServerRequestContext[Any, Any], result: HandlerResult) -> HandlerResult:
        """``tools/list``'s answer without the write tools for a caller whose token lacks
        :data:`SCOPE_WRITE` (calling one would get 403 ``insufficient_scope``, which not every
        client shows the model)."""
        caller = self.caller(ctx)
        if caller is None or SCOPE_WRITE in caller.scopes:
            return result

        def writes(tool: Any) -> bool:
            name = tool.get("name") if isinstance(tool, dict) else getattr(tool, "name", None)
            return self.kinds.get(str(name), READ) == WRITE

        if isinstance(result, dict) and isinstance(result.get("tools"), list):
            return {**result, "tools": [t for t in result["tools"] if not writes(t)]}
        tools = getattr(result, "tools", None)
        if isinstance(result, BaseModel) and isinstance(tools, list):
            return result.model_copy(update={"tools": [t for t in tools if not writes(t)]})
        return result

    async def _gated(self, kind: str, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if kind == CONTROL:
            return await call_next(ctx)
        if kind == READ:
            async with self.gate.read():
                return await call_next(ctx)
        try:
            async with self.gate.write(before=self._wait_for_other_writers):
                return await call_next(ctx)
        except SleuthError as exc:  # the write could not start (busy, read-only, full, gone)
            return structured_error(exc)

    async def _wait_for_other_writers(self) -> None:
        from sleuth.broker.server import wait_for_other_writers

        await anyio.to_thread.run_sync(wait_for_other_writers, self.write_lock, WRITE_LOCK_TIMEOUT_S)
