"""An index folder: the catalog (the source of truth), the tantivy postings and the write lock.

The layout: ``catalog.sqlite3`` (SQLite, WAL), ``postings/`` with ``postings.generation``, the lane
files derived from the catalog (``tfidf.cache.npz``, ``vectors.*``), ``write.lock``, and
``config.toml`` when the user writes one. Readers never take the lock; one writer at a time does.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from sleuth.lanes.postings import Postings
from sleuth.locks import WriteLock, write_lock_timeout_s
from sleuth.store.catalog import Catalog

if TYPE_CHECKING:
    from sleuth.lanes.base import LaneQuery

CATALOG_FILE = "catalog.sqlite3"
POSTINGS_DIR = "postings"
WRITE_LOCK_FILE = "write.lock"
#: At most this many blocks are considered when a quoted phrase restricts a lane that cannot check
#: phrases itself (tfidf, vector).
PHRASE_FILTER_MAX_BLOCKS = 100_000


class IndexFolder:
    """The stored parts of one index, opened (the folder is created when missing).

    Args:
        index_dir: the folder.
    Raises:
        sleuth.store.catalog.IndexFormatError: the catalog is of another format.
    """

    def __init__(self, index_dir: str | Path) -> None:
        self.index_dir = Path(index_dir).expanduser().resolve()
        self.index_dir.mkdir(parents=True, exist_ok=True)
        self.catalog = Catalog(self.index_dir / CATALOG_FILE)
        self.postings = Postings(self.index_dir / POSTINGS_DIR)
        self.write_lock = WriteLock(self.index_dir / WRITE_LOCK_FILE, write_lock_timeout_s())

    def close(self) -> None:
        self.catalog.close()

    def catch_up(self, blocking: bool = False) -> None:
        """Replay catalog changes the postings have not seen (after a crash or another writer).

        Without ``blocking``, does nothing while another process holds the write lock: that
        writer brings the postings up to date itself.
        """
        if self.postings.generation() == self.catalog.generation():
            return
        if not self.write_lock.acquire(blocking=blocking):
            return
        try:
            self.postings.catch_up(self.catalog)
        finally:
            self.write_lock.release()

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
