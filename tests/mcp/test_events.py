"""The per-call event hook can never block or fail a call."""

from __future__ import annotations

import json
import threading
from pathlib import Path

import pytest

from sleuth.errors import ConfigError
from sleuth.mcp.events import JsonLinesSink, NonBlockingHook, ToolCallEvent


def test_calls_return_at_once_while_the_hook_is_stuck() -> None:
    release = threading.Event()
    seen: list[str] = []

    def stuck(event: ToolCallEvent) -> None:
        release.wait(600)
        seen.append(event.tool_name)

    hook = NonBlockingHook(stuck, queue_max_events=2)
    calls = threading.Thread(target=lambda: [hook(ToolCallEvent.now("search_guides")) for _ in range(5)])
    calls.start()
    calls.join(120)  # a safety net: the calls return while the hook is still stuck
    assert not calls.is_alive() and not release.is_set() and seen == []
    assert hook.dropped >= 2  # one taken by the worker at most, two queued, the rest dropped
    release.set()
    hook.close()
    assert seen == ["search_guides"] * (5 - hook.dropped)


def test_a_failing_hook_is_logged_and_later_events_still_arrive(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[str] = []

    def flaky(event: ToolCallEvent) -> None:
        if not seen:
            seen.append("failed")
            raise RuntimeError("no dataLayer")
        seen.append(event.tool_name)

    hook = NonBlockingHook(flaky)
    hook(ToolCallEvent.now("a"))
    hook(ToolCallEvent.now("b"))
    hook.close()
    assert seen == ["failed", "b"]
    assert "tool-call event hook failed" in caplog.text


def test_json_lines_sink(tmp_path: Path) -> None:
    path = tmp_path / "events.jsonl"
    sink = JsonLinesSink(path)
    assert path.exists() and path.read_text() == ""
    sink(ToolCallEvent("search_guides", "2026-01-02T03:04:05.678Z"))
    assert [json.loads(line) for line in path.read_text().splitlines()] == [
        {"event": "mcp_tool_call", "tool_name": "search_guides", "time": "2026-01-02T03:04:05.678Z"}]
    with pytest.raises(ConfigError, match="cannot write the events file"):
        JsonLinesSink(tmp_path / "missing" / "events.jsonl")
