"""Path filters over documents: gitignore-style globs (pathspec), and the label of a project root.

Globs are matched by RE2 (google-re2), in time linear in the path's length, never by Python's
backtracking ``re``: a glob such as ``*?*?*?*?*?*?*?*?*?*?*?*z`` (24 characters) made ``re`` try
every way to split a path among its stars, for hours, holding the GIL (attack session 31: one
request froze ``sleuth ui`` and the HTTP server's page; a 30-byte ``.gitignore`` did the same to
``sleuth index``). The walk's ``.gitignore`` rules use pathspec's RE2 backend (``GLOB_BACKEND``).

A glob pathspec cannot compile (``\\``, ``[z-a]``, ``[[:foo:]]``) is refused with a
:class:`QueryError` saying why; in a ``.gitignore`` such a line is left out, as git leaves it out
(:func:`gitignore_specs`). Python's ``re`` warnings on pathspec's regexes (``[[:alpha:]]``: "Possible
nested set") are not shown: RE2, which matches, reads ``[:alpha:]`` as the class git means.

A project may have several roots (``site/en`` and ``site/ja``); two documents may then share a path
relative to their roots (``publish.css``). The *root label* -- the root folder's name -- tells them
apart (``en/publish.css``, ``ja/publish.css``): hits show it, ``sleuth get`` accepts it, and a path
glob may name it.
"""

from __future__ import annotations

import os
import re
import warnings
from collections.abc import Sequence
from functools import lru_cache
from pathlib import PurePath
from typing import Any

import pathspec
import re2

from sleuth.errors import QueryError

#: Longest glob accepted, in characters.
PATH_GLOB_MAX_CHARS = 500
#: pathspec's matching backend for gitignore rules: RE2 (linear time; see the module docstring).
GLOB_BACKEND = "re2"
#: What pathspec raises for a pattern it cannot compile: GitIgnorePatternError, a ValueError (a
#: trailing backslash, a lone ``!``); ``re.error`` from the Python regex it makes (``[z-a]``);
#: ``re2.error`` from its RE2 backend (``[[:foo:]]``, or rules too many for one RE2 set); TypeError.
GLOB_ERRORS: tuple[type[Exception], ...] = (ValueError, TypeError, re.error, re2.error)

_RE2_QUIET = re2.Options()
_RE2_QUIET.log_errors = False  # RE2 logs a pattern it cannot parse on stderr; the error says it


_SURROGATE_RE = re.compile("[\ud800-\udfff]")


def re2_readable(path: str) -> str:
    """``path`` as RE2 can read it (UTF-8): a file name's undecodable bytes, kept as lone
    surrogates (``surrogateescape``), each become U+FFFD, one character for one, so ``?`` and
    ``*`` count them as before; a glob or ``.gitignore`` cannot name such a byte but by a wildcard
    (its own undecodable bytes are read as U+FFFD, which now matches them)."""
    if path.isascii():
        return path
    try:
        path.encode("utf-8")
    except UnicodeEncodeError:
        return _SURROGATE_RE.sub("\ufffd", path)
    return path


def _gitignore_spec(lines: Sequence[str], backend: str) -> pathspec.GitIgnoreSpec:
    """pathspec's rules of ``lines`` with ``backend``, without the ``FutureWarning`` Python's ``re``
    prints for some of its regexes (``[[:alpha:]]``)."""
    with warnings.catch_warnings():  # only this warning: a filter left by another thread is harmless
        warnings.filterwarnings("ignore", message="Possible nested set", category=FutureWarning)
        return pathspec.GitIgnoreSpec.from_lines(lines, backend=backend)


def gitignore_spec(lines: Sequence[str]) -> pathspec.GitIgnoreSpec:
    """pathspec's rules of the gitignore ``lines``, matched by RE2 (``GLOB_BACKEND``), made without
    the ``FutureWarning`` Python's ``re`` prints for some of its regexes (``[[:alpha:]]``).

    Raises:
        any of GLOB_ERRORS: a line pathspec cannot compile, or rules too many for one RE2 set.
    """
    return _gitignore_spec(lines, GLOB_BACKEND)


def glob_error_reason(line: str, exc: BaseException) -> str:
    """Why pathspec refused the glob ``line`` with ``exc`` (one of ``GLOB_ERRORS``), for people:
    ``bad character range z-a``, ``invalid character class range: [:foo:]``, ``Escape character
    found with no next character to escape: 'a\\\\'``."""
    if isinstance(exc, re.error):
        return exc.msg  # without the position, which is one in pathspec's regex, not in the glob
    if isinstance(exc, re2.error):  # pathspec's message names its regex set; RE2's own names the fault
        try:
            regex = _gitignore_spec([line], "simple").patterns[0].regex
            if isinstance(regex, re.Pattern):
                re2.compile(regex.pattern, options=_RE2_QUIET)
        except re2.error as own:
            message = own.args[0] if own.args else ""
            return message.decode("utf-8", "replace") if isinstance(message, bytes) else str(message)
        except GLOB_ERRORS:
            pass
        return "RE2 cannot compile it"
    if isinstance(exc, ValueError) and isinstance(exc.__cause__, ValueError):
        return str(exc.__cause__)  # GitIgnorePatternError's cause says what is wrong
    return str(exc)


