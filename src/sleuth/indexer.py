"""Writing documents into an index: files under roots, changed paths, and records given as text.

Every entry point runs the same steps (:meth:`Indexer._run`): take the write lock, bring the
postings up to the catalog, write documents in batches (catalog first, then postings: see
DESIGN), mark the project indexed, embed the blocks that have no vector yet, warm the lanes.
Every document goes through one write step (:meth:`Indexer._stage`): a catalog row, its blocks
with their index terms, into the next batch.
"""

from __future__ import annotations

import bisect
import contextlib
import dataclasses
import gc
import hashlib
import os
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING

from sleuth.errors import ConfigError, ProjectNotFound, shown
from sleuth.ingest import PARSER_VERSION
from sleuth.ingest.confine import Roots
from sleuth.locate import resolved
from sleuth.progress import counting
from sleuth.store.catalog import DocumentRow, FileState, IndexedBlock
from sleuth.store.rows import FailedFile
from sleuth.text.analyze import block_fields, title_terms_of
from sleuth.types import (
    INBOX_PROJECT_ID,
    PROJECT_ID_MAX_BYTES,
    Block,
    BlockDraft,
    IndexReport,
    ParsedDocument,
    SkippedFile,
    project_id_for,
)

if TYPE_CHECKING:
    from sleuth.ingest.guard import Outcome, ParseJob
    from sleuth.ingest.tabular import TabularRule
    from sleuth.ingest.walk import Unchanged
    from sleuth.lanes.model import SharedModel
    from sleuth.progress import Progress
    from sleuth.store.folder import IndexFolder

#: The skip reasons (their beginnings) of a parse that failed on the file's bytes: its time or
#: memory budget, an error of the parser, a parse process that died, too large a result. The catalog
#: remembers such a file with its time and size, and later runs skip it while both (and
#: PARSER_VERSION) are unchanged, instead of spending its whole budget on it again; unreadable files
#: (permissions, I/O) and files over the size limit are not remembered: those are cheap to try again.
REMEMBERED_FAILURES = ("took too long", "needs more memory than", "cannot parse", "parser failed",
                       "the parse process died", "its parsed form holds more than")
#: Failures of the parse's bounds and process (the machine's load, an outside kill, the memory of the
#: moment), not of the file's content: a file indexed before keeps its last good version (served as
#: stale) rather than leave the index on a transient failure.
RESOURCE_FAILURES = ("took too long", "needs more memory than", "the parse process died")
#: What the skip reason of a remembered failure says besides it.
NOT_RETRIED = "not parsed again: unchanged since it failed; `sleuth index --retry-failed` tries it again"
#: Documents written to the catalog (and committed to the lanes) per transaction while indexing.
FLUSH_DOCUMENTS = 500
#: Blocks embedded (and their vectors committed) per batch while indexing.
EMBED_COMMIT_BLOCKS = 256


#: Allocations between two young-generation garbage collections while an indexing run is on (Python's
#: default is 700). Indexing allocates millions of small objects and keeps hundreds of thousands (the
#: analysis caches), which the default made the collector scan again and again: about a tenth of a
#: SciFact run's CPU time. Reference cycles are still collected, less often.
INDEXING_GC_THRESHOLD = 100_000
_gc_lock = threading.Lock()
_gc_runs = 0
_gc_saved: tuple[int, int, int] = gc.get_threshold()


@contextlib.contextmanager
def fewer_collections() -> Iterator[None]:
    """Raise the collector's young-generation threshold to ``INDEXING_GC_THRESHOLD`` for the
    duration (process-wide; restored when the last of overlapping runs ends)."""
    global _gc_runs, _gc_saved
    with _gc_lock:
        if _gc_runs == 0:
            _gc_saved = gc.get_threshold()
            gc.set_threshold(max(INDEXING_GC_THRESHOLD, _gc_saved[0]), *_gc_saved[1:])
        _gc_runs += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_runs -= 1
            if _gc_runs == 0:
                gc.set_threshold(*_gc_saved)


def now_rfc3339() -> str:
    """The current UTC time as RFC 3339 with milliseconds, e.g. ``2026-09-03T10:00:00.000Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _hash(*parts: str) -> str:
    h = hashlib.sha1()
    for p in parts:
        h.update(p.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return h.hexdigest()


def content_hash_of(text: str) -> str:
    """The content hash a document's decoded text is stored under (change detection)."""
    return _hash(text)


def doc_id_for(project_id: str, root_label: str, rel_path: str) -> str:
    """Stable document id: 16 hex digits of SHA-1 over (project, root folder name, relative path)."""
    return _hash(project_id, root_label, rel_path)[:16]


def doc_of_block(block_id: str) -> str:
    """The document id embedded in a block id (``<doc_id>:<suffix>``)."""
    return block_id.split(":", 1)[0]


def make_blocks(project_id: str, doc_id: str, title: str, parsed: ParsedDocument) -> list[tuple[Block, str, str]]:
    """Assign ids to a parsed document's blocks and compute their index terms: ``(block, terms,
    exact)``, the whitespace-joined terms of the bm25 field (:func:`sleuth.text.block_terms`) and
    surface tokens of the exact field (:func:`sleuth.text.surface_tokens`).

    Block ids are ``<doc_id>:<12 hex of SHA-1(heading path, text, repeat number)>``, so they
    survive edits elsewhere in the document. A document with no block (front matter only) gets
    one block holding its whole text, so it can still be found.
    """
    drafts = list(parsed.blocks)
    if not drafts:
        # Front matter only, or an empty file: one block of the whole text, so the document can
        # still be found (by its title, path and tags in the index lane, and its text if any).
        text = parsed.text.rstrip()
        drafts = [BlockDraft(text, (), 1, text.count("\n") + 1, 0, len(text))]
    title_terms = title_terms_of(title)
    out: list[tuple[Block, str, str]] = []
    seen: dict[str, int] = {}
    for ordinal, draft in enumerate(drafts):
        content_hash = _hash(draft.text)[:16]
        heading = " > ".join(draft.heading_path)
        n = seen.get(heading + "\0" + draft.text, 0)
        seen[heading + "\0" + draft.text] = n + 1
        block_id = f"{doc_id}:{_hash(heading, draft.text, str(n))[:12]}"
        block = Block(
            block_id=block_id, doc_id=doc_id, project_id=project_id, ordinal=ordinal, text=draft.text,
            heading_path=draft.heading_path, start_line=draft.start_line, end_line=draft.end_line,
            start_char=draft.start_char, end_char=draft.end_char, content_hash=content_hash,
        )
        out.append((block, *block_fields(draft.text, title_terms)))
    return out


@dataclass(frozen=True)
class Record:
    """A document given as text rather than a file (``sleuth eval``'s corpora)."""

    rel_path: str
    text: str
    title: str = ""
    kind: str = "text"


@dataclass(frozen=True)
class FileCandidate:
    """A file (or archive member) found under a root: where, its stat, and the job that reads and
    parses it (in a worker process, under the per-file bounds of sleuth.ingest.guard)."""

    rel_path: str
    mtime_ns: int
    size_bytes: int
    job: ParseJob
    in_archive: bool = False


Batch = list[tuple[DocumentRow, list[tuple[Block, str, str]]]]


