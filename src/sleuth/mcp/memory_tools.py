"""Seed 004: ``project_memory_search`` and its companions.

Companions: ``query_status`` and ``query_cancel`` (by ``request_id``, while the request runs),
``project_memory_read`` (a stored body by ``body_handle``, in bounded pages), ``project_memory_record``
(write a decision, plan, experiment record, result or note), ``project_memory_forget`` and
``project_memory_doctor``. Every tool answers with structured content; errors are tool errors
(``isError``) whose structured ``error`` holds ``code``, ``message`` and, for a request,
``request_id`` (and ``cancel_reason`` / ``phase`` when cancelled). Engine work runs in worker
threads, so a status or cancel call is served while a search runs.
"""

from __future__ import annotations

import copy
import dataclasses
import logging
import math
import threading
from collections.abc import Callable, Sequence
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.types import CallToolResult, TextContent, ToolAnnotations

from sleuth.broker.gate import CONTROL_META
from sleuth.config import load_default_project
from sleuth.engine import Engine
from sleuth.errors import QueryError, SleuthError, internal_error, shown_value
from sleuth.ingest.roles import FILTER_KINDS
from sleuth.lanes import registry
from sleuth.mcp.access import Access
from sleuth.mcp.errors import structured_error, structured_result
from sleuth.mcp.limits import CheckedTool, run_in_worker
from sleuth.mcp.sdk import set_output_schema
from sleuth.memory.arguments import (
    BUDGET_MAX_BYTES,
    BUDGET_MIN_BYTES,
    DEADLINE_MAX_MS,
    DEADLINE_MIN_MS,
    KINDS_MAX,
    LIMIT_MAX,
    RFC3339_PATTERN,
    ROLES,
    parse_memory_request,
)
from sleuth.memory.bodies import BODY_PAGE_DEFAULT_CHARS, BODY_PAGE_MAX_CHARS, read_body
from sleuth.memory.doctor import doctor
from sleuth.memory.records import (
    RECORD_KINDS,
    RECORD_RELATIONS_MAX,
    RECORD_TAGS_MAX,
    REQUEST_ID_MAX_CHARS,
    RecordStore,
)
from sleuth.memory.search import INBOX_PROJECT_ID, MemorySearch
from sleuth.pipeline.requests import RequestNotFound, RequestRegistry
from sleuth.scaleout import hide_backends, hide_locations, remote_message

SEARCH_DESCRIPTION = (
    "Search local project knowledge (papers, code, notebooks, plans, experiments, decisions) by exact, BM25, "
    "vector and graph retrieval; returns ranked, bounded summaries of indexed files, never anything external.\n\n"
    "Use it whenever the user asks to find, recall or inspect something stored in the project. Ask once with "
    "query_variants for several wordings, or with queries for independent questions (answered as groups), "
    "instead of calling it repeatedly. Each result has a body_handle: read the whole body with "
    "project_memory_read. A superseded decision ranks just below what replaced it. If a retrieval lane misses "
    "the deadline the others still answer and meta.degraded_lanes names it; do not repeat the query for that."
)

_DATE_TIME = {"format": "date-time", "pattern": RFC3339_PATTERN, "type": "string"}
_VARIANTS = {"items": {"maxLength": 400, "minLength": 1, "type": "string"}, "maxItems": 19, "type": "array"}

