"""An index folder: the catalog (the source of truth), the tantivy postings and the write lock.

The layout: ``catalog.sqlite3`` (SQLite, WAL), ``postings/`` with ``postings.generation``, the lane
files derived from the catalog (``tfidf.cache.npz``, ``vectors.*``), ``write.lock``, and
``config.toml`` when the user writes one. Readers never take the lock; one writer at a time does.
A reader keeps answering from the last committed state when the folder cannot be written (a full
disk, a read-only file system): the postings then stay behind the catalog (``postings_behind``
says why) and catch up when a writer has room again.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sleuth.errors import ConfigError, IndexWriteError, storage_errors
from sleuth.ingest.names import is_valid_text, printable
from sleuth.lanes.postings import Postings
from sleuth.locate import absolute_path, catalog_url
from sleuth.locks import NotALockFile, WriteLock, write_lock_timeout_s
from sleuth.store import scratch
from sleuth.store.catalog import Catalog

if TYPE_CHECKING:
    from sleuth.lanes.base import LaneQuery

CATALOG_FILE = "catalog.sqlite3"
POSTINGS_DIR = "postings"
WRITE_LOCK_FILE = "write.lock"
#: With a shared catalog (PostgreSQL), the ``flock`` of this folder's own postings: taken by their
#: catch-up and by this host's indexer, so that neither waits for the catalog's lock of another host.
POSTINGS_LOCK_FILE = "postings.lock"
#: At most this many blocks are considered when a quoted phrase restricts a lane that cannot check
#: phrases itself (tfidf, vector).
PHRASE_FILTER_MAX_BLOCKS = 100_000
#: A reader brings the postings up to the catalog only when their file system has this many times
#: the text of the blocks to replay free (postings with positions, stored fields and a merge: the
#: 2,041 tldr pages hold 0.53 MB of block text and 0.97 MB of postings); else it would do the work
#: of the whole replay only to fail at the commit.
CATCH_UP_FREE_SPACE_FACTOR = 3
#: After a catch-up that could not run (too little space, a read-only folder), a process tries
#: again only after this long or once the catalog has moved on, in seconds.
CATCH_UP_RETRY_S = 30.0


def open_catalog(index_dir: Path) -> tuple[Catalog, WriteLock]:
    """The catalog of ``index_dir`` and its write lock: ``catalog.sqlite3`` with a ``flock`` on
    ``write.lock``, or, when ``$SLEUTH_CATALOG_URL`` is set, the PostgreSQL catalog it names with a
    PostgreSQL advisory lock (:mod:`sleuth.store.pg`)."""
    url = catalog_url()
    if url is None:
        return Catalog(index_dir / CATALOG_FILE), WriteLock(index_dir / WRITE_LOCK_FILE, write_lock_timeout_s())
    from sleuth.store.pg import PgCatalog, PgWriteLock

    return PgCatalog(url, index_dir), PgWriteLock(url, write_lock_timeout_s())  # type: ignore[return-value]


#: Mode of an index folder sleuth creates (a folder that exists is left as it is).
NEW_INDEX_DIR_MODE = 0o700


def foreign_owner(index_dir: Path) -> str | None:
    """What to tell the user when ``index_dir`` belongs to another user than this process's (as git
    warns of a repository another user owns): that user can read the text of what is indexed into it
    and change what searches of it return. None when it is this user's, or cannot be looked at."""
    try:
        owner = os.stat(index_dir).st_uid
    except OSError:
        return None
    if owner == os.geteuid():
        return None
    return (f"the index folder {index_dir} belongs to another user (uid {owner}), who can read the text of "
            "what is indexed into it and change what searches of it return; index into a folder of your own "
            "(--index DIR) unless you trust that user")


