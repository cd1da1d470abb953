"""The MCP server (official ``mcp`` SDK, ``MCPServer``). stdout carries the protocol only:
logging goes to stderr and nothing in sleuth prints."""

from __future__ import annotations

import logging
import sys
from collections.abc import Sequence

from mcp.server.mcpserver import MCPServer

from sleuth import __version__
from sleuth.engine import Engine
from sleuth.mcp.memory_tools import MemoryTools
from sleuth.mcp.project_tools import ProjectTools

INSTRUCTIONS = """sleuth searches a project's local knowledge (markdown notes, docs, notebooks, code, PDFs).
project_memory_search is the main tool (exact, BM25, vector and graph retrieval with bounded summaries);
get_projects lists project ids; search_project / get_notebook are the item-level tools."""


def build_server(engine: Engine, allowed_projects: Sequence[str] | None = None) -> MCPServer:
    """An MCPServer exposing ``search_project``, ``get_notebook`` and ``get_projects`` over ``engine``."""
    return MCPServer(
        name="sleuth",
        version=__version__,
        instructions=INSTRUCTIONS,
        tools=[*MemoryTools(engine, allowed_projects).tools(), *ProjectTools(engine, allowed_projects).tools()],
        log_level="WARNING",
    )


def run_stdio(engine: Engine, allowed_projects: Sequence[str] | None = None) -> None:
    """Serve over stdio until the client closes the stream."""
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    server = build_server(engine, allowed_projects)
    try:
        server.run("stdio")
    finally:
        engine.close()