SEARCH_INPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "limit": {"type": "integer", "minimum": 1, "maximum": LIMIT_MAX, "description": "Maximum local RAG results."},
        "query": {"type": "string", "minLength": 1, "description": "One natural-language query over indexed local "
                  "project knowledge. Use queries instead for independent grouped answers."},
        "filters": {
            "description": "Optional kind, role, source-family, lane and recorded-time filters, applied before "
                           "ranking. Lanes left out are not run.",
            "properties": {
                "kinds": {"items": {"enum": list(FILTER_KINDS), "type": "string"}, "maxItems": KINDS_MAX,
                          "type": "array"},
                "recorded_after": _DATE_TIME,
                "recorded_before": _DATE_TIME,
                "retrieval_lanes": {"items": {"enum": list(registry.FAMILIES), "type": "string"},
                                    "maxItems": 4, "type": "array"},
                "roles": {"items": {"enum": list(ROLES), "type": "string"}, "maxItems": 10, "type": "array"},
                "source_families": {"items": {"enum": ["document", "code", "graph"], "type": "string"},
                                    "maxItems": 3, "type": "array"},
            },
            "type": "object",
            "additionalProperties": False,
        },
        "queries": {
            "description": "Independent questions, answered as separate ranked groups by this one call.",
            "items": {
                "properties": {
                    "id": {"maxLength": 100, "minLength": 1, "type": "string"},
                    "limit": {"maximum": 20, "minimum": 1, "type": "integer"},
                    "query": {"maxLength": 400, "minLength": 1, "type": "string"},
                    "query_variants": _VARIANTS,
                },
                "required": ["id", "query"],
                "type": "object",
                "additionalProperties": False,
            },
            "maxItems": 20,
            "minItems": 1,
            "type": "array",
        },
        "project_id": {"type": "string", "minLength": 1,
                       "description": "Project to search (see get_projects). Optional when the index has one "
                       "project or a default_project is configured."},
        "request_id": {"description": "Caller-chosen ID for this search, so that query_status / query_cancel can "
                       "follow or cancel it while it runs.",
                       "maxLength": 200, "minLength": 1, "type": "string"},
        "all_projects": {"type": "boolean", "description": "Search every active named project. Excludes Inbox "
                         "and cannot be combined with project ids."},
        "query_variants": {**_VARIANTS, "description": "Other wordings of query, searched in this same call and fused "
                           "with it (identifiers and quoted phrases of the query are added by themselves)."},
        "include_project_ids": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": 20,
                                "description": "Additional read-only projects searched with the primary project."},
        "response_deadline_ms": {"description": "Answer within this many milliseconds (1,000 to 300,000; "
                                 "default 30,000): with the lanes that answered in time, or error QUERY_TIMEOUT "
                                 "when none did. When ranking or summaries pass it, the answer so far comes back "
                                 "with meta.partial true and meta.cut_short saying what was left out.",
                                 "maximum": DEADLINE_MAX_MS, "minimum": DEADLINE_MIN_MS, "type": "integer"},
        "response_budget_bytes": {"description": "Bytes the results may take (summaries shrink to fit; meta "
                                  "is extra). Default: sized to the number of results and questions.",
                                  "maximum": BUDGET_MAX_BYTES, "minimum": BUDGET_MIN_BYTES,
                                  "type": "integer"},
    },
    "additionalProperties": False,
}

_OBJECT = {"additionalProperties": {}, "propertyNames": {"type": "string"}, "type": "object"}
_SPAN = {"additionalProperties": False, "properties": {"end": {"type": "integer"}, "start": {"type": "integer"}},
         "required": ["start", "end"], "type": "object"}
RESULT_ITEM_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "record_id": {"type": "string"}, "revision_id": {"type": "string"}, "body_handle": {"type": "string"},
        "source_span": _SPAN, "source_length": {"type": "number"}, "truncated": {"type": "boolean"},
        "index_freshness": {"enum": ["current", "stale"], "type": "string"},
    },
}
OUTPUT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "query": {"type": "string"},
        "result_count": {"type": "number"},
        "results": {"type": "array", "items": RESULT_ITEM_SCHEMA},
        "groups": {"type": "array", "items": _OBJECT},
        "meta": _OBJECT,
        "error": {"type": "object", "properties": {
            "code": {"type": "string"}, "message": {"type": "string"}, "request_id": {"type": "string"},
            "cancel_reason": {"type": "string"}, "phase": {"type": "string"}}},
        "elapsed_ms": {"type": "number"},
        "query_status": _OBJECT,
        "record": _OBJECT,
        "forget": _OBJECT,
        "doctor": _OBJECT,
        "body": _OBJECT,
    },
}

def search_input_schema() -> dict[str, Any]:
    """:data:`SEARCH_INPUT_SCHEMA` with ``filters.retrieval_lanes`` naming every family of the lane
    registry (the seed's four, and any a registered lane adds)."""
    schema = copy.deepcopy(SEARCH_INPUT_SCHEMA)
    lanes = schema["properties"]["filters"]["properties"]["retrieval_lanes"]
    families = list(registry.families())
    lanes["items"]["enum"], lanes["maxItems"] = families, len(families)
    return schema


