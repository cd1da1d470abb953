"""Summaries and text tables for evaluation results. Pure functions, no I/O.

``summarize`` turns per-query metrics (the output of :func:`sleuth.eval.metrics.per_query`) into a
summary dict; ``format_table`` renders rows of such dicts as an aligned plain-text table or as a
GitHub-flavoured markdown table.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = ["format_table", "summarize"]


def summarize(per_query: Mapping[str, Mapping[str, float]]) -> dict[str, float]:
    """Mean of every metric over the queries: ``{metric: mean, ..., "queries": n}``.

    ``per_query`` is ``{query_id: {metric: value}}``; every query must carry the same metric
    names (``ValueError`` otherwise, and for an empty input, whose mean is undefined). Metric
    order follows the first query.
    """
    if not per_query:
        raise ValueError("no per-query metrics to summarize")
    rows = list(per_query.values())
    names = list(rows[0])
    for qid, row in per_query.items():
        if set(row) != set(names):
            raise ValueError(f"query {qid!r} has metrics {sorted(row)}, expected {sorted(names)}")
    n = len(rows)
    summary: dict[str, float] = {name: math.fsum(row[name] for row in rows) / n for name in names}
    summary["queries"] = n
    return summary


def _cell(value: object, precision: int) -> str:
    """Render one cell: floats with ``precision`` decimals, None as empty, the rest with str()."""
    if value is None:
        return ""
    if isinstance(value, float):
        return f"{value:.{precision}f}"
    return str(value)


def _is_numeric(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def format_table(
    rows: Sequence[Mapping[str, object]],
    columns: Sequence[str],
    *,
    markdown: bool = False,
    precision: int = 4,
) -> str:
    """Render ``rows`` as a table with one column per name in ``columns`` (also the header).

    Floats are shown with ``precision`` decimals; a key missing from a row (or ``None``) is an
    empty cell. Columns whose non-empty cells are all numbers are right-aligned, others left.
    Plain text (default): header, a dashed rule, rows, columns separated by two spaces.
    ``markdown=True``: a GitHub markdown table (``|`` in cells escaped, ``---:`` for numeric
    columns). The result has no trailing newline.
    """
    if not columns:
        raise ValueError("format_table needs at least one column")
    cells = [[_cell(row.get(col), precision) for col in columns] for row in rows]
    if markdown:
        cells = [[c.replace("|", "\\|") for c in line] for line in cells]
    header = [c.replace("|", "\\|") if markdown else c for c in columns]
    numeric = [
        any(row.get(col) is not None for row in rows)
        and all(_is_numeric(row[col]) for row in rows if row.get(col) is not None)
        for col in columns
    ]
    widths = [max([len(header[i])] + [len(line[i]) for line in cells]) for i in range(len(columns))]
    if markdown:
        widths = [max(w, 3) for w in widths]

    def fmt(line: Sequence[str]) -> list[str]:
        return [c.rjust(w) if num else c.ljust(w) for c, w, num in zip(line, widths, numeric, strict=True)]

    if markdown:
        rule = [("-" * (w - 1) + ":") if num else "-" * w for w, num in zip(widths, numeric, strict=True)]
        out = ["| " + " | ".join(fmt(line)) + " |" for line in [header, rule, *cells]]
    else:
        rule = ["-" * w for w in widths]
        out = ["  ".join(fmt(line)).rstrip() for line in [header, rule, *cells]]
    return "\n".join(out)
