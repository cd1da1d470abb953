"""Seed 000, the wott-style tools: ``search_project``, ``get_notebook`` and ``get_projects``.

Contracts (../shared/seeds/000_*): input schemas, read-only annotations, the response envelope
``{success, result_count, items, timestamp}``, result fields ``markdown_item_id``, ``block_ids``,
``score``, ``rank``, ``sources``, ``item``; errors "Query is required" and project-access errors;
no results is not an error. The engine does the ranking; this module only adapts.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import ToolAnnotations

from sleuth.engine import Engine
from sleuth.errors import DocumentNotFound, SleuthError, internal_error, not_found
from sleuth.mcp.access import Access
from sleuth.mcp.envelope import bounded_int, envelope, required_text
from sleuth.mcp.limits import SEARCH_PROJECT_LIMIT_MAX, CheckedTool, run_in_worker
from sleuth.memory.bodies import BODY_PAGE_DEFAULT_CHARS, BODY_PAGE_MAX_CHARS
from sleuth.remote import names_server_path
from sleuth.types import Hit, SearchRequest

log = logging.getLogger(__name__)

SEARCH_LIMIT_DEFAULT = 20
SEARCH_LIMIT_MAX = SEARCH_PROJECT_LIMIT_MAX
#: Largest ``offset`` of get_notebook, in characters.
NOTEBOOK_OFFSET_MAX_CHARS = 1_000_000_000
#: Block ids a search_project item lists at most (its best ones); ``block_count`` counts them all.
BLOCK_IDS_MAX = 5

READ_ONLY = ToolAnnotations(read_only_hint=True, open_world_hint=False, destructive_hint=False)

SEARCH_PROJECT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project_id": {"type": "string", "minLength": 1, "description": "ID of the project to search."},
        "query": {
            "type": "string",
            "minLength": 1,
            "description": "Search query describing the information to find.",
        },
        "limit": {
            "type": "number",
            "integer": True,
            "minimum": 1,
            "maximum": 50,
            "description": "Maximum number of results to return. Defaults to 20.",
        },
    },
    "required": ["project_id", "query"],
    "additionalProperties": False,
}

GET_NOTEBOOK_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project_id": {"type": "string", "minLength": 1, "description": "ID of the project holding the item."},
        "item_id": {
            "type": "string",
            "minLength": 1,
            "description": "The item's ID: a search result's markdown_item_id.",
        },
        "offset": {"type": "integer", "minimum": 0,
                   "description": "First character of the text to return. Default 0; pass next_offset to continue."},
        "max_chars": {"type": "integer", "minimum": 1, "maximum": BODY_PAGE_MAX_CHARS,
                      "description": f"Characters of text per page (default {BODY_PAGE_DEFAULT_CHARS})."},
    },
    "required": ["project_id", "item_id"],
    "additionalProperties": False,
}

GET_PROJECTS_SCHEMA: dict[str, Any] = {"type": "object", "properties": {}, "additionalProperties": False}

SEARCH_PROJECT_DESCRIPTION = """Search a project's notes, docs, notebooks, code and PDFs; best items first.

