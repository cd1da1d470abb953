"""Input limits and the argument checks every MCP tool of every profile passes, in one place.

Elasticsearch-style: each limit is a named constant with its unit, listed once in
:data:`TOOL_LIMITS` (docs/LIMITS.md's table shows the same rows), and an argument beyond one
gets an error that names the argument and states the limit. Before a tool runs,
:class:`CheckedTool` applies :func:`check_arguments`:

- unknown arguments are refused when the tool's schema says ``additionalProperties: false``;
- every string anywhere in the arguments (names included) must be valid Unicode text without
  NUL: a lone surrogate (``"\\ud800"``, which strict JSON decoders refuse) or U+0000 is an error;
- every string and array is bounded: by its argument's cap in :data:`ARGUMENT_CAPS` (which holds
  the seed schemas' own ``maxLength`` / ``maxItems``, enforced here server-side too, and caps for
  what the seeds leave unbounded), else by :data:`VALUE_MAX_CHARS` / :data:`VALUE_MAX_ITEMS`;
  a whole call holds at most :data:`ARGUMENT_VALUES_MAX` values nested at most
  :data:`ARGUMENT_MAX_DEPTH` deep.

The checks cost one pass over the arguments, bounded by those caps: small arguments are checked
on the event loop (cheaper than a thread hop, and a ``query_cancel`` never waits for a thread),
larger ones (:data:`CHECK_INLINE_MAX_WEIGHT`) in a worker thread. The tools' own work runs in
worker threads through :func:`run_in_worker`, at most :data:`TOOL_WORKER_THREADS` at once per
process, so no call can hold the event loop that answers every other session; and at most
:data:`TOOL_CALLS_PER_CALLER` at once per caller (a broker session, or an HTTP user: see
:data:`CALLER_CALLS`), so one client sending a burst of heavy calls waits for its own calls and
never takes every thread from the others. Types and numeric ranges are each
tool's own checks (their seeds differ: ``search_guides`` clamps what the others refuse).
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, TypeVar

import anyio
import anyio.to_thread
from anyio.lowlevel import RunVar
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.types import CallToolResult

from sleuth.errors import QueryError, shown
from sleuth.guides.search import GUIDES_LIMIT_MAX
from sleuth.mcp.errors import text_result
from sleuth.mcp.wire import MESSAGE_MAX_BYTES
from sleuth.memory.arguments import (
    BUDGET_MAX_BYTES,
    DEADLINE_MAX_MS,
    GROUP_ID_MAX_CHARS,
    GROUP_LIMIT_MAX,
    GROUP_QUERY_MAX_CHARS,
    INCLUDE_PROJECTS_MAX,
    KIND_MAX_CHARS,
    KINDS_MAX,
    LIMIT_MAX,
    MEMORY_LANES,
    PROJECT_ID_MAX_CHARS,
    QUERIES_MAX,
    REQUEST_ID_MAX_CHARS,
    ROLES,
    SOURCE_FAMILIES,
    VARIANT_MAX_CHARS,
    VARIANTS_MAX,
)
from sleuth.memory.bodies import BODY_PAGE_MAX_CHARS
from sleuth.memory.records import (
    RECORD_BODY_MAX_CHARS,
    RECORD_RELATIONS_MAX,
    RECORD_TAG_MAX_CHARS,
    RECORD_TAGS_MAX,
    RECORD_TITLE_MAX_CHARS,
)
from sleuth.text.query import QUERY_MAX_CHARS
from sleuth.textsearch.bounds import (
    CANDIDATES_MAX_COUNT,
    CANDIDATES_MAX_TOTAL_CHARS,
    DOCUMENTS_MAX_COUNT,
    DOCUMENTS_MAX_TOTAL_CHARS,
    TOP_K_MAX,
)

T = TypeVar("T")

#: Longest document or record id (``item_id``, ``record_id``, ``related[]``, ``supersedes[]``), in characters.
ID_MAX_CHARS = 200
#: Longest ``body_handle`` (``body:<record_id>@<revision_id>`` or ``entity:<node_id>``), in characters.
BODY_HANDLE_MAX_CHARS = 500
#: Longest ``reason`` of ``query_cancel``, in characters (seed schema).
CANCEL_REASON_MAX_CHARS = 200
#: Longest RFC 3339 date-time (``filters.recorded_after`` / ``recorded_before``), in characters.
DATE_TIME_MAX_CHARS = 64
#: Longest string anywhere else in the arguments (enum values, numbers given as text, names), in characters.
VALUE_MAX_CHARS = 1_000
#: Most items of an array, or keys of an object, anywhere else in the arguments.
VALUE_MAX_ITEMS = 100
#: Most values (strings, numbers, booleans, arrays, objects) one call's arguments hold.
ARGUMENT_VALUES_MAX = 100_000
#: Deepest nesting of arrays and objects in one call's arguments (the argument itself is level 1).
ARGUMENT_MAX_DEPTH = 8
#: Tool calls whose work runs at once in worker threads, per server process (others wait their turn).
TOOL_WORKER_THREADS = 16
#: Tool calls of one caller (a broker session, an HTTP user) working at once (its others wait their turn).
TOOL_CALLS_PER_CALLER = 4
#: Threads for each caller's only running call, apart from the shared ones (so every caller is served).
FIRST_CALL_THREADS = 256
#: Threads that start broker sessions (reading the guides, the config), apart from the tool threads.
SESSION_SETUP_THREADS = 4
#: Largest ``limit`` of ``search_project`` (seed 000).
SEARCH_PROJECT_LIMIT_MAX = 50
#: Most items of ``filters.roles``, ``filters.source_families``, ``filters.retrieval_lanes``: each choice once.
FILTER_ROLES_MAX = len(ROLES)
FILTER_FAMILIES_MAX = len(SOURCE_FAMILIES)
FILTER_LANES_MAX = len(MEMORY_LANES)


@dataclass(frozen=True)
class Limit:
    """One documented input limit: the constant's ``name``, its ``value`` and ``unit``, what it bounds."""

    name: str
    value: int
    unit: str
    bounds: str


