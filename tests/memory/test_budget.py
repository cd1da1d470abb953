"""Summaries fitted to byte budgets: the budget always holds, richer levels win when they fit."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sleuth.pipeline.budget import (
    DEFAULT_BUDGET_MAX_BYTES,
    Candidate,
    Passage,
    default_budget_bytes,
    fit_to_budget,
    result_bytes,
    trim_passage,
)


def candidate(i: int, text: str) -> Candidate:
    fields = {"rank": i, "record_id": f"doc{i}", "title": f"Title {i}", "source_length": len(text)}
    return Candidate(fields, [Passage(text, 10, 10 + len(text), ((0, 4),))], body_chars=len(text))


def test_whole_summary_when_it_fits() -> None:
    groups, report = fit_to_budget([[candidate(1, "word " * 20)]], 10_000)
    (result,) = groups[0]
    assert result["summary"] == [{"text": ("word " * 20)[:100], "source_span": {"start": 10, "end": 110},
                                  "highlights": [[0, 4]]}]
    assert result["truncated"] is False and report.passages_per_result == 3 and report.omitted_results == 0
    assert result["source_span"] == {"start": 10, "end": 110}


def test_tight_budget_shortens_then_drops() -> None:
    cands = [candidate(i, "alpha beta gamma " * 100) for i in range(10)]
    groups, report = fit_to_budget([cands], 2_000)
    assert report.result_bytes == result_bytes(groups) <= 2_000
    assert report.passage_max_chars < 900
    groups, report = fit_to_budget([cands + cands], 1_000)
    assert result_bytes(groups) <= 1_000 and report.omitted_results > 0
    assert len(groups[0]) == 20 - report.omitted_results and report.passages_per_result == 0


def test_trim_keeps_the_first_highlight_and_code_points() -> None:
    text = "é" * 50 + " needle " + "😀" * 100
    p = Passage(text, 0, len(text), ((51, 57),))
    cut = trim_passage(p, 40)
    assert len(cut.text) <= 40 and cut.text[cut.highlights[0][0]:cut.highlights[0][1]] == "needle"
    assert text[cut.start:cut.end] == cut.text


def test_default_budget_adapts() -> None:
    assert default_budget_bytes(1, 1, 1) < default_budget_bytes(8, 1, 1) < default_budget_bytes(8, 3, 2)
    assert default_budget_bytes(500, 20, 3) == DEFAULT_BUDGET_MAX_BYTES


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(min_size=1, max_size=3000), min_size=1, max_size=25), st.integers(1_000, 40_000))
def test_budget_is_never_exceeded(texts: list[str], budget: int) -> None:
    groups, report = fit_to_budget([[candidate(i, t) for i, t in enumerate(texts)]], budget)
    assert result_bytes(groups) == report.result_bytes <= budget