@dataclass
class _Run:
    """One indexing run over one project: its report and the batch waiting to be written."""

    pid: str
    report: IndexReport
    now: str
    progress: Callable[[str], None] | None
    phases: Progress | None = None
    batch: Batch = field(default_factory=list)
    retry_failed: bool = False  # parse files whose parse failed before even when unchanged
    taking_in: set[str] = field(default_factory=set)  # roots being taken into a root walked now: not left out
    walked: list[str] = field(default_factory=list)  # roots walked whole: marked so when the run ends
    #: The project's roots as last read (their catalog order) with what is derived from them, read
    #: once a run, not once a root: with a root per file given (``sleuth index notes/*.md``) a pass
    #: each reading and deriving them took time quadratic in the files (1,501 files: 3 minutes). The
    #: run holds the write lock, so only its own changes move them: each sets this to None.
    roots_seen: _ProjectRoots | None = None


@dataclass(frozen=True)
class _ProjectRoots:
    """A project's roots (``keys``, in the catalog's order), as :class:`Roots` (``real``: what
    nothing outside is read from) and each one's document-id label (``labels``, :func:`id_labels`).
    The keys are the real paths the roots had when they were given (resolved then), and are taken as
    they are: a root that leads elsewhere now (swapped for a symbolic link, while a run waited for the
    lock or since) does not move what a run may read; its pass refuses it (:func:`_moved_root`)."""

    keys: tuple[str, ...]
    real: Roots
    labels: dict[str, str]
    by_name: list[str]  # the keys sorted, for :meth:`inside`

    @classmethod
    def of(cls, keys: Sequence[str]) -> _ProjectRoots:
        """What ``keys`` (the project's roots) derive to: one or two ``stat`` calls a root."""
        return cls(tuple(keys), Roots.from_real(dict.fromkeys(keys)), id_labels(keys), sorted(set(keys)))

    def inside(self, root: Path) -> list[str]:
        """The keys of the roots strictly inside ``root`` (as ``Path.is_relative_to`` says of keys
        kept as resolved paths), in the catalog's order: found by bisection of the sorted keys, not
        by asking every root (1,500 folder roots asked each other 4.5 million times: 80 s)."""
        top = str(root)
        prefix = top if top.endswith(os.sep) else top + os.sep
        start = bisect.bisect_left(self.by_name, prefix)
        end = bisect.bisect_left(self.by_name, prefix[:-1] + chr(ord(os.sep) + 1))
        found = set(self.by_name[start:end]) - {top}  # the root itself, when it is / (its own prefix)
        return [key for key in dict.fromkeys(self.keys) if key in found] if len(found) > 1 else list(found)


@dataclass
class _RootPass:
    """A pass over one root: what the catalog knew, what was seen, what waits to be written
    (``touched``, ``verified``), what was skipped and what was indexed with a warning (``problems``);
    the ``.gitignore`` files read and the problems of their lines left out (``ignore_files``); the
    paths looked at (``scope``; None: the whole root)."""

    run: _Run
    root_key: str
    root_label: str
    known: dict[tuple[str, str], FileState]
    roots: _ProjectRoots  # every root of the project: nothing outside them is read
    real_root: str  # this root's real path: what its files' real paths lie in
    seen: set[str] = field(default_factory=set)
    touched: list[tuple[str, int, int]] = field(default_factory=list)
    verified: list[str] = field(default_factory=list)
    skips: list[tuple[str, str]] = field(default_factory=list)
    problems: list[tuple[str, str]] = field(default_factory=list)
    ignore_files: dict[str, list[str]] = field(default_factory=dict)
    scope: list[str] | None = None
    reparse: bool = False  # indexed by an older parser (sleuth.ingest.PARSER_VERSION): parse every file
    failed_before: dict[str, FailedFile] = field(default_factory=dict)  # as the catalog remembers them
    failed: dict[str, FailedFile] = field(default_factory=dict)  # what this pass leaves remembered
    #: Files of this pass that could not be read or parsed: their documents go, counted as failed, not removed.
    not_parsed: set[str] = field(default_factory=set)


def _moved_root(key: str) -> str | None:
    """Where the root ``key`` (its real path when it was given) leads now, when that is elsewhere: a
    symbolic link put in its place or in one of its folders' (while a run waited for the write lock,
    or since); None when it is where it was, or gone."""
    try:
        real = os.path.realpath(key)
        return real if real != key and os.path.lexists(key) else None
    except (OSError, ValueError):
        return None


def _refused_moved(run: _Run, key: str) -> bool:
    """Whether the root ``key`` is refused this run because it leads elsewhere now (:func:`_moved_root`):
    nothing is read through it and its documents stay (stale until it is back or removed); the report
    says so. A root is trusted as the path it was given as, never as what it points to later."""
    moved = _moved_root(key)
    if moved is None:
        return False
    run.report.problems.append({"path": key, "problem": (
        f"this root leads to {moved} now (a symbolic link in its place or in one of its folders): not indexed"
        " (its documents stay, stale until it leads back); to index what it leads to, give that path itself")})
    return True


def _outer_roots(root: Path, own_roots: Mapping[str, int]) -> list[tuple[str, str]]:
    """``(outer root, root relative to it)`` for each of ``own_roots`` (the project's roots, as the
    catalog keeps them, each with its place in the catalog's order) that is a folder holding the
    new root ``root``, in that order: a root whose walk reached it would have refreshed it instead
    (:func:`sleuth.ingest.placement.place`), so each leaves it out now, and its copies of the files
    there (made before its ignore rules changed) go. Looks up ``root``'s folders, not every root (a
    run with a root per file compared each with every other: 50 s for 1,500)."""
    outer = sorted((key for key in map(str, root.parents) if key in own_roots), key=own_roots.__getitem__)
    return [(key, root.relative_to(key).as_posix()) for key in outer if Path(key).is_dir()]


def _elsewhere_message(elsewhere: Sequence[tuple[Path, str]], pid: str, index_dir: Path) -> str:
    """Why a run without ``--project`` refuses paths of other projects (``elsewhere``: each path and
    its project's id), and the command that refreshes the first in its project (``index_dir``: the
    index's folder); paths escaped onto one line (:func:`sleuth.ingest.names.index_name`), the
    command's quoted for a shell (:func:`sleuth.ingest.names.shlex_quote`)."""
    from sleuth.ingest.names import index_name, shlex_quote

    said = "; ".join(f"{index_name(str(path))} is indexed in project {other!r}" for path, other in elsewhere[:3])
    more = f" (and {len(elsewhere) - 3} more)" if len(elsewhere) > 3 else ""
    command = f"sleuth index {shlex_quote(str(elsewhere[0][0]))} --index {shlex_quote(str(index_dir))}"
    return (f"{said}{more}, and this run's paths go to project {pid!r} (the first path's): filed there too, their"
            f" files would be in both projects. Index them on their own (`{command}` refreshes it in"
            f" {elsewhere[0][1]!r}), or give --project to put every path in one project")


def _new_report(project: str, roots: list[str]) -> IndexReport:
    return IndexReport(project=project, roots=roots, scanned=0, added=0, updated=0, unchanged=0, removed=0,
                       skipped=[], problems=[], blocks=0, took_s=0.0)