REQUEST_ID_SCHEMA = {"type": "string", "minLength": 1, "maxLength": 200,
                     "description": "The request_id given to project_memory_search."}
STATUS_SCHEMA: dict[str, Any] = {"type": "object", "properties": {"request_id": REQUEST_ID_SCHEMA},
                                 "required": ["request_id"], "additionalProperties": False}
CANCEL_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"request_id": REQUEST_ID_SCHEMA,
                   "reason": {"type": "string", "minLength": 1, "maxLength": 200,
                              "description": "Why the request is cancelled (reported back as cancel_reason)."}},
    "required": ["request_id"], "additionalProperties": False,
}
READ_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "body_handle": {"type": "string", "minLength": 1, "description": "A result's body_handle."},
        "offset": {"type": "integer", "minimum": 0, "description": "First character (code point) to return. "
                   "Default 0; pass the previous page's next_offset to continue."},
        "max_chars": {"type": "integer", "minimum": 1, "maximum": BODY_PAGE_MAX_CHARS,
                      "description": f"Characters per page (default {BODY_PAGE_DEFAULT_CHARS})."},
    },
    "required": ["body_handle"], "additionalProperties": False,
}
RECORD_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "project_id": {"type": "string", "minLength": 1,
                       "description": f"Project to record into; default: the Inbox ({INBOX_PROJECT_ID!r})."},
        "kind": {"enum": list(RECORD_KINDS), "type": "string"},
        "title": {"type": "string", "minLength": 1, "maxLength": 200},
        "body": {"type": "string", "minLength": 1, "description": "Markdown text of the record."},
        "tags": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": RECORD_TAGS_MAX},
        "related": {"type": "array", "items": {"type": "string", "minLength": 1}, "maxItems": RECORD_RELATIONS_MAX,
                    "description": "record_ids this record relates to (graph links)."},
        "supersedes": {"type": "array", "items": {"type": "string", "minLength": 1},
                       "maxItems": RECORD_RELATIONS_MAX,
                       "description": "record_ids this record replaces; they rank below it from now on."},
        "record_id": {"type": "string", "minLength": 1,
                      "description": "Rewrite this existing record (new revision_id) instead of adding one."},
        "request_id": {"type": "string", "minLength": 1, "maxLength": REQUEST_ID_MAX_CHARS,
                       "description": "Caller-chosen idempotency key for this write. Retrying a write whose answer "
                       "was lost with the same request_id returns the first write's receipt (replayed: true) "
                       "instead of writing the record twice; a request_id used for other content is refused."},
    },
    "required": ["kind", "title", "body"], "additionalProperties": False,
}
FORGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"record_id": {"type": "string", "minLength": 1},
                   "project_id": {"type": "string", "minLength": 1, "description": "The record's project (a check)."}},
    "required": ["record_id"], "additionalProperties": False,
}
DOCTOR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"project_id": {"type": "string", "minLength": 1, "description": "One project; default: all."}},
    "additionalProperties": False,
}

READ_ONLY = ToolAnnotations(read_only_hint=True, idempotent_hint=True, open_world_hint=False, destructive_hint=False)
#: query_status and query_cancel look at or stop running requests, not at the index: the broker's
#: gate lets them through at once (their ``_meta`` says so: :data:`sleuth.broker.gate.CONTROL_META`).
STATUS = READ_ONLY
CONTROL = ToolAnnotations(read_only_hint=False, idempotent_hint=True, open_world_hint=False, destructive_hint=False)
WRITE = ToolAnnotations(read_only_hint=False, idempotent_hint=False, open_world_hint=False, destructive_hint=False)
DESTRUCTIVE = ToolAnnotations(read_only_hint=False, idempotent_hint=True, open_world_hint=False, destructive_hint=True)

logger = logging.getLogger(__name__)


class MemoryTool(CheckedTool):
    """A checked tool whose argument errors are structured tool errors like its other errors."""

    def argument_error(self, message: str) -> CallToolResult:
        return structured_error(QueryError(message))

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            return await super().run(arguments, context, convert_result=convert_result)
        except ToolError as exc:
            return structured_error(QueryError(str(exc)))


