"""Keeping an index current with a file watcher (``sleuth watch``; the broker will run it too).

The watcher (``watchfiles``: inotify, FSEvents, ...) reports changed paths under every root of
the watched projects. Changes are debounced (a batch closes once nothing changed for
``debounce_ms``, or after ``max_batch_ms``) and each batch re-indexes only the changed paths of
each root (:meth:`sleuth.Engine.update_paths`): edits, new files, deletions and renames, including
a deleted folder or a deleted root. The walker's rules apply (``.gitignore``, default excludes);
the index folder itself is never watched. A root that disappears loses its documents; when it
comes back, or a project gains a root, the watch is restarted to include it.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sleuth.engine import Engine
from sleuth.errors import IndexBusy, SleuthError
from sleuth.ingest.names import index_name, one_line, printable
from sleuth.ingest.walk import excluded_folder_name
from sleuth.types import IndexReport

if TYPE_CHECKING:
    from sleuth.progress import Progress

logger = logging.getLogger(__name__)

#: A batch closes once no change arrived for this long, in milliseconds.
DEBOUNCE_MS = 100
#: ... or once it has been open this long, in milliseconds.
MAX_BATCH_MS = 1_000
#: How often the watch wakes up without changes (to see new projects, lost or returning roots
#: and the stop event), in milliseconds.
WAKE_MS = 500
#: Where a watch cannot be set up (watchfiles cannot watch a tree holding a folder whose name is
#: not valid UTF-8), every root is re-scanned (incrementally: one ``stat`` per file) this often, in
#: seconds, instead.
RESCAN_EVERY_S = 2.0
#: Above this many changed paths in one root, the whole root is re-indexed (incrementally).
FULL_ROOT_PATHS = 2_000



@dataclass(frozen=True)
class WatchedRoot:
    """One root of one project: ``path`` is a folder, or a single file when ``is_file``."""

    project: str
    path: Path
    is_file: bool


@dataclass
class WatchBatch:
    """What one batch of changes did to one root."""

    project: str
    root: str
    paths: list[str] = field(default_factory=list)
    report: IndexReport | None = None
    error: str | None = None
    took_s: float = 0.0
    #: On the last batch of a round: the blocks left to embed and the background worker that embeds
    #: them (``{state, pending_blocks, started, pid[, error]}``), None when none wait.
    embedding: dict[str, Any] | None = None


def watched_roots(engine: Engine, projects: Sequence[str] | None = None,
                  within: Path | None = None) -> list[WatchedRoot]:
    """The roots of ``projects`` (default: every project of the index), as stored in the catalog;
    with ``within`` (the folder of an index found by looking upwards, which may have come with it:
    a cloned repository), only those inside it (:func:`left_out_roots` names the others), as a
    ``sleuth index`` without paths indexes them.

    Raises:
        ProjectNotFound: a named project does not exist.
    """
    wanted = engine.searcher.check_projects(projects)
    out: list[WatchedRoot] = []
    for project, roots in sorted(engine.catalog.roots().items()):
        if wanted is not None and project not in wanted:
            continue
        for root in roots:
            if root and os.path.isabs(root) and (within is None or Path(root).is_relative_to(within)
                                                 or Path(root).is_relative_to(engine.index_dir)):
                out.append(WatchedRoot(project, Path(root), os.path.isfile(root)))
    return out


def left_out_roots(engine: Engine, projects: Sequence[str] | None, within: Path) -> list[str]:
    """The roots of ``projects`` (default: every project) that :func:`watched_roots` leaves out for
    lying outside ``within``."""
    kept = {str(r.path) for r in watched_roots(engine, projects, within)}
    wanted = engine.searcher.check_projects(projects)
    return [root for project, roots in sorted(engine.catalog.roots().items())
            if wanted is None or project in wanted for root in roots if root not in kept]


def _presence(root: WatchedRoot) -> tuple[int, int] | None:
    """None when ``root`` does not exist, else the identity (device, inode) of the folder watched
    for it (the root, or a single-file root's folder)."""
    try:
        if root.is_file and not root.path.is_file():
            return None
        st = os.stat(root.path.parent if root.is_file else root.path)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def changed_paths(changes: Iterable[str], roots: Sequence[WatchedRoot],
                  index_dir: Path) -> dict[WatchedRoot, set[str]]:
    """Group changed absolute paths by root as paths relative to it (pure).

    A changed ``.gitignore`` stands for its whole folder (what it ignores may have changed); a
    change to a single-file root, or to a root folder itself, stands for the whole root (``""``).
    Paths in the index folder or in always-excluded folders (``.git/``, ``node_modules/``, ...) are
    dropped.
    """
    out: dict[WatchedRoot, set[str]] = {}
    index_prefix = str(index_dir) + os.sep
    for path in changes:
        if path == str(index_dir) or path.startswith(index_prefix):
            continue
        for root in roots:
            base = str(root.path)
            if root.is_file:
                if path == base:
                    out.setdefault(root, set()).add("")
                continue
            if path == base:
                out.setdefault(root, set()).add("")
                continue
            if not path.startswith(base + os.sep):
                continue
            rel = index_name(path[len(base) + 1 :].replace(os.sep, "/"))  # names as the index keeps them
            parts = rel.split("/")
            if any(map(excluded_folder_name, parts)):  # the walker excludes them: events dropped
                continue
            if parts[-1] == ".gitignore":
                rel = "/".join(parts[:-1])
            out.setdefault(root, set()).add(rel)
    return out


class _Watcher:
    def __init__(self, engine: Engine, projects: Sequence[str] | None, stop: threading.Event,
                 debounce_ms: int, max_batch_ms: int, on_batch: Callable[[WatchBatch], None] | None,
                 ready: Callable[[list[WatchedRoot]], None] | None,
                 progress: Callable[[], Progress] | None = None, within: Path | None = None) -> None:
        self.engine, self.projects, self.stop, self.within = engine, projects, stop, within
        self.debounce_ms, self.max_batch_ms = debounce_ms, max_batch_ms
        self.on_batch, self.ready, self.progress = on_batch, ready, progress
        self.pending: dict[WatchedRoot, set[str]] = {}
        self._woke = False  # the current watch reported once (it is in place)
        self._rescanning = False  # the watch could not be set up: rescans instead (RESCAN_EVERY_S)

    def apply_pending(self) -> None:
        """Re-index the pending paths, root by root; a busy index keeps them pending for the next try,
        and any other failure of a root (an unexpected exception too: logged with its traceback) is
        the error of its batch, not the end of the watch.
        The blocks' vectors are left to the background embedding worker (started unless one runs,
        :func:`sleuth.background.embed_in_background`): a batch holds the write lock only for the
        keyword lanes, and the watch goes back to watching (and stops when asked) at once."""
        batches: list[WatchBatch] = []
        for root in list(self.pending):
            rels = self.pending.pop(root)
            if len(rels) > FULL_ROOT_PATHS:
                rels = {""}
            batch = WatchBatch(root.project, str(root.path), sorted(rels))
            started = time.perf_counter()
            try:
                phases = self.progress() if self.progress is not None else None
                batch.report = self.engine.update_paths(root.project, root.path, rels, embed=False, phases=phases)
            except IndexBusy as exc:
                self.pending.setdefault(root, set()).update(rels)
                batch.error = f"{exc} (will retry)"
            except (SleuthError, OSError) as exc:
                batch.error = str(exc)
            except Exception as exc:  # a bug met by one batch: logged, and the watch goes on
                logger.exception("watch: re-indexing %s of project %s failed", one_line(str(root.path)),
                                 root.project)
                batch.error = f"unexpected error: {type(exc).__name__}: {exc}"
            batch.took_s = round(time.perf_counter() - started, 3)
            batches.append(batch)
        if batches:
            from sleuth.background import embed_in_background

            try:
                batches[-1].embedding = embed_in_background(self.engine)[0] or None
            except (SleuthError, OSError) as exc:  # the next round tries again; search works meanwhile
                logger.warning("cannot start the embedding of the new blocks: %s", exc)
        if self.on_batch is not None:
            for batch in batches:
                self.on_batch(batch)

    def run(self) -> None:
        scanned: set[WatchedRoot] = set()
        presence_before: dict[WatchedRoot, tuple[int, int] | None] = {}
        while not self.stop.is_set():
            roots = watched_roots(self.engine, self.projects, self.within)
            presence = {r: _presence(r) for r in roots}
            for root in roots:  # a new root is scanned whole; so is one that vanished or came back
                if root not in scanned or presence[root] != presence_before.get(root):
                    self.pending.setdefault(root, set()).add("")
            scanned, presence_before = set(roots), presence
            folders = sorted({str(r.path.parent if r.is_file else r.path) for r, p in presence.items() if p})
            folders_set = {os.path.normpath(f) for f in folders}
            if not folders:
                self.apply_pending()
                self._ready(roots)
                self.stop.wait(WAKE_MS / 1000)
                continue
            self._woke = False
            try:
                if self._watch(folders, folders_set, roots, presence):
                    return  # the stop event ended the watch
            except RuntimeError as exc:
                if "decode path" not in str(exc):
                    raise
                # watchfiles cannot report a change to a path that is not valid UTF-8, and the
                # batch that held it is lost: watch again, and scan every root (incrementally)
                # once the new watch is in place.
                for root in roots:
                    self.pending.setdefault(root, set()).add("")
                if not self._woke:  # it cannot even be set up: such a folder is in the tree
                    self._rescan(roots, str(exc))

    def _watch(self, folders: list[str], folders_set: set[str], roots: list[WatchedRoot],
               presence: dict[WatchedRoot, tuple[int, int] | None]) -> bool:
        """Watch ``folders`` until the set of roots changes (False) or the stop event is set (True).

        Raises:
            KeyboardInterrupt: Ctrl-C (watchfiles raises it again, where it logged "KeyboardInterrupt
                caught, stopping watch" and returned; ``sleuth watch`` says "stopped" itself).
        """
        import watchfiles

        for changes in watchfiles.watch(
            *folders, watch_filter=None, debounce=self.max_batch_ms, step=self.debounce_ms,
            stop_event=self.stop, rust_timeout=WAKE_MS, yield_on_timeout=True, raise_interrupt=True,
            ignore_permission_denied=True,
        ):
            # The first wake-up (changes or time-out) comes once the watch is in place: only then
            # are roots scanned, so that no change between a scan and the watch is lost.
            self._woke = True
            for root, rels in changed_paths((p for _, p in changes), roots, self.engine.index_dir).items():
                self.pending.setdefault(root, set()).update(rels)
            self.apply_pending()
            self._ready(roots)
            now_roots = watched_roots(self.engine, self.projects, self.within)
            touched = folders_set & {os.path.normpath(p) for _, p in changes}
            # A change to a watched folder itself (deleted, made again: its inode number may be
            # reused) means the watch may follow a folder that is gone: watch again.
            if now_roots != roots or {r: _presence(r) for r in now_roots} != presence or touched:
                # A root appeared, vanished or was replaced (deleted and made again between two
                # wake-ups: the watch still follows the deleted folder), or a project gained a
                # root: watch again, and scan every root again (incrementally: a stat a file) once
                # the new watch is in place -- a change made between this watch's end and the new
                # one's start is reported by neither (an attack round lost 1 to 3 of 30 files
                # written while `sleuth index` added a project), and files made in a folder made
                # again under the same inode number would otherwise never be seen.
                for root in now_roots:
                    self.pending.setdefault(root, set()).add("")
                return False
        return True

    def _rescan(self, roots: list[WatchedRoot], why: str) -> None:
        """One round of watching by rescans: every root re-indexed incrementally, then a wait of
        :data:`RESCAN_EVERY_S` (the loop in :meth:`run` tries the watch again after it)."""
        if not self._rescanning:
            self._rescanning = True
            logger.warning("cannot watch for changes (%s): a folder name is not valid UTF-8, so every root is "
                           "scanned again every %g s instead", printable(why), RESCAN_EVERY_S)
        self.apply_pending()
        self._ready(roots)
        self.stop.wait(RESCAN_EVERY_S)

    def _ready(self, roots: list[WatchedRoot]) -> None:
        if self.ready is not None:
            self.ready(roots)
            self.ready = None


def watch_index(engine: Engine, projects: Sequence[str] | None = None, stop_event: threading.Event | None = None,
                debounce_ms: int = DEBOUNCE_MS, on_batch: Callable[[WatchBatch], None] | None = None,
                max_batch_ms: int = MAX_BATCH_MS, ready: Callable[[list[WatchedRoot]], None] | None = None,
                progress: Callable[[], Progress] | None = None, within: Path | None = None) -> None:
    """Keep ``engine``'s index current with the files under ``projects``' roots until ``stop_event`` is set.

    Every watched root is first re-indexed incrementally (changes made while nothing watched),
    then each batch of changes re-indexes the changed paths only. Blocks until ``stop_event`` is
    set (or KeyboardInterrupt); run it in a thread to keep serving meanwhile.

    Args:
        engine: the open index (its writer: one watcher per index).
        projects: project ids to watch; default: every project of the index, as they are now and
            as they are added later.
        stop_event: set it to stop watching; default: watch until interrupted.
        debounce_ms: a batch closes once nothing changed for this long.
        on_batch: called after each batch with what it did (or the error it met).
        max_batch_ms: a batch closes at the latest after this long.
        ready: called once with the watched roots, when the watch is in place and the first scan done.
        progress: makes the counter of each batch's phases (sleuth.progress), e.g. plain lines on
            stderr for a batch that lasts (the first scan of a large root).
        within: watch only the roots inside this folder (:func:`watched_roots`).
    Raises:
        ProjectNotFound: a named project does not exist.
    """
    _Watcher(engine, projects, stop_event or threading.Event(), debounce_ms, max_batch_ms, on_batch, ready,
             progress, within).run()