class Indexer:
    """Writes into one index folder (see the module docstring).

    Args:
        folder: the open index folder.
        model: the embedding model (blocks without a vector are embedded at the end of each run
            that is asked to embed).
        warm_lanes: called at the end of each run, under the write lock, so the lanes save their
            derived files for the next process, with two flags: the run embedded (False: the vector
            lane is left to the embedding), and the run wrote or removed a document (the catalog's
            generation moved; False: lanes that save nothing need not be built).
        tabular: the rule for tabular data files (sleuth.ingest.tabular); None: indexed as any file.
        archive_max_members: the member limit of one archive (the setting ``archive_max_members``);
            None: ``ARCHIVE_MAX_MEMBERS``.
    """

    def __init__(self, folder: IndexFolder, model: SharedModel, warm_lanes: Callable[[bool, bool], None],
                 tabular: Callable[[], TabularRule] | None = None,
                 archive_max_members: Callable[[], int] | None = None) -> None:
        self.folder = folder
        self.catalog = folder.catalog
        self.postings = folder.postings
        self.model = model
        self.warm_lanes = warm_lanes
        self.tabular = tabular
        self.archive_max_members = archive_max_members

    # ------------------------------------------------------------------ entry points

    @staticmethod
    def _project_id(name: str, known: Mapping[str, object]) -> str:
        """The id of the project ``name`` (:func:`sleuth.types.project_id_for`); ``known``: the
        index's projects by id. A project being made has an id of at most ``PROJECT_ID_MAX_BYTES``
        (one made before that bound, longer, is indexed as before).

        Raises:
            QueryError: no usable id, or a new project's too long.
        """
        pid = project_id_for(name)
        return pid if pid in known else project_id_for(name, PROJECT_ID_MAX_BYTES)

    def index(self, roots: Sequence[str | Path], project: str | None = None,
              progress: Callable[[str], None] | None = None,
              embed_progress: Callable[[int, int], None] | None = None,
              embed: bool = True, phases: Progress | None = None, retry_failed: bool = False) -> IndexReport:
        """Index (or re-index incrementally) files under ``roots`` into ``project``.

        Only changed files are re-read; files gone from the roots are removed. Every skipped or
        failing file is reported with its reason, and none aborts the run.

        Args:
            roots: folders (or single files) to walk; one inside a folder root of the project that
                the root's walk reaches is refreshed within that root instead of becoming a root
                (:mod:`sleuth.ingest.placement`).
            project: project name; default: :func:`sleuth.ingest.placement.choose_project` (the
                project that has the first root among its roots or holds it, else its folder's name,
                or its parent's and its own when another project's folders have that name:
                ``report.name_taken_by``).
            progress: called with each indexed file's path (for a progress display).
            embed_progress: called with (blocks embedded, blocks to embed) after each batch.
            embed: embed the blocks without a vector before returning (False: leave them to
                :mod:`sleuth.background`; the keyword lanes answer as soon as this returns).
            phases: counts the ``scan``, ``parse``, ``postings`` (and ``embedding``) phases.
            retry_failed: parse again the files whose parse failed (:data:`REMEMBERED_FAILURES`)
                and that are unchanged since; without it they are skipped, reported with their
                reason (a file that changed, or any file after a PARSER_VERSION bump, is tried again).
        Raises:
            FileNotFoundError: a path does not exist and is no root nor under one (a root or a path
                under one that is gone loses its documents).
            ConfigError: a root's own name is not valid UTF-8, or it is (inside) an index folder; or,
                without ``project``, a path is another project's than the one chosen
                (:func:`sleuth.ingest.placement.other_projects_paths`): nothing is written.
            IndexBusy: another process held the write lock for ``WRITE_LOCK_TIMEOUT_S``.
        """
        from sleuth.auth.users import grants_by_project
        from sleuth.ingest.names import is_valid_text
        from sleuth.ingest.placement import outermost
        from sleuth.ingest.pool import prestart

        if project is not None and not project.strip():  # `--project ''` was taken as no project
            raise ConfigError("the project name is empty: name a project, or leave --project out to file the paths"
                              " under the first path's project")
        if project is not None and not is_valid_text(project):  # a name typed in a Latin-1 shell
            raise ConfigError(f"the project name {shown(project)} is not valid UTF-8: name it in UTF-8")
        prestart()  # a parse worker starts while the index is opened and the roots walked
        paths = [resolved(Path(r)) for r in roots]
        roots_by_project = self.catalog.roots()
        self._check_paths(paths, roots_by_project)  # a bad path is said at once, not after a wait
        if not project:  # as is a path of another project (checked again under the lock)
            self._choose(outermost(paths), roots_by_project, grants_by_project(self.folder.index_dir)[0])
        # The project is chosen from the catalog's projects as this run will find them: two runs at
        # once would each see the other's new folder missing and file both under one name.
        with self.folder.write_lock.held():
            return self._index_held(paths, project, progress, embed_progress, embed, phases, retry_failed)

    def refresh(self, project_id: str, within: Path | None = None, progress: Callable[[str], None] | None = None,
                embed_progress: Callable[[int, int], None] | None = None, embed: bool = True,
                phases: Progress | None = None, retry_failed: bool = False) -> IndexReport | None:
        """Index again every root of the project ``project_id`` (``sleuth index`` without paths), as
        the catalog keeps them, read under the write lock: a project removed meanwhile is not made
        again (None is returned), a root forgotten meanwhile is not indexed. The roots are taken as
        they are kept (their real paths when given), never resolved: a root that leads elsewhere
        now is refused by its pass (:func:`_refused_moved`). Left out, each with a problem in the
        report: the memory folders (inside the index folder: the MCP tools write them); a root that
        is not an absolute, normalised path (the catalog holds what sleuth never writes: a planted or
        hand-edited one); with ``within`` (the folder of an index found by looking upwards, which may
        have come with that folder, e.g. a cloned repository), a root outside it; a root that exists
        and is neither a folder nor a regular file (a FIFO: its documents stay).

        Raises:
            IndexBusy: another process held the write lock for ``WRITE_LOCK_TIMEOUT_S``.
        """
        from sleuth.ingest.names import index_name, is_valid_text
        from sleuth.ingest.pool import prestart

        prestart()
        with self.folder.write_lock.held():
            row = next((p for p in self.catalog.projects() if p["project_id"] == project_id), None)
            if row is None:
                return None
            keys = row["roots"] if isinstance(row["roots"], list) else []
            paths: list[Path] = []
            left_out: list[dict[str, str]] = []
            for key in keys:
                if not isinstance(key, str) or not key or not os.path.isabs(key) or os.path.normpath(key) != key \
                        or not is_valid_text(key):
                    left_out.append({"path": index_name(str(key)), "problem": "not an absolute, normalised path:"
                                     " left out (sleuth keeps the real path of each root it is given)"})
                elif Path(key).is_relative_to(self.folder.index_dir):
                    continue  # a memory folder
                elif within is not None and not Path(key).is_relative_to(within):
                    left_out.append({"path": key, "problem": f"outside {within}, the folder of the index found"
                                     f" here (which may have come with it): left out; `sleuth index --index"
                                     f" {self.folder.index_dir}` indexes it again"})
                elif os.path.lexists(key) and not (os.path.isdir(key) or os.path.isfile(key)):
                    left_out.append({"path": key, "problem": "neither a folder nor a regular file now: left out"
                                     " (its documents stay)"})
                else:
                    paths.append(Path(key))
            if paths:
                report = self._index_held(paths, str(row["name"]), progress, embed_progress, embed, phases,
                                          retry_failed)
            else:
                report = _new_report(project_id, [])
            report.problems[:0] = left_out
            return report

    def _choose(self, paths: Sequence[Path], roots_by_project: Mapping[str, Sequence[str]],
                grants: Mapping[str, Sequence[str]]) -> tuple[str, list[str], str]:
        """The project a run of ``paths`` (resolved, :func:`sleuth.ingest.placement.outermost` ones)
        without a name goes to: ``(name, name_taken_by, project id)``
        (:func:`sleuth.ingest.placement.choose_project`; a new name passes over the ids of ``grants``,
        the users' grants by project).

        Raises:
            ConfigError: a path another project has (:func:`sleuth.ingest.placement.other_projects_paths`).
        """
        from sleuth.ingest.placement import choose_project, other_projects_paths

        name, name_taken_by = choose_project(paths, roots_by_project, self.folder.index_dir, grants)
        pid = self._project_id(name, roots_by_project)
        if elsewhere := other_projects_paths(paths, pid, roots_by_project):
            raise ConfigError(_elsewhere_message(elsewhere, pid, self.folder.index_dir))
        return name, name_taken_by, pid

    def _check_paths(self, paths: Sequence[Path], roots_by_project: Mapping[str, Sequence[str]]) -> None:
        """Refuse a resolved path given to :meth:`index` that does not exist and is no root nor under
        one (``roots_by_project``: the catalog's), whose name is not UTF-8, or that is (inside) an
        index folder. Raises FileNotFoundError or ConfigError (see :meth:`index`)."""
        from sleuth.ingest.names import index_name, is_valid_text
        from sleuth.locate import index_folder_holding

        every_root = {key for keys in roots_by_project.values() for key in keys}
        for p in paths:
            # A path gone from disk is looked at only when it is a root or lies under one: its
            # documents are then removed (a deleted or renamed folder, file or root). Its folders are
            # looked up, not compared with every root (3,000 gone paths: 27 s).
            if not p.exists() and str(p) not in every_root and not any(str(a) in every_root for a in p.parents):
                raise FileNotFoundError(f"path does not exist: {p}")
            if not is_valid_text(str(p)):
                raise ConfigError(f"the root {index_name(str(p))} has a name that is not valid UTF-8: index a folder"
                                  " above it (names below a root may be anything) or rename it")
            if (index_folder := index_folder_holding(p, self.folder.index_dir)) is not None:
                where = ("an index folder" if index_folder == p
                         else f"inside the index folder {index_name(str(index_folder))}")
                raise ConfigError(f"{index_name(str(p))} is {where}: sleuth does not index an index's own files (its"
                                  " users, keys, logs and settings); index the folder that holds it")

    def _index_held(self, paths: list[Path], project: str | None,
                    progress: Callable[[str], None] | None, embed_progress: Callable[[int, int], None] | None,
                    embed: bool, phases: Progress | None, retry_failed: bool) -> IndexReport:
        """:meth:`index` of the resolved ``paths`` with the write lock held."""
        from sleuth.auth.users import grants_by_project
        from sleuth.ingest.placement import outermost, place, shared_roots
        from sleuth.ingest.walk import normalize_rel_paths

        roots_by_project = self.catalog.roots()
        self._check_paths(paths, roots_by_project)  # again: another run may have dropped a root meanwhile
        # Without a name, a root indexed before keeps its project (a second project over the same
        # files would return every page twice), and a path inside a project's folder root is
        # refreshed there (sleuth.ingest.placement).
        paths = outermost(paths)  # a path inside another one given is walked with it
        grants, grants_problem = grants_by_project(self.folder.index_dir)
        name, name_taken_by, pid = ((project, [], self._project_id(project, roots_by_project)) if project
                                    else self._choose(paths, roots_by_project, grants))
        stale_grants = grants.get(pid, []) if pid not in roots_by_project else []
        grants_unchecked = grants_problem if pid not in roots_by_project else ""
        placement = place(paths, roots_by_project.get(pid, []))
        shared = shared_roots(placement.roots, roots_by_project, pid, self.folder.index_dir)
        new_roots = [str(p) for p in placement.roots]
        with self._run(pid, new_roots, embed_progress, progress, name=name, embed=embed, phases=phases,
                       shown_roots=[*new_roots, *(r for r in placement.refresh if r not in new_roots)],
                       locked=True) as run:
            run.retry_failed = retry_failed
            walked = [*placement.roots]
            taken: dict[Path, list[str]] = {}
            for root in placement.roots:  # the project's roots inside these: taken in, or walked too
                taken[root], nested = self._inner_roots(run, root)
                walked += [inner for inner in nested if inner not in walked]
                run.taking_in.update(taken[root])
            refresh = {**placement.refresh}
            own_roots = {key: place for place, key in reversed(list(enumerate(roots_by_project.get(pid, []))))}
            for root in placement.roots:  # a new root that a root holding it leaves out (ignored now)
                for outer, rel in _outer_roots(root, own_roots):
                    refresh.setdefault(outer, []).append(rel)  # loses the outer root's old copies
            steps = len(walked) + len(refresh)
            with self.postings.bulk():
                gone: list[str] = []
                for i, root in enumerate(walked):
                    self._index_root(run, root, last=i == steps - 1)
                    if not os.path.lexists(root):  # a root that is gone, its documents removed now
                        gone.append(str(root))
                    for inner in taken.get(root, []):  # filed under ``root`` now: the inner copies go
                        self._drop_root(run, inner)
                for key in gone:  # forgotten after the passes, whose roots stay as read (3,000 gone: 1,000 re-reads)
                    self.catalog.remove_root(pid, key)
                    run.roots_seen = None  # read again by the next pass
                    run.report.forgotten_roots.append(key)
                for j, (outer, rels) in enumerate(refresh.items(), start=len(walked)):
                    self._index_under(run, Path(outer), normalize_rel_paths(rels), last=j == steps - 1)
            if (run.report.forgotten_roots and pid != INBOX_PROJECT_ID and not self.catalog.roots().get(pid)
                    and not self.catalog.project_doc_ids(pid)):  # its last root gone: nothing is left of it
                self._flush_run(run)
                self.catalog.delete_project(pid)
                run.report.project_removed = True
        run.report.shared_roots = shared
        run.report.name_taken_by = name_taken_by
        if not project and roots_by_project.get(pid):  # paths of this run that joined an existing project
            run.report.joined_roots = [r for r in new_roots if r not in roots_by_project[pid]
                                       and r not in run.report.forgotten_roots]
        run.report.stale_grants = stale_grants
        run.report.grants_unchecked = grants_unchecked
        memory = self.folder.index_dir
        run.report.gone_roots = [f"{other}: {key}" for other, keys in sorted(self.catalog.roots().items())
                                 for key in keys if not Path(key).is_relative_to(memory) and not os.path.lexists(key)]
        return run.report

    def _inner_roots(self, run: _Run, root: Path) -> tuple[list[str], list[Path]]:
        """The project's other roots inside the folder ``root``, about to be walked: ``(taken,
        nested)``. A root the walk of ``root`` reaches is *taken in* (``taken``): the walk files its
        files under ``root`` (their vectors kept, being keyed by text), then :meth:`_drop_root`
        deletes its own copies and drops it, so that a file indexed before its folder is refreshed
        with it from then on; until then (a run cut short) both copies stay, never neither. The
        others (``root``'s ignore rules leave them out) are ``nested``: walked in the same run.
        Roots inside the index folder (the memory folders) are neither."""
        from sleuth.ingest.names import is_valid_text
        from sleuth.ingest.walk import reaches

        if not root.is_dir():
            return [], []
        index_dir = self.folder.index_dir
        taken: list[str] = []
        nested: list[Path] = []
        if run.roots_seen is None:
            run.roots_seen = _ProjectRoots.of(tuple(self.catalog.roots().get(run.pid, [])))
        for key in run.roots_seen.inside(root):
            inner = Path(key)
            if inner.is_relative_to(index_dir):
                continue
            rel = inner.relative_to(root).as_posix()
            try:
                reached = is_valid_text(rel) and reaches(root, rel)
            except (OSError, ValueError):
                reached = False
            if reached:
                taken.append(key)
            else:
                nested.append(inner)
        return taken, nested

    def _drop_root(self, run: _Run, key: str) -> None:
        """Delete the documents of the project's root ``key`` and drop the root (taken in by a
        root walked in this run: :meth:`_inner_roots`)."""
        doc_ids = [state.doc_id for state in self.catalog.file_states(run.pid, [key]).values()]
        if doc_ids:
            gen = self.catalog.delete_documents(doc_ids)
            self.postings.apply([], doc_ids, [], gen)
        self.catalog.remove_root(run.pid, key)
        run.roots_seen = None  # read again by the next pass
        run.taking_in.discard(key)
        run.report.merged_roots.append(key)

    def update_paths(self, project: str, root: str | Path, rel_paths: Iterable[str],
                     embed_progress: Callable[[int, int], None] | None = None, embed: bool = True,
                     phases: Progress | None = None) -> IndexReport:
        """Re-index only ``rel_paths`` (files or folders, relative to ``root``) of one of ``project``'s roots.

        What a file watcher calls: each path is looked at as a whole-root ``index`` would (same
        ignore rules, change detection and per-file handling); documents at or under a path that
        no longer exists (a deleted or renamed file, a deleted folder) are removed. ``""`` stands
        for the whole root; a root that no longer exists loses all its documents.

        Args:
            project: a project id (see ``sleuth projects``).
            root: one of the project's roots, as listed by ``sleuth projects``.
            rel_paths: ``/``-separated paths relative to ``root``.
            embed, phases: as for :meth:`index`.
        Raises:
            ProjectNotFound: no such project, or ``root`` is not one of its roots.
            IndexBusy: another process held the write lock for ``WRITE_LOCK_TIMEOUT_S``.
        """
        from sleuth.ingest.walk import normalize_rel_paths

        root_path = Path(root).expanduser().resolve()
        root_key = str(root_path)
        rels = normalize_rel_paths(rel_paths)
        if not rels:
            return _new_report(project, [root_key])
        if root_key not in self.catalog.roots().get(project, []):
            raise ProjectNotFound(f"{root_key} is not a root of project {project!r} (see `sleuth projects`)")
        with self._run(project, [root_key], embed_progress, embed=embed, phases=phases) as run:
            if rels == [""] or not root_path.is_dir():
                self._index_root(run, root_path)
            else:
                self._index_under(run, root_path, rels)
        return run.report

    def _index_under(self, run: _Run, root: Path, rels: list[str], last: bool = True) -> None:
        """Index the files at or under ``rels`` (normalised, ``/``-separated) of the folder root
        ``root``; documents of files gone from there are removed. ``last``: as for :meth:`_index_root`."""
        root_key = str(root)
        if _refused_moved(run, root_key):
            return
        rp = self._root_pass(run, root, rels)
        self._index_items(rp, self._candidates(rp, root, rels), last=last)
        self._finish_root(rp)
        self.catalog.replace_skips(run.pid, root_key, rels, rp.skips, run.now)
        self.catalog.record_failed_files(run.pid, root_key, rp.failed, rels)

    def remove_project(self, project: str) -> int:
        """Remove ``project`` from the index: its documents from the catalog and every lane (as
        if its files had been deleted), then the project itself (its roots, skipped files,
        problems). No file is touched, the memory folder's records included; cached vectors stay
        (they are keyed by text, and a project indexed again reuses them).

        Returns:
            The documents removed.
        Raises:
            ProjectNotFound: no such project.
            IndexBusy: another process held the write lock for ``WRITE_LOCK_TIMEOUT_S``.
        """
        if project not in self.catalog.roots():
            raise ProjectNotFound(f"project not found: {shown(project)!r} (see `sleuth projects`)")
        with self.folder.write_lock.held(), self.folder.postings_writable(), fewer_collections():
            self.postings.catch_up(self.catalog)
            doc_ids = self.catalog.project_doc_ids(project)
            if doc_ids:
                gen = self.catalog.delete_documents(doc_ids)
                self.postings.apply([], doc_ids, [], gen)
            self.catalog.delete_project(project)
            self.warm_lanes(False, True)
        return len(doc_ids)

    def index_records(self, project: str, records: Iterable[Record], embed: bool = True) -> IndexReport:
        """Index documents given as text (replacing same-path records of ``project``).

        Used by ``sleuth eval`` for BEIR corpora: each record is parsed as its ``kind`` says
        (``text`` or ``markdown``) with ``rel_path`` as its path. A record whose title and text
        are unchanged is left alone, so re-indexing the same corpus changes nothing, unless the
        project's records were parsed by an older parser (:data:`sleuth.ingest.PARSER_VERSION`, as
        for a folder's files): then every record given is parsed again, and the version is recorded
        once a call has given every record the project holds. ``embed``: embed the blocks without
        a vector before returning (False: the keyword lanes only; a later run that embeds, or
        :meth:`embed_pending`, makes their vectors).
        """
        from sleuth.ingest import parse_document

        pid = self._project_id(project, self.catalog.roots())
        with self._run(pid, [], None, name=project, embed=embed) as run, self.postings.bulk():
            known = self.catalog.file_states(pid, [""])
            reparse = bool(known) and self.catalog.parser_version(pid, "") < PARSER_VERSION
            given: set[str] = set()
            for rec in records:
                run.report.scanned += 1
                given.add(rec.rel_path)
                state = known.get(("", rec.rel_path))
                data_hash = _hash(rec.title, rec.text)
                if state is not None and state.content_hash == data_hash and not reparse:
                    run.report.unchanged += 1
                    continue
                parsed = parse_document(rec.rel_path + (".md" if rec.kind == "markdown" else ".txt"), rec.text)
                if rec.title:
                    parsed.title = rec.title
                self._stage(run, "", "", rec.rel_path, parsed, data_hash, 0, len(rec.text), state is not None)
            self._flush_run(run)
            if self.catalog.parser_version(pid, "") != PARSER_VERSION and all(rel in given for _, rel in known):
                self.catalog.set_parser_version(pid, "", PARSER_VERSION)  # every record of it parsed now
        return run.report

    # ------------------------------------------------------------------ the shared steps

    @contextlib.contextmanager
    def _run(self, pid: str, roots: list[str], embed_progress: Callable[[int, int], None] | None,
             progress: Callable[[str], None] | None = None, name: str | None = None, embed: bool = True,
             phases: Progress | None = None, shown_roots: list[str] | None = None,
             locked: bool = False) -> Iterator[_Run]:
        """One indexing run: the lock, the catch-up, (the project's row with ``roots`` added when
        ``name`` is given), the body, the last batch, the project marked indexed, the embedding
        (unless not ``embed``) and the lanes' warm-up (told whether the run changed a document: a
        no-op run rebuilds nothing that only a query needs). ``shown_roots``: the roots the report
        names (default ``roots``). ``locked``: the caller holds the write lock already."""
        started = time.perf_counter()
        run = _Run(pid, _new_report(pid, roots if shown_roots is None else shown_roots), now_rfc3339(), progress,
                   phases)
        held = contextlib.nullcontext() if locked else self.folder.write_lock.held()
        with held, self.folder.postings_writable(), fewer_collections():
            self.postings.catch_up(self.catalog)
            generation = self.catalog.generation()
            if name is not None:
                self.catalog.upsert_project(pid, name, roots, run.now)
            yield run
            self._flush_run(run)
            if phases is not None:
                for phase in ("scan", "parse", "postings"):
                    phases.finish(phase)
            self.catalog.mark_indexed(pid, run.now)
            for key in run.walked:  # only a run that ends marks them: one cut short leaves the old times
                self.catalog.mark_root_walked(pid, key, run.now)
            if embed:
                run.report.embedded = self.embed_pending(_counting_embedding(embed_progress, phases))
                if phases is not None:
                    phases.finish("embedding")
            with counting(phases):  # a scaled-out index's Milvus sync counts its parts
                self.warm_lanes(embed, self.catalog.generation() != generation)
        run.report.took_s = round(time.perf_counter() - started, 3)

    def _stage(self, run: _Run, root_key: str, root_label: str, rel: str, parsed: ParsedDocument,
               content_hash: str, mtime_ns: int, size_bytes: int, known: bool,
               doc_id: str | None = None) -> DocumentRow:
        """The one write step of a document: its catalog row and blocks into the next batch
        (written when the batch is full); counted as updated (``known``) or added. ``doc_id``: the
        id the catalog already gives the file (kept), else one is derived (:func:`doc_id_for`)."""
        doc = document_row(run.pid, root_key, root_label, rel, parsed, content_hash, mtime_ns, size_bytes, run.now,
                           doc_id)
        run.batch.append((doc, make_blocks(run.pid, doc.doc_id, doc.title, parsed)))
        if known:
            run.report.updated += 1
        else:
            run.report.added += 1
        if len(run.batch) >= FLUSH_DOCUMENTS:
            self._flush_run(run)
        return doc

    def _flush_run(self, run: _Run) -> None:
        """Write the run's waiting batch."""
        written = self._flush(run.batch, run.now)
        run.report.blocks += written
        run.batch = []
        if run.phases is not None and written:
            run.phases.advance("postings", written)

    def _flush(self, batch: Batch, now: str) -> int:
        """Write a batch to the catalog, then to the postings (catalog first: see DESIGN)."""
        if not batch:
            return 0
        if len({doc.doc_id for doc, _ in batch}) < len(batch):  # a document twice: its last version
            last = {doc.doc_id: i for i, (doc, _) in enumerate(batch)}
            batch = [entry for i, entry in enumerate(batch) if last[entry[0].doc_id] == i]
        # Only a document the catalog holds can have postings (the catalog is written first and a
        # run starts caught up): a new document needs no delete, which tantivy would keep queued
        # until the next commit and test against every segment it flushes (one a document).
        ids = [doc.doc_id for doc, _ in batch]
        known = self.catalog.existing_doc_ids(ids)
        gen = self.catalog.write_documents(batch, now)
        blocks = [IndexedBlock(block, terms, doc.title, doc.tags, doc.rel_path, exact)
                  for doc, entries in batch for block, terms, exact in entries]
        self.postings.apply(blocks, [], [d for d in ids if d in known], gen)
        return len(blocks)

    def embed_pending(self, progress: Callable[[int, int], None] | None = None) -> int:
        """Embed every block that has no vector for the configured model (or one of the wrong size,
        which the vector lane skips: it is replaced); returns how many.

        Vectors are cached by the block's embedding text, so unchanged blocks are never embedded
        again, and blocks of the same text share one vector: ``done`` and the count returned are
        blocks (those the new vectors cover), as ``total`` and ``sleuth status`` count them, not
        distinct texts. ``progress(done, total)`` is called after each batch. Without a model, does
        nothing.
        """
        embedder = self.model.get()
        if embedder is None:
            return 0
        have, total = self.catalog.vector_counts(embedder.name, dim=embedder.dim)
        todo_estimate = total - have
        done = 0
        while True:
            pending = self.catalog.blocks_without_vectors(embedder.name, EMBED_COMMIT_BLOCKS, embedder.dim)
            if not pending:
                return done
            vectors = embedder.embed([text for _, text in pending])
            self.catalog.store_vectors(embedder.name, [(h, v.tobytes()) for (h, _), v in zip(pending, vectors,
                                                                                             strict=True)])
            done += self.catalog.blocks_of_texts([h for h, _ in pending])
            if progress:
                progress(done, max(todo_estimate, done))

    # ------------------------------------------------------------------ roots and files

    def _root_pass(self, run: _Run, root: Path, rel_paths: Sequence[str] | None = None) -> _RootPass:
        """A pass over ``root`` (over ``rel_paths`` under it only, when given)."""
        root_key = str(root)
        seen = run.roots_seen
        if seen is None or root_key not in seen.labels:
            roots = tuple(self.catalog.roots().get(run.pid, [root_key]))
            if seen is None or seen.keys != roots:
                seen = run.roots_seen = _ProjectRoots.of(roots)
        label = seen.labels[root_key] if root_key in seen.labels else id_label(root, ())
        known = self.catalog.file_states(run.pid, [root_key], rel_paths)
        reparse = bool(known) and self.catalog.parser_version(run.pid, root_key) < PARSER_VERSION
        failed_before = {} if run.retry_failed else self.catalog.failed_files(run.pid, root_key)
        return _RootPass(run, root_key, label, known, seen, root_key, reparse=reparse,
                         failed_before=failed_before, scope=None if rel_paths is None else list(rel_paths))

    def _index_root(self, run: _Run, root: Path, last: bool = True) -> None:
        """Index every file under ``root``; documents of files gone from it are removed (all of
        them when ``root`` itself is gone). ``last``: no root follows (the scan ends with it). A root
        that leads elsewhere now is refused (:func:`_refused_moved`)."""
        if _refused_moved(run, str(root)):
            return
        rp = self._root_pass(run, root)
        if root.exists() and not rp.known and self.catalog.parser_version(run.pid, rp.root_key) != PARSER_VERSION:
            # A root with no document yet: whatever this pass commits is parsed by this parser, so the
            # version is recorded first. A pass cut short (Ctrl-C, a kill) then leaves its committed
            # files to be found unchanged by the next one, not parsed again and counted as updated.
            self.catalog.set_parser_version(run.pid, rp.root_key, PARSER_VERSION)
        if root.exists():
            self._index_items(rp, self._candidates(rp, root), last)
        self._finish_root(rp)
        self.catalog.record_skips(run.pid, rp.root_key, rp.skips, run.now)
        self.catalog.record_failed_files(run.pid, rp.root_key, rp.failed)
        if root.exists() and self.catalog.parser_version(run.pid, rp.root_key) != PARSER_VERSION:
            self.catalog.set_parser_version(run.pid, rp.root_key, PARSER_VERSION)  # every file of it parsed now
        if root.exists():
            run.walked.append(rp.root_key)

    def _index_items(self, rp: _RootPass, items: Iterable[FileCandidate | SkippedFile], last: bool = True) -> None:
        """Index a root's candidates in order; what needs parsing is parsed by worker processes
        under the per-file time and memory bounds (sleuth.ingest.guard), beside this loop. Tabular
        data files are skipped unless the rule says otherwise (sleuth.ingest.tabular)."""
        from sleuth.ingest.pool import parse_in_order

        phases = rp.run.phases
        if self.tabular is not None:
            items = self.tabular().apply(items)
        if phases is not None:
            items = _counted(items, phases, last)
        for item, outcome in parse_in_order((item, _parse_job(rp, item)) for item in items):
            self._index_file(rp, item, outcome)
            if phases is not None:
                phases.advance("parse")

    def _index_file(self, rp: _RootPass, item: FileCandidate | SkippedFile, outcome: Outcome | None) -> None:
        """One candidate of a root, with the outcome of its parse job (see :func:`_parse_job`): skipped
        with a reason, unchanged, or parsed into the next batch."""
        from sleuth.ingest import kind_for_path
        from sleuth.ingest.guard import Failed

        report = rp.run.report
        report.scanned += 1
        if isinstance(item, SkippedFile):
            rp.skips.append((item.path, item.reason))
            return
        rel = item.rel_path
        if kind_for_path(rel) is None:
            rp.skips.append((rel, "unsupported format"))
            return
        rp.seen.add(rel)
        state = rp.known.get((rp.root_key, rel))
        before = _failed_unchanged(rp, item)
        if outcome is None and before is not None:  # failed before, unchanged since: not parsed again
            rp.failed[rel] = before
            rp.skips.append((rel, f"{before.reason} ({NOT_RETRIED})"))
            if not before.reason.startswith(RESOURCE_FAILURES):
                rp.seen.discard(rel)
                rp.not_parsed.add(rel)
            return
        if outcome is None:  # unchanged: the same time and size as indexed
            report.unchanged += 1
            if item.in_archive and state is not None:  # the archive was read again: its members are as current
                rp.verified.append(state.doc_id)
            return
        if isinstance(outcome, Failed):
            # Its document, if any, goes as a skipped file's does: what the index holds of a file is what
            # the file says now, not a version it no longer has (searches served that text, marked stale,
            # and `sleuth index` again did not bring it up to date). Not on a failure of the parse's
            # bounds or process (RESOURCE_FAILURES): the file may say what it said, and the last good
            # version stays (stale) -- so that failure is not remembered: the next run tries it again.
            kept = state is not None and outcome.reason.startswith(RESOURCE_FAILURES)
            if not kept:
                rp.seen.discard(rel)
                rp.not_parsed.add(rel)
            rp.skips.append((rel, outcome.reason))
            if outcome.reason.startswith(REMEMBERED_FAILURES) and not kept:
                rp.failed[rel] = FailedFile(outcome.reason, item.mtime_ns, item.size_bytes, PARSER_VERSION)
            return
        if state and state.content_hash == outcome.content_hash and not rp.reparse:
            rp.touched.append((state.doc_id, item.mtime_ns, item.size_bytes))
            report.unchanged += 1
            return
        parsed: ParsedDocument = outcome.document
        self._stage(rp.run, rp.root_key, rp.root_label, rel, parsed, outcome.content_hash, item.mtime_ns,
                    item.size_bytes, state is not None, state.doc_id if state is not None else None)
        for problem in parsed.problems:  # after the row is made, which may add one
            report.problems.append({"path": rel, "problem": problem})
            rp.problems.append((rel, problem))
        if rp.run.progress:
            rp.run.progress(rel)

    def _finish_root(self, rp: _RootPass) -> None:
        """Write what is left of a root's pass and remove the documents of files gone from it."""
        run = rp.run
        self._flush_run(run)
        self.catalog.touch_documents(rp.touched)
        self.catalog.mark_verified(rp.verified, run.now)
        gone = [(state.doc_id, rel) for (_, rel), state in rp.known.items() if rel not in rp.seen]
        if gone:
            gen = self.catalog.delete_documents([doc_id for doc_id, _ in gone])
            self.postings.apply([], [doc_id for doc_id, _ in gone], [], gen)
            run.report.removed += sum(1 for _, rel in gone if rel not in rp.not_parsed)  # a failed file is "failed"
        for path, problems in sorted(rp.ignore_files.items()):  # once each, however often it was read
            run.report.problems.extend({"path": path, "problem": problem} for problem in problems)
            rp.problems.extend((path, problem) for problem in problems)
        self.catalog.record_problems(run.pid, rp.root_key, rp.problems, run.now, read=list(rp.ignore_files),
                                     scope=rp.scope)
        run.report.skipped.extend({"path": p, "reason": r} for p, r in rp.skips)

    def _candidates(self, rp: _RootPass, root: Path, rel_paths: Sequence[str] | None = None,
                    ) -> Iterator[FileCandidate | SkippedFile]:
        """Files under ``root`` (only ``rel_paths`` under it when given), archives expanded to their
        members (``archive.tar.gz/inner/path.md``), or SkippedFile with a reason. The index
        folder, when inside ``root``, is left out, as are the project's roots inside it (unless the
        run takes them in: ``rp.run.taking_in``); nothing outside ``rp.roots`` (the project's roots)
        is read (see sleuth.ingest.confine); a file :func:`_unchanged_test` says is as indexed is not
        opened (:func:`sleuth.ingest.walk.walk_roots`); each ``.gitignore`` read is kept in
        ``rp.ignore_files``. The parse worker checks a file's real path against ``rp.real_root``
        alone (a file walked under ``root`` lies in it, no symbolic link being followed), not against
        every root (a job per file carried all of them: 5,000 single-file roots pickled 25 million paths)."""
        from sleuth.ingest import walk_roots
        from sleuth.ingest.archive import ArchiveError, is_archive, iter_archive
        from sleuth.ingest.guard import ParseJob
        from sleuth.ingest.placement import nested_root_excludes
        from sleuth.ingest.walk import max_bytes_for, tool_dotfile, walk_paths
        from sleuth.pathglob import gitignore_literal

        index_dir = self.folder.index_dir
        excludes: list[str] = []
        if root.is_dir() and index_dir.is_relative_to(root) and index_dir != root:
            # as written: an index folder named i[x] or i[z-a] is not a glob (it was walked, or stopped the walk)
            excludes.append(f"/{gitignore_literal(index_dir.relative_to(root).as_posix())}/")
        if root.is_dir():  # the project's roots inside this one keep their own files (unless taken in)
            inner = [Path(key) for key in rp.roots.inside(root) if key not in rp.run.taking_in]
            excludes.extend(nested_root_excludes(root, inner, index_dir))
        real_roots, job_roots = rp.roots.real, (rp.real_root,)
        unchanged, on_ignore_file = _unchanged_test(rp), rp.ignore_files.__setitem__
        items = (walk_roots([root], excludes, real_roots, unchanged, on_ignore_file, own_index=index_dir)
                 if rel_paths is None
                 else walk_paths(root, rel_paths, excludes, real_roots, unchanged, on_ignore_file, own_index=index_dir))
        from sleuth.ingest.limits import ARCHIVE_MAX_MEMBERS

        max_members = self.archive_max_members() if self.archive_max_members is not None else ARCHIVE_MAX_MEMBERS
        for item in items:
            if isinstance(item, SkippedFile):
                yield item
            elif is_archive(item.rel_path):
                try:
                    for member in iter_archive(item.path, item.identity, real_roots, max_members):
                        if isinstance(member, SkippedFile):
                            yield SkippedFile(f"{item.rel_path}/{member.path}", member.reason)
                        elif tool_dotfile(member.name.rpartition("/")[2]):
                            continue  # left out as the walk leaves out a folder's (.gitignore)
                        else:
                            rel = f"{item.rel_path}/{member.name}"
                            yield FileCandidate(rel, member.mtime_ns, len(member.data),
                                                ParseJob(rel, data=member.data), True)
                except ArchiveError as exc:
                    yield SkippedFile(item.rel_path, str(exc))
            else:
                job = ParseJob(item.rel_path, str(item.path), identity=item.identity, roots=job_roots,
                               max_bytes=max_bytes_for(item.rel_path))
                yield FileCandidate(item.rel_path, item.mtime_ns, item.size_bytes, job)


