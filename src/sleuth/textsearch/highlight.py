"""Snippets and highlights of the stateless text tools. Pure.

Offsets are code points, so nothing here can cut a code point in two; cuts also never separate
a character from the combining marks, variation selectors or zero-width joiner that follow it.

- :func:`prefix`: the first ``SNIPPET_MAX_CHARS`` characters of a text (seed 003's snippet).
- :func:`highlights`: for each distinct query term, in text order, a window of
  ``HIGHLIGHT_CONTEXT_CHARS`` characters either side of its first occurrence (matched with the
  shared text module, so ``limits`` matches ``limiting``), widened or narrowed to whole words,
  overlapping windows merged, at most ``HIGHLIGHTS_MAX``. Whitespace runs become one space;
  ``...`` marks each end where the text goes on.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Collection

from sleuth.text.analyze import find_terms

#: A snippet is the first this many characters (code points) of the document.
SNIPPET_MAX_CHARS = 200
#: Characters of context kept either side of a matched term in a highlight.
HIGHLIGHT_CONTEXT_CHARS = 30
#: Most highlights per document.
HIGHLIGHTS_MAX = 3
#: Marks where a highlight's text goes on.
ELLIPSIS = "..."

_JOINERS = frozenset("\u200c\u200d")
_WHITESPACE_RE = re.compile(r"\s+")


def _attaches(ch: str) -> bool:
    """True for characters that belong with the one before them (marks, selectors, joiners)."""
    return (
        unicodedata.category(ch) in ("Mn", "Mc", "Me")  # combining marks; variation selectors are Mn
        or ch in _JOINERS
        or "\U0001f3fb" <= ch <= "\U0001f3ff"  # emoji skin-tone modifiers
    )


def safe_cut(text: str, i: int, forward: bool) -> int:
    """Move cut point ``i`` off the inside of a character sequence (base + marks/joiners).

    ``forward`` moves it right (past the marks), else left (before the base character).
    """
    n = len(text)
    i = max(0, min(i, n))
    if forward:
        while 0 < i < n and (_attaches(text[i]) or text[i - 1] in _JOINERS):
            i += 1
    else:
        while 0 < i < n and (_attaches(text[i]) or text[i - 1] in _JOINERS):
            i -= 1
    return i


def prefix(text: str, max_chars: int = SNIPPET_MAX_CHARS) -> str:
    """The first ``max_chars`` code points of ``text``, shortened so no character sequence is split."""
    if len(text) <= max_chars:
        return text
    return text[: safe_cut(text, max_chars, forward=False)]


def _window(text: str, start: int, end: int, context_chars: int) -> tuple[int, int]:
    lo, hi = max(0, start - context_chars), min(len(text), end + context_chars)
    if lo > 0 and not text[lo - 1].isspace():  # inside a word: start after its end, if it ends in time
        m = _WHITESPACE_RE.search(text, lo, start)
        if m is not None:
            lo = m.end()
    if hi < len(text) and not text[hi].isspace():
        spaces = list(_WHITESPACE_RE.finditer(text, end, hi))
        if spaces:
            hi = spaces[-1].start()
    return safe_cut(text, lo, forward=False), safe_cut(text, hi, forward=True)


def highlights(
    text: str,
    terms: Collection[str],
    context_chars: int = HIGHLIGHT_CONTEXT_CHARS,
    max_windows: int = HIGHLIGHTS_MAX,
) -> list[str]:
    """Context windows around the first occurrence of each of ``terms`` (analysed query terms).

    Returns at most ``max_windows`` strings in text order; ``[]`` when no term occurs.
    """
    first: dict[str, tuple[int, int]] = {}
    for token in find_terms(text, frozenset(terms)):
        first.setdefault(token.term, (token.start, token.end))
    windows: list[list[int]] = []
    for start, end in sorted(first.values()):
        lo, hi = _window(text, start, end, context_chars)
        if windows and lo <= windows[-1][1]:
            windows[-1][1] = max(windows[-1][1], hi)
        else:
            windows.append([lo, hi])
    out = []
    for lo, hi in windows[:max_windows]:
        body = _WHITESPACE_RE.sub(" ", text[lo:hi]).strip()
        out.append(f"{ELLIPSIS if lo > 0 else ''}{body}{ELLIPSIS if hi < len(text) else ''}")
    return out