class IndexFolder:
    """The stored parts of one index, opened (the folder is created when missing).

    Opening also removes the scratch files a killed process left (only looks, unless there are some).

    Args:
        index_dir: the folder.
    Raises:
        IndexFormatError: the catalog is of another format.
        ConfigError: ``index_dir`` names something that is not a folder (a file, a symlink to one, a symlink loop).
        StorageFull, IndexReadOnly: the folder cannot be made.
    """

    def __init__(self, index_dir: str | Path) -> None:
        self.index_dir = absolute_path(index_dir)
        if not is_valid_text(str(self.index_dir)):  # tantivy and SQLite take UTF-8 paths only
            raise ConfigError(f"the index folder {printable(str(self.index_dir))} has a path that is not valid UTF-8:"
                              " use one whose path is (rename it, or choose another with --index)")
        if os.path.lexists(self.index_dir) and not self.index_dir.is_dir():
            raise ConfigError(f"{self.index_dir} cannot be an index folder: it is not a folder (a file, a symlink to "
                              "a file, or a symlink loop)")
        with storage_errors(self.index_dir, "the index folder"):
            # A new index folder is this user's alone (it holds the text of every indexed file), as
            # ssh and gpg make theirs; an existing one keeps the mode its owner gave it.
            self.index_dir.mkdir(mode=NEW_INDEX_DIR_MODE, parents=True, exist_ok=True)
        self.catalog, self.write_lock = open_catalog(self.index_dir)
        #: The lock of this folder's postings: the write lock itself with a local catalog (one
        #: folder, one lock), a ``flock`` of its own when the catalog is shared (see ``POSTINGS_LOCK_FILE``).
        self.postings_lock = (self.write_lock if isinstance(self.write_lock, WriteLock) else
                              WriteLock(self.index_dir / POSTINGS_LOCK_FILE, write_lock_timeout_s()))
        self.postings = Postings(self.index_dir / POSTINGS_DIR)
        #: Why the postings lag behind the catalog when a catch-up could not write, else None.
        self.postings_behind: str | None = None
        self._catch_up_skipped: tuple[int, int, float] | None = None  # (catalog gen, postings gen, when)
        self._identity = self._catalog_identity()
        scratch.sweep(self.index_dir, scratch.INDEX_SCRATCH_GLOBS, self.lane_files_writable)

    def close(self) -> None:
        self.catalog.close()
        self.postings.close()

    @property
    def read_only(self) -> str | None:
        """Why the catalog or the postings could only be opened for reading, else None."""
        return self.catalog.read_only or self.postings.read_only

    # ------------------------------------------------------------------ presence

    def _catalog_identity(self) -> tuple[int, int] | None:
        try:
            st = os.stat(self.index_dir / CATALOG_FILE)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def gone(self) -> bool:
        """True when the index folder was deleted, moved or made anew since it was opened (its
        catalog is then a file nobody else sees: answers from it would be a ghost's)."""
        return self._catalog_identity() != self._identity

    # ------------------------------------------------------------------ the postings' catch-up

    def catch_up(self, blocking: bool = False) -> None:
        """Replay catalog changes the postings have not seen (after a crash or another writer).

        Takes the postings' lock (:attr:`postings_lock`), not the catalog's: with a shared
        catalog a host catches up with generations other hosts committed while one of them is
        writing, and a host building its postings from scratch keeps no writer waiting. Without
        ``blocking``, does nothing while another process of this folder holds the postings' lock:
        that writer brings the postings up to date itself. When it cannot write (a full disk, a
        read-only folder), the postings stay as they are (the lanes answer from them;
        :attr:`postings_behind` says why) and it is tried again after ``CATCH_UP_RETRY_S`` or
        once the catalog moves on.
        """
        target, current = self.catalog.generation(), self.postings.generation()
        if current == target:
            self.postings_behind = None
            return
        skipped = self._catch_up_skipped
        if skipped and skipped[:2] == (target, current) and time.monotonic() - skipped[2] < CATCH_UP_RETRY_S:
            return
        try:
            if not self.postings_lock.acquire(blocking=blocking):
                return  # another process is writing; it brings the postings up to date itself
        except NotALockFile as exc:  # planted (a folder, a link): named, with what to do, as write.lock is
            self._skip_catch_up(target, current, f"{exc.strerror} ({exc.filename})")
            return
        except OSError:  # the lock file cannot be made: a read-only folder
            self._skip_catch_up(target, current, f"{self.index_dir} cannot be written")
            return
        try:
            short = self._space_short_of(current)
            if short:
                self._skip_catch_up(target, current, short)
                return
            self.postings.catch_up(self.catalog)
            self.postings_behind, self._catch_up_skipped = None, None
        except IndexWriteError as exc:
            self._skip_catch_up(target, current, str(exc))
        finally:
            self.postings_lock.release()

    @contextlib.contextmanager
    def postings_writable(self) -> Iterator[None]:
        """Hold the postings' lock for the block (an indexing run, which holds the write lock
        already, around its postings writes). With a local catalog the write lock is that lock.

        Raises:
            IndexBusy: another process of this folder held the postings' lock for the timeout.
        """
        if self.postings_lock is self.write_lock:
            yield
            return
        with self.postings_lock.held():
            yield

    def _skip_catch_up(self, target: int, current: int, why: str) -> None:
        self.postings_behind = why
        self._catch_up_skipped = (target, current, time.monotonic())

    def _space_short_of(self, generation: int) -> str | None:
        """Why the file system is too full to replay the catalog's changes since ``generation``
        into the postings (see ``CATCH_UP_FREE_SPACE_FACTOR``), or None."""
        try:
            st = os.statvfs(self.postings.path)
        except OSError:
            return None
        free = (st.f_bfree if os.geteuid() == 0 else st.f_bavail) * st.f_frsize
        needed = CATCH_UP_FREE_SPACE_FACTOR * self.catalog.text_bytes_since(generation)
        if free >= needed:
            return None
        return (f"no space left on device for the postings in {self.index_dir} ({free / 1e6:.1f} MB free, about"
                f" {needed / 1e6:.1f} MB needed): free some space and run `sleuth index` again")

    # ------------------------------------------------------------------ for the lanes

    @contextlib.contextmanager
    def lane_files_writable(self) -> Iterator[bool]:
        """See :meth:`sleuth.locks.WriteLock.held_or_skip`: lane files are written under the lock only."""
        with self.write_lock.held_or_skip() as allowed:
            yield allowed

    def phrase_blocks(self, q: LaneQuery) -> set[str]:
        """The blocks (of ``q``'s projects) holding every quoted phrase of ``q``, at most
        ``PHRASE_FILTER_MAX_BLOCKS``."""
        phrases = [self.postings.phrase(p) for p in q.parsed.phrases]
        return set(self.postings.search(phrases[0], PHRASE_FILTER_MAX_BLOCKS, q.projects, phrases[1:]).block_ids)
