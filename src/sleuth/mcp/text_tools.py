"""Seed 003: ``search_documents``, ``search_index_query`` and ``search_fuzzy`` (profile ``text``).

Stateless tools over the texts passed in each call; nothing is stored and no index is needed.
Contract (../shared/seeds/003_*): success is ``{"status": "ok", "query": <the query as given>,
...}``; any failure, bad arguments included, is ``{"status": "error", "error": "<message>"}``
(sent as the result's JSON text and structured content, with ``isError`` set). The work is
:mod:`sleuth.textsearch`; this module only adapts.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, ToolAnnotations

from sleuth.errors import SleuthError
from sleuth.mcp.errors import envelope_error, envelope_result
from sleuth.mcp.limits import CheckedTool, run_in_worker
from sleuth.mcp.registry import ServeContext
from sleuth.mcp.sdk import add_tools
from sleuth.text.query import QUERY_MAX_CHARS
from sleuth.textsearch import (
    CANDIDATES_MAX_COUNT,
    CANDIDATES_MAX_TOTAL_CHARS,
    DOCUMENTS_MAX_COUNT,
    DOCUMENTS_MAX_TOTAL_CHARS,
    FUZZY_THRESHOLD_DEFAULT,
    TOP_K_MAX,
    check_query,
    check_texts,
    check_threshold,
    check_top_k,
    fuzzy_match,
    rank_texts,
)

logger = logging.getLogger(__name__)

#: ``top_k`` of ``search_documents`` when none is given.
SEARCH_DOCUMENTS_TOP_K_DEFAULT = 5
#: ``top_k`` of ``search_index_query`` when none is given.
SEARCH_INDEX_QUERY_TOP_K_DEFAULT = 10
#: The error text of a failure that is not the caller's (a bug); details go to the server log.
INTERNAL_ERROR_TEXT = "the search could not be completed because of an internal error"

TEXT_TOOLS_ANNOTATIONS = ToolAnnotations(
    read_only_hint=True, idempotent_hint=True, destructive_hint=False, open_world_hint=False
)

TEXT_INSTRUCTIONS = """search_documents, search_index_query and search_fuzzy search only the strings passed in each
call (TF-IDF ranking; fuzzy: normalised Levenshtein similarity) and keep nothing between calls."""

_QUERY = {"type": "string", "minLength": 1, "maxLength": QUERY_MAX_CHARS}


def _documents_schema(description: str) -> dict[str, Any]:
    return {"type": "array", "items": {"type": "string"}, "maxItems": DOCUMENTS_MAX_COUNT,
            "description": f"{description} (at most {DOCUMENTS_MAX_COUNT} strings, "
                           f"{DOCUMENTS_MAX_TOTAL_CHARS} characters in all)"}


def _top_k_schema(default: int, description: str) -> dict[str, Any]:
    return {"type": "integer", "minimum": 1, "maximum": TOP_K_MAX, "default": default,
            "description": f"{description} (default: {default})"}


SEARCH_DOCUMENTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {**_QUERY, "description": "Search query string"},
        "documents": _documents_schema("List of plain-text strings to search"),
        "top_k": _top_k_schema(SEARCH_DOCUMENTS_TOP_K_DEFAULT, "Maximum number of results to return"),
    },
    "required": ["query", "documents"],
    "additionalProperties": False,
}

SEARCH_INDEX_QUERY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {**_QUERY, "description": "Search query string"},
        "documents": _documents_schema("List of plain-text strings to index"),
        "top_k": _top_k_schema(SEARCH_INDEX_QUERY_TOP_K_DEFAULT, "Maximum results to return"),
    },
    "required": ["query", "documents"],
    "additionalProperties": False,
}

SEARCH_FUZZY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {**_QUERY, "description": "String to match against"},
        "candidates": {
            "type": "array", "items": {"type": "string"}, "maxItems": CANDIDATES_MAX_COUNT,
            "description": f"List of candidate strings (at most {CANDIDATES_MAX_COUNT}, "
                           f"{CANDIDATES_MAX_TOTAL_CHARS} characters in all)",
        },
        "threshold": {
            "type": "number", "minimum": 0, "maximum": 1, "default": FUZZY_THRESHOLD_DEFAULT,
            "description": f"Minimum similarity score (0.0-1.0, default: {FUZZY_THRESHOLD_DEFAULT})",
        },
    },
    "required": ["query", "candidates"],
    "additionalProperties": False,
}

_RESULTS_SHAPE = """Each result: doc_id (the document's position in documents, from "0"), score (TF-IDF cosine
similarity in [0, 1]), snippet (the document's first 200 characters) and highlights (up to 3
passages around matched words). Words are matched after stemming and accent folding (limits
matches limiting); documents sharing no word with the query are left out. On bad input the answer
is {"status": "error", "error": "<message>"}."""

SEARCH_DOCUMENTS_DESCRIPTION = f"""Perform a quick full-text search across a list of text strings using TF-IDF scoring.