Each item: markdown_item_id (pass it to get_notebook), rank (1 = best), score (for ordering only),
sources (the retrieval methods that found it, not file types), block_ids (its best matching
blocks, at most 5; block_count counts them all) and item (title, path, kind, location such as
"page 3" or "cell 4", snippet with highlight offsets; semantic_only: found by meaning alone, not by
the keyword lanes). "Quoted words" must appear verbatim. Take project_id from get_projects; never guess
it. No results is not an error."""

GET_NOTEBOOK_DESCRIPTION = """Read one item of a project (a search result's markdown_item_id): metadata, front
matter, and its text one page at a time (offset / next_offset, in characters), with the blocks on
that page."""

GET_PROJECTS_DESCRIPTION = """List the projects you may search, with their IDs, roots and counts. Call it first when the
project is not known."""


def _overlaps(chars: object, start: int, end: int) -> bool:
    """Whether a block's ``[start, end)`` character span lies (partly) on the page ``[start, end)``."""
    b_start, b_end = chars  # type: ignore[misc]
    return bool(b_start < end and b_end > start)


class ContractTool(CheckedTool):
    """A tool checked by :func:`sleuth.mcp.limits.check_arguments` (``additionalProperties: false``
    included) whose argument errors are plain tool errors."""


class ProjectTools:
    """The three tools bound to one engine and the projects a client may access.

    Args:
        engine: the open index.
        allowed_projects: project ids the client may access; None = every project of the index.
        per_caller: the projects come from the verified caller of each call (HTTP), within
            ``allowed_projects``.
    """

    def __init__(self, engine: Engine, allowed_projects: Sequence[str] | None = None,
                 per_caller: bool = False) -> None:
        self.engine = engine
        self.access = Access(engine, allowed_projects, per_caller=per_caller)

    def require_project_access(self, project_id: Any) -> str:
        """The checked project id; ToolError when it is missing, or unknown and not allowed alike."""
        pid = required_text(project_id, "project_id", "project_id is required")
        try:
            return self.access.project(pid)
        except SleuthError as exc:
            raise self.tool_error(exc) from None

    def tool_error(self, exc: SleuthError) -> ToolError:
        """``exc`` as a tool error; a remote caller's (``per_caller``) message without where Milvus,
        the PostgreSQL catalog or the index is (:func:`sleuth.scaleout.remote_message`: "cannot
        reach the catalog at host:port" becomes "cannot reach the catalog at <catalog>")."""
        return ToolError(self.access.error_message(exc))

    async def _run(self, work: Callable[[], dict[str, Any]]) -> dict[str, Any]:
        """``work()`` in a worker thread; an error that is not a tool error becomes one
        (:meth:`tool_error`), never the SDK's "Error executing tool" with the raw exception's words."""
        try:
            return await run_in_worker(work)
        except ToolError:
            raise
        except SleuthError as exc:
            raise self.tool_error(exc) from None
        except Exception as exc:  # a driver's error (the catalog's, Milvus'): readable, located only locally
            log.exception("project tool failed")
            raise self.tool_error(internal_error(exc)) from None

    @staticmethod
    def _item(h: Hit) -> dict[str, Any]:
        return {
            "item_id": h.doc_id,
            "project_id": h.project,
            "title": h.title,
            "path": h.path,
            "root": h.root_label,
            "kind": h.kind,
            "format": h.format,
            "tags": h.tags,
            "heading_path": h.heading_path,
            "location": h.location,
            "lines": list(h.lines),
            "snippet": h.snippet,
            "highlights": [list(span) for span in h.highlights],
            "semantic_only": h.semantic_only,
        }

    async def search_project(self, project_id: Any = None, query: Any = None, limit: Any = None) -> dict[str, Any]:
        q = required_text(query, "query", "Query is required")
        n = bounded_int(limit, "limit", SEARCH_LIMIT_DEFAULT, 1, SEARCH_LIMIT_MAX)

        def work() -> dict[str, Any]:
            pid = self.require_project_access(project_id)
            try:
                resp = self.engine.search(SearchRequest(query=q, projects=[pid], limit=n))
            except SleuthError as exc:
                raise self.tool_error(exc) from None
            if not resp.terms and not resp.phrases:
                raise ToolError(f"Query has no searchable terms: {q!r} holds only stop words, punctuation or blanks")
            items = [
                {
                    "markdown_item_id": h.doc_id,
                    "block_ids": h.block_ids[:BLOCK_IDS_MAX],
                    "block_count": len(h.block_ids),
                    "score": h.score,
                    "rank": h.rank,
                    "sources": h.sources,
                    "item": self._item(h),
                }
                for h in resp.hits
            ]
            # The seed's envelope has no notice: a query none of whose words occurs comes back with its
            # weak meaning matches dropped and its strong ones marked (item.semantic_only).
            return envelope(result_count=len(items), items=items)

        return await self._run(work)

    async def get_notebook(self, project_id: Any = None, item_id: Any = None, offset: Any = None,
                           max_chars: Any = None) -> dict[str, Any]:
        start = bounded_int(offset, "offset", 0, 0, NOTEBOOK_OFFSET_MAX_CHARS)
        size = bounded_int(max_chars, "max_chars", BODY_PAGE_DEFAULT_CHARS, 1, BODY_PAGE_MAX_CHARS)

        def work() -> dict[str, Any]:
            pid = self.require_project_access(project_id)
            iid = required_text(item_id, "item_id", "item_id is required")
            if self.access.per_caller and names_server_path(iid):
                raise ToolError(not_found("item", iid))  # as an id naming nothing (sleuth.remote)
            try:
                doc = self.engine.get(iid, projects=[pid])
            except DocumentNotFound:
                raise ToolError(not_found("item", iid)) from None
            except SleuthError as exc:
                raise self.tool_error(exc) from None
            length = len(doc.text)
            if start > length:
                raise ToolError(f"offset {start} is past the end of the text ({length} characters)")
            end = min(length, start + size)
            item = doc.model_dump(exclude={"root", "project", "text", "blocks"})
            item["item_id"] = item.pop("doc_id")
            item["project_id"] = pid
            item["root"] = item.pop("root_label")
            item.update(text=doc.text[start:end], offset=start, end=end, next_offset=end if end < length else None,
                        source_length=length,
                        blocks=[b for b in doc.blocks if _overlaps(b["chars"], start, end)])
            return envelope(item=item)

        return await self._run(work)

    async def get_projects(self) -> dict[str, Any]:
        def work() -> dict[str, Any]:
            try:
                projects = self.engine.projects()
            except SleuthError as exc:
                raise self.tool_error(exc) from None
            items = self.access.shown([p.model_dump() for p in projects if self.access.visible(p.project_id)])
            return envelope(result_count=len(items), items=items)

        return await self._run(work)

    def tools(self) -> list[Tool]:
        """The MCP tools, each advertising exactly its contract's input schema."""
        specs = [
            (self.search_project, "search_project", SEARCH_PROJECT_DESCRIPTION, SEARCH_PROJECT_SCHEMA),
            (self.get_notebook, "get_notebook", GET_NOTEBOOK_DESCRIPTION, GET_NOTEBOOK_SCHEMA),
            (self.get_projects, "get_projects", GET_PROJECTS_DESCRIPTION, GET_PROJECTS_SCHEMA),
        ]
        tools = []
        for fn, name, description, schema in specs:
            tool = ContractTool.from_function(fn, name=name, description=description, annotations=READ_ONLY)
            tool.parameters = schema
            tools.append(tool)
        return tools
