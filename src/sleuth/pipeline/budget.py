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
#: Passage length, in characters, of the best-ranked results when not every result can have one.
MIXED_PASSAGE_CHARS = 160
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
    #: Headings above the passage (for a PDF, ``("page N",)``).
    heading_path: tuple[str, ...] = ()


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
    return Passage(p.text[start:end], p.start + start, p.start + end, highlights, p.heading_path)


def _render(c: Candidate, passages: int, max_chars: int) -> dict[str, Any]:
    chosen = [trim_passage(p, max_chars) for p in c.passages[:passages]] if max_chars else []
    shown = sum(p.end - p.start for p in chosen)
    out = dict(c.fields)
    out["summary"] = [
        {"text": p.text, "source_span": {"start": p.start, "end": p.end},
         "highlights": [[s, e] for s, e in p.highlights],
         **({"heading_path": list(p.heading_path)} if p.heading_path else {})}
        for p in chosen
    ]
    if chosen:
        out["source_span"] = {"start": chosen[0].start, "end": chosen[0].end}
    out["truncated"] = shown < c.body_chars
    return out


def _array_bytes(item_sizes: Sequence[int]) -> int:
    """Bytes of a JSON array of items of these compact sizes: brackets and commas included."""
    return 2 + sum(item_sizes) + max(0, len(item_sizes) - 1)


def fit_to_budget(groups: Sequence[Sequence[Candidate]], budget_bytes: int) -> tuple[list[list[dict[str, Any]]],
                                                                                   FitReport]:
    """Render every group's results at the richest summary level that fits ``budget_bytes``.

    1. The richest uniform level (:data:`SUMMARY_LEVELS`) at which every result fits.
    2. Else every result stays, and the best-ranked ones (rank by rank across groups) keep one
       passage of ``MIXED_PASSAGE_CHARS`` -- as many as fit -- the others none.
    3. Else the lowest-ranked results (of the largest group first) are left out until the rest fit
       without passages, and step 2 gives passages to the best of them in the room left.

    Returns:
        (rendered groups, report); ``result_bytes(rendered) == report.result_bytes <= budget_bytes``.
    """
    def sizes(level: tuple[int, int]) -> list[list[int]]:
        return [[json_bytes(_render(c, *level)) for c in g] for g in groups]

    for passages, max_chars in SUMMARY_LEVELS:
        if sum(_array_bytes(g) for g in sizes((passages, max_chars))) <= budget_bytes:
            rendered = [[_render(c, passages, max_chars) for c in g] for g in groups]
            return rendered, FitReport(passages, max_chars, 0, result_bytes(rendered), budget_bytes)
    bare, rich = sizes((0, 0)), sizes((1, MIXED_PASSAGE_CHARS))
    keep = [len(g) for g in groups]
    omitted = 0
    while sum(_array_bytes(b[:n]) for b, n in zip(bare, keep, strict=True)) > budget_bytes and any(keep):
        largest = max(range(len(keep)), key=lambda i: (keep[i], -i))
        keep[largest] -= 1
        omitted += 1
    # Upgrade the best-ranked kept results to one passage while the budget allows.
    order = sorted(((i, g) for g, n in enumerate(keep) for i in range(n)))
    chosen: set[tuple[int, int]] = set()
    used = [list(b[:n]) for b, n in zip(bare, keep, strict=True)]
    for i, g in order:
        used[g][i] = rich[g][i]
        if sum(_array_bytes(u) for u in used) > budget_bytes:
            used[g][i] = bare[g][i]
            break
        chosen.add((i, g))
    rendered = [[_render(c, 1 if (i, g) in chosen else 0, MIXED_PASSAGE_CHARS if (i, g) in chosen else 0)
                 for i, c in enumerate(groups[g][:keep[g]])] for g in range(len(groups))]
    passages = 1 if chosen else 0
    return rendered, FitReport(passages, MIXED_PASSAGE_CHARS if chosen else 0, omitted, result_bytes(rendered),
                               budget_bytes)