def _limit(name: str, value: int, unit: str, bounds: str) -> Limit:
    return Limit(name, value, unit, bounds)


QUERY = _limit("QUERY_MAX_CHARS", QUERY_MAX_CHARS, "characters",
               "`query` of search_project, search_guides, project_memory_search and the text tools")
GROUP_QUERY = _limit("GROUP_QUERY_MAX_CHARS", GROUP_QUERY_MAX_CHARS, "characters",
                     "`queries[].query` of project_memory_search")
GROUP_ID = _limit("GROUP_ID_MAX_CHARS", GROUP_ID_MAX_CHARS, "characters", "`queries[].id`")
QUERIES = _limit("QUERIES_MAX", QUERIES_MAX, "items", "`queries` of project_memory_search")
VARIANTS = _limit("VARIANTS_MAX", VARIANTS_MAX, "items", "`query_variants` (top level or per question)")
VARIANT = _limit("VARIANT_MAX_CHARS", VARIANT_MAX_CHARS, "characters", "each query variant")
PROJECT_ID = _limit("PROJECT_ID_MAX_CHARS", PROJECT_ID_MAX_CHARS, "characters",
                    "`project_id` and `include_project_ids[]` of every tool")
INCLUDE_PROJECTS = _limit("INCLUDE_PROJECTS_MAX", INCLUDE_PROJECTS_MAX, "items", "`include_project_ids`")
REQUEST_ID = _limit("REQUEST_ID_MAX_CHARS", REQUEST_ID_MAX_CHARS, "characters",
                    "`request_id` of project_memory_search, query_status, query_cancel, project_memory_record")
KINDS = _limit("KINDS_MAX", KINDS_MAX, "items", "`filters.kinds`")
FILTER_ROLES = _limit("FILTER_ROLES_MAX", FILTER_ROLES_MAX, "items", "`filters.roles` (each role once)")
FILTER_FAMILIES = _limit("FILTER_FAMILIES_MAX", FILTER_FAMILIES_MAX, "items", "`filters.source_families`")
FILTER_LANES = _limit("FILTER_LANES_MAX", FILTER_LANES_MAX, "items", "`filters.retrieval_lanes`")
KIND = _limit("KIND_MAX_CHARS", KIND_MAX_CHARS, "characters", "each of `filters.kinds`")
DATE_TIME = _limit("DATE_TIME_MAX_CHARS", DATE_TIME_MAX_CHARS, "characters", "`filters.recorded_after` / `_before`")
ITEM_ID = _limit("ID_MAX_CHARS", ID_MAX_CHARS, "characters",
                 "`item_id`, `record_id`, each of `related` / `supersedes`")
