"""The scale-out parts of an index as ``sleuth status`` and ``doctor`` report them: where the
catalog lives (a SQLite file, or PostgreSQL: ``$SLEUTH_CATALOG_URL``) and the lanes in Milvus
(``milvus_uri``): where, which generation they reflect, a sync under way or stopped mid-way, and
the documents the syncs left out. Read from the catalog, plus Milvus' version (one call): no
sync, no model, no count of a collection's rows. Every URL is shown with its password redacted
(:func:`sleuth.store.urls.redact_url`)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Collection, Iterator
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import urlsplit

from sleuth.errors import IndexBusy, QueryError
from sleuth.remote import hide_paths_in
from sleuth.reports import CatalogBackend, LeftOutDocument, MilvusReport, MilvusSyncProgress
from sleuth.store.urls import redact_url

if TYPE_CHECKING:
    from sleuth.engine import Engine
    from sleuth.lanes.milvus import MilvusShared

#: Documents left out of Milvus that a report lists by name (all recorded ones are counted).
LEFT_OUT_LISTED_MAX = 20

T = TypeVar("T")

#: The answers Milvus gave during the report being made in this thread or task (:func:`one_report`),
#: by (who asked, question); None outside a report.
_REPORT_ANSWERS: ContextVar[dict[tuple[object, str], Any] | None] = ContextVar("sleuth_milvus_report_answers",
                                                                               default=None)


@contextlib.contextmanager
def one_report() -> Iterator[None]:
    """Within the block, one report (``sleuth status``, ``doctor``) is being made: each question
    to Milvus (:func:`asked_once`) is asked once, and the lanes' statuses and the Milvus report
    reuse its answer. Before, a doctor report reached Milvus five times for its version (the three
    lexical lanes, the vector lane and the Milvus report each asked) and three times for the same
    row count. Per thread or task (a context variable), so concurrent reports each ask afresh;
    a block nested in another shares the outer one's answers."""
    if _REPORT_ANSWERS.get() is not None:
        yield
        return
    token = _REPORT_ANSWERS.set({})
    try:
        yield
    finally:
        _REPORT_ANSWERS.reset(token)


def asked_once(owner: object, question: str, ask: Callable[[], T]) -> T:
    """``ask()``; within :func:`one_report`, the answer ``ask`` gave the first time ``owner`` (an
    object that reaches Milvus, compared by identity) asked ``question`` in this report."""
    answers = _REPORT_ANSWERS.get()
    if answers is None:
        return ask()
    key = (owner, question)
    if key not in answers:
        answers[key] = ask()
    return answers[key]  # type: ignore[no-any-return]


def catalog_backend(engine: Engine) -> CatalogBackend:
    """Where ``engine``'s catalog lives: its SQLite file, or its PostgreSQL URL redacted."""
    url = getattr(engine.catalog, "url", None)  # PgCatalog's
    if isinstance(url, str):
        return CatalogBackend(backend="postgresql", location=redact_url(url))
    return CatalogBackend(backend="sqlite", location=str(engine.catalog.path))


def milvus_shared(engine: Engine) -> MilvusShared | None:
    """The Milvus index shared by ``engine``'s Milvus lanes; None when it has none (no ``milvus_uri``)."""
    if engine.config.milvus_uri is None:
        return None
    from sleuth.lanes.milvus import MilvusShared

    for lane in engine.lanes.values():
        shared = getattr(lane, "shared", None)
        if isinstance(shared, MilvusShared):
            return shared
    return None


def _sync_progress(engine: Engine, progress: object) -> MilvusSyncProgress | None:
    """A sync that has not ended (``lex_sync``), running when another process holds the write lock."""
    if not isinstance(progress, dict):
        return None
    target, rebuild = progress["target"], bool(progress["rebuild"])  # checked by milvus_state.STATE
    with engine.folder.lane_files_writable() as free:
        pass
    if free:
        return MilvusSyncProgress(state="stopped", target_generation=target, rebuild=rebuild)
    holder = engine.folder.write_lock.holder() or None
    return MilvusSyncProgress(state="running", target_generation=target, rebuild=rebuild, holder=holder)


