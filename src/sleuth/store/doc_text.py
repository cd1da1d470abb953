"""A document's text stored once: the catalog keeps what its blocks do not hold (catalog format 5).

Every block records its text and its code-point span in the document's text, so the document's
text need only keep the *gaps* between blocks (front matter, blank lines between sections): it is
the gaps and the blocks' texts put back in order. :func:`split` is exact or does nothing: it
rebuilds the text from what it would store and keeps the whole text when that differs (a block
whose text is not the slice of its span, e.g.).

Which blocks are elided depends on their spans only, so :func:`join` makes the same choice: in order
of (start, ordinal), a non-empty span that starts at or after the end of the last elided one.
(Overlapping blocks, such as code windows that share lines, are left in the gaps.)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def _elided(spans: Iterable[tuple[int, int, str]]) -> list[tuple[int, int, str]]:
    """The spans ``(start, end, text)`` whose text is left out of the stored text, in order."""
    out: list[tuple[int, int, str]] = []
    cursor = 0
    for start, end, text in spans:
        if start >= cursor and end > start:
            out.append((start, end, text))
            cursor = end
    return out


def join(stored: str, elided_chars: int, spans: Sequence[tuple[int, int, str]]) -> str:
    """The document's text from its stored text and its blocks.

    Args:
        stored: what the catalog keeps (the whole text when ``elided_chars`` is 0).
        elided_chars: code points left out of ``stored`` (held by the blocks).
        spans: ``(start_char, end_char, text)`` of the document's blocks, ordered by start, then
            ordinal.
    """
    if elided_chars == 0:
        return stored
    parts: list[str] = []
    cursor = taken = 0  # in the document's text / in ``stored``
    for start, end, text in _elided(spans):
        gap = start - cursor
        parts.append(stored[taken : taken + gap])
        parts.append(text)
        taken += gap
        cursor = end
    parts.append(stored[taken:])
    return "".join(parts)


def split(text: str, spans: Sequence[tuple[int, int, str]]) -> tuple[str, int]:
    """``(stored text, elided code points)`` of a document's ``text`` and its blocks' spans
    (ordered as :func:`join` takes them); ``(text, 0)`` unless :func:`join` rebuilds ``text``
    exactly from the result."""
    elided = _elided(spans)
    if not elided or any(e > len(text) or text[s:e] != t for s, e, t in elided):
        return text, 0
    parts: list[str] = []
    cursor = 0
    for start, end, _ in elided:
        parts.append(text[cursor:start])
        cursor = end
    parts.append(text[cursor:])
    stored = "".join(parts)
    count = len(text) - len(stored)
    if count == 0 or join(stored, count, spans) != text:
        return text, 0
    return stored, count