BODY_HANDLE = _limit("BODY_HANDLE_MAX_CHARS", BODY_HANDLE_MAX_CHARS, "characters", "`body_handle`")
CANCEL_REASON = _limit("CANCEL_REASON_MAX_CHARS", CANCEL_REASON_MAX_CHARS, "characters", "`reason` of query_cancel")
PAGE = _limit("BODY_PAGE_MAX_CHARS", BODY_PAGE_MAX_CHARS, "characters", "`max_chars` of project_memory_read")
TITLE = _limit("RECORD_TITLE_MAX_CHARS", RECORD_TITLE_MAX_CHARS, "characters", "`title` of project_memory_record")
BODY = _limit("RECORD_BODY_MAX_CHARS", RECORD_BODY_MAX_CHARS, "characters", "`body` of project_memory_record")
TAGS = _limit("RECORD_TAGS_MAX", RECORD_TAGS_MAX, "items", "`tags` of project_memory_record")
TAG = _limit("RECORD_TAG_MAX_CHARS", RECORD_TAG_MAX_CHARS, "characters", "each tag")
RELATIONS = _limit("RECORD_RELATIONS_MAX", RECORD_RELATIONS_MAX, "items",
                   "`related` and `supersedes` of project_memory_record, each and together")
DOCUMENTS = _limit("DOCUMENTS_MAX_COUNT", DOCUMENTS_MAX_COUNT, "items",
                   "`documents` of search_documents / search_index_query")
DOCUMENTS_TOTAL = _limit("DOCUMENTS_MAX_TOTAL_CHARS", DOCUMENTS_MAX_TOTAL_CHARS, "characters",
                         "all `documents` of one call together")
CANDIDATES = _limit("CANDIDATES_MAX_COUNT", CANDIDATES_MAX_COUNT, "items", "`candidates` of search_fuzzy")
CANDIDATES_TOTAL = _limit("CANDIDATES_MAX_TOTAL_CHARS", CANDIDATES_MAX_TOTAL_CHARS, "characters",
                          "all `candidates` of one call together")
VALUE = _limit("VALUE_MAX_CHARS", VALUE_MAX_CHARS, "characters", "any other string in the arguments")
VALUE_ITEMS = _limit("VALUE_MAX_ITEMS", VALUE_MAX_ITEMS, "items",
                     "any other array, or object, in the arguments (its items, or keys)")


@dataclass(frozen=True)
class Cap:
    """The bounds of one argument path: a string's length, an array's length, all its strings together."""

    chars: Limit | None = None
    items: Limit | None = None
    total_chars: Limit | None = None


_TEXT_LIST = {"documents": Cap(items=DOCUMENTS, total_chars=DOCUMENTS_TOTAL), "documents[]": Cap(chars=DOCUMENTS_TOTAL)}