def _counting_embedding(progress: Callable[[int, int], None] | None, phases: Progress | None,
                        ) -> Callable[[int, int], None] | None:
    """``progress`` that also counts the ``embedding`` phase of ``phases``."""
    if phases is None:
        return progress

    def counted(done: int, total: int) -> None:
        phase = phases.phases.get("embedding") or phases.start("embedding", total=total)
        phases.advance("embedding", done - phase.done, total=total)
        if progress is not None:
            progress(done, total)

    return counted


def _counted(items: Iterable[FileCandidate | SkippedFile], phases: Progress, last: bool,
             ) -> Iterator[FileCandidate | SkippedFile]:
    """``items``, counted as the ``scan`` phase; once the last root's are all found, the scan
    ends and the ``parse`` phase's total is known."""
    if "scan" not in phases.phases:
        phases.start("scan")
    for item in items:
        phases.advance("scan")
        yield item
    if last:
        phases.finish("scan", final=False)
        phases.set_total("parse", phases.phases["scan"].done)


def _unchanged_test(rp: _RootPass) -> Unchanged | None:
    """The walk's test of a file being as indexed (:data:`sleuth.ingest.walk.Unchanged`): the same
    time and size as the catalog's record of it, the test :func:`_parse_job` makes before it reads a
    file, so that the walk does not read one either. None (every candidate sniffed) when the pass
    parses every file again (``reparse``) or knows no file."""
    if rp.reparse or not rp.known:
        return None
    known, root_key = rp.known, rp.root_key

    def unchanged(rel: str, st: os.stat_result) -> bool:
        state = known.get((root_key, rel))
        return state is not None and state.same_stat(st.st_mtime_ns, st.st_size)

    return unchanged


