"""sleuth: local-first hybrid search over a project's knowledge, served to AI agents over MCP."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from sleuth.engine import Engine
    from sleuth.types import Hit, SearchRequest, SearchResponse

__version__ = "0.1.0"

__all__ = ["Engine", "Hit", "SearchRequest", "SearchResponse", "__version__"]


def __getattr__(name: str) -> object:
    # The public API is imported lazily so `import sleuth` stays cheap: the thin `sleuth serve`
    # (a byte pipe to the broker) imports nothing heavier than the standard library.
    if name == "Engine":
        from sleuth.engine import Engine

        return Engine
    if name in ("Hit", "SearchRequest", "SearchResponse"):
        from sleuth import types

        return getattr(types, name)
    raise AttributeError(f"module 'sleuth' has no attribute {name!r}")