#: Each tool's argument caps, by argument path (``a.b`` for an object's field, ``a[]`` for an array's items).
#: Paths not listed are bounded by :data:`VALUE_MAX_CHARS` / :data:`VALUE_MAX_ITEMS`.
ARGUMENT_CAPS: dict[str, dict[str, Cap]] = {
    "search_project": {"project_id": Cap(PROJECT_ID), "query": Cap(QUERY)},
    "get_notebook": {"project_id": Cap(PROJECT_ID), "item_id": Cap(ITEM_ID)},
    "get_projects": {},
    "search_guides": {"query": Cap(QUERY)},
    "search_documents": {"query": Cap(QUERY), **_TEXT_LIST},
    "search_index_query": {"query": Cap(QUERY), **_TEXT_LIST},
    "search_fuzzy": {"query": Cap(QUERY), "candidates": Cap(items=CANDIDATES, total_chars=CANDIDATES_TOTAL),
                     "candidates[]": Cap(CANDIDATES_TOTAL)},
    "project_memory_search": {
        "query": Cap(QUERY), "query_variants": Cap(items=VARIANTS), "query_variants[]": Cap(VARIANT),
        "queries": Cap(items=QUERIES), "queries[].id": Cap(GROUP_ID), "queries[].query": Cap(GROUP_QUERY),
        "queries[].query_variants": Cap(items=VARIANTS), "queries[].query_variants[]": Cap(VARIANT),
        "project_id": Cap(PROJECT_ID), "include_project_ids": Cap(items=INCLUDE_PROJECTS),
        "include_project_ids[]": Cap(PROJECT_ID), "request_id": Cap(REQUEST_ID),
        "filters.kinds": Cap(items=KINDS), "filters.kinds[]": Cap(KIND), "filters.roles": Cap(items=FILTER_ROLES),
        "filters.source_families": Cap(items=FILTER_FAMILIES), "filters.retrieval_lanes": Cap(items=FILTER_LANES),
        "filters.recorded_after": Cap(DATE_TIME), "filters.recorded_before": Cap(DATE_TIME),
    },
    "query_status": {"request_id": Cap(REQUEST_ID)},
    "query_cancel": {"request_id": Cap(REQUEST_ID), "reason": Cap(CANCEL_REASON)},
    "project_memory_read": {"body_handle": Cap(BODY_HANDLE)},
    "project_memory_record": {
        "project_id": Cap(PROJECT_ID), "title": Cap(TITLE), "body": Cap(BODY), "tags": Cap(items=TAGS),
        "tags[]": Cap(TAG), "related": Cap(items=RELATIONS), "related[]": Cap(ITEM_ID),
        "supersedes": Cap(items=RELATIONS), "supersedes[]": Cap(ITEM_ID), "record_id": Cap(ITEM_ID),
        "request_id": Cap(REQUEST_ID),
    },
    "project_memory_forget": {"record_id": Cap(ITEM_ID), "project_id": Cap(PROJECT_ID)},
    "project_memory_doctor": {"project_id": Cap(PROJECT_ID)},
}

#: Every limit of a tool call, in the order of docs/LIMITS.md's table: (name, value, unit, what it bounds).
#: Numeric ranges each tool checks itself are listed too.
TOOL_LIMITS: tuple[Limit, ...] = (
    QUERY, GROUP_QUERY, GROUP_ID, QUERIES, VARIANTS, VARIANT, PROJECT_ID, INCLUDE_PROJECTS, REQUEST_ID,
    KINDS, KIND, FILTER_ROLES, FILTER_FAMILIES, FILTER_LANES, DATE_TIME, ITEM_ID, BODY_HANDLE, CANCEL_REASON,
    PAGE, TITLE, BODY, TAGS, TAG, RELATIONS,
    DOCUMENTS, DOCUMENTS_TOTAL, CANDIDATES, CANDIDATES_TOTAL,
    _limit("LIMIT_MAX", LIMIT_MAX, "results", "`limit` of project_memory_search (1 to 50)"),
    _limit("GROUP_LIMIT_MAX", GROUP_LIMIT_MAX, "results", "`queries[].limit` (1 to 20)"),
    _limit("DEADLINE_MAX_MS", DEADLINE_MAX_MS, "ms", "`response_deadline_ms` (1,000 to 300,000)"),
    _limit("BUDGET_MAX_BYTES", BUDGET_MAX_BYTES, "bytes", "`response_budget_bytes` (1,000 to 1,000,000)"),
    _limit("SEARCH_PROJECT_LIMIT_MAX", SEARCH_PROJECT_LIMIT_MAX, "results", "`limit` of search_project (1 to 50)"),
    _limit("GUIDES_LIMIT_MAX", GUIDES_LIMIT_MAX, "results", "`limit` of search_guides (clamped to 1 to 10)"),
    _limit("TOP_K_MAX", TOP_K_MAX, "results", "`top_k` of search_documents / search_index_query"),
    VALUE, VALUE_ITEMS,
    _limit("ARGUMENT_VALUES_MAX", ARGUMENT_VALUES_MAX, "values", "all values of one call's arguments"),
    _limit("ARGUMENT_MAX_DEPTH", ARGUMENT_MAX_DEPTH, "levels", "nesting of arrays and objects in the arguments"),
    _limit("TOOL_WORKER_THREADS", TOOL_WORKER_THREADS, "threads", "tool calls working at once per server process"),
    _limit("TOOL_CALLS_PER_CALLER", TOOL_CALLS_PER_CALLER, "calls",
           "tool calls working at once per broker session or HTTP user (its others wait their turn)"),
    _limit("FIRST_CALL_THREADS", FIRST_CALL_THREADS, "threads",
           "threads for each caller's only running call, beside the shared ones (every caller is served)"),
    _limit("MESSAGE_MAX_BYTES", MESSAGE_MAX_BYTES, "bytes",
           "one JSON-RPC message (a longer line is skipped and answered; a `tools/call` with a tool error)"),
)


