"""The MCP server (official ``mcp`` SDK, ``MCPServer``). stdout carries the protocol only:
logging goes to stderr and nothing in sleuth prints.

Which tools an agent sees is chosen by *tool profiles* (``sleuth serve --tools a,b``, config key
``tools``, env ``SLEUTH_TOOLS``). :data:`PROFILES` maps each name to the function registering that
family's tools; profiles without ``needs_index`` run without an index.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import anyio
from mcp.server.mcpserver import MCPServer

from sleuth import __version__
from sleuth.engine import Engine
from sleuth.errors import ConfigError, shown_names, shown_value
from sleuth.mcp.events import JsonLinesSink, NonBlockingHook
from sleuth.mcp.guides_tools import GUIDES_INSTRUCTIONS, register_guides_tools
from sleuth.mcp.limits import ARGUMENT_CAPS, arguments_middleware
from sleuth.mcp.memory_tools import MemoryTools
from sleuth.mcp.presence import IndexPresence
from sleuth.mcp.project_tools import ProjectTools
from sleuth.mcp.registry import ServeContext
from sleuth.mcp.sdk import add_tools, serve_streams, tool_names
from sleuth.mcp.text_tools import TEXT_INSTRUCTIONS, register_text_tools
from sleuth.mcp.wire import stdio_transport
from sleuth.types import INBOX_PROJECT_ID

#: Said once when a profile searching the index is served, before the profiles' own sentences.
INDEX_INSTRUCTIONS = """sleuth searches a project's local knowledge: markdown notes, docs, notebooks, code, PDFs,
plans and decision records. Nothing leaves this machine."""

MEMORY_INSTRUCTIONS = """project_memory_search finds stored knowledge (project_id optional when there is one
project); project_memory_read reads a result's whole body; project_memory_record records a decision,
plan, result or note; query_status and query_cancel follow or stop a long search by its request_id."""

INSTRUCTIONS = """get_projects lists the projects; search_project finds items in one; get_notebook reads an
item page by page."""


#: Longest wait, at the end of a session, for the warm-up thread (the model's load) to finish.
WARM_UP_JOIN_S = 120.0


def register_memory_tools(server: MCPServer[Any], context: ServeContext) -> None:
    """The ``memory`` profile (seed 004): ``project_memory_search`` and its companions."""
    if context.engine is None:
        raise ConfigError("the memory tool profile needs an index")
    tools = MemoryTools(context.engine, context.allowed_projects, registry=context.registry,
                        per_caller=context.per_caller)
    warming = tools.warm_up()
    context.cleanups.append(tools.searcher.close)
    # Run first (newest first): a process ending while onnxruntime builds its session in the warm-up
    # thread (a client that disconnects at once) died of SIGABRT in onnxruntime's thread pool.
    context.cleanups.append(lambda: warming.join(WARM_UP_JOIN_S))
    add_tools(server, tools.tools())


def register_project_tools(server: MCPServer[Any], context: ServeContext) -> None:
    """The ``project`` profile (seed 000): ``search_project``, ``get_notebook``, ``get_projects``."""
    if context.engine is None:
        raise ConfigError("the project tool profile needs an index")
    add_tools(server, ProjectTools(context.engine, context.allowed_projects, per_caller=context.per_caller).tools())


@dataclass(frozen=True)
class Profile:
    """A tool family: how to register it, whether it needs the index, what the instructions say."""

    register: Callable[[MCPServer[Any], ServeContext], None]
    needs_index: bool
    instructions: str


#: Tool profiles by name, in the order their tools and instructions are listed.
PROFILES: dict[str, Profile] = {
    "memory": Profile(register_memory_tools, needs_index=True, instructions=MEMORY_INSTRUCTIONS),
    "project": Profile(register_project_tools, needs_index=True, instructions=INSTRUCTIONS),
    "guides": Profile(register_guides_tools, needs_index=False, instructions=GUIDES_INSTRUCTIONS),
    "text": Profile(register_text_tools, needs_index=False, instructions=TEXT_INSTRUCTIONS),
}
#: Profiles known but not part of this build, with the reason given to whoever asks for them.
UNAVAILABLE_PROFILES: dict[str, str] = {}
#: Profiles served when neither --tools, config.toml nor SLEUTH_TOOLS choose.
DEFAULT_PROFILES: tuple[str, ...] = ("memory", "project")


def parse_profiles(names: str | Sequence[str] | None) -> tuple[str, ...]:
    """Validated profile names in :data:`PROFILES` order; ``None`` gives :data:`DEFAULT_PROFILES`.

    ``names``: a comma-separated string or a sequence of names (blanks and repeats ignored).
    Raises:
        ConfigError: no name, an unknown name, or one not available in this build (valid names listed).
    """
    if names is None:
        return DEFAULT_PROFILES
    raw = names.split(",") if isinstance(names, str) else list(names)
    wanted = list(dict.fromkeys(str(n).strip().lower() for n in raw if str(n).strip()))
    valid = ", ".join(PROFILES)
    if not wanted:
        raise ConfigError(f"no tool profile given; choose from {valid}")
    for name in wanted:
        if name in UNAVAILABLE_PROFILES and name not in PROFILES:
            raise ConfigError(f"tool profile {shown_value(name)} is not available in this build "
                              f"({UNAVAILABLE_PROFILES[name]}); choose from {valid}")
    unknown = [n for n in wanted if n not in PROFILES]
    if unknown:
        raise ConfigError(f"unknown tool profile(s) {shown_names(unknown)}; choose from {valid}")
    return tuple(n for n in PROFILES if n in wanted)


def needs_index(profiles: Sequence[str]) -> bool:
    """True when one of ``profiles`` searches the index (so the server must open one)."""
    return any(PROFILES[p].needs_index for p in profiles)


def check_allowed_projects(profiles: Sequence[str], engine: Engine | None,
                           allowed_projects: Sequence[str] | None) -> None:
    """Check ``--project`` against the index (``engine``, open when a profile needs the index).

    Raises:
        ConfigError: an unknown project, or ``--project`` without any index profile.
    """
    if engine is not None:
        unknown = set(allowed_projects or ()) - {*engine.project_ids(), INBOX_PROJECT_ID}  # the Inbox always is
        if unknown:
            raise ConfigError(f"unknown project(s) for --project: {', '.join(sorted(unknown))}")
    elif allowed_projects:
        index_profiles = ", ".join(name for name, p in PROFILES.items() if p.needs_index)
        raise ConfigError(f"--project limits the index tool profiles ({index_profiles}); none is selected")


def build_server(context: ServeContext, profiles: Sequence[str] = DEFAULT_PROFILES) -> MCPServer[Any]:
    """An MCPServer with the tools of ``profiles`` (validated names), built from ``context``.

    Every tool's calls pass the shared argument checks (:mod:`sleuth.mcp.limits`); a call whose
    ``arguments`` is not an object gets the tool's own error too.

    Raises:
        ConfigError: a profile lacks what it needs (the index, the guides file) or its data is invalid.
    """
    chosen = [PROFILES[p] for p in profiles]
    intro = [INDEX_INSTRUCTIONS] if any(p.needs_index for p in chosen) else []
    server: MCPServer[Any] = MCPServer(
        name="sleuth",
        version=__version__,
        instructions="\n\n".join([*intro, *(p.instructions for p in chosen)]),
        log_level="WARNING",
    )
    index_tools: set[str] = set()
    for profile in chosen:
        before = set(tool_names(server))
        profile.register(server, context)
        if profile.needs_index:
            index_tools |= set(tool_names(server)) - before
    unbounded = sorted(name for name in tool_names(server) if name not in ARGUMENT_CAPS)
    if unbounded:  # a tool registered without its input limits (a bug, caught before serving)
        raise ConfigError(f"tool(s) without input limits in sleuth.mcp.limits.ARGUMENT_CAPS: {', '.join(unbounded)}")
    server.middleware.append(arguments_middleware(server))
    if context.engine is not None and index_tools:
        server.middleware.append(IndexPresence(context.engine, frozenset(index_tools)))
    return server


async def serve_stdio(server: MCPServer[Any]) -> None:
    """Serve ``server`` over this process's stdin and stdout (:func:`sleuth.mcp.wire.stdio_transport`)."""
    async with stdio_transport() as (read_stream, write_stream):
        await serve_streams(server, read_stream, write_stream)


