"""The ``project_memory_search`` input: checked against seed 004's schema, with readable errors.

:func:`parse_memory_request` turns the tool's JSON arguments into a :class:`MemoryRequest`, or
raises :class:`sleuth.errors.QueryError` naming the field at fault (``filters.roles[1]``,
``queries[2].limit``, ...). Bounds are the seed's: up to 20 grouped queries of up to 400
characters, up to 19 variants of up to 400 characters, deadlines of 1,000 to 300,000 ms, byte
budgets of 1,000 to 1,000,000.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sleuth.errors import QueryError, shown_value
from sleuth.ingest.roles import FILTER_KINDS, clamp_recorded_ns
from sleuth.lanes import registry
from sleuth.text.query import QUERY_MAX_CHARS

#: Results per answer when the caller gives no ``limit``, and the largest ``limit`` accepted.
LIMIT_DEFAULT = 8
LIMIT_MAX = 50
#: Grouped queries (``queries``): how many, each one's result limit, and its text length in characters.
QUERIES_MAX = 20
GROUP_LIMIT_MAX = 20
GROUP_QUERY_MAX_CHARS = 400
GROUP_ID_MAX_CHARS = 100
#: ``query_variants``: how many, and each one's length in characters.
VARIANTS_MAX = 19
VARIANT_MAX_CHARS = 400
#: ``response_deadline_ms`` bounds and the default, in milliseconds.
DEADLINE_MIN_MS = 1_000
DEADLINE_MAX_MS = 300_000
DEADLINE_DEFAULT_MS = 30_000
#: ``response_budget_bytes`` bounds, in bytes.
BUDGET_MIN_BYTES = 1_000
BUDGET_MAX_BYTES = 1_000_000
#: Other string bounds, in characters, and list bounds.
REQUEST_ID_MAX_CHARS = 200
PROJECT_ID_MAX_CHARS = 200
INCLUDE_PROJECTS_MAX = 20
KIND_MAX_CHARS = 100
KINDS_MAX = 20

ROLES = ("experiment_record", "result", "method", "log", "paper", "plan", "config", "source", "report", "other")
SOURCE_FAMILIES = ("document", "code", "graph")
#: The seed's retrieval lanes (families of :mod:`sleuth.lanes.registry`; a registered lane may add one).
MEMORY_LANES = registry.FAMILIES

#: RFC 3339 date-time exactly as seed 004's schema pattern (valid calendar dates, zone required).
RFC3339_PATTERN = (
    r"^(?:(?:\d\d[2468][048]|\d\d[13579][26]|\d\d0[48]|[02468][048]00|[13579][26]00)-02-29|\d{4}-"
    r"(?:(?:0[13578]|1[02])-(?:0[1-9]|[12]\d|3[01])|(?:0[469]|11)-(?:0[1-9]|[12]\d|30)|(?:02)-"
    r"(?:0[1-9]|1\d|2[0-8])))T(?:(?:[01]\d|2[0-3]):[0-5]\d:[0-5]\d(?:\.\d+)?(?:Z|([+-](?:[01]\d|2[0-3]):[0-5]\d)))$"
)
_RFC3339 = re.compile(RFC3339_PATTERN)

TOP_LEVEL_FIELDS = ("query", "queries", "query_variants", "limit", "project_id", "include_project_ids",
                    "all_projects", "filters", "request_id", "response_deadline_ms", "response_budget_bytes")
FILTER_FIELDS = ("kinds", "roles", "source_families", "retrieval_lanes", "recorded_after", "recorded_before")
QUESTION_FIELDS = ("id", "query", "limit", "query_variants")


@dataclass(frozen=True)
class Question:
    """One independent question: its group id (``""`` for a single query), text, limit and variants."""

    id: str
    query: str
    limit: int
    variants: tuple[str, ...] = ()


@dataclass(frozen=True)
class MemoryFilters:
    """Filters applied inside every lane before its top-k; empty tuples / None mean "no filter".

    ``recorded_after_ns`` / ``recorded_before_ns`` are nanoseconds since the epoch (inclusive).
    """

    kinds: tuple[str, ...] = ()
    roles: tuple[str, ...] = ()
    source_families: tuple[str, ...] = ()
    lanes: tuple[str, ...] = ()
    recorded_after_ns: int | None = None
    recorded_before_ns: int | None = None

    @property
    def narrows_documents(self) -> bool:
        """True when the filters restrict documents beyond their project."""
        return bool(self.kinds or self.roles or self.source_families
                    or self.recorded_after_ns is not None or self.recorded_before_ns is not None)


@dataclass(frozen=True)
class MemoryRequest:
    """A checked ``project_memory_search`` call. ``grouped``: answer as ``groups`` (``queries`` given)."""

    questions: tuple[Question, ...]
    grouped: bool
    project_id: str | None
    include_project_ids: tuple[str, ...]
    all_projects: bool
    filters: MemoryFilters
    request_id: str | None
    deadline_ms: int
    budget_bytes: int | None
    limit: int


def _reject_unknown(obj: Mapping[str, Any], allowed: Sequence[str], where: str) -> None:
    unknown = sorted(set(obj) - set(allowed))
    if unknown:
        raise QueryError(f"{where}: unknown field(s) {', '.join(unknown)}; allowed: {', '.join(allowed)}")


def _text(value: Any, name: str, max_chars: int, required: bool = False) -> str | None:
    if value is None:
        if required:
            raise QueryError(f"{name} is required")
        return None
    if not isinstance(value, str):
        raise QueryError(f"{name} must be a string, got {type(value).__name__}")
    text = value.strip()
    if not text:
        raise QueryError(f"{name} must not be empty")
    if len(value) > max_chars:
        raise QueryError(f"{name} is {len(value)} characters long; at most {max_chars} are allowed")
    return text


def _integer(value: Any, name: str, low: int, high: int, default: int | None) -> int | None:
    if value is None:
        return default
    problem = f"{name} must be an integer from {low} to {high}"
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise QueryError(f"{problem}; got {shown_value(value)}")
    if (isinstance(value, float) and not (math.isfinite(value) and value.is_integer())) or not low <= value <= high:
        raise QueryError(f"{problem}; got {shown_value(value)}")
    return int(value)


def _list(value: Any, name: str, max_items: int) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise QueryError(f"{name} must be an array, got {type(value).__name__}")
    if len(value) > max_items:
        raise QueryError(f"{name} has {len(value)} items; at most {max_items} are allowed")
    return value


def _choices(value: Any, name: str, allowed: Sequence[str], max_items: int) -> tuple[str, ...]:
    items = _list(value, name, max_items)
    for i, item in enumerate(items):
        if item not in allowed:
            raise QueryError(f"{name}[{i}] must be one of {', '.join(allowed)}; got {item!r}")
    return tuple(dict.fromkeys(items))


def parse_rfc3339_ns(value: Any, name: str) -> int | None:
    """An RFC 3339 date-time (seed 004's pattern: zone required) as nanoseconds since the epoch.

    Raises:
        QueryError: not a string, or not a valid RFC 3339 date-time with a time zone.
    """
    if value is None:
        return None
    if not isinstance(value, str) or not _RFC3339.fullmatch(value):
        raise QueryError(f"{name} must be an RFC 3339 date-time with a time zone, "
                         f"e.g. 2026-09-01T00:00:00Z; got {shown_value(value)}")
    try:
        parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
        seconds = parsed.timestamp()
    except (ValueError, OverflowError):
        raise QueryError(f"{name} must be a date-time from year 0001 to 9999; got {shown_value(value)}") from None
    ns = int(seconds) * 1_000_000_000 + parsed.microsecond * 1000
    # Clamped to the catalog's 64-bit range (years 1678 to 2261): beyond it, every record is inside.
    return clamp_recorded_ns(ns)


def _variants(value: Any, name: str) -> tuple[str, ...]:
    items = _list(value, name, VARIANTS_MAX)
    out = [_text(v, f"{name}[{i}]", VARIANT_MAX_CHARS, required=True) for i, v in enumerate(items)]
    return tuple(dict.fromkeys(v for v in out if v))


def _filters(value: Any) -> MemoryFilters:
    if value is None:
        return MemoryFilters(lanes=registry.families())
    if not isinstance(value, dict):
        raise QueryError(f"filters must be an object, got {type(value).__name__}")
    _reject_unknown(value, FILTER_FIELDS, "filters")
    kinds = _list(value.get("kinds"), "filters.kinds", KINDS_MAX)
    kinds_checked = tuple(dict.fromkeys(
        (_text(k, f"filters.kinds[{i}]", KIND_MAX_CHARS, required=True) or "").lower() for i, k in enumerate(kinds)))
    for i, kind in enumerate(kinds_checked):
        if kind not in FILTER_KINDS:
            raise QueryError(f"filters.kinds[{i}] must be one of {', '.join(FILTER_KINDS)}; got {kind!r}")
    families = registry.families()
    lanes = _choices(value.get("retrieval_lanes"), "filters.retrieval_lanes", families, len(families))
    if value.get("retrieval_lanes") is not None and not lanes:
        raise QueryError(f"filters.retrieval_lanes must name at least one lane ({', '.join(families)})")
    after = parse_rfc3339_ns(value.get("recorded_after"), "filters.recorded_after")
    before = parse_rfc3339_ns(value.get("recorded_before"), "filters.recorded_before")
    if after is not None and before is not None and after > before:
        raise QueryError("filters.recorded_after is later than filters.recorded_before: no record can match")
    return MemoryFilters(
        kinds=kinds_checked,
        roles=_choices(value.get("roles"), "filters.roles", ROLES, len(ROLES)),
        source_families=_choices(value.get("source_families"), "filters.source_families", SOURCE_FAMILIES,
                                 len(SOURCE_FAMILIES)),
        lanes=lanes or families,
        recorded_after_ns=after,
        recorded_before_ns=before,
    )


def _questions(args: Mapping[str, Any], limit: int) -> tuple[tuple[Question, ...], bool]:
    query, queries = args.get("query"), args.get("queries")
    if query is not None and queries is not None:
        raise QueryError("give either query (one answer) or queries (grouped answers), not both")
    if queries is None:
        text = _text(query, "query", QUERY_MAX_CHARS)
        if text is None:
            raise QueryError("query or queries is required")
        return (Question("", text, limit, _variants(args.get("query_variants"), "query_variants")),), False
    if args.get("query_variants") is not None:
        raise QueryError("query_variants goes with query; with queries, give each item its own query_variants")
    items = _list(queries, "queries", QUERIES_MAX)
    if not items:
        raise QueryError("queries must hold at least one item")
    out: list[Question] = []
    seen: set[str] = set()
    for i, item in enumerate(items):
        where = f"queries[{i}]"
        if not isinstance(item, dict):
            raise QueryError(f"{where} must be an object with id and query, got {type(item).__name__}")
        _reject_unknown(item, QUESTION_FIELDS, where)
        qid = _text(item.get("id"), f"{where}.id", GROUP_ID_MAX_CHARS, required=True) or ""
        if qid in seen:
            raise QueryError(f"{where}.id {qid!r} is used twice; ids must be unique")
        seen.add(qid)
        text = _text(item.get("query"), f"{where}.query", GROUP_QUERY_MAX_CHARS, required=True) or ""
        q_limit = _integer(item.get("limit"), f"{where}.limit", 1, GROUP_LIMIT_MAX, min(limit, GROUP_LIMIT_MAX))
        out.append(Question(qid, text, q_limit or 1, _variants(item.get("query_variants"), f"{where}.query_variants")))
    return tuple(out), True


def parse_memory_request(args: Mapping[str, Any]) -> MemoryRequest:
    """Check ``project_memory_search`` arguments and normalise them.

    ``project_id`` may be left out (None in the request): the caller then searches its default
    project (:meth:`sleuth.mcp.memory_tools.MemoryTools.default_project`).

    Raises:
        QueryError: an unknown field, a value of the wrong type or out of bounds (a kind outside
            :data:`sleuth.ingest.roles.FILTER_KINDS`), or contradictory fields (query with queries,
            all_projects with project ids, recorded_after later than recorded_before); the message
            names the field.
    """
    _reject_unknown(args, TOP_LEVEL_FIELDS, "project_memory_search")
    limit = _integer(args.get("limit"), "limit", 1, LIMIT_MAX, LIMIT_DEFAULT) or LIMIT_DEFAULT
    questions, grouped = _questions(args, limit)
    all_projects = args.get("all_projects", False)
    if not isinstance(all_projects, bool):
        raise QueryError(f"all_projects must be true or false, got {all_projects!r}")
    project_id = _text(args.get("project_id"), "project_id", PROJECT_ID_MAX_CHARS)
    include = tuple(dict.fromkeys(
        _text(p, f"include_project_ids[{i}]", PROJECT_ID_MAX_CHARS, required=True) or ""
        for i, p in enumerate(_list(args.get("include_project_ids"), "include_project_ids", INCLUDE_PROJECTS_MAX))))
    if all_projects and (project_id or include):
        raise QueryError("all_projects cannot be combined with project_id or include_project_ids")
    return MemoryRequest(
        questions=questions,
        grouped=grouped,
        project_id=project_id,
        include_project_ids=tuple(p for p in include if p != project_id),
        all_projects=all_projects,
        filters=_filters(args.get("filters")),
        request_id=_text(args.get("request_id"), "request_id", REQUEST_ID_MAX_CHARS),
        deadline_ms=_integer(args.get("response_deadline_ms"), "response_deadline_ms", DEADLINE_MIN_MS,
                             DEADLINE_MAX_MS, DEADLINE_DEFAULT_MS) or DEADLINE_DEFAULT_MS,
        budget_bytes=_integer(args.get("response_budget_bytes"), "response_budget_bytes", BUDGET_MIN_BYTES,
                              BUDGET_MAX_BYTES, None),
        limit=limit,
    )
