"""Where the index is: ``--index``, else ``$SLEUTH_INDEX``, else the nearest ``.sleuth/`` upwards.

Standard library only, so the thin ``sleuth serve`` (which hands the session to a broker) can find
the index without importing the engine.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Mapping
from pathlib import Path

#: Name of the index folder created in the first root and looked for in parent folders.
INDEX_DIR_NAME = ".sleuth"
#: Environment variable naming the index folder.
INDEX_ENV = "SLEUTH_INDEX"
#: The catalog file whose presence makes a folder an index.
CATALOG_FILE = "catalog.sqlite3"
#: Environment variable naming a PostgreSQL catalog (``postgresql://...``) used instead of the file.
CATALOG_URL_ENV = "SLEUTH_CATALOG_URL"


def child_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` for a process sleuth starts in another folder (the broker and the embedding worker run
    in the index folder): ``PYTHONPATH``'s relative entries made absolute against this folder, an
    empty one (Python reads it as the working folder) made this folder, so that the child's import
    path is the parent's and never the index folder's (a ``click.py`` there would run in it; the
    child is started with ``-P`` for the same reason)."""
    child = dict(env)
    if child.get("PYTHONPATH"):
        child["PYTHONPATH"] = os.pathsep.join(os.path.abspath(p or os.curdir)
                                              for p in child["PYTHONPATH"].split(os.pathsep))
    return child


def catalog_url() -> str | None:
    """``$SLEUTH_CATALOG_URL`` when set (the catalog is then in PostgreSQL), else None."""
    return os.environ.get(CATALOG_URL_ENV, "").strip() or None


#: A folder holding the catalog file and this folder is an index folder (:func:`is_index_folder`).
POSTINGS_DIR = "postings"


def is_index_folder(folder: Path) -> bool:
    """Whether ``folder`` is an index folder of sleuth's, whatever its name: it holds the catalog
    file and the postings folder (a ``catalog.sqlite3`` alone may be anyone's). Walks leave such a
    folder out, and ``sleuth index`` refuses one as a path: its users, keys, logs and settings are
    never indexed. A path that cannot be looked at (too long a name) is none."""
    try:
        return (folder / CATALOG_FILE).is_file() and (folder / POSTINGS_DIR).is_dir()
    except OSError:  # ENAMETOOLONG: Python 3.11's Path.is_file raises it
        return False


def index_folder_holding(path: Path, own: Path | None = None) -> Path | None:
    """The index folder that ``path`` (resolved) is or lies in, or None: ``own`` (the index being
    written, whether or not it exists yet) apart from its memory folders
    (``<own>/memory/<project>``, which ``project_memory_record`` indexes), or any folder above
    that :func:`is_index_folder` says is one."""
    if own is not None and path.is_relative_to(own):
        memory = own / "memory"  # sleuth.memory.records.MEMORY_DIR_NAME
        return None if path.is_relative_to(memory) and path != memory else own
    for folder in (path, *path.parents):
        if is_index_folder(folder):
            return folder
    return None


def has_catalog(index_dir: Path) -> bool:
    """Whether ``index_dir`` is an index: its catalog file exists, or the catalog is in PostgreSQL
    (``$SLEUTH_CATALOG_URL``) and the folder exists. A path that cannot be looked at (a name over
    255 bytes: Python 3.11's ``Path.is_file`` raises ENAMETOOLONG) is none."""
    try:
        if catalog_url() is not None:
            return index_dir.is_dir()
        return (index_dir / CATALOG_FILE).is_file()
    except OSError:
        return False


def catalog_identity(index_dir: Path) -> tuple[int, int] | None:
    """(device, inode) of the index's SQLite catalog file; None when there is none (PostgreSQL) or it
    is gone: what tells an index deleted or made anew under a running process."""
    try:
        st = os.stat(index_dir / CATALOG_FILE)
    except OSError:
        return None
    return st.st_dev, st.st_ino


def absolute_path(given: str | Path) -> Path:
    """``given`` with ``~`` expanded and symlinks resolved, as far as that can be done: a ``~user``
    of no known user stays as written, and a path that is a symlink loop (or otherwise cannot be
    resolved) is made absolute without resolving it, so that the caller's own check of the folder
    reports it readably instead of pathlib's ``RuntimeError``."""
    path = Path(given)
    try:
        path = path.expanduser()
    except RuntimeError:  # ~user of no known user, or no home folder: keep the name as written
        pass
    try:
        return path.resolve()
    except (RuntimeError, OSError):  # a symlink loop (pathlib raises RuntimeError for ELOOP)
        return Path(os.path.abspath(path))


def resolved(path: Path) -> Path:
    """``path`` with ``~`` expanded, made absolute, symbolic links followed (``Path.resolve``).

    Raises:
        ConfigError: a loop of symbolic links (Python 3.11's RuntimeError: a traceback before).
    """
    try:
        return path.expanduser().resolve()
    except RuntimeError as exc:
        from sleuth.errors import ConfigError
        from sleuth.ingest.names import index_name

        raise ConfigError(f"{index_name(str(path))} is a loop of symbolic links: sleuth cannot index it") from exc


def find_index_dir(explicit: str | Path | None, start: Path | None = None) -> Path | None:
    """The index folder: ``explicit``, else ``$SLEUTH_INDEX``, else the nearest ``.sleuth/`` found
    in ``start`` (default: the current folder) or its parents, as git finds ``.git``. Never raises
    for a path that cannot be resolved (:func:`absolute_path`)."""
    if explicit:
        return absolute_path(explicit)
    if os.environ.get(INDEX_ENV):
        return absolute_path(os.environ[INDEX_ENV])
    here = (start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if has_catalog(folder / INDEX_DIR_NAME):
            return folder / INDEX_DIR_NAME
    return None


def enclosing_index(path: Path) -> tuple[Path, str] | None:
    """The index that already covers ``path`` (resolved), for ``sleuth index PATH`` without
    ``--index``: the nearest ``.sleuth/`` in the parents of ``path``'s folder (a file's folder, or
    the folder itself) that has ``path`` or a folder above it among its projects' roots, with that
    root; None when none does (the catalog in PostgreSQL included: no folder to look in). As git
    finds the repository of a path inside it, and as git's ``safe.directory`` rule, an index folder
    or catalog that belongs to another user is passed over: indexing into it would hand that user
    the text (one in ``/tmp`` listing ``/tmp`` as a root would catch everything indexed below).
    Reads each catalog read-only; never raises (an unreadable catalog counts as covering nothing)."""
    import json
    import sqlite3

    if catalog_url() is not None:
        return None
    folder = path if path.is_dir() else path.parent
    for above in folder.parents:
        candidate = above / INDEX_DIR_NAME
        if not has_catalog(candidate) or not _own(candidate) or not _own(candidate / CATALOG_FILE):
            continue
        try:
            with contextlib.closing(sqlite3.connect(f"{(candidate / CATALOG_FILE).as_uri()}?mode=ro", uri=True,
                                                    timeout=5)) as conn:
                rows = conn.execute("SELECT roots FROM projects").fetchall()
            roots = [Path(r) for (text,) in rows for r in json.loads(text) if isinstance(r, str)]
        except (sqlite3.Error, ValueError, TypeError, RecursionError):
            continue
        holding = sorted((r for r in roots if path == r or path.is_relative_to(r)), key=lambda r: -len(r.parts))
        if holding:
            return candidate, str(holding[0])
    return None


def _own(path: Path) -> bool:
    """Whether ``path`` (not followed when a symlink) belongs to this process's user."""
    try:
        return os.lstat(path).st_uid == os.geteuid()
    except OSError:
        return False