def run_stdio(
    profiles: Sequence[str] = DEFAULT_PROFILES,
    index: str | Path | None = None,
    allowed_projects: Sequence[str] | None = None,
    guides_path: Path | None = None,
    events_path: Path | None = None,
) -> None:
    """Serve ``profiles`` over stdio until the client closes the stream.

    The index is opened only when a profile needs it. Everything is loaded and checked before the
    first message is read, so a bad setting ends the command with a readable error.

    Args:
        profiles: validated profile names (:func:`parse_profiles`).
        index: the index folder (None: ``$SLEUTH_INDEX`` or the nearest ``.sleuth/``).
        allowed_projects: project ids a client may access (None: all); needs an index profile.
        guides_path: ``guides.json`` for the ``guides`` profile.
        events_path: JSON-lines file receiving one event per ``search_guides`` call.
    Raises:
        ConfigError, IndexNotFound: before serving, with a message for people.
    """
    logging.basicConfig(stream=sys.stderr, level=logging.WARNING)
    context = ServeContext(allowed_projects=allowed_projects, guides_path=guides_path)
    hook = NonBlockingHook(JsonLinesSink(events_path)) if events_path is not None else None
    context.on_tool_call = hook
    try:
        if needs_index(profiles):
            context.engine = Engine.open(index, serving=True)
        check_allowed_projects(profiles, context.engine, allowed_projects)
        anyio.run(serve_stdio, build_server(context, profiles))
    finally:
        context.close()
        if context.engine is not None:
            context.engine.close()
        if hook is not None:
            hook.close()
