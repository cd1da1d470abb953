"""The page's JSON API: query parameters in, Engine calls, JSON out (the pipeline the CLI and MCP use).

Every function here takes the open :class:`sleuth.engine.Engine` and the page's checked parameters
and returns a JSON-ready dict; errors are :class:`sleuth.errors.SleuthError` with a message for
people (the app turns them into ``{"error": ...}`` answers). Parameters are hostile until checked:
each has a length or range bound, and projects outside those the page may show are reported as
not found, exactly like unknown ones.

Filters the pipeline does not know yet (``path``, ``tag``, and ``offset`` before the CLI-filter work
adds them to :class:`sleuth.types.SearchFilters` / :class:`sleuth.types.SearchRequest`) are passed
through when the model has a field for them, and otherwise named in the answer's
``ignored_filters`` so the page can say so: never applied after the lanes' top-k, which would make
pages of results wrong.
"""

from __future__ import annotations

import fcntl
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import PurePosixPath
from typing import Any

from sleuth.engine import Engine, document_not_found
from sleuth.errors import DocumentNotFound, ProjectNotFound, QueryError, shown
from sleuth.ingest.roles import FILTER_KINDS, ROLES, SOURCE_FAMILIES, time_bound_ns
from sleuth.remote import hide_server_paths, names_server_path
from sleuth.store.folder import WRITE_LOCK_FILE
from sleuth.text.query import QUERY_MAX_CHARS
from sleuth.types import SearchFilters, SearchRequest
from sleuth.ui.locations import PageIndex, location_label

#: Results per page: default and bound.
UI_LIMIT_DEFAULT = 10
UI_LIMIT_MAX = 50
#: Highest offset of a page of results.
UI_OFFSET_MAX = 1000
#: Passages shown per hit, and their length in characters.
UI_PASSAGES = 3
UI_PASSAGE_MAX_CHARS = 320
#: Values of one repeatable filter (kind, role, ...), and the characters of each.
FILTER_VALUES_MAX = 20
FILTER_VALUE_MAX_CHARS = 200
#: Characters of a document's text sent to the document view (the rest is cut and said so).
DOCUMENT_MAX_CHARS = 1_000_000
#: Block ids marked in one document view.
MARKED_BLOCKS_MAX = 1000
#: Skipped files listed on the index page (all are counted by reason).
SKIPPED_LISTED_MAX = 200

#: Kinds offered by the page's kind filter: the one vocabulary of every surface (sleuth.ingest.roles).
KIND_LABELS: tuple[str, ...] = FILTER_KINDS

#: Field names the CLI-filter work may give path and tag filters, tried in order.
_PASSTHROUGH_FILTER_FIELDS: dict[str, tuple[str, ...]] = {
    "path": ("paths", "path_globs", "path"),
    "tag": ("tags",),
}


def _values(params: Mapping[str, Sequence[str]], name: str) -> list[str]:
    """The non-empty values of a repeatable (or comma-separated) parameter, checked for bounds."""
    out: list[str] = []
    for raw in params.get(name, []):
        for value in raw.split(","):
            value = value.strip()
            if not value:
                continue
            if len(value) > FILTER_VALUE_MAX_CHARS or "\x00" in value:
                raise QueryError(f"{name} values must be at most {FILTER_VALUE_MAX_CHARS} characters, without NUL")
            out.append(value)
    if len(out) > FILTER_VALUES_MAX:
        raise QueryError(f"at most {FILTER_VALUES_MAX} {name} values may be given")
    return list(dict.fromkeys(out))


def _one(params: Mapping[str, Sequence[str]], name: str) -> str:
    values = params.get(name, [])
    return values[-1].strip() if values else ""


def _integer(params: Mapping[str, Sequence[str]], name: str, default: int, low: int, high: int) -> int:
    raw = _one(params, name)
    if not raw:
        return default
    if not re.fullmatch(r"\d{1,7}", raw):
        raise QueryError(f"{name} must be a whole number from {low} to {high}, got {raw[:40]!r}")
    return min(max(int(raw), low), high)


def _date_ns(raw: str, name: str, end_of_day: bool) -> int | None:
    """A date (``YYYY-MM-DD``, UTC; the whole day for ``until``) or an ISO 8601 date-time
    (``2024-03-05T10:30``, ``...Z``, ``...+02:00``; no zone: UTC) as nanoseconds since the epoch,
    as the CLI's ``--since`` / ``--until`` read them (:func:`sleuth.ingest.roles.time_bound_ns`)."""
    if not raw:
        return None
    ns = time_bound_ns(raw, end_of_day)
    if ns is None:
        raise QueryError(f"{name} must be a date (2024-03-05) or a date and time (2024-03-05T10:30, "
                         f"UTC unless a zone is given), got {raw[:40]!r}")
    return ns