class MemoryTools:
    """The seed-004 tools over one engine.

    Args:
        engine: the open index.
        allowed_projects: project ids a client may access; None = every project.
        registry: running requests (share one between servers of one process; over HTTP a
            :class:`sleuth.httpd.caller.CallerRegistry`, one table per user).
        per_caller: the projects come from the verified caller of each call
            (:class:`sleuth.mcp.access.Access`), within ``allowed_projects``.
    """

    def __init__(self, engine: Engine, allowed_projects: Sequence[str] | None = None,
                 registry: RequestRegistry | None = None, per_caller: bool = False) -> None:
        self.engine = engine
        self.access = Access(engine, allowed_projects, per_caller=per_caller)
        self.registry = registry or RequestRegistry()
        self.searcher = MemorySearch(engine, self.registry, access=self.access)
        self.records = RecordStore(engine)

    def warm_up(self) -> threading.Thread:
        """Load the model, the lanes and the link graph in a background thread, so that the first
        request's deadline is not spent on loading (a request arriving first waits for the same loads)."""
        def run() -> None:
            try:
                self.engine.embedder()
                self.engine.warm_lanes()
                self.engine.link_graph()
                self.engine.postings.searcher()
            except Exception:  # warming is best effort; requests report real failures
                logger.warning("warming the index failed", exc_info=True)

        thread = threading.Thread(target=run, name="sleuth-warm-up", daemon=True)
        thread.start()
        return thread

    def _project(self, project_id: str) -> str:
        """``project_id`` when it exists and is visible; the Inbox also before its first record.
        Raises ProjectNotFound (the same text for a missing and a hidden project)."""
        if project_id == INBOX_PROJECT_ID and self.access.visible(project_id):
            return project_id
        return self.access.project(project_id)

    async def _run(self, fn: Callable[[], dict[str, Any]], request_id: str | None = None) -> CallToolResult:
        try:
            payload = await run_in_worker(fn)
        except SleuthError as exc:
            return self._error(exc, request_id)
        except Exception as exc:  # a tool answers with a readable error, never a dropped session
            logger.exception("memory tool failed")
            return self._error(internal_error(exc), request_id)
        return structured_result(payload, is_error="error" in payload)

    def _error(self, exc: SleuthError, request_id: str | None) -> CallToolResult:
        """``exc`` as a tool error; a remote caller's message without where Milvus, the PostgreSQL
        catalog or the index is, nor who writes it (:func:`sleuth.scaleout.remote_message`)."""
        result = structured_error(exc, request_id)
        if self.access.per_caller and isinstance(result.structured_content, dict):
            error = result.structured_content["error"]
            error["message"] = self.access.error_message(exc)
            result.content = [TextContent(type="text", text=error["message"])]
        return result

    async def project_memory_search(
        self, query: Any = None, queries: Any = None, query_variants: Any = None, limit: Any = None,
        project_id: Any = None, include_project_ids: Any = None, all_projects: Any = None, filters: Any = None,
        request_id: Any = None, response_deadline_ms: Any = None, response_budget_bytes: Any = None,
    ) -> CallToolResult:
        given = {"query": query, "queries": queries, "query_variants": query_variants, "limit": limit,
                 "project_id": project_id, "include_project_ids": include_project_ids,
                 "all_projects": all_projects, "filters": filters, "request_id": request_id,
                 "response_deadline_ms": response_deadline_ms, "response_budget_bytes": response_budget_bytes}
        arguments = {k: v for k, v in given.items() if v is not None}
        try:
            parsed = parse_memory_request(arguments)
        except SleuthError as exc:
            rid = arguments.get("request_id")
            return structured_error(exc, rid if isinstance(rid, str) else None)

        def run() -> dict[str, Any]:
            req = parsed
            if not req.project_id and not req.all_projects:
                req = dataclasses.replace(req, project_id=self.default_project())
            for pid in (req.project_id, *req.include_project_ids):
                if pid:
                    self.access.project(pid)
            out = self.searcher.search(req)
            if self.access.per_caller and isinstance(out.get("meta"), dict):  # lanes' errors name the servers,
                out["meta"] = self.access.shown(hide_locations(out["meta"], self.engine))  # notices the index's files
            return out

        return await self._run(run, parsed.request_id)

    def default_project(self) -> str:
        """The project searched when a call names none: ``default_project`` of the index's
        config.toml (or $SLEUTH_DEFAULT_PROJECT) when the caller may see it, else the only project
        the caller may see (the Inbox aside). A default the caller may not see is never named to
        them: it is passed over as if none were set.

        Raises:
            QueryError: no usable default and several (or no) projects to choose from; only the
                caller's own projects are named.
            ProjectNotFound: the configured default is visible to the caller but does not exist.
        """
        configured = load_default_project(self.engine.index_dir)
        hidden_default = configured is not None and not self.access.visible(configured)
        if configured is not None and not hidden_default:
            return self.access.project(configured)
        visible = [p for p in self.engine.project_ids() if p != INBOX_PROJECT_ID and self.access.visible(p)]
        if len(visible) == 1:
            return visible[0]
        why = "no project_id given and the default project is not available to you" if hidden_default else ""
        if not visible:
            raise QueryError(f"project_id is required: {why or 'the index holds no project yet'}"
                             f"{'; you may search no project' if hidden_default else ' (index a folder first)'}")
        shown = ", ".join(visible[:20]) + (", ..." if len(visible) > 20 else "")
        if hidden_default:
            raise QueryError(f"project_id is required: {why}; your projects: {shown}; pass one, "
                             "or all_projects: true")
        raise QueryError(f"project_id is required: the index holds {len(visible)} projects ({shown}); pass one, "
                         "or all_projects: true")

    async def query_status(self, request_id: Any = None) -> CallToolResult:
        try:
            request_id = _text_arg(request_id, "request_id")
        except QueryError as exc:
            return structured_error(exc)
        try:
            state = self.registry.get(request_id)
        except RequestNotFound as exc:
            return structured_error(exc, request_id)
        return structured_result({"query_status": self._status(state.snapshot())})

    def _status(self, status: dict[str, Any]) -> dict[str, Any]:
        """A request's ``status`` (:meth:`RequestState.snapshot`) as this session may see it: a remote
        caller's (``per_caller``) ``error``, the failed search's own message, as
        :func:`sleuth.scaleout.remote_message` shows it (the search's answer already did)."""
        if self.access.per_caller and isinstance(status.get("error"), str):
            status["error"] = remote_message(status["error"], self.engine, self.access.allowed)
        return status

    async def query_cancel(self, request_id: Any = None, reason: Any = None) -> CallToolResult:
        try:
            request_id = _text_arg(request_id, "request_id")
            why = _text_arg(reason, "reason") if reason is not None else "cancelled by query_cancel"
        except QueryError as exc:
            return structured_error(exc)
        try:
            state, was_running = self.registry.cancel(request_id, why)
        except RequestNotFound as exc:
            return structured_error(exc, request_id)
        status = self._status(state.snapshot())
        status["cancel_requested"] = was_running
        if not was_running:
            status["note"] = f"the request had already ended ({state.state}); nothing to cancel"
        return structured_result({"query_status": status})

    async def project_memory_read(self, body_handle: Any = None, offset: Any = None,
                                  max_chars: Any = None) -> CallToolResult:
        def run() -> dict[str, Any]:
            _text_arg(body_handle, "body_handle")
            start = _int_arg(offset, "offset", 0)
            size = _int_arg(max_chars, "max_chars", BODY_PAGE_DEFAULT_CHARS)
            return {"body": read_body(self.engine, body_handle.strip(), start, size, self.access.allowed)}
        return await self._run(run)

    async def project_memory_record(self, kind: Any = None, title: Any = None, body: Any = None,
                                    project_id: Any = None, tags: Any = None, related: Any = None,
                                    supersedes: Any = None, record_id: Any = None,
                                    request_id: Any = None) -> CallToolResult:
        def run() -> dict[str, Any]:
            for name, value in (("kind", kind), ("title", title), ("body", body)):
                _text_arg(value, name)
            rid = _text_arg(record_id, "record_id") if record_id is not None else None
            if request_id is not None:
                _text_arg(request_id, "request_id")
            pid = self._project(_text_arg(project_id, "project_id")) if project_id is not None else None
            if rid is not None:
                revised = self.access.document(rid)  # the same answer for a hidden and a missing record
                pid = pid or revised.project_id  # revising: the record's own project by default
            pid = pid or self._project(INBOX_PROJECT_ID)
            receipt = self.records.write(
                pid, kind, title, body, _strings(tags, "tags"), _strings(related, "related"),
                _strings(supersedes, "supersedes"), rid, create_project=pid == INBOX_PROJECT_ID,
                request_id=request_id)
            return {"record": self.access.shown(receipt.as_dict())}
        return await self._run(run, request_id if isinstance(request_id, str) else None)

    async def project_memory_forget(self, record_id: Any = None, project_id: Any = None) -> CallToolResult:
        def run() -> dict[str, Any]:
            rid = _text_arg(record_id, "record_id")
            pid = self._project(_text_arg(project_id, "project_id")) if project_id is not None else None
            self.access.document(rid)  # the same answer for a hidden and a missing record
            return {"forget": self.records.forget(rid, pid)}
        return await self._run(run)

    async def project_memory_doctor(self, project_id: Any = None) -> CallToolResult:
        def run() -> dict[str, Any]:
            pid = self.access.project(_text_arg(project_id, "project_id")) if project_id is not None else None
            report = doctor(self.engine, pid, visible=self.access.allowed).model_dump()
            if self.access.per_caller:  # a remote user: index-wide counters and server paths say
                # when (and how often) other projects are written, and where the index lives
                report.update(generation=0, postings_generation=0, index_dir="")
                report = hide_backends(report)  # and where the catalog and Milvus are
            return {"doctor": self.access.shown(report)}
        return await self._run(run)

    def tools(self) -> list[Tool]:
        """The MCP tools, each advertising its contract's input schema and the output schema."""
        specs = [
            (self.project_memory_search, "project_memory_search", SEARCH_DESCRIPTION, search_input_schema(),
             READ_ONLY),
            (self.query_status, "query_status", "State of a running or recent project_memory_search by its "
             "request_id: its phase, elapsed_ms and each lane's state.", STATUS_SCHEMA, STATUS),
            (self.query_cancel, "query_cancel", "Cancel a running project_memory_search by its request_id; it "
             "ends with error QUERY_CANCELLED.", CANCEL_SCHEMA, CONTROL),
            (self.project_memory_read, "project_memory_read", "Read the whole body behind a search result's "
             "body_handle, one page at a time (offset / next_offset, in characters).", READ_SCHEMA, READ_ONLY),
            (self.project_memory_record, "project_memory_record", "Record a decision, plan, experiment record, "
             "result or note into a project's memory (a markdown file with front matter, indexed at once). "
             "Returns record_id and a new revision_id; pass record_id to revise, supersedes to replace older "
             "records.", RECORD_SCHEMA, WRITE),
            (self.project_memory_forget, "project_memory_forget", "Forget a record written with "
             "project_memory_record: deletes its file and removes it from every lane. Indexed files of the "
             "project's folders cannot be forgotten this way.", FORGET_SCHEMA, DESTRUCTIVE),
            (self.project_memory_doctor, "project_memory_doctor", "Index health: documents and blocks per "
             "project, skipped files with reasons, stale documents (changed or deleted since indexed) and which "
             "retrieval lanes are available. Read-only.", DOCTOR_SCHEMA, READ_ONLY),
        ]
        tools = []
        for fn, name, description, schema, hints in specs:
            control = fn in (self.query_status, self.query_cancel)
            tool = MemoryTool.from_function(fn, name=name, description=description, annotations=hints,
                                            structured_output=False, meta=dict(CONTROL_META) if control else None)
            tool.parameters = schema
            set_output_schema(tool, OUTPUT_SCHEMA)
            tools.append(tool)
        return tools


def _text_arg(value: Any, name: str) -> str:
    """A required non-blank string argument, stripped; QueryError naming ``name`` otherwise."""
    if value is None:
        raise QueryError(f"{name} is required")
    if not isinstance(value, str):
        raise QueryError(f"{name} must be a string, got {type(value).__name__}")
    if not value.strip():
        raise QueryError(f"{name} must not be empty")
    return value.strip()


def _int_arg(value: Any, name: str, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int | float) \
            or (isinstance(value, float) and not (math.isfinite(value) and value.is_integer())):
        raise QueryError(f"{name} must be an integer; got {shown_value(value)}")
    return int(value)


def _strings(value: Any, name: str) -> list[str]:
    if value is None:
        return []
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise QueryError(f"{name} must be an array of non-empty strings")
    return [v.strip() for v in value]
