"""What a remote caller (a user of ``sleuth serve --http``) is shown of the server's file system:
no absolute path. Pure: no I/O.

A project's roots are folders on the server (``/srv/notes/en``), and the index folder holds the
memory roots (``/srv/notes/.sleuth/memory/beta``); a local user needs those paths, a remote one
only learns the server's layout from them. :func:`hide_server_paths` replaces each such path, and
every path under one, in a JSON-like answer: a root by its folder name (the label results show),
the index folder by ``<index>``.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

#: What stands for the index folder in a remote caller's answers.
INDEX_SHOWN = "<index>"


def hide_server_paths(value: Any, index_dir: str, roots: Iterable[str]) -> Any:
    """``value`` (nested dicts, lists and strings) with every string that is a root, the index
    folder, or a path under one of them, rewritten: ``/srv/notes/en/a.md`` → ``en/a.md``,
    ``/srv/notes/.sleuth`` → ``<index>``. Other values are returned as they are (a new container
    for each dict and list). The longest matching prefix wins, so a root inside the index folder
    (a memory root) shows as its own name."""
    prefixes = sorted(((str(r), PurePosixPath(str(r)).name) for r in roots if str(r).startswith("/")),
                      key=lambda p: -len(p[0]))
    if index_dir.startswith("/"):
        prefixes.append((index_dir, INDEX_SHOWN))
        prefixes.sort(key=lambda p: -len(p[0]))

    def text(s: str) -> str:
        for prefix, shown in prefixes:
            if s == prefix:
                return shown
            if s.startswith(prefix.rstrip("/") + "/"):
                return f"{shown}/{s[len(prefix.rstrip('/')) + 1:]}"
        return s

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return text(v)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    return walk(value)


__all__ = ["INDEX_SHOWN", "hide_server_paths"]
