"""What one MCP session may see: the projects of its ``--project`` allow list -- or, over HTTP, the
verified caller's projects -- and nothing else.

Every tool resolves the projects, documents and records a call names through :class:`Access`.
What does not exist and what the session may not see get the same answer, word for word -- one
message per kind of object (:func:`sleuth.errors.not_found`), naming only what the caller itself sent -- so no
answer tells a session that another project, or an id inside one, exists (as Elasticsearch's
security answers a denied index like a missing one).

Over HTTP (``sleuth serve --http``) one server answers many users: :data:`CURRENT_CALLER` holds the
:class:`Caller` of the call being served (set from the verified bearer token by
:mod:`sleuth.httpd.caller`, never from an argument), and an :class:`Access` made with
``per_caller=True`` sees only that caller's projects (within ``--project`` when both are given).
No caller set means no project at all: such an access fails closed.
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Iterable
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from sleuth.errors import DocumentNotFound, ProjectNotFound, not_found
from sleuth.remote import hide_server_paths
from sleuth.scaleout import project_roots, remote_message

if TYPE_CHECKING:
    from sleuth.engine import Engine
    from sleuth.store.catalog import DocumentRow

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Caller:
    """The verified user a call is served for (HTTP only).

    Attributes:
        user: the user name (the token's ``sub``); never shown to other users.
        projects: the projects the user may access, as the users file says now.
        scopes: the scopes granted to this request's token.
    """

    user: str
    projects: frozenset[str]
    scopes: frozenset[str]


#: The caller of the call being served; None over stdio (and outside a call).
CURRENT_CALLER: ContextVar[Caller | None] = ContextVar("sleuth_current_caller", default=None)


def caller_key() -> str | None:
    """The user name of the current caller (None: no caller, e.g. stdio) -- the key of every
    per-user structure (request registries)."""
    caller = CURRENT_CALLER.get()
    return None if caller is None else caller.user


class Access:
    """The projects one session may access, over one engine.

    Args:
        engine: the open index.
        allowed: project ids the session may access; None = every project of the index.
        per_caller: the projects come from :data:`CURRENT_CALLER` at each call (within
            ``allowed``); no caller = no project.
    """

    def __init__(self, engine: Engine, allowed: Collection[str] | None, per_caller: bool = False) -> None:
        self.engine = engine
        self.static = None if allowed is None else frozenset(allowed)
        self.per_caller = per_caller

    @property
    def allowed(self) -> frozenset[str] | None:
        """The project ids visible now; None = every project of the index."""
        if not self.per_caller:
            return self.static
        caller = CURRENT_CALLER.get()
        if caller is None:
            return frozenset()
        return caller.projects if self.static is None else caller.projects & self.static

    def error_message(self, exc: BaseException) -> str:
        """``exc``'s message as this session may see it: for a remote caller (``per_caller``)
        without where Milvus, the PostgreSQL catalog or the index is, nor who writes it
        (:func:`sleuth.scaleout.remote_message`; the whole message goes to the log); else unchanged."""
        message = str(exc)
        if not self.per_caller:
            return message
        shown = remote_message(exc, self.engine, self.allowed)
        if shown != message:
            log.warning("a remote caller's call failed: %s", message)
        return shown

    def shown(self, payload: Any) -> Any:
        """``payload`` as this session may see it: for a remote caller (``per_caller``) without an
        absolute server path (:func:`sleuth.remote.hide_server_paths`); else unchanged."""
        if not self.per_caller:
            return payload
        return hide_server_paths(payload, str(self.engine.index_dir), project_roots(self.engine, self.allowed))

    def visible(self, project_id: str) -> bool:
        """True when the session may see project ``project_id`` (whether or not it exists)."""
        allowed = self.allowed
        return allowed is None or project_id in allowed

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
