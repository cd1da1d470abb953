"""Query-focused summaries fitted to a byte budget. Pure.

A result's summary is a list of passages (the best blocks' best windows, each with highlight spans
in code points relative to the passage text). :func:`fit_to_budget` picks the richest summary
level -- passages per result and characters per passage, the same for every result -- at which
the result arrays, serialised as compact UTF-8 JSON, fit the byte budget; if even results without
summaries do not fit, the lowest-ranked results are left out (and counted). The budget therefore
bounds the answer exactly: ``result_bytes(groups) <= budget_bytes`` always holds on return.

Without a caller's budget, :func:`default_budget_bytes` scales with the number of unique results,
questions and source families, so one focused answer stays short and a broad one gets room.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: Summary levels, richest first: (passages per result, characters per passage).
SUMMARY_LEVELS: tuple[tuple[int, int], ...] = (
    (3, 900), (3, 600), (2, 500), (2, 360), (1, 360), (1, 240), (1, 160), (1, 100), (1, 60), (0, 0))
#: The default budget: a base, plus this much per unique result, per extra question and per extra
#: source family, capped; in bytes of compact UTF-8 JSON.
DEFAULT_BUDGET_BASE_BYTES = 2_000
DEFAULT_BUDGET_PER_RESULT_BYTES = 1_400
DEFAULT_BUDGET_PER_EXTRA_QUESTION_BYTES = 800
DEFAULT_BUDGET_PER_EXTRA_FAMILY_BYTES = 600
DEFAULT_BUDGET_MAX_BYTES = 32_000


@dataclass(frozen=True)
class Passage:
    """A window of a document: ``text`` = document[start:end] (code points), highlights relative to text."""

    text: str
    start: int
    end: int
    highlights: tuple[tuple[int, int], ...] = ()


@dataclass
class Candidate:
    """A result before its summary is chosen: its JSON fields and its passages, best first."""

    fields: dict[str, Any]
    passages: list[Passage] = field(default_factory=list)
    #: Characters of the document's body (what its blocks cover): a summary showing fewer is truncated.
    body_chars: int = 0


@dataclass(frozen=True)
class FitReport:
    """What :func:`fit_to_budget` chose: the level (passages, chars), results left out, bytes used."""

    passages_per_result: int
    passage_max_chars: int
    omitted_results: int
    result_bytes: int
    budget_bytes: int


def default_budget_bytes(unique_results: int, questions: int, source_families: int) -> int:
    """The byte budget used when the caller sets none (see the module docstring)."""
    budget = (DEFAULT_BUDGET_BASE_BYTES + DEFAULT_BUDGET_PER_RESULT_BYTES * unique_results
              + DEFAULT_BUDGET_PER_EXTRA_QUESTION_BYTES * max(0, questions - 1)
              + DEFAULT_BUDGET_PER_EXTRA_FAMILY_BYTES * max(0, source_families - 1))
    return min(DEFAULT_BUDGET_MAX_BYTES, budget)


def json_bytes(value: Any) -> int:
    """Size of ``value`` as compact UTF-8 JSON, in bytes (the measure budgets are checked in)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def result_bytes(groups: Sequence[Sequence[dict[str, Any]]]) -> int:
    """Bytes of every group's result array (compact UTF-8 JSON), summed."""
    return sum(json_bytes(list(g)) for g in groups)


def trim_passage(p: Passage, max_chars: int) -> Passage:
    """``p`` cut to at most ``max_chars`` code points, keeping its first highlight in view, cut at
    whitespace when one is near; highlights outside the window are dropped."""
    if len(p.text) <= max_chars:
        return p
    first = p.highlights[0][0] if p.highlights else 0
    start = max(0, min(first - max_chars // 5, len(p.text) - max_chars))
    end = start + max_chars
    if start > 0:
        ws = p.text.find(" ", start, min(end, start + 30))
        if ws != -1:
            start = ws + 1
    if end < len(p.text):
        ws = p.text.rfind(" ", max(start, end - 30), end)
        if ws > start:
            end = ws
    highlights = tuple((s - start, e - start) for s, e in p.highlights if s >= start and e <= end)
    return Passage(p.text[start:end], p.start + start, p.start + end, highlights)


def _render(c: Candidate, passages: int, max_chars: int) -> dict[str, Any]:
    chosen = [trim_passage(p, max_chars) for p in c.passages[:passages]] if max_chars else []
    shown = sum(p.end - p.start for p in chosen)
    out = dict(c.fields)
    out["summary"] = [
        {"text": p.text, "source_span": {"start": p.start, "end": p.end},
         "highlights": [[s, e] for s, e in p.highlights]}
        for p in chosen
    ]
    if chosen:
        out["source_span"] = {"start": chosen[0].start, "end": chosen[0].end}
    out["truncated"] = shown < c.body_chars
    return out


def fit_to_budget(groups: Sequence[Sequence[Candidate]], budget_bytes: int) -> tuple[list[list[dict[str, Any]]],
                                                                                   FitReport]:
    """Render every group's results at the richest level that fits ``budget_bytes``.

    Returns:
        (rendered groups, report). Results are dropped (lowest rank of the largest group first)
        only when even summaries of zero passages do not fit.
    """
    for passages, max_chars in SUMMARY_LEVELS:
        rendered = [[_render(c, passages, max_chars) for c in g] for g in groups]
        used = result_bytes(rendered)
        if used <= budget_bytes:
            return rendered, FitReport(passages, max_chars, 0, used, budget_bytes)
    omitted = 0
    while used > budget_bytes and any(rendered):
        largest = max(range(len(rendered)), key=lambda i: (len(rendered[i]), -i))
        rendered[largest].pop()
        omitted += 1
        used = result_bytes(rendered)
    return rendered, FitReport(0, 0, omitted, used, budget_bytes)