def _projects(engine: Engine, asked: list[str], allowed: Sequence[str] | None) -> list[str] | None:
    """The projects to search: ``asked`` (each must exist and be allowed), else every allowed one."""
    known = set(engine.project_ids())
    visible = known if allowed is None else known & set(allowed)
    for p in asked:
        if p not in visible:
            raise ProjectNotFound(f"project not found: {shown(p)!r}")
    if asked:
        return asked
    return None if allowed is None else sorted(visible)


def search_request(engine: Engine, params: Mapping[str, Sequence[str]],
                   allowed: Sequence[str] | None = None) -> tuple[SearchRequest, list[str]]:
    """The SearchRequest of the page's parameters, and the filters given that cannot be applied yet.

    Parameters: ``q`` (the query), ``project``, ``kind``, ``role``, ``family`` (repeatable or
    comma-separated), ``since`` and ``until`` (a date or an ISO 8601 date-time, inclusive, on the
    recorded time; see :func:`_date_ns`),
    ``path`` and ``tag`` (passed through when the pipeline has them), ``limit`` (1 to
    :data:`UI_LIMIT_MAX`), ``offset``.

    Raises:
        QueryError: a parameter is malformed or out of bounds; ProjectNotFound: a project is not shown.
    """
    query = _one(params, "q")
    if len(query) > QUERY_MAX_CHARS:
        raise QueryError(f"the query is longer than {QUERY_MAX_CHARS} characters")
    if "\x00" in query:  # as MCP's arguments (sleuth.mcp.limits); argv cannot hold one
        raise QueryError(f"the query holds a NUL character (U+0000) at character {query.index(chr(0))}")
    roles = _values(params, "role")
    for role in roles:
        if role not in ROLES:
            raise QueryError(f"unknown role {role!r}: one of {', '.join(ROLES)}")
    families = _values(params, "family")
    for family in families:
        if family not in SOURCE_FAMILIES:
            raise QueryError(f"unknown family {family!r}: one of {', '.join(SOURCE_FAMILIES)}")
    after = _date_ns(_one(params, "since"), "since", end_of_day=False)
    before = _date_ns(_one(params, "until"), "until", end_of_day=True)
    if after is not None and before is not None and after > before:
        raise QueryError("since must not be later than until")
    filters: dict[str, Any] = {"kinds": [k.lower() for k in _values(params, "kind")], "roles": roles,
                               "families": families, "recorded_after_ns": after, "recorded_before_ns": before}
    ignored: list[str] = []
    for name, fields in _PASSTHROUGH_FILTER_FIELDS.items():
        values = _values(params, name)
        if not values:
            continue
        field = next((f for f in fields if f in SearchFilters.model_fields), None)
        if field is None:
            ignored.append(name)
        else:
            annotation = str(SearchFilters.model_fields[field].annotation)
            filters[field] = values if "list" in annotation else values[0]
    request: dict[str, Any] = {
        "query": query, "projects": _projects(engine, _values(params, "project"), allowed),
        "limit": _integer(params, "limit", UI_LIMIT_DEFAULT, 1, UI_LIMIT_MAX), "explain": True,
        "passages": UI_PASSAGES, "passage_max_chars": UI_PASSAGE_MAX_CHARS, "filters": SearchFilters(**filters),
    }
    offset = _integer(params, "offset", 0, 0, UI_OFFSET_MAX)
    if offset:
        if "offset" in SearchRequest.model_fields:
            request["offset"] = offset
        else:
            ignored.append("offset")
    return SearchRequest(**request), ignored


def _page_indexes(engine: Engine, doc_ids: Sequence[str]) -> dict[str, PageIndex]:
    out: dict[str, PageIndex] = {}
    for doc_id in doc_ids:
        doc = engine.catalog.document(doc_id)
        if doc is not None:
            out[doc_id] = PageIndex(doc.text)
    return out


def _server_roots(engine: Engine) -> list[str]:
    """Every root folder of the index: what :func:`sleuth.remote.hide_server_paths` rewrites."""
    return [r for rs in engine.catalog.roots().values() for r in rs]


def _shown_root(engine: Engine, root: str | None, roots: list[str] | None) -> str | None:
    """A document's ``root`` as the page shows it: the folder, or for a remote user (``sleuth serve
    --http``; ``roots``: :func:`_server_roots`, read once per answer) its name only
    (:func:`sleuth.remote.hide_server_paths`: no server path); ``roots`` None: a local user."""
    if roots is None or not root:
        return root
    return str(hide_server_paths(root, str(engine.index_dir), roots))