def left_out_documents(engine: Engine, projects: Collection[str] | None = None,
                       listed_max: int = LEFT_OUT_LISTED_MAX) -> tuple[int, bool, list[LeftOutDocument]]:
    """``(count, more, first)``: the documents the Milvus syncs recorded as left out
    (:data:`sleuth.store.milvus_state.LEFT_OUT`) that the catalog still holds, of ``projects``
    (None: all): how many, whether more were left out than recorded, and the first ``listed_max``
    (by project, then path). An unreadable record counts as none (logged)."""
    from sleuth.store.milvus_state import LEFT_OUT, LEFT_OUT_KEY, parse

    record = parse(engine.catalog.get_meta(LEFT_OUT_KEY), LEFT_OUT, LEFT_OUT_KEY)
    if record is None:
        return 0, False, []
    why = {str(d): str(r) for d, r in record["docs"]}
    docs = engine.catalog.documents(sorted(why))
    found = sorted((d for d in docs.values() if projects is None or d.project_id in projects),
                   key=lambda d: (d.project_id, d.rel_path, d.doc_id))
    return len(found), bool(record["more"]), [
        LeftOutDocument(record_id=d.doc_id, project_id=d.project_id, root=d.root, path=d.rel_path,
                        reason=why[d.doc_id]) for d in found[:listed_max]]


def milvus_report(engine: Engine, projects: Collection[str] | None = None,
                  listed_max: int = LEFT_OUT_LISTED_MAX) -> MilvusReport | None:
    """The lanes in Milvus as ``engine`` finds them (None: not in Milvus). Milvus is asked only
    its version (the client is opened if it was not: an unreachable server is reported, with the
    rest read from the catalog). Left-out documents of ``projects`` (None: all), the first
    ``listed_max`` listed (:func:`left_out_documents`)."""
    from sleuth.store.milvus_state import STATE, parse

    shared = milvus_shared(engine)
    if shared is None:
        return None
    generation = engine.catalog.generation()
    state = parse(engine.catalog.get_meta("milvus:state"), STATE, "milvus:state") or {}
    error = shared.unreachable()  # asked now: a client opened earlier keeps the version it found
    version = shared.index.server_version if error is None else None
    sync = _sync_progress(engine, state.get("lex_sync"))
    count, more, first = left_out_documents(engine, projects, listed_max)
    return MilvusReport(
        uri=redact_url(shared.settings.uri), collection=shared.settings.collection, reachable=error is None,
        error=error, server_version=version, generation=state.get("generation"), catalog_generation=generation,
        up_to_date=state.get("generation") == generation and sync is None,
        dense_generation=state.get("dense_generation"), sync=sync, left_out_count=count, left_out_more=more,
        left_out=first)


#: The fields of a Milvus report a remote caller sees (``sleuth serve --http``): whether its
#: projects' documents are searchable there, and which were left out; not where the servers are,
#: their version, the index-wide generations, nor the sync's target and holder (they tell when
#: other users' projects are written, and by which process).
MILVUS_REMOTE_FIELDS = ("reachable", "up_to_date", "left_out_count", "left_out_more", "left_out")
#: The details a Milvus lane's status gives (:meth:`sleuth.lanes.milvus._MilvusLexical.status`),
#: which a doctor report's ``lanes`` carry: the server's version and location, the index-wide
#: generation and row count. A remote caller sees none of them.
MILVUS_LANE_DETAILS = ("backend", "uri", "milvus_generation", "rows")
#: What a remote caller reads instead of why a lane in Milvus is down (the error names the server).
MILVUS_DOWN_REMOTE = "the lanes in Milvus are unavailable (sleuth doctor on the server says why)"


def hide_backends(report: dict[str, Any]) -> dict[str, Any]:
    """``report`` (a status or doctor report's ``model_dump``) as a remote caller sees it: the
    catalog's backend without its location, the Milvus report with ``MILVUS_REMOTE_FIELDS`` only,
    and its ``lanes`` (a doctor's) without ``MILVUS_LANE_DETAILS`` nor a reason naming the Milvus
    server (``MILVUS_DOWN_REMOTE`` instead). A new dict; ``report`` is not changed."""
    out = dict(report)
    if isinstance(out.get("catalog"), dict):
        out["catalog"] = {**out["catalog"], "location": ""}
    milvus = out.get("milvus")
    if isinstance(milvus, dict):
        out["milvus"] = {k: v for k, v in milvus.items() if k in MILVUS_REMOTE_FIELDS}
        if isinstance(out.get("lanes"), dict):
            out["lanes"] = {name: _lane_hidden(health, milvus) for name, health in out["lanes"].items()}
    return out


def _lane_hidden(health: Any, milvus: dict[str, Any]) -> Any:
    """A doctor report's lane family ``health`` (a dict) without the Milvus lanes' details, and
    without a reason that is the Milvus report's ``error`` or names its ``uri``."""
    if not isinstance(health, dict):
        return health
    out = dict(health)
    if isinstance(out.get("details"), dict):
        out["details"] = {k: v for k, v in out["details"].items() if k not in MILVUS_LANE_DETAILS}
    reason, error, uri = out.get("reason"), milvus.get("error"), milvus.get("uri")
    if isinstance(reason, str) and (reason == error or (isinstance(uri, str) and uri and uri in reason)):
        out["reason"] = MILVUS_DOWN_REMOTE
    return out


