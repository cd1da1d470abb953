"""Path filters over documents: gitignore-style globs (pathspec), and the label of a project root.

A project may have several roots (``site/en`` and ``site/ja``); two documents may then share a path
relative to their roots (``publish.css``). The *root label* -- the root folder's name -- tells them
apart (``en/publish.css``, ``ja/publish.css``): hits show it, ``sleuth get`` accepts it, and a path
glob may name it.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from functools import lru_cache
from pathlib import PurePath

import pathspec

from sleuth.errors import QueryError

#: Longest glob accepted, in characters.
PATH_GLOB_MAX_CHARS = 500


@lru_cache(maxsize=1024)
def root_label(root: str) -> str:
    """The label of a project root: its folder's name (``/work/site/en`` → ``en``); ``""`` for ``/``.
    Remembered per root (every hit of every search shows its root's)."""
    return PurePath(root).name


def qualified_path(root: str, rel_path: str) -> str:
    """``<root label>/<rel_path>``: a document's path with its root's label in front."""
    label = root_label(root)
    return f"{label}/{rel_path}" if label else rel_path


class PathFilter:
    """Gitignore-style globs deciding which documents a search may return.

    Each glob is matched against the document's path relative to its root *and* against
    ``<root label>/<path>`` (so ``en/**`` selects the root ``en``'s documents); as in a
    ``.gitignore``, the last glob matching decides, and ``!glob`` deselects. When every glob is a
    negation, everything else is selected (``!drafts/**``: all but the drafts).

    Args:
        globs: the globs, e.g. ``["docs/**/*.md", "!docs/old/"]``.
    Raises:
        QueryError: an empty glob, one longer than ``PATH_GLOB_MAX_CHARS`` or one pathspec refuses.
    """

    def __init__(self, globs: Sequence[str]) -> None:
        self.rules: list[tuple[bool, re.Pattern[str]]] = []
        self._labels: dict[str, str] = {}
        for i, raw in enumerate(globs):
            glob = raw.strip()
            negated = glob.startswith("!")
            body = glob[1:].strip() if negated else glob
            if not body or body.startswith("#"):
                raise QueryError(f"path glob {i + 1} is empty; give a glob such as 'docs/**' or '*.md'")
            if len(glob) > PATH_GLOB_MAX_CHARS:
                raise QueryError(f"path glob {i + 1} is {len(glob)} characters long; at most "
                                 f"{PATH_GLOB_MAX_CHARS} are allowed")
            try:
                (pattern,) = pathspec.GitIgnoreSpec.from_lines([body]).patterns
            except (ValueError, TypeError) as exc:  # pathspec's GitWildMatchPatternError is a ValueError
                raise QueryError(f"path glob {glob!r} is not a valid glob: {exc}") from None
            regex = getattr(pattern, "regex", None)
            if not isinstance(regex, re.Pattern):
                raise QueryError(f"path glob {glob!r} is not a valid glob")
            self.rules.append((not negated, regex))  # the compiled regex: ~10x faster than match_file
        self.select_all_first = bool(self.rules) and not any(include for include, _ in self.rules)

    def matches(self, root: str, rel_path: str) -> bool:
        """Whether the document at ``rel_path`` under ``root`` is selected."""
        label = self._labels.get(root)
        if label is None:
            label = self._labels[root] = root_label(root)
        qualified = f"{label}/{rel_path}" if label else rel_path
        selected = self.select_all_first
        for include, regex in self.rules:
            if regex.match(rel_path) is not None or regex.match(qualified) is not None:
                selected = include
        return selected


__all__ = ["PATH_GLOB_MAX_CHARS", "PathFilter", "qualified_path", "root_label"]