def search_json(engine: Engine, params: Mapping[str, Sequence[str]],
                allowed: Sequence[str] | None = None, remote: bool = False) -> dict[str, Any]:
    """A search for the page: the SearchResponse's JSON, each hit with a ``location`` (label, page
    of a PDF, cell of a notebook when the pipeline gives one) and each passage with its ``location``.
    ``remote``: each hit's ``root`` is its folder's name, not the server's path (:func:`_shown_root`).

    Raises:
        QueryError, ProjectNotFound: see :func:`search_request`; what :meth:`Engine.search` raises.
    """
    request, ignored = search_request(engine, params, allowed)
    if not request.query.strip():
        return {"query": request.query, "hits": [], "result_count": 0, "ignored_filters": ignored, "lanes": [],
                "terms": [], "notice": None, "took_ms": 0.0}
    response = engine.search(request)
    pages = _page_indexes(engine, [h.doc_id for h in response.hits if h.format == "pdf"])
    out = response.model_dump(mode="json", exclude={"questions"})
    roots = _server_roots(engine) if remote else None
    for hit, row in zip(response.hits, out["hits"], strict=True):
        index = pages.get(hit.doc_id)
        cell = getattr(hit, "cell", None)
        first = hit.passages[0].start if hit.passages else None
        page = index.page_at(first) if index is not None and first is not None else None
        row["root"] = _shown_root(engine, row.get("root"), roots)
        row["location"] = {"page": page, "cell": cell,
                           "label": location_label(hit.format, hit.heading_path, hit.lines, page, cell)}
        for passage, prow in zip(hit.passages, row["passages"], strict=True):
            ppage = index.page_at(passage.start) if index is not None else None
            prow["location"] = location_label(hit.format, passage.heading_path, (), ppage)
    out["ignored_filters"] = ignored
    return out


def document_json(engine: Engine, doc_id: str, marked: Sequence[str],
                  allowed: Sequence[str] | None = None, remote: bool = False) -> dict[str, Any]:
    """The document view: the document's fields, its text (at most :data:`DOCUMENT_MAX_CHARS`) and its
    blocks in order, each with its text, location and ``matched`` when its id is in ``marked``.
    ``remote``: the ``root`` is its folder's name, not the server's path (:func:`_shown_root`).

    Raises:
        DocumentNotFound: no such document, or not in the projects shown.
    """
    if not doc_id or len(doc_id) > FILTER_VALUE_MAX_CHARS:
        raise DocumentNotFound(f"document not found: {doc_id[:FILTER_VALUE_MAX_CHARS]!r}")
    if remote and names_server_path(doc_id):
        # a remote user names documents as results show them: an absolute path would confirm a guess
        # at where the server keeps its files (attack session 32)
        raise document_not_found(doc_id)
    known = set(engine.project_ids())
    doc = engine.get(doc_id, projects=None if allowed is None else sorted(known & set(allowed)))
    wanted = set(marked[:MARKED_BLOCKS_MAX])
    text = doc.text[:DOCUMENT_MAX_CHARS]
    pages = PageIndex(doc.text) if doc.format == "pdf" else None
    blocks = []
    for b in doc.blocks:
        start, end = b["chars"]  # type: ignore[misc]
        if start >= len(text):
            break
        page = pages.page_at(start) if pages is not None else None
        blocks.append({"block_id": b["block_id"], "start": start, "end": min(end, len(text)),
                       "matched": b["block_id"] in wanted,
                       "location": location_label(doc.format, b["heading_path"], b["lines"], page)})  # type: ignore[arg-type]
    return {"doc_id": doc.doc_id, "project": doc.project, "path": doc.path,
            "root": _shown_root(engine, doc.root, _server_roots(engine) if remote else None), "title": doc.title,
            "kind": doc.kind, "tags": doc.tags, "mtime": doc.mtime, "revision": doc.revision, "text": text,
            "truncated": len(doc.text) > len(text), "chars": len(doc.text), "blocks": blocks,
            "pages": pages.pages if pages is not None else None}


