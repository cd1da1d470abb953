"""Argument checks and input bounds of the stateless text tools. Every failure is a QueryError
whose message names the argument, for the tools' ``{"status": "error", "error": ...}`` answer."""

from __future__ import annotations

import math
import re
from typing import Any

from sleuth.errors import QueryError, shown_value
from sleuth.text.query import QUERY_MAX_CHARS

#: Most documents one ``search_documents`` / ``search_index_query`` call takes.
DOCUMENTS_MAX_COUNT = 10_000
#: Most characters (code points) all documents of one call hold together.
DOCUMENTS_MAX_TOTAL_CHARS = 5_000_000
#: Most candidates one ``search_fuzzy`` call takes.
CANDIDATES_MAX_COUNT = 10_000
#: Most characters (code points) all candidates of one call hold together.
CANDIDATES_MAX_TOTAL_CHARS = 1_000_000
#: Largest ``top_k`` accepted (no call can return more documents than this anyway).
TOP_K_MAX = DOCUMENTS_MAX_COUNT

_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def _type_name(value: Any) -> str:
    return {dict: "object", list: "array", str: "string", bool: "boolean", type(None): "null"}.get(
        type(value), type(value).__name__)


def check_query(value: Any) -> str:
    """The ``query`` argument: a string with something besides whitespace, at most ``QUERY_MAX_CHARS``.

    Returned unchanged (not stripped): the tools echo the original query.
    Raises:
        QueryError: missing, not a string, blank, too long, or holding a lone surrogate.
    """
    if value is None:
        raise QueryError("query is required: a non-blank string")
    if not isinstance(value, str):
        raise QueryError(f"query must be a string, got {_type_name(value)}")
    if not value.strip():
        raise QueryError("query is required: a non-blank string")
    if len(value) > QUERY_MAX_CHARS:
        raise QueryError(f"query is {len(value)} characters long; the limit is {QUERY_MAX_CHARS}")
    if _SURROGATE_RE.search(value):
        raise QueryError("query is not valid Unicode: it holds a lone surrogate code point")
    return value


def check_texts(value: Any, name: str, max_count: int, max_total_chars: int) -> list[str]:
    """A list-of-strings argument (``documents``, ``candidates``) within its bounds.

    Raises:
        QueryError: missing, not an array of strings, more than ``max_count`` items, more than
            ``max_total_chars`` code points in all, or an item holding a lone surrogate.
    """
    if value is None:
        raise QueryError(f"{name} is required: an array of strings")
    if not isinstance(value, list | tuple):
        raise QueryError(f"{name} must be an array of strings, got {_type_name(value)}")
    if len(value) > max_count:
        raise QueryError(f"too many {name}: {len(value)}; the limit is {max_count} per call")
    total = 0
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise QueryError(f"{name}[{i}] must be a string, got {_type_name(item)}")
        total += len(item)
        if _SURROGATE_RE.search(item):
            raise QueryError(f"{name}[{i}] is not valid Unicode: it holds a lone surrogate code point")
    if total > max_total_chars:
        raise QueryError(f"{name} hold {total} characters in all; the limit is {max_total_chars} per call")
    return list(value)


def _number(value: Any, problem: str) -> float:
    """``value`` (a number or numeric text, not a boolean) as a float; QueryError(``problem``) otherwise."""
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise QueryError(problem)
    try:
        return float(value.strip()) if isinstance(value, str) else float(value)
    except (ValueError, OverflowError):
        raise QueryError(problem) from None


def check_top_k(value: Any, default: int) -> int:
    """``top_k``: an integer from 1 to ``TOP_K_MAX``; ``None`` gives ``default``.

    Integral floats (``3.0``) and numeric strings (``"3"``) are accepted.
    Raises:
        QueryError: a boolean, a fraction, non-numeric text, or a value out of range.
    """
    if value is None:
        return default
    problem = f"top_k must be an integer from 1 to {TOP_K_MAX}; got {shown_value(value)}"
    number = _number(value, problem)
    if not math.isfinite(number) or number != int(number) or not 1 <= number <= TOP_K_MAX:
        raise QueryError(problem)
    return int(number)


def check_threshold(value: Any, default: float) -> float:
    """``threshold``: a number from 0.0 to 1.0; ``None`` gives ``default``. Numeric strings are accepted.

    Raises:
        QueryError: a boolean, non-numeric text, NaN, or a value outside [0, 1].
    """
    if value is None:
        return default
    problem = f"threshold must be a number from 0.0 to 1.0; got {shown_value(value)}"
    number = _number(value, problem)
    if not 0.0 <= number <= 1.0:  # NaN fails this too
        raise QueryError(problem)
    return number