Searches only the documents passed in this call; nothing is stored or fetched. Returns
{{"status": "ok", "query", "results"}}, best first, at most top_k (default 5).
{_RESULTS_SHAPE}"""

SEARCH_INDEX_QUERY_DESCRIPTION = f"""Build an in-memory search index from document strings and search it.
Combines index creation and querying in one operation.

The index lives only for this call; nothing is stored or fetched. Returns {{"status": "ok",
"query", "index_size" (number of documents indexed), "results"}}, best first, at most top_k
(default 10). {_RESULTS_SHAPE}"""

SEARCH_FUZZY_DESCRIPTION = """Find the best fuzzy match for a query string among a list of candidate strings.
Uses Levenshtein distance.

Similarity is 1 - edit distance / length of the longer string, ignoring case (pythn vs python:
0.83). Returns {"status": "ok", "query", "best_match" (the most similar candidate at or above
threshold, or null), "matches" [{candidate, score}] sorted by score}. Compares whole strings; it
does not search inside longer texts (use search_documents for that). On bad input the answer is
{"status": "error", "error": "<message>"}."""


class EnvelopeTool(CheckedTool):
    """A tool with a hand-written schema whose argument errors are seed 003's error envelope."""

    def argument_error(self, message: str) -> CallToolResult:
        return envelope_error(message)


async def _answer(work: Callable[[], dict[str, Any]]) -> CallToolResult:
    """Run ``work`` in a worker thread; SleuthError and anything unexpected become the error envelope."""
    try:
        return envelope_result(await run_in_worker(work))
    except SleuthError as exc:
        return envelope_error(str(exc))
    except Exception:
        logger.exception("text tool failed")
        return envelope_error(INTERNAL_ERROR_TEXT)


def _ranked(query: Any, documents: Any, top_k: Any, default_top_k: int) -> tuple[str, list[str], list[dict[str, Any]]]:
    q = check_query(query)
    docs = check_texts(documents, "documents", DOCUMENTS_MAX_COUNT, DOCUMENTS_MAX_TOTAL_CHARS)
    k = check_top_k(top_k, default_top_k)
    return q, docs, [hit.model_dump() for hit in rank_texts(q, docs, k)]


async def search_documents(query: Any = None, documents: Any = None, top_k: Any = None) -> CallToolResult:
    """``{"status": "ok", "query", "results"}``: the ``top_k`` (default 5) best of ``documents``."""

    def work() -> dict[str, Any]:
        q, _, results = _ranked(query, documents, top_k, SEARCH_DOCUMENTS_TOP_K_DEFAULT)
        return {"status": "ok", "query": q, "results": results}

    return await _answer(work)


async def search_index_query(query: Any = None, documents: Any = None, top_k: Any = None) -> CallToolResult:
    """``{"status": "ok", "query", "index_size", "results"}``: the ``top_k`` (default 10) best of ``documents``."""

    def work() -> dict[str, Any]:
        q, docs, results = _ranked(query, documents, top_k, SEARCH_INDEX_QUERY_TOP_K_DEFAULT)
        return {"status": "ok", "query": q, "index_size": len(docs), "results": results}

    return await _answer(work)


async def search_fuzzy(query: Any = None, candidates: Any = None, threshold: Any = None) -> CallToolResult:
    """``{"status": "ok", "query", "best_match", "matches"}``: candidates at or above ``threshold`` (default 0.6)."""

    def work() -> dict[str, Any]:
        q = check_query(query)
        texts = check_texts(candidates, "candidates", CANDIDATES_MAX_COUNT, CANDIDATES_MAX_TOTAL_CHARS)
        result = fuzzy_match(q, texts, check_threshold(threshold, FUZZY_THRESHOLD_DEFAULT))
        return {"status": "ok", "query": q, **result.model_dump()}

    return await _answer(work)


def text_tools() -> list[Tool]:
    """The three tools, each advertising exactly its hand-written schema."""
    specs: list[tuple[Callable[..., Awaitable[CallToolResult]], str, str, str, dict[str, Any]]] = [
        (search_documents, "search_documents", "Search documents", SEARCH_DOCUMENTS_DESCRIPTION,
         SEARCH_DOCUMENTS_SCHEMA),
        (search_index_query, "search_index_query", "Index and search documents", SEARCH_INDEX_QUERY_DESCRIPTION,
         SEARCH_INDEX_QUERY_SCHEMA),
        (search_fuzzy, "search_fuzzy", "Fuzzy match", SEARCH_FUZZY_DESCRIPTION, SEARCH_FUZZY_SCHEMA),
    ]
    tools: list[Tool] = []
    for fn, name, title, description, schema in specs:
        tool = EnvelopeTool.from_function(fn, name=name, title=title, description=description,
                                          annotations=TEXT_TOOLS_ANNOTATIONS)
        tool.parameters = schema
        tools.append(tool)
    return tools


def register_text_tools(server: MCPServer[Any], context: ServeContext) -> None:
    """The ``text`` profile: ``search_documents``, ``search_index_query``, ``search_fuzzy``. Needs nothing."""
    add_tools(server, text_tools())
