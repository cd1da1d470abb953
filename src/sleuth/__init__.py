"""sleuth: local-first hybrid search over a project's knowledge, served to AI agents over MCP."""

from sleuth.types import Hit, SearchRequest, SearchResponse

__version__ = "0.1.0"

__all__ = ["Engine", "Hit", "SearchRequest", "SearchResponse", "__version__"]


def __getattr__(name: str) -> object:
    # Engine is imported lazily so `import sleuth` stays cheap (and cycle-free for the CLI).
    if name == "Engine":
        from sleuth.engine import Engine

        return Engine
    raise AttributeError(f"module 'sleuth' has no attribute {name!r}")
