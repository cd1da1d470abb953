"""The engine: one open index, as the CLI, the servers, the evaluation and the tests use it.

A small facade over the parts that do the work: the index folder (:mod:`sleuth.store.folder`:
catalog, postings, write lock), the lanes built from the registry (:mod:`sleuth.lanes.registry`),
the indexer (:mod:`sleuth.indexer`) and the search pipeline (:mod:`sleuth.pipeline`). Reads are
safe from many threads and processes; writes take the folder's write lock.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleuth.config import INDEX_DIR_NAME, Config, find_index_dir, load_config
from sleuth.errors import DocumentNotFound, IndexNotFound
from sleuth.indexer import Indexer, Record, content_hash_of, doc_id_for, now_rfc3339, project_id_for
from sleuth.ingest import PARSER_VERSION
from sleuth.ingest.roles import ns_to_rfc3339, recorded_at_text
from sleuth.ingest.tabular import TabularRule
from sleuth.lanes import registry
from sleuth.lanes.base import LaneContext, LaneStatus
from sleuth.lanes.model import SharedModel
from sleuth.locate import CATALOG_URL_ENV, catalog_url, has_catalog
from sleuth.locations import block_location
from sleuth.pipeline import Searcher
from sleuth.pipeline.retrieve import LANE_DELAY_ENV, lane_delays_from_env
from sleuth.reports import (
    STATUS_SKIPPED_LISTED_MAX,
    EmbeddingProgress,
    FileInfo,
    ProblemInfo,
    RootCoverage,
    SkippedFileInfo,
    StatusReport,
    VectorLaneReport,
    skip_summary,
    stored_skips,
)
from sleuth.store.folder import CATALOG_FILE, IndexFolder
from sleuth.types import DocumentContent, IndexReport, ProjectInfo, SearchRequest, SearchResponse

if TYPE_CHECKING:
    from sleuth.embed import Embedder
    from sleuth.lanes.graph import LinkGraph
    from sleuth.pipeline.requests import RequestState
    from sleuth.progress import Progress
    from sleuth.store.catalog import DocumentRow

__all__ = ["Engine", "Record", "content_hash_of", "doc_id_for", "now_rfc3339", "project_id_for"]

#: Lanes whose derived data lives in the memory of the process only (nothing saved), built when a
#: query first needs it: an indexing run that wrote no document does not warm them (see
#: :meth:`Engine.warm_lanes`).
MEMORY_ONLY_LANES = frozenset({"graph"})


def _ambiguity_hint(found: list[tuple[str, str, str, str]]) -> str:
    """What tells apart the documents ``found`` (``(doc_id, project_id, root, rel_path)``, two or
    more) that one path named, for the error of :meth:`Engine.resolve`: ``--project P`` for a
    document alone in its project, else its root-qualified path when no other document has it
    (two roots of one project), else that path with ``--project P``; the id always does.

    A new user's trial: the same folder indexed as two projects gave two documents both shown as
    ``p2/a/x.md``, and the hint "pass the root-qualified path" named a path refused the same way.
    """
    from collections import Counter

    from sleuth.pathglob import qualified_path

    in_project = Counter(pid for _, pid, _, _ in found)
    paths = Counter(qualified_path(root, rel) for _, _, root, rel in found)
    paths_in_project = Counter((pid, qualified_path(root, rel)) for _, pid, root, rel in found)
    ways: list[str] = []
    for _doc_id, pid, root, rel in found:
        path = qualified_path(root, rel)
        if in_project[pid] == 1:
            ways.append(f"--project {pid}")
        elif paths[path] == 1:
            ways.append(f"the path {path}")
        elif paths_in_project[(pid, path)] == 1:
            ways.append(f"the path {path} with --project {pid}")
    if not ways:
        return "pass the id of the one to read"
    return f"choose one with {' or '.join(dict.fromkeys(ways))}, or pass its id"


def _resolved_under(ref: str, root: Path) -> Path | None:
    """The absolute path ``ref`` with its symlinks resolved, when both its lexical form (``..``
    folded) and its resolved form lie strictly under ``root``; else None. A path outside ``root``
    is never resolved (the file system is not consulted for it), and one that cannot be resolved
    (a symlink loop, an unreadable folder, an embedded NUL) is None too, so every path outside
    the roots asked about answers alike."""
    lexical = Path(os.path.normpath(ref))
    if not lexical.is_relative_to(root) or lexical == root:
        return None
    try:
        inside = Path(ref).resolve(strict=False)
    except (RuntimeError, OSError, ValueError):  # a symlink loop, a permission error, a NUL byte
        return None
    return inside if inside.is_relative_to(root) and inside != root else None


def _is_file_root(ref: str, root: Path) -> bool:
    """Whether the absolute path ``ref`` is ``root`` itself, a root that is not a folder (a file given
    as a root, or one gone since), lexically and with its symbolic links resolved (as
    :func:`_resolved_under` checks a path under a root)."""
    if Path(os.path.normpath(ref)) != root or root.is_dir():
        return False
    try:
        return Path(ref).resolve(strict=False) == root
    except (RuntimeError, OSError, ValueError):
        return False


def document_not_found(ref: str) -> DocumentNotFound:
    """The error for a reference that names no document the caller may see (the same words whether
    it names none or one elsewhere)."""
    return DocumentNotFound(f"document not found: {ref!r} (give a document id, a block id or a path "
                            "relative to its root, as `sleuth search` shows them)")


class Engine:
    """An index folder opened for indexing and search.

    Args:
        index_dir: the folder (created when missing) holding ``catalog.sqlite3`` and ``postings/``.
        config: ranking settings; default: :func:`sleuth.config.load_config` of ``index_dir``.
        milvus_optional: open even when Milvus (``milvus_uri``) cannot be reached, for reports
            that say so (``sleuth status``, ``doctor``): the Milvus lanes then fail when used.
            Default: the open fails (StorageError).
        serving: open for searching and serving (``sleuth search``, ``get``, the MCP, HTTP and
            broker servers, the page): an unreachable Milvus does not fail the open; its lanes
            fail when used, named in each search's failed lanes, while the local lanes (rm3,
            exact, graph) answer. A refused Milvus setting still fails the open (ConfigError).
    Raises:
        IndexFormatError: the catalog was written by another version of sleuth.
        QueryError: ``$SLEUTH_FAULT_LANE_DELAY_MS`` is malformed.
    """

    def __init__(self, index_dir: str | Path, config: Config | None = None, milvus_optional: bool = False,
                 serving: bool = False) -> None:
        self.folder = IndexFolder(index_dir)
        self.index_dir = self.folder.index_dir
        self.catalog = self.folder.catalog
        self.postings = self.folder.postings
        config = config or load_config(self.index_dir)
        self.model = SharedModel(config.model, config.model_int8)
        context = LaneContext(self.index_dir, self.catalog, self.postings, config, self.model,
                              self.folder.lane_files_writable, self.folder.phrase_blocks)
        specs = registry.lane_specs()
        if config.milvus_uri is not None:  # the lanes Milvus answers for, under the same names
            from sleuth.lanes.milvus import milvus_lane_specs

            specs = tuple(milvus_lane_specs(specs, context, open_now=not milvus_optional, unreachable_ok=serving))
        #: Every registered lane, built over this index (retrieval and expansion lanes).
        self.lanes: dict[str, Any] = {spec.name: spec.create(context) for spec in specs}
        self.indexer = Indexer(self.folder, self.model, self.warm_lanes, self._tabular_rule,
                               lambda: self.config.archive_max_members)
        self.searcher = Searcher(self.catalog, self.lanes, config,
                                 lane_delays_from_env(os.environ.get(LANE_DELAY_ENV)),
                                 catch_up=self.folder.catch_up, postings_generation=self.postings.generation,
                                 postings_behind=lambda: self.folder.postings_behind)
        self.folder.catch_up(blocking=False)

    def _tabular_rule(self) -> TabularRule:
        """What indexing does with tabular data files, from the configuration (sleuth.ingest.tabular)."""
        return TabularRule(self.config.tabular, self.config.tabular_json_min_bytes)

    @property
    def config(self) -> Config:
        """The ranking settings searches use (assigning one takes effect on the next search)."""
        return self.searcher.config

    @config.setter
    def config(self, config: Config) -> None:
        self.searcher.config = config

    @classmethod
    def open(cls, index: str | Path | None = None, config: Config | None = None,
             milvus_optional: bool = False, serving: bool = False) -> Engine:
        """Open an existing index: ``index``, ``$SLEUTH_INDEX``, or the nearest ``.sleuth/`` upwards
        (``milvus_optional``, ``serving``: see :class:`Engine`).

        Raises:
            IndexNotFound: none given and none found, or the folder holds no catalog (with the catalog
                in PostgreSQL: the folder does not exist; the message says to create it).
        """
        found = find_index_dir(index)
        if found is None:
            raise IndexNotFound(
                f"no index found: pass --index DIR, set SLEUTH_INDEX, or run `sleuth index PATH` first"
                f" (looked for {INDEX_DIR_NAME}/ in {Path.cwd()} and its parents)"
            )
        if not has_catalog(found):
            if catalog_url() is not None:  # scaled out: the folder holds only this host's postings
                raise IndexNotFound(
                    f"{found} is not a folder: with the catalog in PostgreSQL ({CATALOG_URL_ENV}) each host"
                    f" keeps its own index folder; create it (`mkdir -p {found}`) and the first search builds"
                    " its postings from the shared catalog, or run `sleuth index PATH` to index files into it")
            raise IndexNotFound(f"{found} is not a sleuth index (no {CATALOG_FILE}); run `sleuth index` first")
        return cls(found, config, milvus_optional, serving)

    def close(self) -> None:
        """Stop the search pool and close what the index holds open: the lanes' clients (Milvus),
        the catalog's connections (every thread's, on PostgreSQL) and the postings."""
        self.searcher.close()
        for lane in self.lanes.values():
            close = getattr(lane, "close", None)
            if callable(close):
                close()
        self.folder.close()

    def gone(self) -> bool:
        """True when the index folder was deleted, moved or made anew since this engine opened it."""
        return self.folder.gone()

    @property
    def postings_behind(self) -> str | None:
        """Why the postings lag behind the catalog when a catch-up could not write, else None."""
        return self.folder.postings_behind

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ lanes and the model

    def embedder(self) -> Embedder | None:
        """The configured embedding model, loaded once; None when unavailable (see :attr:`model_unavailable`)."""
        return self.model.get()

    @property
    def model_unavailable(self) -> str | None:
        """Why there is no embedding model (none configured, or it cannot load), else None."""
        return self.model.unavailable()

    @property
    def vector_unavailable(self) -> str | None:
        """Why the vector lane cannot run, or None when it can."""
        lane = self.lanes.get("vector")
        return "the vector lane is not registered" if lane is None else lane.unavailable()

    def warm_lanes(self, vectors: bool = True, changed: bool = True) -> None:
        """Load or build (and, under the write lock, save) what the lanes a search runs by default
        (``config.lanes``) and the expansion lanes derive from the catalog, so the first query of a
        new process does not. A retrieval lane off by default (tfidf) builds its data when first
        asked for instead: building and saving it at every indexing run cost SciFact's lexical
        indexing a quarter of its time, and its cache file was a tenth of the index folder.
        ``vectors=False`` leaves the vector lane (and the model) alone: the embedding, made later,
        warms it (sleuth.background). ``changed=False`` (a run that wrote no document) leaves the
        lanes of ``MEMORY_ONLY_LANES`` alone: they save nothing, so a process that has theirs holds
        it for this generation already, and one that has not (``sleuth index``) would build it only
        to throw it away (the link graph of 38,404 pages: a sixth of a no-op run's CPU time)."""
        wanted = set(self.config.lanes)
        for spec in registry.lane_specs():
            lane = self.lanes.get(spec.name)
            if lane is not None and (spec.name in wanted or spec.stage != "retrieve") and (
                    vectors or spec.name != "vector") and (changed or spec.name not in MEMORY_ONLY_LANES):
                lane.warm()

    def lane_status(self) -> dict[str, LaneStatus]:
        """Every lane's health, by name."""
        return {name: lane.status() for name, lane in self.lanes.items()}

    def link_graph(self) -> LinkGraph:
        """The link graph of the whole index (the graph lane's), cached per generation."""
        return self.lanes["graph"].graph()

    # ------------------------------------------------------------------ indexing

    def index(self, roots: Sequence[str | Path], project: str | None = None,
              progress: Callable[[str], None] | None = None,
              embed_progress: Callable[[int, int], None] | None = None,
              embed: bool = True, phases: Progress | None = None, retry_failed: bool = False) -> IndexReport:
        """See :meth:`sleuth.indexer.Indexer.index`: embeds before returning unless not ``embed``
        (then :meth:`embed_pending` or :mod:`sleuth.background` embed later); ``retry_failed``:
        parse again the unchanged files whose parse failed before."""
        return self.indexer.index(roots, project, progress, embed_progress, embed=embed, phases=phases,
                                  retry_failed=retry_failed)

    def refresh(self, project_id: str, within: Path | None = None, embed: bool = True,
                phases: Progress | None = None, retry_failed: bool = False) -> IndexReport | None:
        """See :meth:`sleuth.indexer.Indexer.refresh` (``sleuth index`` without paths): every root
        of the project indexed again; None when the project is gone."""
        return self.indexer.refresh(project_id, within, embed=embed, phases=phases, retry_failed=retry_failed)

    def update_paths(self, project: str, root: str | Path, rel_paths: Iterable[str],
                     embed_progress: Callable[[int, int], None] | None = None, embed: bool = True,
                     phases: Progress | None = None) -> IndexReport:
        """See :meth:`sleuth.indexer.Indexer.update_paths`."""
        return self.indexer.update_paths(project, root, rel_paths, embed_progress, embed=embed, phases=phases)

    def remove_project(self, project: str) -> int:
        """See :meth:`sleuth.indexer.Indexer.remove_project`: returns the documents removed."""
        return self.indexer.remove_project(project)

    def index_records(self, project: str, records: Iterable[Record], embed: bool = True) -> IndexReport:
        """See :meth:`sleuth.indexer.Indexer.index_records` (``embed``: as for :meth:`index`)."""
        return self.indexer.index_records(project, records, embed=embed)

    def embed_pending(self, progress: Callable[[int, int], None] | None = None) -> int:
        """See :meth:`sleuth.indexer.Indexer.embed_pending`."""
        return self.indexer.embed_pending(progress)

    # ------------------------------------------------------------------ reading

    def project_ids(self) -> list[str]:
        return sorted(self.catalog.roots())  # no document counts: this runs on every search

    def multi_root_projects(self) -> set[str]:
        """The projects with several roots of their own, whose paths are shown with their root's
        label (``en/publish.css``). The memory folder that ``project_memory_record`` writes into
        (``<index>/memory/<project>``) is not counted: recording a memory leaves the paths of a
        one-folder project as they were (``docs/a.md``), and its records show their own paths
        (``notes/2026-01-02-title.md``, as the record's receipt gives them)."""
        from sleuth.memory.records import MEMORY_DIR_NAME

        memory = self.index_dir / MEMORY_DIR_NAME
        return {pid for pid, roots in self.catalog.roots().items()
                if sum(1 for root in roots if Path(root) != memory / pid) > 1}

    def projects(self) -> list[ProjectInfo]:
        """Every project of the index with its roots and counts."""
        return [ProjectInfo.model_validate(p) for p in self.catalog.projects()]

    def search(self, request: SearchRequest | str, state: RequestState | None = None, **kwargs: Any) -> SearchResponse:
        """Run a search through the pipeline (:class:`sleuth.pipeline.Searcher`).

        Args:
            request: a SearchRequest, or a query string with SearchRequest fields as keywords.
            state: the request's entry in a request registry, when it is followed.
        Raises:
            QueryError: the query is too long or a parameter is invalid.
            ProjectNotFound: a requested project does not exist.
            ConfigError: an unknown lane was requested.
            QueryTimeout, RequestCancelled: see :meth:`sleuth.pipeline.Searcher.search`.
        """
        req = request if isinstance(request, SearchRequest) else SearchRequest(query=request, **kwargs)
        return self.searcher.search(req, state)

    def resolve(self, ref: str, projects: Sequence[str] | None = None) -> tuple[str, str | None]:
        """``(doc_id, block_id or None)`` of the document ``ref`` names: a document id, a block id
        (``<doc_id>:<suffix>``), a path relative to its root (``docs/setup.md``), the same path
        qualified by its root's label when several roots hold it (``en/publish.css``), or an
        absolute path under a root. Only documents of ``projects`` (None: all) count.

        Raises:
            DocumentNotFound: nothing (visible) has that id or path; when the path is a file that
                indexing skipped, the message says so, with the reason recorded for it.
            QueryError: the path names documents of several roots or projects (they are listed).
        """
        from sleuth.errors import QueryError
        from sleuth.ingest.names import index_name, is_valid_text
        from sleuth.pathglob import qualified_path

        ref = ref.strip()
        if "\0" in ref:
            raise QueryError(f"a document reference cannot hold a NUL byte, got {ref[:100]!r}")
        allowed = None if projects is None else set(projects)
        head, sep, _suffix = ref.partition(":")
        doc = self.catalog.document(head) if head and "/" not in head and is_valid_text(head) else None
        if doc is not None and (allowed is None or doc.project_id in allowed):
            if not sep:
                return doc.doc_id, None
            if ref in self.catalog.blocks([ref]):
                return doc.doc_id, ref
        # A path as results show it (its index form: ``\\xNN`` and ``\\\\`` escapes) first; only
        # when that names nothing, backslashes read as Windows separators.
        forms = [ref.removeprefix("./")]
        if "\\" in ref:
            forms.append(ref.replace("\\", "/").removeprefix("./"))
        # A name the shell gave with bytes that are not UTF-8 (tab completion): its index form (``\\xNN``)
        forms = [form if is_valid_text(form) else index_name(form) for form in forms]
        found = self._files_at(ref, forms, allowed, self.catalog.documents_at)
        if len(found) == 1:
            return found[0][0], None
        if found:
            listed = ", ".join(f"{qualified_path(root, rel_path)} (project {pid}, id {doc_id})"
                               for doc_id, pid, root, rel_path in found[:10])
            raise QueryError(f"{ref!r} names {len(found)} documents: {listed}; {_ambiguity_hint(found[:10])}")
        skipped = self._files_at(ref, forms, allowed, self.catalog.skipped_at)
        if skipped:  # a file indexing passed over: say so, and why, rather than "not found"
            from sleuth.freshness import skip_state

            listed = "; ".join(f"{qualified_path(root, rel_path)} (project {pid}): {reason}"
                               for reason, pid, root, rel_path in skipped[:10])
            how = ("could not be read or parsed at indexing" if all(skip_state(s[0]) == "failed" for s in skipped)
                   else "was skipped at indexing")
            raise DocumentNotFound(f"not indexed: {ref!r} {how}: {listed}"
                                   " (`sleuth status --verbose` lists every file not indexed)")
        raise document_not_found(ref)

    def _files_at(self, ref: str, forms: list[str], allowed: set[str] | None,
                  rows_at: Callable[[str], list[tuple[str, str, str, str]]]) -> list[tuple[str, str, str, str]]:
        """The rows ``rows_at(rel_path)`` gives (``(key, project_id, root, rel_path)``) for the file
        ``ref`` names (see :meth:`resolve`): the first of ``forms`` that names any, as a path
        relative to its root or qualified by the root's label, then ``ref`` as an absolute path
        under a root; only of ``allowed`` projects (None: all), each once."""
        from sleuth.ingest.names import index_name
        from sleuth.pathglob import root_label

        candidates: list[tuple[str, str, str, str]] = []
        for rel in forms:
            candidates = [c for c in rows_at(rel) if allowed is None or c[1] in allowed]
            label, _, rest = rel.partition("/")
            if rest:  # root-qualified: en/publish.css
                candidates += [c for c in rows_at(rest)
                               if root_label(c[2]) == label and (allowed is None or c[1] in allowed)]
            if candidates:
                break
        if Path(ref).is_absolute():
            for pid, roots in self.catalog.roots().items():
                for root in roots if allowed is None or pid in allowed else ():
                    inside = _resolved_under(ref, Path(root))
                    if inside is not None:
                        # a path on the file system: its names in their index form (sleuth.ingest.names)
                        candidates += [c for c in rows_at(index_name(inside.relative_to(root).as_posix()))
                                       if c[1] == pid and c[2] == root]
                    elif _is_file_root(ref, Path(root)):  # a file given as a root: its document, under its name
                        candidates += [c for c in rows_at(index_name(Path(root).name)) if c[1] == pid and c[2] == root]
        return list(dict.fromkeys(candidates))

    def get(self, doc_id: str, projects: Sequence[str] | None = None) -> DocumentContent:
        """The whole stored document ``doc_id`` (restricted to ``projects`` when given); ``doc_id``
        may also be any reference :meth:`resolve` takes (a block id, a path).

        Raises:
            DocumentNotFound: no such document (or not in ``projects``).
            QueryError: a path naming several documents.
        """
        from sleuth.ingest.decisions import decision_status
        from sleuth.pathglob import root_label

        resolved, _block = self.resolve(doc_id, projects)
        doc = self.catalog.document(resolved)
        if doc is None or (projects is not None and doc.project_id not in projects) or not self.confined(doc):
            raise DocumentNotFound(f"document not found: {doc_id!r}")
        return DocumentContent(
            doc_id=doc.doc_id, project=doc.project_id, path=doc.rel_path, root=doc.root,
            root_label=root_label(doc.root), title=doc.title, kind=doc.label, format=doc.kind, role=doc.role,
            recorded_at=recorded_at_text(doc.recorded_ns, from_file=bool(doc.root)),
            status=decision_status(doc.front_matter), tags=doc.tags, front_matter=doc.front_matter,
            mtime=ns_to_rfc3339(doc.mtime_ns), revision=doc.revision, content_hash=doc.content_hash,
            text=doc.text,
            blocks=[
                {"block_id": b.block_id, "heading_path": list(b.heading_path), "lines": [b.start_line, b.end_line],
                 "location": block_location(doc.kind, b.heading_path, b.start_line, b.end_line),
                 "chars": [b.start_char, b.end_char]}
                for b in self.catalog.blocks_of(doc.doc_id)
            ],
        )

    def confined(self, doc: DocumentRow) -> bool:
        """Whether the file of ``doc`` does not lead outside its project's roots now (an index made
        before symlinks were judged may hold such a document; it is never returned). See
        :func:`sleuth.ingest.confine.confined_path`."""
        from sleuth.ingest.confine import Roots, confined_path

        return confined_path(doc.root, doc.rel_path, Roots(self.catalog.roots().get(doc.project_id, [])))

    def status(self, files: bool = False, verbose: bool = False) -> StatusReport:
        """Index health: counts, lane generations, projects, skipped files with reasons,
        per-root coverage (indexed / skipped / failed, last indexed), where the catalog lives and,
        in scale-out mode, the lanes in Milvus (:func:`sleuth.scaleout.milvus_report`), asking
        Milvus its version once (:func:`sleuth.scaleout.one_report`).

        Args:
            files: also list every file (``files``): indexed ones with their last-indexed time
                and freshness (one ``stat`` each), skipped and failed ones with their reason.
            verbose: list every skipped file in ``skipped_files`` (also with ``files``; else the
                first ``STATUS_SKIPPED_LISTED_MAX``, all counted by reason in ``skipped_by_reason``).
        """
        from sleuth.scaleout import one_report

        with one_report():
            return self._status(files, verbose)

    def _status(self, files: bool, verbose: bool) -> StatusReport:
        """:meth:`status`'s report."""
        from sleuth.freshness import coverage_summary, file_coverage, skip_state
        from sleuth.scaleout import catalog_backend, milvus_report

        counts = self.catalog.counts()
        projects = self.projects()
        skipped = self.catalog.skipped()
        vector = self.lanes["vector"].status() if "vector" in self.lanes else LaneStatus(False, "not registered")
        details = dict(vector.details or {})
        if "model" in details:
            from sleuth.background import embedding_progress

            details["embedding"] = EmbeddingProgress.model_validate(embedding_progress(
                self, details["model"], details["blocks_with_vectors"], details["blocks"]))
        listed = skipped if files or verbose else skipped[:STATUS_SKIPPED_LISTED_MAX]
        return StatusReport(
            index_dir=str(self.index_dir), projects=projects, documents=counts["documents"], blocks=counts["blocks"],
            skipped=counts["skipped"], generation=self.catalog.generation(),
            postings_generation=self.postings.generation(), postings_behind=self.folder.postings_behind,
            read_only=self.folder.read_only, lanes=list(self.config.lanes), fusion=self.config.fusion,
            settings_unused=list(self.config.unused),
            vector_lane=VectorLaneReport(available=vector.available, reason=vector.reason, **details),
            skipped_by_reason=skip_summary(stored_skips(skipped)),
            skipped_files=[SkippedFileInfo(**s, state=skip_state(s["reason"])) for s in listed],
            problems=[ProblemInfo(**p) for p in self.catalog.problems()],
            coverage=[RootCoverage.model_validate(c) for c in coverage_summary(
                [(p.project_id, r) for p in projects for r in p.roots], self.catalog.indexed_counts(), skipped,
                lambda project, root: self.catalog.parser_version(project, root) < PARSER_VERSION)],
            files=[FileInfo.model_validate(f) for f in file_coverage(self.catalog.indexed_files(), skipped)]
            if files else None,
            catalog=catalog_backend(self), milvus=milvus_report(self),
        )
