"""A real MCP client session over stdio against `sleuth serve ARGS` (the environment is passed on,
so the server runs the same sleuth as the tests)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

#: Variables that would choose an index or profiles behind a test's back.
_CHOOSERS = ("SLEUTH_INDEX", "SLEUTH_TOOLS", "SLEUTH_GUIDES")


def serve_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """This process's environment without sleuth's choosers, plus ``extra``."""
    env = {k: v for k, v in os.environ.items() if k not in _CHOOSERS}
    return {**env, **(extra or {})}


def session(args: list[str], calls: list[tuple[str, dict[str, Any]]], cwd: Path | None = None,
            env: dict[str, str] | None = None) -> dict[str, Any]:
    """Start `sleuth serve *args`, initialise, list tools, make ``calls`` in order.

    Returns ``{"instructions", "tools" (by name), "results" (CallToolResult per call)}``.
    """

    async def main() -> dict[str, Any]:
        params = StdioServerParameters(command=sys.executable, args=["-m", "sleuth.cli", "serve", *args],
                                       env=serve_env(env), cwd=str(cwd) if cwd else None)
        async with stdio_client(params) as (read, write), ClientSession(read, write) as client:
            init = await client.initialize()
            tools = {t.name: t for t in (await client.list_tools()).tools}
            results = [await client.call_tool(name, arguments) for name, arguments in calls]
            return {"instructions": init.instructions, "tools": tools, "results": results}

    return anyio.run(main)


def text_of(result: Any) -> str:
    """The single text block of a tool result."""
    (block,) = result.content
    return block.text


def envelope_of(result: Any) -> dict[str, Any]:
    """A seed-003 envelope: the JSON text, checked to equal the structured content."""
    payload = json.loads(text_of(result))
    assert payload == result.structured_content
    assert bool(result.is_error) == (payload["status"] == "error")
    return payload
