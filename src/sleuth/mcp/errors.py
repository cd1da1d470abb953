"""The one place MCP answers and errors are built, in each seed's own shape.

- seed 004 (the memory tools, and what the broker and the server answer for them):
  ``structured_content`` ``{"error": {"code", "message", "request_id"?}}``, the message as text;
  the code is the error class's own (:attr:`sleuth.errors.SleuthError.code`).
- seed 003 (the text tools): the envelope ``{"status": "error", "error": message}``.
- seed 001 (``search_guides``): one sentence of text.
- seed 000 (the project tools): a tool error the SDK reports as ``Error executing tool <name>: <message>``.
"""

from __future__ import annotations

import json
from typing import Any

from mcp.types import CallToolResult, TextContent

from sleuth.errors import InternalError, SleuthError


def structured_result(payload: dict[str, Any], is_error: bool = False) -> CallToolResult:
    """``payload`` as structured content and JSON text (an error's text is its message)."""
    text = payload["error"]["message"] if is_error else json.dumps(payload, ensure_ascii=False)
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=payload,
                          is_error=is_error)


def error_code(exc: BaseException) -> str:
    """The MCP error code of ``exc``: its class's, ``INTERNAL_ERROR`` for anything not sleuth's."""
    return exc.code if isinstance(exc, SleuthError) else InternalError.code


def structured_error(exc: BaseException, request_id: str | None = None) -> CallToolResult:
    """Seed 004's tool error for ``exc``."""
    error: dict[str, Any] = {"code": error_code(exc), "message": str(exc)}
    if request_id:
        error["request_id"] = request_id
    return structured_result({"error": error}, is_error=True)


def envelope_result(payload: dict[str, Any]) -> CallToolResult:
    """Seed 003's envelope as a tool result (JSON text and structured content); errors flagged."""
    return CallToolResult(
        content=[TextContent(type="text", text=json.dumps(payload, ensure_ascii=False, indent=2))],
        structured_content=payload,
        is_error=payload.get("status") == "error",
    )


def envelope_error(message: str) -> CallToolResult:
    """Seed 003's ``{"status": "error", "error": message}``."""
    return envelope_result({"status": "error", "error": message})


def text_result(text: str, is_error: bool = False) -> CallToolResult:
    """A plain text answer (seed 001's one sentence, or any tool's bare error)."""
    return CallToolResult(content=[TextContent(type="text", text=text)], is_error=is_error)