def _parse_job(rp: _RootPass, item: FileCandidate | SkippedFile) -> ParseJob | None:
    """The job that reads and parses ``item``, or None when it needs no reading (skipped, not
    indexed, or unchanged since the catalog's record of it)."""
    from sleuth.ingest import kind_for_path

    if isinstance(item, SkippedFile) or kind_for_path(item.rel_path) is None:
        return None
    if _failed_unchanged(rp, item) is not None:
        return None
    state = rp.known.get((rp.root_key, item.rel_path))
    if rp.reparse:  # indexed by an older parser: parsed again, whatever its time, size and hash
        return item.job
    if state and state.same_stat(item.mtime_ns, item.size_bytes):
        return None
    return dataclasses.replace(item.job, known_hash=state.content_hash) if state else item.job


def _failed_unchanged(rp: _RootPass, item: FileCandidate) -> FailedFile | None:
    """How ``item``'s parse failed before, when it did and the file is unchanged since (the same
    time and size) and the parser too (the same :data:`PARSER_VERSION`); else None (it is parsed,
    as it is on a run with ``retry_failed``)."""
    before = rp.failed_before.get(item.rel_path)
    if before is None or (before.mtime_ns, before.size_bytes, before.parser_version) != (
            item.mtime_ns, item.size_bytes, PARSER_VERSION):
        return None
    return before


