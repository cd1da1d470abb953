"""Stored bodies by ``body_handle``, in bounded pages (the one way to read a whole record)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sleuth.errors import DocumentNotFound, QueryError, not_found
from sleuth.freshness import row_freshness

if TYPE_CHECKING:
    from collections.abc import Set as AbstractSet

    from sleuth.engine import Engine

#: Characters per page when the caller asks for none, and the most one page may hold.
BODY_PAGE_DEFAULT_CHARS = 8_000
BODY_PAGE_MAX_CHARS = 20_000


def read_body(engine: Engine, handle: str, offset: int = 0, max_chars: int = BODY_PAGE_DEFAULT_CHARS,
              projects: AbstractSet[str] | None = None) -> dict[str, Any]:
    """One page of the body behind ``handle`` (``body:<record_id>@<revision_id>`` or ``entity:<node>``).

    Offsets are code points into the stored text. A handle of an older revision still reads the
    current text and says so (``revision_changed``).

    Returns:
        ``{record_id, revision_id, revision_changed, title, path, offset, end, next_offset (None
        at the end), source_length, text, index_freshness}``.
    Raises:
        QueryError: a malformed handle or an offset past the end.
        DocumentNotFound: the record or entity does not exist or is outside ``projects`` (one
            message for both: ``record not found or access denied: <record_id>``).
    """
    if not 1 <= max_chars <= BODY_PAGE_MAX_CHARS:
        raise QueryError(f"max_chars must be an integer from 1 to {BODY_PAGE_MAX_CHARS}; got {max_chars}")
    if offset < 0:
        raise QueryError(f"offset must be 0 or more; got {offset}")
    if handle.startswith("entity:"):
        node_id = handle.removeprefix("entity:")
        graph = engine.link_graph()
        node = graph.entities.get(node_id)
        if node is None or (projects is not None and node.project_id not in projects):
            raise DocumentNotFound(not_found("entity", node_id))
        titles = {d.doc_id: d.title for d in engine.catalog.documents(node.mentioned_by).values()}
        text = graph.entity_summary(node_id, titles)
        meta: dict[str, Any] = {"record_id": f"entity:{node.name}", "revision_id": "", "revision_changed": False,
                                "title": node.name, "path": "", "index_freshness": "current",
                                "mentioned_by": node.mentioned_by}
    else:
        record_id, sep, revision = handle.removeprefix("body:").partition("@")
        if not handle.startswith("body:") or not sep or not record_id:
            raise QueryError(f"body_handle must look like body:<record_id>@<revision_id>; got {handle!r}")
        doc = engine.catalog.document(record_id)
        if doc is None or (projects is not None and doc.project_id not in projects) or not engine.confined(doc):
            raise DocumentNotFound(not_found("record", record_id))
        text = doc.text
        meta = {"record_id": doc.doc_id, "revision_id": doc.revision, "revision_changed": doc.revision != revision,
                "title": doc.title, "path": doc.rel_path, "index_freshness": row_freshness(doc)}
    if offset > len(text):
        raise QueryError(f"offset {offset} is past the end of the body ({len(text)} characters)")
    end = min(len(text), offset + max_chars)
    return {**meta, "offset": offset, "end": end, "next_offset": end if end < len(text) else None,
            "source_length": len(text), "text": text[offset:end]}
