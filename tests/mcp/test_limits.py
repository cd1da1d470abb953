"""The shared input limits: one cap table that holds every seed schema's maxima and bounds every
other string and array, docs/LIMITS.md's table of them, and the checks' messages."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

from sleuth.mcp import memory_tools, project_tools, text_tools
from sleuth.mcp.guides_tools import SEARCH_GUIDES_SCHEMA
from sleuth.mcp.limits import (
    ARGUMENT_CAPS,
    ARGUMENT_MAX_DEPTH,
    ARGUMENT_VALUES_MAX,
    TOOL_LIMITS,
    ArgumentError,
    check_arguments,
)

LIMITS_DOC = Path(__file__).resolve().parents[2] / "docs" / "LIMITS.md"

SCHEMAS: dict[str, dict[str, Any]] = {
    "search_project": project_tools.SEARCH_PROJECT_SCHEMA,
    "get_notebook": project_tools.GET_NOTEBOOK_SCHEMA,
    "get_projects": project_tools.GET_PROJECTS_SCHEMA,
    "search_guides": SEARCH_GUIDES_SCHEMA,
    "search_documents": text_tools.SEARCH_DOCUMENTS_SCHEMA,
    "search_index_query": text_tools.SEARCH_INDEX_QUERY_SCHEMA,
    "search_fuzzy": text_tools.SEARCH_FUZZY_SCHEMA,
    "project_memory_search": memory_tools.SEARCH_INPUT_SCHEMA,
    "query_status": memory_tools.STATUS_SCHEMA,
    "query_cancel": memory_tools.CANCEL_SCHEMA,
    "project_memory_read": memory_tools.READ_SCHEMA,
    "project_memory_record": memory_tools.RECORD_SCHEMA,
    "project_memory_forget": memory_tools.FORGET_SCHEMA,
    "project_memory_doctor": memory_tools.DOCTOR_SCHEMA,
}


def paths(schema: dict[str, Any], prefix: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """(argument path, its schema) for every property and array item below ``schema``."""
    for name, sub in schema.get("properties", {}).items():
        path = f"{prefix}.{name}" if prefix else name
        yield path, sub
        yield from paths(sub, path)
        if "items" in sub:
            yield f"{path}[]", sub["items"]
            yield from paths(sub["items"], f"{path}[]")


def test_every_tool_has_caps_holding_its_schema_maxima_and_bounding_every_text_and_list() -> None:
    assert set(SCHEMAS) == set(ARGUMENT_CAPS)
    for tool, schema in SCHEMAS.items():
        caps = ARGUMENT_CAPS[tool]
        for path, sub in paths(schema):
            cap = caps.get(path)
            if "maxLength" in sub:
                assert cap is not None and cap.chars is not None and cap.chars.value == sub["maxLength"], (tool, path)
            if "maxItems" in sub:
                assert cap is not None and cap.items is not None and cap.items.value == sub["maxItems"], (tool, path)
            if sub.get("type") == "string" and "enum" not in sub:
                assert cap is not None and cap.chars is not None, f"{tool}.{path}: free text without its own cap"
            if sub.get("type") == "array":
                assert cap is not None and cap.items is not None, f"{tool}.{path}: a list without its own cap"
        assert set(caps) <= {p for p, _ in paths(schema)}, f"{tool}: caps for paths its schema lacks"


def test_the_limits_table_lists_every_limit_with_its_value() -> None:
    section = LIMITS_DOC.read_text(encoding="utf-8")
    rows = re.findall(r"^\| `([A-Z_]+)` \| ([\d,]+) \| (\w+) \|", section, re.MULTILINE)
    assert rows == [(limit.name, f"{limit.value:,}", limit.unit) for limit in TOOL_LIMITS]


@pytest.mark.parametrize(("tool", "arguments", "message"), [
    ("search_guides", {"query": "v" * 4_001}, "query is 4001 characters long; the limit is 4000"),
    ("search_project", {"project_id": "p", "query": "a\x00b"},
     "query holds a NUL character (U+0000) at character 1; arguments must be text"),
    ("project_memory_search", {"queries": [{"id": "q", "query": "x\ud800"}]},
     "queries[0].query is not valid Unicode: it holds a lone surrogate code point (U+D800) at character 1"),
    ("project_memory_search", {"query": "x", "query_variants": ["v"] * 20},
     "too many query_variants: 20; the limit is 19 per call"),
    ("project_memory_search", {"query": "x", "filters": {"kinds": ["k" * 101]}},
     "filters.kinds[0] is 101 characters long; the limit is 100"),
    ("search_fuzzy", {"query": "q", "candidates": ["c" * 600_000, "d" * 400_001]},
     "candidates hold 1000001 characters in all; the limit is 1000000 per call"),
    ("get_projects", {"zz": 1, "\udc00": 2}, "unknown argument(s) \\udc00, zz; get_projects takes no arguments"),
    ("search_guides", {"query": "x", "other": {"deep": "y" * 1_001}}, "other.deep is 1001 characters long; "
                                                                       "the limit is 1000"),
    ("search_guides", {"query": "x", "\ud800": 1}, "an argument name is not valid Unicode"),
    ("project_memory_record", {"kind": "note", "title": "t", "body": "b", "tags": ["x" * 101]},
     "tags[0] is 101 characters long; the limit is 100"),
    ("project_memory_read", {"body_handle": "b" * 501}, "body_handle is 501 characters long; the limit is 500"),
])
def test_check_arguments_names_the_argument_and_the_limit(tool: str, arguments: dict[str, Any], message: str) -> None:
    with pytest.raises(ArgumentError) as caught:
        check_arguments(tool, SCHEMAS[tool], arguments)
    assert str(caught.value).startswith(message)


def test_nesting_and_value_count_are_bounded() -> None:
    nested: Any = "x"
    for _ in range(ARGUMENT_MAX_DEPTH):
        nested = [nested]
    with pytest.raises(ArgumentError, match=f"nested {ARGUMENT_MAX_DEPTH + 1} levels deep; the limit is 8"):
        check_arguments("search_guides", SEARCH_GUIDES_SCHEMA, {"query": "x", "other": nested})
    many = {"query": "x", **{f"k{n}": list(range(100)) for n in range(ARGUMENT_VALUES_MAX // 100)}}
    with pytest.raises(ArgumentError, match="more than 100000 values"):
        check_arguments("search_guides", {"properties": {}}, many)
    check_arguments("search_documents", SCHEMAS["search_documents"],
                    {"query": "rate", "documents": ["d" * 500] * 10_000})  # the most allowed passes


def test_strings_reach_string_parameters_as_sent_and_json_arrays_are_parsed() -> None:
    tools = {t.name: t for t in text_tools.text_tools()}

    async def call() -> Any:
        return await tools["search_fuzzy"].run({"query": '["pythn"]', "candidates": '["python", "[\\"pythn\\"]"]'},
                                               None, convert_result=True)

    payload = json.loads(anyio.run(call).content[0].text)
    assert payload["query"] == '["pythn"]' and payload["best_match"] == '["pythn"]'