def _label_folder(p: Path) -> Path:
    """The folder whose name labels the root ``p``: ``p`` itself, or a file root's parent."""
    return p if p.is_dir() or not p.exists() else p.parent


def id_label(root: Path, roots: Sequence[str]) -> str:
    """The root part of the document ids of ``root`` among its project's ``roots`` (in their
    order): its folder's name (a file root: its parent folder's), or, when an earlier root of the
    project has that name (``a/docs`` and ``b/docs``; a memory folder named like the project's first
    root), as many of its last path parts as make it unique, else its whole path. Two roots share a
    label only when they share the folder (file roots of one folder), so never a document id.
    One root's label; :func:`id_labels` gives every root's at once."""
    key = str(root)
    return id_labels([*roots[: roots.index(key)], key] if key in roots else [key])[key]


def id_labels(roots: Sequence[str]) -> dict[str, str]:
    """:func:`id_label` of each of ``roots`` (its first place where it is listed twice) among those
    listed before it, in time linear in the roots and their depths: the last ``n`` parts of every
    root's label folder are kept in a set per ``n``, so that a root's label is found by lookups, not by
    comparing it with every earlier root (a project of 1,500 single-file roots: 2.25 million comparisons)."""
    suffixes: dict[int, set[str]] = {}  # n -> "/".join(parts[-n:]) of the roots so far, n <= len(parts)
    whole: dict[int, set[str]] = {}  # len(parts) -> "/".join(parts): what parts[-n:] joins to for larger n
    labels: dict[str, str] = {}
    folder_of: dict[str, str] = {}  # label -> the folder it names
    for key in roots:
        folder = _label_folder(Path(key))
        parts = folder.parts
        label = str(folder)
        for n in range(1, len(parts) + 1):
            candidate = "/".join(parts[-n:])
            if candidate not in suffixes.get(n, ()) and not any(
                    candidate in joined for depth, joined in whole.items() if depth < n):
                label = candidate if n == 1 else candidate.lstrip("/")
                break
        if folder_of.setdefault(label, str(folder)) != str(folder):  # the whole path, its "/" stripped, is
            label = str(folder)  # another folder's name (``/a`` after ``/x/a``): the path with its "/"
        labels.setdefault(key, label)
        for n in range(1, len(parts) + 1):
            suffixes.setdefault(n, set()).add("/".join(parts[-n:]))
        whole.setdefault(len(parts), set()).add("/".join(parts))
    return labels


