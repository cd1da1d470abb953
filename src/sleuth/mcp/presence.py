"""Index tools answer ``INDEX_GONE`` once their index folder was deleted or moved under the server."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import CallToolResult

from sleuth.errors import index_gone
from sleuth.mcp.errors import structured_error

if TYPE_CHECKING:
    from sleuth.engine import Engine


class IndexPresence:
    """Middleware: a call of an index tool whose index folder was deleted or moved (or made anew)
    since the server opened it answers with a tool error saying so (``INDEX_GONE``), never with
    what the open files still hold or an OS error. Checked before the call (one ``stat``) and,
    when the call failed, after it (the folder may vanish during a call)."""

    def __init__(self, engine: Engine, tools: frozenset[str]) -> None:
        self.engine, self.tools = engine, tools

    def gone_result(self) -> CallToolResult:
        exc = index_gone(self.engine.index_dir, "while the server was running",
                         "run `sleuth index` and restart the session")
        return structured_error(exc)

    async def __call__(self, ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> HandlerResult:
        if ctx.method != "tools/call" or (ctx.params or {}).get("name") not in self.tools:
            return await call_next(ctx)
        if self.engine.gone():
            return self.gone_result()
        result = await call_next(ctx)
        failed = result.is_error if isinstance(result, CallToolResult) else \
            isinstance(result, dict) and bool(result.get("isError"))
        return self.gone_result() if failed and self.engine.gone() else result
