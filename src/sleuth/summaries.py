"""Snippets and highlights: the passage of a block that best covers the query terms. Pure.

Offsets are code points. A snippet is a window of at most ``SNIPPET_MAX_CHARS`` of the block
text, placed to cover the most distinct query terms (ties: the earliest window), widened to word
boundaries; highlights are ``[start, end)`` spans of matched terms relative to the snippet.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

from sleuth.text.analyze import Token, find_terms

#: Longest snippet, in code points (ellipses not counted).
SNIPPET_MAX_CHARS = 280


@dataclass(frozen=True)
class Snippet:
    """A passage of a text and the spans of query terms in it (relative to ``text``)."""

    text: str
    highlights: list[tuple[int, int]]
    start: int
    end: int


def make_snippet(text: str, terms: Collection[str], max_chars: int = SNIPPET_MAX_CHARS,
                 matches: Sequence[Token] | None = None) -> Snippet:
    """Cut the passage of ``text`` that best matches ``terms`` (analysed query terms).

    Whitespace runs inside the snippet are kept as they are, so highlight offsets index the
    returned text directly: ``snippet.text[s:e]`` is the matched word for every ``(s, e)``.
    ``matches``: ``find_terms(text, frozenset(terms))`` when the caller has it already.
    """
    if matches is None:
        matches = find_terms(text, frozenset(terms))
    spans = sorted({(t.start, t.end): t.term for t in matches}.items())
    if len(text) <= max_chars:
        start, end = 0, len(text)
    elif not spans:
        start, end = 0, max_chars
    else:
        best_i, best_cover = 0, -1
        for i, ((s, _e), _term) in enumerate(spans):
            cover = len({term for (_s2, e2), term in spans[i:] if e2 <= s + max_chars})
            if cover > best_cover:
                best_i, best_cover = i, cover
        first = spans[best_i][0][0]
        start = max(0, first - max_chars // 5)
        end = min(len(text), start + max_chars)
        start = max(0, end - max_chars)
    # Widen to whole words without exceeding the limit: move inward to whitespace.
    if start > 0:
        ws = text.find(" ", start, start + 40)
        if ws != -1:
            start = ws + 1
    if end < len(text):
        ws = text.rfind(" ", end - 40, end)
        if ws > start:
            end = ws
    body = text[start:end]
    lead = len(body) - len(body.lstrip())
    body = body.strip()
    start += lead
    end = start + len(body)
    highlights = [(s - start, e - start) for (s, e), _ in spans if s >= start and e <= end]
    return Snippet(body, highlights, start, end)
