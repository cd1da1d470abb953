"""Scratch files: a file is written under a temporary name beside its final one and renamed into
place (``os.replace``), so a reader sees the old file or the new one, never half of one. A process
killed in between leaves its scratch file behind; :func:`sweep` removes the ones nobody writes.

A scratch file is named ``<final name>.<pid>.<8 hex>.tmp`` after the process writing it. It is
*stale* when that process no longer runs, or, for a name without a pid (tantivy's own ``.tmp*``
files, names of older versions), when it was not modified for :data:`SCRATCH_STALE_S`. A pid is
only known on this host: a process of another host (or PID namespace) writing the same folder
could see a live writer's file as stale, which costs that writer one failed cache save or write,
reported as such, never a wrong index (every scratch file is renamed into place or dropped).
"""

from __future__ import annotations

import contextlib
import fnmatch
import os
import re
import secrets
import shutil
import time
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import BinaryIO

from sleuth.faults import kill_point

#: A scratch file whose name holds no pid is stale after this long without a change, in seconds.
SCRATCH_STALE_S = 3600.0
#: The suffix of every scratch file sleuth writes.
SCRATCH_SUFFIX = ".tmp"
#: ``<name>.<pid>.<token>.tmp``: the writer's pid (the embedding model's export names its thread
#: id as the token).
_PID_RE = re.compile(r"\.(\d+)\.[0-9a-z_]+\.tmp$")
#: Scratch files of an index folder, as globs relative to it: the lane files and the postings'
#: generation beside the catalog, tantivy's atomic writes inside ``postings/``, and the records of
#: the memory folders (``memory/<project>/<kind folder>/<slug>.md``).
INDEX_SCRATCH_GLOBS = ("*.tmp", "postings/.tmp*", "postings/*.tmp", "memory/*/*/*.tmp")


def scratch_path(final: Path) -> Path:
    """A new scratch name for ``final``, in its folder (see the module docstring)."""
    return final.with_name(f"{final.name}.{os.getpid()}.{secrets.token_hex(4)}{SCRATCH_SUFFIX}")


@contextlib.contextmanager
def replacing(final: Path) -> Iterator[Path]:
    """Write ``final`` atomically: the block writes the yielded scratch path, which then replaces
    ``final``; when the block (or the rename) fails, the scratch file is removed and the error
    raised, ``final`` untouched."""
    tmp = scratch_path(final)
    try:
        yield tmp
        kill_point(f"scratch:{final.name}")
        os.replace(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            tmp.unlink()
        raise


def create(path: Path) -> BinaryIO:
    """Open the new file ``path`` for writing (mode 0600; an existing file is an error)."""
    return os.fdopen(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), "wb")


def writer_pid(name: str) -> int | None:
    """The pid in a scratch file's name, or None when it holds none."""
    found = _PID_RE.search(name)
    return int(found.group(1)) if found else None


def _running(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def is_stale(path: Path, now: float | None = None) -> bool:
    """Whether the scratch file ``path`` is left over (see the module docstring); False when it is gone."""
    pid = writer_pid(path.name)
    if pid is not None and not _running(pid):
        return True
    try:
        age_s = (time.time() if now is None else now) - path.lstat().st_mtime
    except OSError:
        return False
    return age_s > SCRATCH_STALE_S


def _entries(folder: str) -> list[os.DirEntry[str]]:
    try:
        with os.scandir(folder) as it:
            return list(it)
    except OSError:
        return []


def _matching(folder: Path, patterns: Iterable[str]) -> Iterator[Path]:
    """Paths under ``folder`` matching any of ``patterns`` (``/``-separated ``fnmatch`` parts;
    folders are not followed through links), each folder read once."""
    by_parent: dict[str, list[re.Pattern[str]]] = {}
    for pattern in patterns:
        parent, _, name = pattern.rpartition("/")
        by_parent.setdefault(parent, []).append(re.compile(fnmatch.translate(name)))
    for parent, names in by_parent.items():
        folders = [os.fspath(folder)]
        for part in parent.split("/") if parent else ():
            folders = [e.path for f in folders for e in _entries(f)
                       if fnmatch.fnmatchcase(e.name, part) and e.is_dir(follow_symlinks=False)]
        for f in folders:
            for entry in _entries(f):
                if entry.name.endswith(SCRATCH_SUFFIX) or entry.name.startswith(SCRATCH_SUFFIX):  # most are neither
                    if any(name.match(entry.name) for name in names):
                        yield Path(entry.path)


def stale_files(folder: Path, globs: Iterable[str] = ("*" + SCRATCH_SUFFIX,)) -> list[Path]:
    """The stale scratch files in ``folder`` matching ``globs`` (only reads the folder; every
    pattern's last part must start or end with ``.tmp``)."""
    now = time.time()
    return [p for p in _matching(folder, globs) if is_stale(p, now)]


def sweep(folder: Path, globs: Iterable[str] = ("*" + SCRATCH_SUFFIX,),
          may_write: Callable[[], contextlib.AbstractContextManager[bool]] | None = None) -> list[Path]:
    """Remove the stale scratch files (or scratch folders) of ``folder``; returns those removed.

    Only looks when there is none (no write at all). With ``may_write`` (e.g. a context taking the
    index's write lock without waiting, yielding whether it got it), removes them only while it
    yields True, so a sweep never runs beside an indexing run. A file that cannot be removed (a
    read-only folder) is left.
    """
    globs = tuple(globs)
    if not stale_files(folder, globs):
        return []
    removed: list[Path] = []
    with may_write() if may_write is not None else contextlib.nullcontext(True) as allowed:
        if not allowed:
            return []
        for path in stale_files(folder, globs):  # again, now that no writer runs
            with contextlib.suppress(OSError):
                if path.is_dir() and not path.is_symlink():  # a scratch folder (of links: see Postings)
                    shutil.rmtree(path)
                else:
                    path.unlink()
                removed.append(path)
    return removed
