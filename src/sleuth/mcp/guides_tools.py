"""Seed 001: the ``search_guides`` tool (profile ``guides``) over a ``guides.json`` index.

Contract (../shared/seeds/001_*): schema ``{query (required), limit (integer 1..10)}``,
``readOnlyHint``; the answer is text: ``No guides matched "<q>".`` or ``N guide(s) matched
"<q>".`` followed by three lines per match (``n. title``, url, one-line summary). A query that is
not a string searches as ``""``; the limit is clamped, never rejected. Each call is reported to the
event hook first, outside the search's error handling, and the hook can never block the search;
any failure of the search itself answers with one sentence, :data:`GUIDES_FAILURE_TEXT`.
Beyond the seed, the shared input limits hold (:mod:`sleuth.mcp.limits`: a query of at most
``QUERY_MAX_CHARS`` characters, no NUL, no lone surrogate), each refused with a one-line error
naming the limit, and the search runs in a worker thread, never on the event loop. The ranking
is :mod:`sleuth.guides.search`; this module only adapts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any
from urllib.parse import urlsplit

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ToolAnnotations
from pydantic import Field

from sleuth.errors import ConfigError
from sleuth.guides.entry import GuideEntry, load_guides
from sleuth.guides.search import GuideIndex, format_matches
from sleuth.mcp.errors import text_result
from sleuth.mcp.events import NonBlockingHook, ToolCallEvent, ToolCallHook
from sleuth.mcp.limits import CheckedTool, run_in_worker
from sleuth.mcp.registry import ServeContext
from sleuth.mcp.sdk import add_tools

logger = logging.getLogger(__name__)

#: The whole answer when the search fails (seed 001: one sentence, nothing else).
GUIDES_FAILURE_TEXT = "The guide search could not be completed."

SEARCH_GUIDES_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {
            "type": "string",
            "description": "Words to match against guide titles, excerpts, and tags.",
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "maximum": 10,
            "description": "Maximum matches to return. Defaults to 5 and cannot exceed 10.",
        },
    },
    "required": ["query"],
}

SEARCH_GUIDES_ANNOTATIONS = ToolAnnotations(read_only_hint=True)

GUIDES_INSTRUCTIONS = """search_guides searches a build-time index of guide titles, excerpts and tags and returns
matching titles, full URLs and one-line summaries. It does not fetch the site or return articles:
open a returned URL to read one."""


def _site(entries: Sequence[GuideEntry]) -> str:
    """``"https://host "`` when every guide url shares one scheme and host, else ``""``."""
    origins = {f"{u.scheme}://{u.netloc}" for u in (urlsplit(e.url) for e in entries)}
    return f"{origins.pop()} " if len(origins) == 1 else ""


def search_guides_description(entries: Sequence[GuideEntry]) -> str:
    """The tool description, naming the site when every guide lives on one (as the seed's does)."""
    return (
        "Search guide titles, excerpts, and tags. Returns matching titles, full "
        f"{_site(entries)}URLs, and a one-line summary. Does not fetch the site and does not return the "
        "article: open the URL to read it. The limit defaults to 5 and cannot exceed 10."
    )


class GuidesTool(CheckedTool):
    """``search_guides``: arguments beyond the limits (a query over ``QUERY_MAX_CHARS``, NUL, a lone
    surrogate) get a one-line error naming the limit; what the seed tolerates (a query that is not
    a string, a limit out of range, extra arguments) it still tolerates."""

    #: Reports the call to the event hook (a refused call is a call too: the seed reports before anything).
    report_call: Callable[[], None] | None = Field(default=None, exclude=True)

    def argument_error(self, message: str) -> CallToolResult:
        if self.report_call is not None:
            self.report_call()
        return text_result(message, is_error=True)


class GuidesTools:
    """``search_guides`` over one guides index.

    Args:
        entries: the guides, in ``guides.json`` order.
        on_call: receives a :class:`ToolCallEvent` per call; wrapped in :class:`NonBlockingHook`
            unless it already is one, so it can never block or fail a search.
    """

    def __init__(self, entries: Sequence[GuideEntry], on_call: ToolCallHook | None = None) -> None:
        self.entries = list(entries)
        self.index = GuideIndex(self.entries)
        if on_call is not None and not isinstance(on_call, NonBlockingHook):
            on_call = NonBlockingHook(on_call)
        self.on_call = on_call

    def _report_call(self) -> None:
        if self.on_call is None:
            return
        try:
            self.on_call(ToolCallEvent.now("search_guides"))
        except Exception:  # a NonBlockingHook never raises; this guards replacements of it
            logger.warning("tool-call event hook failed; searching anyway", exc_info=True)

    async def search_guides(self, query: Any = None, limit: Any = None) -> CallToolResult:
        """The seed's answer text for ``query`` (non-strings search as ``""``), at most the clamped ``limit``
        matches; :data:`GUIDES_FAILURE_TEXT` (flagged as an error) when the search fails."""
        self._report_call()
        text = query if isinstance(query, str) else ""
        try:
            answer = await run_in_worker(lambda: format_matches(text, self.index.search(text, limit)))
        except Exception:
            logger.exception("search_guides failed")
            return text_result(GUIDES_FAILURE_TEXT, is_error=True)
        return text_result(answer)

    def tools(self) -> list[Tool]:
        """The ``search_guides`` tool, advertising exactly the seed's schema and annotations."""
        tool = GuidesTool.from_function(
            self.search_guides, name="search_guides", title="Search guides",
            description=search_guides_description(self.entries), annotations=SEARCH_GUIDES_ANNOTATIONS,
        )
        assert isinstance(tool, GuidesTool)  # from_function builds the class it is called on
        tool.parameters = SEARCH_GUIDES_SCHEMA
        tool.report_call = self._report_call
        return [tool]


def register_guides_tools(server: MCPServer[Any], context: ServeContext) -> None:
    """The ``guides`` profile: load ``context.guides_path`` and register ``search_guides``.

    Raises:
        ConfigError: no guides file was given, or it is missing or invalid.
    """
    if context.guides_path is None:
        raise ConfigError(
            "the guides tool profile needs a guides index: pass --guides FILE (built by `sleuth guides build`), "
            "or set guides = \"FILE\" in the index's config.toml or SLEUTH_GUIDES"
        )
    add_tools(server, GuidesTools(load_guides(context.guides_path), context.on_tool_call).tools())