#: What a remote caller reads instead of where Milvus or the PostgreSQL catalog is (:func:`hide_locations`).
MILVUS_SHOWN, CATALOG_SHOWN = "<milvus>", "<catalog>"


#: How :class:`sleuth.store.pg.PgCatalog` begins the error of a catalog it cannot connect to, and
#: all a remote caller reads of such an error (libpq's words after it name the server's addresses).
CATALOG_UNREACHABLE = "cannot reach the catalog at "
CATALOG_UNREACHABLE_SHOWN = f"cannot reach the catalog at {CATALOG_SHOWN} (the server's log says why)"

#: The ports the clients use when a URL names none (pymilvus; libpq).
MILVUS_DEFAULT_PORT, POSTGRESQL_DEFAULT_PORT = 19530, 5432


def _location_texts(url: str, default_port: int) -> list[str]:
    """The texts of ``url`` an error message may quote: the URL itself, redacted or not, its
    ``host:port`` (``default_port`` when it names none) and its host when that has a dot (a
    domain name or an address; a bare name such as ``m`` may be any word of a message)."""
    texts = [url, redact_url(url)]
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError:  # a port that is not a number: the URL as it is
        host, port = None, None
    if host:
        texts.append(f"{host}:{port or default_port}")
        texts.append(f'"{host}", port {port or default_port}')  # libpq: connection to server at "H", port P
        if "." in host:
            texts.append(host)
    return [t for t in texts if t]


def hide_locations(value: Any, engine: Engine) -> Any:
    """``value`` (nested dicts, lists and strings: a search response's ``meta``, whose lanes'
    reasons quote the errors of Milvus' client) as a remote caller sees it: every mention of
    the Milvus URI and of the PostgreSQL catalog's URL (:func:`_location_texts`) replaced by
    ``MILVUS_SHOWN`` / ``CATALOG_SHOWN``. A new container for each dict and list; ``value`` is
    not changed. Meant for messages, not documents' text (a host name may be a word of it)."""
    needles: list[tuple[str, str]] = []
    if engine.config.milvus_uri:
        needles += [(t, MILVUS_SHOWN) for t in _location_texts(engine.config.milvus_uri, MILVUS_DEFAULT_PORT)]
    url = getattr(engine.catalog, "url", None)  # PgCatalog's
    if isinstance(url, str):
        needles += [(t, CATALOG_SHOWN) for t in _location_texts(url, POSTGRESQL_DEFAULT_PORT)]
    needles.sort(key=lambda n: -len(n[0]))  # the longest first: a URL before its host

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            if CATALOG_UNREACHABLE in v:  # the driver's words after it name addresses (a host's, resolved)
                return CATALOG_UNREACHABLE_SHOWN
            for text, shown in needles:
                v = v.replace(text, shown)
            return v
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    return walk(value) if needles else value


#: All a remote caller reads of an :class:`sleuth.errors.IndexBusy`: its message names the writing
#: process (its command line, a folder it indexes; with PostgreSQL, its address) and the index folder.
INDEX_BUSY_SHOWN = "another process is writing to the index: try again when it has finished"


def project_roots(engine: Engine, projects: Collection[str] | None) -> list[str]:
    """The roots of ``projects`` (None: of every project), from the catalog: the folders a caller
    limited to those projects may read shortened to their names."""
    return [r for project, rs in engine.catalog.roots().items() if projects is None or project in projects
            for r in rs]


def remote_message(error: BaseException | str, engine: Engine, projects: Collection[str] | None = None) -> str:
    """An error (an exception or its message) as a remote caller (``sleuth serve --http``) reads it:
    an IndexBusy as ``INDEX_BUSY_SHOWN``; else its message without where Milvus or the catalog is
    (:func:`hide_locations`), with the index folder as ``<index>`` (a storage error names it) and
    a root of the caller's ``projects`` (None: every project) as its folder's name (as
    :func:`sleuth.remote.hide_server_paths` shows it: a QueryError's "... is the file a.md under
    /srv/notes/en" names it; the roots come from the catalog, not asked for other errors: the catalog
    may be what failed). Another project's root is left as written: shortened, it would tell a caller
    guessing paths that it is one."""
    if isinstance(error, IndexBusy):
        return INDEX_BUSY_SHOWN
    message = hide_locations(str(error), engine)
    roots: list[str] = []
    if isinstance(error, QueryError):  # only then: the catalog may be what failed (a connect may take seconds)
        try:
            roots = project_roots(engine, projects)
        except Exception:  # noqa: BLE001 - the catalog is down (a driver's error too): its error is hidden above
            roots = []
    return hide_paths_in(message, str(engine.index_dir), roots)
