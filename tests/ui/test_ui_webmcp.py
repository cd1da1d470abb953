"""The page as a WebMCP site (seed 001's setting), in headless chromium with the WebMCP polyfill
from npm (@mcp-b/webmcp-polyfill, pinned in tests/ui/package.json): chromium 156 has no
``document.modelContext`` of its own. The page's tool follows seed 001's ``search_guides``: the same
schema, readOnlyHint, the limit clamped whatever is passed, one sentence when the search fails, and
one ``webmcp_tool_call`` event per call that never fails the search."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.ui.conftest import POLYFILL, UiServer, open_page

#: Seed 001's schema (sleuth.mcp.guides_tools.SEARCH_GUIDES_SCHEMA), with the page's words for the query.
EXPECTED_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words to match against document titles, headings, and text."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 10,
                  "description": "Maximum matches to return. Defaults to 5 and cannot exceed 10."},
    },
    "required": ["query"],
}
FAILURE_TEXT = "The search could not be completed."

GET_TOOLS = """async () => (await document.modelContext.getTools()).map(t => ({
  name: t.name, title: t.title, description: t.description, inputSchema: t.inputSchema, annotations: t.annotations}))"""
EXECUTE = """async (args) => {
  const [tool] = await document.modelContext.getTools();
  return await document.modelContext.executeTool(tool, args);
}"""
#: The tool's execute called directly, with arguments a host that ignores the schema could pass.
EXECUTE_RAW = "async (args) => await window.sleuthWebMcp.tool.execute(args)"


@pytest.fixture()
def agent_page(browser: Any, ui_server: UiServer) -> Iterator[Any]:
    """The page loaded with the polyfill and an analytics ``dataLayer``, its tool registered."""
    assert POLYFILL.is_file(), f"the WebMCP polyfill is missing: run `make ui-test-deps` ({POLYFILL})"
    context = browser.new_context()
    context.add_init_script("window.dataLayer = [];")
    context.add_init_script(path=str(POLYFILL))
    tab = context.new_page()
    errors: list[str] = []
    tab.on("pageerror", lambda exc: errors.append(str(exc)))
    open_page(tab, ui_server.url)
    tab.wait_for_selector("html[data-webmcp='registered']")
    yield tab
    context.close()
    assert errors == []


def text_of(result: dict | str) -> str:
    """The text of a tool result (``executeTool`` answers it serialized, as Chromium's does)."""
    if isinstance(result, str):
        result = json.loads(result)
    assert [c["type"] for c in result["content"]] == ["text"]
    return result["content"][0]["text"]


def events(tab: Any) -> list[dict]:
    return tab.evaluate("window.dataLayer")


def test_the_tool_is_registered_with_the_seed_schema_and_read_only(agent_page: Any) -> None:
    (tool,) = agent_page.evaluate(GET_TOOLS)
    assert tool["name"] == "search_index"
    assert tool["title"] == "Search this index"
    assert tool["inputSchema"] == EXPECTED_SCHEMA
    assert tool["annotations"]["readOnlyHint"] is True
    assert "The limit defaults to 5 and cannot exceed 10." in tool["description"]


def test_a_call_answers_three_lines_per_match(agent_page: Any, ui_server: UiServer) -> None:
    text = text_of(agent_page.evaluate(EXECUTE, json.dumps({"query": "zebrafinch", "limit": 2})))
    _, body = ui_server.get("/api/search?q=zebrafinch&limit=2")
    first, second = body["hits"]
    assert text.split("\n") == [
        '2 documents matched "zebrafinch".',
        "1. Other project (other: secret.md, § Other project · lines 1-3)",
        f"{ui_server.base}#/doc/{first['doc_id']}",
        "# Other project The zebrafinch of the other project.",
        "2. Lanes (notes: notes/lanes.md, § Lanes > Zebrafinch notes · lines 5-7)",
        f"{ui_server.base}#/doc/{second['doc_id']}",
        "## Zebrafinch notes The zebrafinch lane notes say fusion happens after every lane answered.",
    ]
    one = text_of(agent_page.evaluate(EXECUTE, json.dumps({"query": "okapiwombat"})))
    assert one.split("\n")[:2] == ['1 document matched "okapiwombat".',
                                   "1. Retrieval evaluation (notes: papers/evaluation.pdf, § page 2)"]
    assert text_of(agent_page.evaluate(EXECUTE, json.dumps({"query": "   "}))) == 'No documents matched "".'
    assert events(agent_page) == [{"event": "webmcp_tool_call", "tool_name": "search_index", "page_path": "/"}] * 3


@pytest.mark.parametrize(("limit", "clamped"), [
    (None, 5), ("", 5), (" ", 5), ("nope", 5), (0, 1), (0.9, 1), (-3, 1), (1.9, 1), ("8", 8), (100, 10), (3, 3),
])
def test_the_limit_is_clamped_like_the_seed(agent_page: Any, limit: Any, clamped: int) -> None:
    assert agent_page.evaluate("(limit) => window.sleuthWebMcp.clampLimit(limit === null ? undefined : limit)",
                               limit) == clamped


def test_limits_outside_the_schema_are_clamped_not_refused(agent_page: Any) -> None:
    # 3 documents mention zebrafinch: a limit of 100 returns all 3, "nope" the default (5: all 3), 0 one.
    for limit, count in ((100, 3), ("nope", 3), (0, 1), ("2", 2)):
        text = text_of(agent_page.evaluate(EXECUTE_RAW, {"query": "zebrafinch", "limit": limit}))
        noun = "document" if count == 1 else "documents"
        assert text.split("\n")[0] == f'{count} {noun} matched "zebrafinch".'
        assert len(text.split("\n")) == 1 + 3 * count
    assert text_of(agent_page.evaluate(EXECUTE_RAW, {"query": 42})) == 'No documents matched "".'
    assert text_of(agent_page.evaluate(EXECUTE_RAW, None)) == 'No documents matched "".'


def test_a_failed_search_is_one_sentence_and_still_recorded(agent_page: Any) -> None:
    agent_page.route("**/api/search?*", lambda route: route.abort())
    result = json.loads(agent_page.evaluate(EXECUTE, json.dumps({"query": "zebrafinch"})))
    assert result == {"content": [{"type": "text", "text": FAILURE_TEXT}], "isError": True}
    agent_page.unroute("**/api/search?*")
    agent_page.route("**/api/search?*", lambda route: route.fulfill(
        status=400, content_type="application/json", body=json.dumps({"error": "the query is too long"})))
    assert text_of(agent_page.evaluate(EXECUTE, json.dumps({"query": "zebrafinch"}))) == FAILURE_TEXT
    assert events(agent_page) == [{"event": "webmcp_tool_call", "tool_name": "search_index", "page_path": "/"}] * 2


def test_analytics_never_fails_the_search(agent_page: Any) -> None:
    agent_page.evaluate("window.dataLayer = { push() { throw new Error('analytics down'); } }")
    assert text_of(agent_page.evaluate(EXECUTE, json.dumps({"query": "okapiwombat"}))).startswith(
        '1 document matched "okapiwombat".')
    agent_page.evaluate("delete window.dataLayer")
    assert text_of(agent_page.evaluate(EXECUTE, json.dumps({"query": "okapiwombat"}))).startswith(
        '1 document matched "okapiwombat".')


def test_without_webmcp_the_page_registers_nothing(page: Any, ui_server: UiServer) -> None:
    open_page(page, ui_server.url)
    page.wait_for_selector("html[data-webmcp]")
    assert page.evaluate("document.documentElement.dataset.webmcp") == "absent"
    assert page.evaluate("'modelContext' in document || 'modelContext' in navigator") is False


def test_an_older_navigator_model_context_is_used_too(browser: Any, ui_server: UiServer) -> None:
    """A host offering only ``navigator.modelContext.registerTool`` (the older draft) gets the same tool."""
    context = browser.new_context()
    context.add_init_script("""window.__registered = [];
      Object.defineProperty(navigator, 'modelContext', {value: {registerTool(tool) { window.__registered.push({
        name: tool.name, schema: tool.inputSchema, annotations: tool.annotations}); }}});""")
    tab = context.new_page()
    try:
        open_page(tab, ui_server.url)
        tab.wait_for_selector("html[data-webmcp='registered']")
        assert tab.evaluate("window.__registered") == [
            {"name": "search_index", "schema": EXPECTED_SCHEMA, "annotations": {"readOnlyHint": True}}]
    finally:
        context.close()
