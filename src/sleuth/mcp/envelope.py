"""The response envelope and argument checks shared by the wott-style tools (seed 000)."""

from __future__ import annotations

import math
from typing import Any

from mcp.server.mcpserver.exceptions import ToolError

from sleuth.errors import shown_value
from sleuth.indexer import now_rfc3339


def envelope(**fields: Any) -> dict[str, Any]:
    """``{"success": true, **fields, "timestamp": RFC 3339 UTC with milliseconds}``."""
    return {"success": True, **fields, "timestamp": now_rfc3339()}


def required_text(value: Any, name: str, message: str) -> str:
    """A non-blank string argument, stripped.

    Raises ToolError: ``message`` when it is missing or blank, "<name> must be a string" for
    another type.
    """
    if value is not None and not isinstance(value, str):
        raise ToolError(f"{name} must be a string, got {type(value).__name__}")
    if value is None or not value.strip():
        raise ToolError(message)
    return value.strip()


def bounded_int(value: Any, name: str, default: int, low: int, high: int) -> int:
    """An integer argument in ``[low, high]``; ``None`` gives ``default``.

    Accepts ints, integral floats (``5.0``) and numeric strings (``"5"``); rejects booleans,
    fractions, non-numeric text and out-of-range values with a ToolError naming the field.
    """
    if value is None:
        return default
    problem = f"{name} must be an integer from {low} to {high}"
    if isinstance(value, bool):
        raise ToolError(f"{problem}; got {value!r}")
    number: float
    if isinstance(value, int | float):
        number = value
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise ToolError(f"{problem}; got {shown_value(value)}") from None
    else:
        raise ToolError(f"{problem}; got {type(value).__name__}")
    if (isinstance(number, float) and not (math.isfinite(number) and number.is_integer())) \
            or not low <= number <= high:
        raise ToolError(f"{problem}; got {shown_value(value)}")
    return int(number)
