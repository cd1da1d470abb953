"""What a remote caller (a user of ``sleuth serve --http``) is shown of the server's file system:
no absolute path. Pure: no I/O.

A project's roots are folders on the server (``/srv/notes/en``), and the index folder holds the
memory roots (``/srv/notes/.sleuth/memory/beta``); a local user needs those paths, a remote one
only learns the server's layout from them. :func:`hide_server_paths` replaces each such path, and
every path under one, in a JSON-like answer: a root by its folder name (the label results show),
the index folder by ``<index>``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import PurePosixPath
from typing import Any

#: What stands for the index folder in a remote caller's answers.
INDEX_SHOWN = "<index>"


def names_server_path(ref: str) -> bool:
    """Whether a document reference ``ref`` reads as an absolute path of the server (``/srv/...``,
    ``C:\\...``, ``\\\\host\\...``), not as a path relative to a root. A remote caller names
    documents as results show them; an absolute path would let it confirm a guess at where the
    server keeps its files, so it is answered as a path naming nothing (attack session 32). False for
    a reference holding a NUL byte, which every surface refuses in words first."""
    if "\0" in ref:
        return False
    return ref.startswith(("/", "\\\\")) or (len(ref) > 2 and ref[0].isalpha() and ref[1] == ":"
                                             and ref[2] in "/\\")


def hide_server_paths(value: Any, index_dir: str, roots: Iterable[str]) -> Any:
    """``value`` (nested dicts, lists and strings) with every string that is a root, the index
    folder, or a path under one of them, rewritten: ``/srv/notes/en/a.md`` → ``en/a.md``,
    ``/srv/notes/.sleuth`` → ``<index>``; a string that mentions one further on (a skipped file's
    reason: ``unreadable: /srv/notes/en/a.pdf: corrupt PDF``) has each mention rewritten as
    :func:`hide_paths_in` does. Other values are returned as they are (a new container for each
    dict and list). The longest matching prefix wins, so a root inside the index folder (a memory
    root) shows as its own name."""
    prefixes = _prefixes(index_dir, roots)

    def text(s: str) -> str:
        for prefix, shown in prefixes:
            if s == prefix:
                return shown
            if s.startswith(prefix.rstrip("/") + "/"):
                return f"{shown}/{s[len(prefix.rstrip('/')) + 1:]}"
        return _hide_mentions(s, prefixes)

    def walk(v: Any) -> Any:
        if isinstance(v, str):
            return text(v)
        if isinstance(v, dict):
            return {k: walk(x) for k, x in v.items()}
        if isinstance(v, list | tuple):
            return [walk(x) for x in v]
        return v

    return walk(value)


def hide_paths_in(message: str, index_dir: str, roots: Iterable[str]) -> str:
    """``message`` (an error's text) with every mention of a root or the index folder -- followed
    by a path under it, a blank, punctuation or the end -- shown as :func:`hide_server_paths` shows
    it (``... is the file a.md under /srv/notes/en`` → ``... under en``); the longest first."""
    return _hide_mentions(message, _prefixes(index_dir, roots))


def _hide_mentions(message: str, prefixes: list[tuple[str, str]]) -> str:
    for prefix, shown in prefixes:
        bare = prefix.rstrip("/")
        if bare and bare in message:
            message = re.sub(re.escape(bare) + r"(?![^/\s,;:()'\"])", lambda _m, s=shown: s, message)
    return message


def _prefixes(index_dir: str, roots: Iterable[str]) -> list[tuple[str, str]]:
    """``(absolute path, what a remote caller reads instead)`` of each root (its folder's name) and
    of the index folder (``INDEX_SHOWN``), the longest first (a memory root before the index)."""
    prefixes = [(str(r), PurePosixPath(str(r)).name) for r in roots if str(r).startswith("/")]
    if index_dir.startswith("/"):
        prefixes.append((index_dir, INDEX_SHOWN))
    return sorted(prefixes, key=lambda p: -len(p[0]))


__all__ = ["INDEX_SHOWN", "hide_paths_in", "hide_server_paths"]
