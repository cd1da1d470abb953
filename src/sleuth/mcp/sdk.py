"""The one place sleuth reaches past the MCP SDK's public API (``mcp`` 2.x, checked by
``tests/mcp/test_sdk.py`` against the installed version).

Three things the public API of ``mcp`` 2.3 does not offer:

- registering a ready-made tool whose input schema is a seed's exact schema (``MCPServer.add_tool``
  builds the schema from the function's signature);
- giving such a tool an output schema of our own;
- running a server over streams the caller already has (the broker's Unix-socket sessions): the SDK
  does that only on its low-level server.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool

from sleuth.errors import ConfigError

#: The ``mcp`` major versions this shim was written and tested for.
SUPPORTED_MCP_MAJOR = 2


def add_tools(server: MCPServer[Any], tools: Iterable[Tool]) -> None:
    """Register ready-made tools (their ``parameters`` are the advertised input schema) on ``server``.

    Raises:
        ConfigError: a tool of that name is already registered (two profiles clash).
    """
    manager = server._tool_manager  # see the module docstring
    for tool in tools:
        if manager.get_tool(tool.name) is not None:
            raise ConfigError(f"two tool profiles both define the tool {tool.name}")
        manager._tools[tool.name] = tool


def tool_names(server: MCPServer[Any]) -> list[str]:
    """The names of the tools registered on ``server``, in registration order."""
    return [t.name for t in server._tool_manager.list_tools()]  # see the module docstring


def set_output_schema(tool: Tool, schema: dict[str, Any]) -> None:
    """Advertise ``schema`` as ``tool``'s output schema (the tool returns CallToolResult itself)."""
    tool.fn_metadata.output_schema = schema


async def serve_streams(server: MCPServer[Any], read_stream: Any, write_stream: Any) -> None:
    """Run ``server``'s MCP session over the given streams until the client closes them."""
    lowlevel = server._lowlevel_server  # see the module docstring
    await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())