def document_row(pid: str, root_key: str, root_label: str, rel: str, parsed: ParsedDocument,
                 content_hash: str, mtime_ns: int, size_bytes: int, now: str,
                 doc_id: str | None = None) -> DocumentRow:
    """The catalog row of a parsed document, with its role, kind label, source family, recorded
    time (a bad front-matter date is added to ``parsed.problems``), links and entities."""
    from sleuth.ingest.roles import infer_role, kind_label, recorded_time, source_family

    recorded_ns, date_problem = recorded_time(parsed.front_matter, mtime_ns)
    if date_problem:
        parsed.problems.append(date_problem)
    return DocumentRow(
        doc_id=doc_id or doc_id_for(pid, root_label, rel), project_id=pid, root=root_key, rel_path=rel,
        title=parsed.title or Path(rel).name, tags=list(parsed.tags), kind=parsed.kind,
        front_matter=dict(parsed.front_matter), mtime_ns=mtime_ns, size_bytes=size_bytes,
        content_hash=content_hash, revision=content_hash[:12], text=parsed.text, generation=0,
        indexed_at=now, role=infer_role(rel, parsed.kind, parsed.front_matter),
        label=kind_label(rel, parsed.kind, parsed.front_matter), family=source_family(parsed.kind),
        recorded_ns=recorded_ns, links=tuple((k.target, k.relation, k.label) for k in parsed.links),
        entities=tuple(parsed.entities),
    )