def gitignore_specs(lines: Sequence[str]) -> tuple[list[pathspec.GitIgnoreSpec], list[str]]:
    """The rules of a ``.gitignore``'s ``lines``, leaving out each line pathspec cannot compile, as
    git leaves out an invalid pattern and applies the others.

    Returns:
        ``(specs, problems)``: the rules, as one spec, or several when they are too many for one RE2
        set (in order: a path's last matching rule is that of the last spec with one); and one
        problem per line left out, ``"line 3 ignored, not a valid pattern: '[z-a]' (bad character
        range z-a)"`` (lines numbered from 1).
    """
    try:
        return [gitignore_spec(lines)], []
    except GLOB_ERRORS:
        pass
    kept: list[str] = []
    problems: list[str] = []
    for number, line in enumerate(lines, 1):
        try:
            gitignore_spec([line])
        except GLOB_ERRORS as exc:
            problems.append(f"line {number} ignored, not a valid pattern: {line!r} ({glob_error_reason(line, exc)})")
        else:
            kept.append(line)
    return _split_specs(kept), problems


def _split_specs(lines: list[str]) -> list[pathspec.GitIgnoreSpec]:
    """Specs of ``lines`` (each compiles alone), in halves until each half fits in one RE2 set."""
    try:
        return [gitignore_spec(lines)]
    except GLOB_ERRORS:
        if len(lines) < 2:
            return []  # compiles alone but not here: cannot happen; nothing to match then
    middle = len(lines) // 2
    return _split_specs(lines[:middle]) + _split_specs(lines[middle:])


_GLOB_SPECIAL_RE = re.compile(r"([\\*?\[])")


def gitignore_literal(path: str) -> str:
    """``path`` as a gitignore pattern that matches it as written: each ``\\``, ``*``, ``?`` and ``[``
    escaped with a backslash (``i[x]`` -> ``i\\[x]``, which matches the folder ``i[x]``, not ``ix``),
    and trailing spaces too (git drops unescaped ones: ``g.md `` would match ``g.md``)."""
    escaped = _GLOB_SPECIAL_RE.sub(r"\\\1", path)
    stripped = escaped.rstrip(" ")
    return stripped + "\\ " * (len(escaped) - len(stripped))


@lru_cache(maxsize=1024)
def root_label(root: str) -> str:
    """The label of a project root: its folder's name (``/work/site/en`` → ``en``); ``""`` for ``/``.
    A file given as a root (``sleuth index docs README.md``) is labelled by the folder holding it, as
    its document ids are (:func:`sleuth.indexer.id_label`): ``proj/README.md``, not ``README.md/README.md``;
    so is a root that is gone and whose name has an extension (a deleted file root's stale document:
    the catalog does not record which roots were files). Remembered per root (every hit of every
    search shows its root's): one ``stat`` per root a process."""
    path = PurePath(root)
    if os.path.isfile(root) or (path.suffix and not os.path.lexists(root)):
        return path.parent.name
    return path.name


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
        self.rules: list[tuple[bool, Any]] = []  # (include, compiled RE2 regex)
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
            readable = re2_readable(body)
            try:
                (pattern,) = gitignore_spec([readable]).patterns
            except GLOB_ERRORS as exc:
                raise QueryError(f"path glob {glob!r} is not a valid glob: {glob_error_reason(readable, exc)}"
                                 ) from None
            regex = getattr(pattern, "regex", None)
            if not isinstance(regex, re.Pattern):
                raise QueryError(f"path glob {glob!r} is not a valid glob")
            try:  # pathspec's regex, run by RE2 (as its own RE2 backend does): ~10x faster than match_file
                compiled = re2.compile(regex.pattern, options=_RE2_QUIET)
            except re2.error as exc:
                raise QueryError(f"path glob {glob!r} is not a valid glob: {glob_error_reason(readable, exc)}"
                                 ) from None
            self.rules.append((not negated, compiled))
        self.select_all_first = bool(self.rules) and not any(include for include, _ in self.rules)

    def matches(self, root: str, rel_path: str) -> bool:
        """Whether the document at ``rel_path`` under ``root`` is selected."""
        label = self._labels.get(root)
        if label is None:
            label = self._labels[root] = re2_readable(root_label(root))
        rel_path = re2_readable(rel_path)
        qualified = f"{label}/{rel_path}" if label else rel_path
        selected = self.select_all_first
        for include, regex in self.rules:
            if regex.match(rel_path) is not None or regex.match(qualified) is not None:
                selected = include
        return selected


__all__ = ["GLOB_BACKEND", "GLOB_ERRORS", "PATH_GLOB_MAX_CHARS", "PathFilter", "gitignore_literal", "gitignore_spec",
           "gitignore_specs", "glob_error_reason", "qualified_path", "re2_readable", "root_label"]
