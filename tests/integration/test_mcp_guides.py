"""The guides profile over a real MCP stdio session, without any index (seed 001's answers)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.guides.fixture import BASE_URL, write_content
from tests.integration.conftest import run_cli
from tests.integration.mcp_session import session, text_of

#: The seed's inputSchema, verbatim.
SEED_001_SCHEMA = {
    "type": "object",
    "properties": {
        "query": {"type": "string", "description": "Words to match against guide titles, excerpts, and tags."},
        "limit": {"type": "integer", "minimum": 1, "maximum": 10,
                  "description": "Maximum matches to return. Defaults to 5 and cannot exceed 10."},
    },
    "required": ["query"],
}

FRACTIONAL_CTO_ANSWER = """2 guides matched "fractional cto".
1. Fractional CTO for Mid-Market and PE Portcos
https://pineapples.dev/blog/fractional-cto-services-mid-market-guide
A fractional CTO is the same senior operator week to week. Architecture, vendor, hiring, board-ready tech. \
No full-time hire. Not a rotating bench.
2. Fractional CTO Rates: What the Seat Returns
https://pineapples.dev/blog/fractional-cto-roi-business-case-mid-market
Fractional CTO rates depend on the seat, the days, and the scope. The return is the decision that gets made, \
and the spend that does not."""

VENDOR_ANSWER = """3 guides matched "vendor".
1. Software Vendor Management for Non-Technical Executives: How to Stop Bleeding Budget on Development Partners
https://pineapples.dev/blog/software-vendor-management
Vendor management - contracts, reviews and exits - for executives who do not code.
2. Vendor Due Diligence for PE and Mid-Market Buyers
https://pineapples.dev/blog/vendor-due-diligence
What to check in a software vendor before the deal closes.
3. Fractional CTO for Mid-Market and PE Portcos
https://pineapples.dev/blog/fractional-cto-services-mid-market-guide
A fractional CTO is the same senior operator week to week. Architecture, vendor, hiring, board-ready tech. \
No full-time hire. Not a rotating bench."""

#: The seed's clamp examples (missing, "", " ", "nope" -> 5; 0, 0.9, -3, 1.9 -> 1; "8" -> 8; 100 -> 10).
LIMITS: list[tuple[dict[str, Any], int]] = [
    ({}, 5), ({"limit": ""}, 5), ({"limit": " "}, 5), ({"limit": "nope"}, 5), ({"limit": 0}, 1),
    ({"limit": 0.9}, 1), ({"limit": -3}, 1), ({"limit": 1.9}, 1), ({"limit": "8"}, 8), ({"limit": 100}, 10),
]


@pytest.fixture(scope="module")
def guides_json(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("site")
    content = write_content(root / "content" / "blog")
    out = root / "guides.json"
    proc = run_cli("guides", "build", str(content), "--base-url", BASE_URL, "-o", str(out))
    assert proc.stdout == f"wrote 12 guides to {out}\n"
    return out


def test_guides_profile_answers_the_seeds_examples(guides_json: Path, tmp_path: Path) -> None:
    events = tmp_path / "events.jsonl"
    calls = [
        ("search_guides", {"query": "fractional cto", "limit": 2}),
        ("search_guides", {"query": "vendor"}),
        ("search_guides", {"query": "zzzz-not-a-guide", "limit": 1}),
        ("search_guides", {"query": "   "}),
        ("search_guides", {"query": "a"}),
        ("search_guides", {"query": 42}),
        ("search_guides", {"query": "fractional cto", "extra": True}),
        *[("search_guides", {"query": "pineapples", **limit}) for limit, _ in LIMITS],
    ]
    out = session(["--tools", "guides", "--guides", str(guides_json), "--events", str(events)], calls, cwd=tmp_path)
    assert set(out["tools"]) == {"search_guides"}
    tool = out["tools"]["search_guides"]
    assert tool.input_schema == SEED_001_SCHEMA and tool.title == "Search guides"
    assert tool.annotations.read_only_hint is True
    assert "full https://pineapples.dev URLs" in tool.description and "Does not fetch the site" in tool.description
    assert "search_guides" in out["instructions"]
    results = out["results"]
    assert not any(r.is_error for r in results)
    texts = [text_of(r) for r in results]
    assert texts[0] == FRACTIONAL_CTO_ANSWER
    assert texts[1] == VENDOR_ANSWER
    assert texts[2].splitlines()[:2] == ['1 guide matched "zzzz-not-a-guide".',
                                         "1. search_guides: What the Tool Returns"]
    assert texts[3:6] == ['No guides matched "".', 'No guides matched "a".', 'No guides matched "".']
    assert texts[6].startswith('3 guides matched "fractional cto".')  # no additionalProperties: extras ignored
    for text, (_, count) in zip(texts[7:], LIMITS, strict=True):
        assert text.splitlines()[0] == f'{count} {"guide" if count == 1 else "guides"} matched "pineapples".'
        assert len(text.splitlines()) == 1 + 3 * count
    lines = [json.loads(line) for line in events.read_text(encoding="utf-8").splitlines()]
    assert len(lines) == len(calls) and {(e["event"], e["tool_name"]) for e in lines} == {
        ("mcp_tool_call", "search_guides")}


def test_guides_profile_from_the_config_file(guides_json: Path, tmp_path: Path) -> None:
    index = tmp_path / "idx"  # settings only: no catalog is needed by these profiles
    index.mkdir()
    (index / "config.toml").write_text(f'tools = ["guides", "text"]\nguides = "{guides_json}"\n', encoding="utf-8")
    out = session(["--index", str(index)], [("search_guides", {"query": "due diligence"})], cwd=tmp_path)
    assert list(out["tools"]) == ["search_guides", "search_documents", "search_index_query", "search_fuzzy"]
    assert text_of(out["results"][0]).startswith('1 guide matched "due diligence".')


@pytest.mark.parametrize(
    ("args", "message"),
    [(["--tools", "guides"], "the guides tool profile needs a guides index: pass --guides FILE"),
     (["--tools", "guides", "--guides", "nope.json"], "guides index not found: nope.json"),
     (["--tools", "bogus"], "unknown tool profile(s) bogus; choose from memory, project, guides, text"),
     (["--tools", "memory"], "no index found: pass --index DIR"),
     (["--tools", "text", "--project", "hugo"], "--project limits the index tool profiles (memory, project)"),
     (["--tools", "project"], "no index found: pass --index DIR")],
)
def test_serve_refuses_bad_settings_with_one_line(tmp_path: Path, args: list[str], message: str) -> None:
    proc = run_cli("serve", *args, cwd=tmp_path, check=False, env={"SLEUTH_INDEX": "", "SLEUTH_TOOLS": ""})
    assert proc.returncode in (2, 3) and proc.stdout == ""
    assert proc.stderr.startswith("error: ") and message in proc.stderr and "Traceback" not in proc.stderr