class ArgumentError(QueryError):
    """An argument breaks a limit, is not text, or is unknown; the message names it and the limit."""


# Lone surrogates (what a JSON "\ud800" escape decodes to) and NUL.
_NOT_TEXT_RE = re.compile("[\x00\ud800-\udfff]")


def check_text(value: str, where: str) -> None:
    """Raise ArgumentError when ``value`` holds NUL or a lone surrogate (naming ``where`` and the position)."""
    bad = _NOT_TEXT_RE.search(value)
    if bad is None:
        return
    char, at = bad.group(), bad.start()
    if char == "\x00":
        raise ArgumentError(f"{where} holds a NUL character (U+0000) at character {at}; arguments must be text")
    raise ArgumentError(f"{where} is not valid Unicode: it holds a lone surrogate code point "
                        f"(U+{ord(char):04X}) at character {at}")


def unknown_arguments(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Raise ArgumentError for names the schema does not list, when it says ``additionalProperties: false``."""
    if schema.get("additionalProperties") is not False:
        return
    allowed = set(schema.get("properties", {}))
    unknown = sorted(shown(str(k)) for k in arguments if k not in allowed)
    if unknown:
        more = f" and {len(unknown) - 10} more" if len(unknown) > 10 else ""
        takes = ", ".join(sorted(allowed)) or "no arguments"
        raise ArgumentError(f"unknown argument(s) {', '.join(unknown[:10])}{more}; {tool} takes {takes}")


class _Walk:
    def __init__(self, caps: Mapping[str, Cap]) -> None:
        self.caps = caps
        self.values = 0

    def value(self, value: Any, schema: Any, pattern: str, where: str, depth: int) -> None:
        self.values += 1
        if self.values > ARGUMENT_VALUES_MAX:
            raise ArgumentError(f"the arguments hold more than {ARGUMENT_VALUES_MAX} values; "
                                f"the limit is {ARGUMENT_VALUES_MAX} per call")
        if depth > ARGUMENT_MAX_DEPTH:
            raise ArgumentError(f"{where} is nested {depth} levels deep; the limit is {ARGUMENT_MAX_DEPTH}")
        cap = self.caps.get(pattern, Cap())
        schema = schema if isinstance(schema, dict) else {}
        if isinstance(value, str):
            limit = cap.chars or cap.total_chars or VALUE  # an array sent as JSON text: its total
            if len(value) > limit.value:
                raise ArgumentError(f"{where} is {len(value)} characters long; the limit is {limit.value}")
            check_text(value, where)
        elif isinstance(value, list):
            limit = cap.items or VALUE_ITEMS
            if len(value) > limit.value:
                raise ArgumentError(f"too many {where}: {len(value)}; the limit is {limit.value} per call")
            if cap.total_chars is not None:
                total = sum(len(v) for v in value if isinstance(v, str))
                if total > cap.total_chars.value:
                    raise ArgumentError(f"{where} hold {total} characters in all; "
                                        f"the limit is {cap.total_chars.value} per call")
            for i, item in enumerate(value):
                self.value(item, schema.get("items"), f"{pattern}[]", f"{where}[{i}]", depth + 1)
        elif isinstance(value, dict):
            if len(value) > VALUE_MAX_ITEMS:
                raise ArgumentError(f"{where} has {len(value)} fields; the limit is {VALUE_MAX_ITEMS}")
            properties = schema.get("properties") if isinstance(schema.get("properties"), dict) else {}
            for key, item in value.items():
                self.name(key, f"a field name in {where}")
                self.value(item, properties.get(key), f"{pattern}.{key}", f"{where}.{shown(str(key))}", depth + 1)

    @staticmethod
    def name(key: Any, where: str) -> None:
        key = str(key)
        if len(key) > VALUE_MAX_CHARS:
            raise ArgumentError(f"{where} is {len(key)} characters long; the limit is {VALUE_MAX_CHARS}")
        check_text(key, where)


def check_arguments(tool: str, schema: Mapping[str, Any], arguments: Mapping[str, Any]) -> None:
    """Check one call's ``arguments`` against the limits of ``tool`` (see the module docstring).

    Args:
        tool: the tool's name (a key of :data:`ARGUMENT_CAPS`).
        schema: the tool's input schema (its ``properties``, ``items`` and ``additionalProperties``).
        arguments: the call's arguments, as decoded from JSON.
    Raises:
        ArgumentError: an unknown argument, a NUL or lone surrogate, or a string, array, value count
            or nesting beyond its limit; the message names the argument (``queries[2].query``).
        KeyError: ``tool`` has no entry in :data:`ARGUMENT_CAPS` (a tool registered without caps).
    """
    caps = ARGUMENT_CAPS[tool]
    unknown_arguments(tool, schema, arguments)
    walk = _Walk(caps)
    properties = schema.get("properties", {})
    for key, value in arguments.items():
        walk.name(key, "an argument name")
        walk.value(value, properties.get(key), str(key), shown(str(key)), 1)


class _ArgumentsAsSent(FuncMetadata):
    """The SDK's argument metadata without its JSON pre-parsing: the SDK turns every string that
    reads as a JSON array or object into one unless the parameter is annotated ``str``, so a query
    or a record body of JSON text reached the tool as a list or a dict (:class:`CheckedTool` parses
    only strings sent for array or object parameters)."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        return dict(data)


def _json_container(value: Any, schema: Any) -> Any:
    """``value`` parsed when it is a string holding the JSON array or object ``schema`` asks for
    (what some clients send instead of the array), else ``value`` unchanged."""
    wanted = schema.get("type") if isinstance(schema, dict) else None
    if not isinstance(value, str) or wanted not in ("array", "object"):
        return value
    try:
        parsed = json.loads(value)
    except (ValueError, RecursionError):
        return value
    return parsed if isinstance(parsed, list if wanted == "array" else dict) else value


class CheckedTool(Tool):
    """A tool whose calls pass :func:`check_arguments` first; a failure is answered by
    :meth:`argument_error`, which each tool family overrides to answer in its own error shape.

    A string sent for an array or object parameter that holds JSON of that type is parsed (as the
    SDK does for clients that send arrays as JSON text) and checked again; strings sent for string
    parameters always reach the tool as sent.
    """

    @classmethod
    def from_function(cls, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Tool:
        tool = super().from_function(fn, *args, **kwargs)
        meta = tool.fn_metadata
        tool.fn_metadata = _ArgumentsAsSent(arg_model=meta.arg_model, output_schema=meta.output_schema,
                                            output_model=meta.output_model, wrap_output=meta.wrap_output)
        return tool

    def argument_error(self, message: str) -> Any:
        """The answer to arguments that fail the checks (default: a plain tool error with ``message``)."""
        raise ToolError(message)

    def checked(self, arguments: dict[str, Any]) -> dict[str, Any]:
        """``arguments`` after :func:`check_arguments` (JSON text sent for arrays and objects parsed).

        Raises:
            ArgumentError: see :func:`check_arguments`.
        """
        check_arguments(self.name, self.parameters, arguments)
        properties = self.parameters.get("properties", {})
        parsed = {k: _json_container(v, properties.get(k)) for k, v in arguments.items()}
        if any(parsed[k] is not arguments[k] for k in arguments):
            check_arguments(self.name, self.parameters, parsed)
        return parsed

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            if _weight(arguments) <= CHECK_INLINE_MAX_WEIGHT:
                parsed = self.checked(arguments)  # small: cheaper than a thread hop, and never waits for one
            else:
                parsed = await run_in_worker(lambda: self.checked(arguments))
        except ArgumentError as exc:
            result = self.argument_error(str(exc))
            return self.fn_metadata.convert_result(result) if convert_result else result
        return await super().run(parsed, context, convert_result=convert_result)


#: Arguments weighing more than this (:func:`_weight`) are checked in a worker thread, not on the event loop.
CHECK_INLINE_MAX_WEIGHT = 20_000


def _weight(arguments: Mapping[str, Any]) -> int:
    """The checks' work, counted up to just past :data:`CHECK_INLINE_MAX_WEIGHT` (so counting
    costs at most that many steps): one per value, plus each string's length."""
    weight, todo = 0, [*arguments.keys(), *arguments.values()]
    while todo and weight <= CHECK_INLINE_MAX_WEIGHT:
        value = todo.pop()
        weight += 1
        if isinstance(value, str):
            weight += len(value)
        elif isinstance(value, list):
            weight += len(value)
            todo.extend(value[: CHECK_INLINE_MAX_WEIGHT])
        elif isinstance(value, dict):
            weight += len(value)
            todo.extend(list(value.values())[: CHECK_INLINE_MAX_WEIGHT])
    return weight


def refusal(tool: Tool, message: str) -> CallToolResult:
    """``tool``'s answer to arguments it refuses, in its family's error shape (always a tool error)."""
    try:
        result = tool.argument_error(message) if isinstance(tool, CheckedTool) else None
    except ToolError as exc:
        result = None
        message = str(exc)
    if isinstance(result, CallToolResult):
        return result
    return text_result(message, is_error=True)


def arguments_middleware(server: MCPServer[Any]) -> Callable[..., Any]:
    """Server middleware answering a ``tools/call`` whose ``arguments`` is not a JSON object with
    the tool's own error (the MCP specification asks for input errors as tool errors, so the model
    can correct them) instead of the SDK's JSON-RPC "Invalid request parameters"."""

    async def middleware(ctx: Any, call_next: Callable[[Any], Awaitable[Any]]) -> Any:
        params = ctx.params
        if ctx.method == "tools/call" and isinstance(params, Mapping):
            arguments, name = params.get("arguments"), params.get("name")
            tool = server._tool_manager.get_tool(name) if isinstance(name, str) else None
            if tool is not None and arguments is not None and not isinstance(arguments, dict):
                kind = {list: "an array", str: "a string", bool: "a boolean"}.get(type(arguments), "a number")
                return refusal(tool, f"arguments must be a JSON object of named arguments, got {kind}")
        return await call_next(ctx)

    return middleware


_LIMITER: RunVar[anyio.CapacityLimiter] = RunVar("sleuth_tool_limiter")


def tool_limiter() -> anyio.CapacityLimiter:
    """The event loop's limiter of tool work threads (:data:`TOOL_WORKER_THREADS` tokens)."""
    try:
        return _LIMITER.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(TOOL_WORKER_THREADS)
        _LIMITER.set(limiter)
        return limiter


#: The calls limiter of the caller whose tool call runs in this task (None: no per-caller cap, as
#: for the one session of an in-process server). Set by the broker per session and by the HTTP server per user.
CALLER_CALLS: ContextVar[anyio.CapacityLimiter | None] = ContextVar("sleuth_caller_calls", default=None)


def new_caller_limiter() -> anyio.CapacityLimiter:
    """A limiter of one caller's tool calls (:data:`TOOL_CALLS_PER_CALLER` tokens), for :data:`CALLER_CALLS`."""
    return anyio.CapacityLimiter(TOOL_CALLS_PER_CALLER)


_FIRST_CALLS: RunVar[anyio.CapacityLimiter] = RunVar("sleuth_first_calls")
_SESSION_SETUP: RunVar[anyio.CapacityLimiter] = RunVar("sleuth_session_setup")


def _run_limiter(var: RunVar[anyio.CapacityLimiter], tokens: int) -> anyio.CapacityLimiter:
    try:
        return var.get()
    except LookupError:
        limiter = anyio.CapacityLimiter(tokens)
        var.set(limiter)
        return limiter


def session_setup_limiter() -> anyio.CapacityLimiter:
    """The threads that start sessions (:data:`SESSION_SETUP_THREADS`), apart from the tool threads."""
    return _run_limiter(_SESSION_SETUP, SESSION_SETUP_THREADS)


async def run_in_worker(fn: Callable[[], T]) -> T:
    """``fn()`` in a worker thread, off the event loop: at most :data:`TOOL_WORKER_THREADS` at once
    per process and, when the task runs for a caller (:data:`CALLER_CALLS`), at most
    :data:`TOOL_CALLS_PER_CALLER` of that caller's at once (it waits for its own calls first).

    A caller's only running call does not wait for the shared threads (it has its own, one of at
    most :data:`FIRST_CALL_THREADS`): however many callers keep theirs busy, every caller is served."""
    caller = CALLER_CALLS.get()
    if caller is None:
        return await anyio.to_thread.run_sync(fn, limiter=tool_limiter())
    async with caller:
        first = caller.borrowed_tokens == 1
        limiter = _run_limiter(_FIRST_CALLS, FIRST_CALL_THREADS) if first else tool_limiter()
        return await anyio.to_thread.run_sync(fn, limiter=limiter)