def writer_running(engine: Engine) -> str | None:
    """Who is writing to the index now (``process PID (command)``), or None when nobody holds its
    write lock. Probes the lock with a shared, non-blocking ``flock`` released at once."""
    path = engine.index_dir / WRITE_LOCK_FILE
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)  # never a planted link or FIFO
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return engine.folder.write_lock.holder() or "another process"
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def skip_reason_key(reason: str) -> str:
    """The reason of a skipped file without its particulars (sizes, counts, quoted names, details
    after a colon), so that files skipped for one reason count together."""
    key = re.sub(r"\s*\([^)]*\)", "", reason).split(":")[0]
    key = re.sub(r"\d[\d.,]*\s*(?:[kKMG]i?B|bytes?|pages?)?", "N", key)
    return " ".join(key.split()) or reason


def status_json(engine: Engine, files: bool = False, allowed: Sequence[str] | None = None,
                remote: bool = False) -> dict[str, Any]:
    """The index page: counts, projects, per-root coverage, skipped files counted by reason (the
    first :data:`SKIPPED_LISTED_MAX` listed), stale files (with ``files``: one ``stat`` per file),
    whether a writer runs now, and the embedding progress (blocks with vectors of all blocks).

    ``remote`` (a user of ``sleuth serve --http``): what is index-wide and would tell of other
    users' projects -- the index folder, the generations, how far the postings are behind, the
    writer process, the embedding counts -- is left out (empty / None), as
    ``project_memory_doctor`` does for a remote caller, and no absolute server path is shown
    (:func:`sleuth.remote.hide_server_paths`)."""
    report = engine.status(files=files)
    shown = None if allowed is None else set(allowed)

    def visible(project: str) -> bool:
        return shown is None or project in shown

    skipped = [s for s in report.skipped_files if visible(s.project)]
    by_reason: dict[str, dict[str, Any]] = {}
    for s in skipped:
        row = by_reason.setdefault(skip_reason_key(s.reason), {"reason": skip_reason_key(s.reason), "files": 0,
                                                                "state": s.state})
        row["files"] += 1
    stale = None
    if report.files is not None:
        stale = [f.model_dump(mode="json") for f in report.files if f.freshness == "stale" and visible(f.project)]
    vector = report.vector_lane
    out = {
        "index_dir": report.index_dir, "generation": report.generation,
        "postings_generation": report.postings_generation, "postings_behind": report.postings_behind,
        "read_only": report.read_only, "lanes": report.lanes,
        "projects": [p.model_dump(mode="json") for p in report.projects if visible(p.project_id)],
        "coverage": [c.model_dump(mode="json") for c in report.coverage if visible(c.project)],
        "documents": sum(p.documents for p in report.projects if visible(p.project_id)),
        "blocks": sum(p.blocks for p in report.projects if visible(p.project_id)),
        "skipped": len(skipped),
        "skipped_by_reason": sorted(by_reason.values(), key=lambda r: (-r["files"], r["reason"])),
        "skipped_files": [s.model_dump(mode="json") for s in skipped[:SKIPPED_LISTED_MAX]],
        "problems": [p.model_dump(mode="json") for p in report.problems if visible(p.project)],
        "stale": stale,
        "writer": writer_running(engine),
        "embedding": {"available": vector.available, "reason": vector.reason, "model": vector.model,
                      "blocks_with_vectors": vector.blocks_with_vectors, "blocks": vector.blocks},
    }
    if remote:
        out.update(index_dir="", generation=None, postings_generation=None, postings_behind=0, writer=None)
        out["embedding"].update(blocks_with_vectors=None, blocks=None)
        out = hide_server_paths(out, str(engine.index_dir), _server_roots(engine))
    return out


def facets_json(engine: Engine, allowed: Sequence[str] | None = None, remote: bool = False) -> dict[str, Any]:
    """What the page's filters offer: the projects shown (with their roots: for a ``remote`` user
    their folder names only; and ``qualified``, those whose paths the page shows with their root's
    label, see :meth:`sleuth.engine.Engine.multi_root_projects`), kind labels, roles and families,
    and which of the filters the pipeline applies."""
    roots = {p: list(r) for p, r in sorted(engine.catalog.roots().items()) if allowed is None or p in allowed}
    if remote:
        roots = {p: [PurePosixPath(r).name for r in rs] for p, rs in roots.items()}
    qualified = sorted(engine.multi_root_projects() & set(roots))
    return {"projects": list(roots), "roots": roots, "qualified": qualified, "kinds": list(KIND_LABELS),
            "roles": list(ROLES),
            "families": list(SOURCE_FAMILIES), "query_max_chars": QUERY_MAX_CHARS, "limit_max": UI_LIMIT_MAX,
            "filters": {name: any(f in SearchFilters.model_fields for f in fields)
                        for name, fields in _PASSTHROUGH_FILTER_FIELDS.items()}
            | {"offset": "offset" in SearchRequest.model_fields}}
