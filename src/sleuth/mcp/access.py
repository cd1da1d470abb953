"""What one MCP session may see: the projects of its ``--project`` allow list, and nothing else.

Every tool resolves the projects, documents and records a call names through :class:`Access`.
What does not exist and what the session may not see get the same answer, word for word -- one
message per kind of object (:func:`sleuth.errors.not_found`), naming only what the caller itself sent -- so no
answer tells a session that another project, or an id inside one, exists (as Elasticsearch's
security answers a denied index like a missing one).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import TYPE_CHECKING, Any

from sleuth.errors import DocumentNotFound, ProjectNotFound, not_found

if TYPE_CHECKING:
    from sleuth.engine import Engine
    from sleuth.store.catalog import DocumentRow


class Access:
    """The projects one session may access, over one engine.

    Args:
        engine: the open index.
        allowed: project ids the session may access; None = every project of the index.
    """

    def __init__(self, engine: Engine, allowed: Collection[str] | None) -> None:
        self.engine = engine
        self.allowed = None if allowed is None else frozenset(allowed)

    def visible(self, project_id: str) -> bool:
        """True when the session may see project ``project_id`` (whether or not it exists)."""
        return self.allowed is None or project_id in self.allowed

    def filter(self, rows: Iterable[Any], key: str) -> list[Any]:
        """The rows (dicts) whose ``key`` names a project the session may see."""
        return [r for r in rows if self.visible(str(r[key]))]

    def project_ids(self) -> list[str]:
        """The ids of the index's projects the session may see, sorted."""
        return [p for p in self.engine.project_ids() if self.visible(p)]

    def project(self, project_id: str) -> str:
        """``project_id`` when it exists and the session may see it.

        Raises:
            ProjectNotFound: ``not_found("project", project_id)`` -- for a missing and a hidden project alike.
        """
        if not self.visible(project_id) or project_id not in self.engine.project_ids():
            raise ProjectNotFound(not_found("project", project_id))
        return project_id

    def document(self, doc_id: str, kind: str = "record") -> DocumentRow:
        """The stored document ``doc_id`` when its project is one the session may see.

        Raises:
            DocumentNotFound: ``not_found(kind, doc_id)`` -- for a missing and a hidden document alike.
        """
        doc = self.engine.catalog.document(doc_id)
        if doc is None or not self.visible(doc.project_id):
            raise DocumentNotFound(not_found(kind, doc_id))
        return doc
