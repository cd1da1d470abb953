"""The search_guides tool adapter: exact answers, the one-sentence failure, the hook outside the search."""

from __future__ import annotations

import threading
from typing import Any

import anyio

from sleuth.guides import GuideEntry
from sleuth.mcp.events import ToolCallEvent
from sleuth.mcp.guides_tools import GUIDES_FAILURE_TEXT, GuidesTools, search_guides_description

ENTRIES = [GuideEntry(title="Vendor Due Diligence", excerpt="Check a vendor.", tags=["Vendor"],
                      url="https://pineapples.dev/blog/vendor-due-diligence")]


def call(tools: GuidesTools, **args: Any) -> tuple[bool, str]:
    result = anyio.run(lambda: tools.search_guides(**args))
    return bool(result.is_error), result.content[0].text


def test_answer_and_non_string_query() -> None:
    tools = GuidesTools(ENTRIES)
    assert call(tools, query="vendor") == (False, '1 guide matched "vendor".\n1. Vendor Due Diligence\n'
                                                  "https://pineapples.dev/blog/vendor-due-diligence\nCheck a vendor.")
    assert call(tools, query=42) == (False, 'No guides matched "".')
    assert call(tools, query=None, limit="nope") == (False, 'No guides matched "".')


def test_a_failing_search_answers_one_sentence() -> None:
    tools = GuidesTools(ENTRIES)
    tools.index = None  # type: ignore[assignment]  # any failure inside the search
    assert call(tools, query="vendor") == (True, GUIDES_FAILURE_TEXT)
    assert GUIDES_FAILURE_TEXT == "The guide search could not be completed."


def test_the_hook_sees_every_call_and_never_blocks_or_breaks_the_search() -> None:
    release = threading.Event()
    seen: list[ToolCallEvent] = []

    def slow_then_fail(event: ToolCallEvent) -> None:
        release.wait(600)
        seen.append(event)
        raise RuntimeError("dataLayer missing")

    tools = GuidesTools(ENTRIES, on_call=slow_then_fail)
    tools.index = None  # type: ignore[assignment]  # the hook still runs when the search fails
    assert call(tools, query="vendor") == (True, GUIDES_FAILURE_TEXT)
    tools = GuidesTools(ENTRIES, on_call=tools.on_call)
    assert call(tools, query="vendor")[1].startswith("1 guide matched")
    assert seen == []  # both calls answered while the hook was still stuck in the first event
    release.set()
    tools.on_call.close()  # type: ignore[union-attr]
    assert [e.tool_name for e in seen] == ["search_guides", "search_guides"]


def test_description_names_the_site_when_there_is_one() -> None:
    assert "full https://pineapples.dev URLs" in search_guides_description(ENTRIES)
    mixed = [*ENTRIES, GuideEntry(title="T", excerpt="E", tags=[], url="https://other.dev/t")]
    assert "full URLs" in search_guides_description(mixed)
    assert "Does not fetch the site" in search_guides_description(ENTRIES)
