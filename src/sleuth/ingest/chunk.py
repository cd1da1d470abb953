"""Cutting text into blocks: size-capped spans, line windows, and offset-to-line conversion.

All offsets are 0-based code-point indices into one document text, spans are half-open
``[start, end)``, and line numbers are 1-based. Nothing here does I/O.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Sequence

from sleuth.doc_types import BlockDraft

CHUNK_MAX_CHARS = 2400  # ≈ 512 tokens; chosen on SciFact and Cranfield (docs/EVAL.md)
"""Maximum size of one block, in characters (code points)."""
CHUNK_OVERLAP_CHARS = 200
"""Approximate overlap between consecutive pieces of one long section, in characters."""
CODE_WINDOW_LINES = 60
"""Lines per window for code and config files."""
CODE_WINDOW_OVERLAP_LINES = 10
"""Lines shared by consecutive code windows."""

_SENTENCE_END = re.compile(r"[.!?][\"')\]]*\s")


class LineIndex:
    """Converts character offsets of one text to 1-based line numbers by bisecting newline positions.

    ``index(offset)`` returns the line containing ``offset`` (an offset equal to ``len(text)``
    belongs to the last line); ``index.line_start(line)`` returns the offset where a 1-based line
    starts; ``index.line_count`` is the number of lines (an empty text has one empty line).
    """

    def __init__(self, text: str) -> None:
        self._starts = [0] + [m.end() for m in re.finditer("\n", text)]
        self._length = len(text)

    def __call__(self, offset: int) -> int:
        return bisect.bisect_right(self._starts, offset)

    @property
    def line_count(self) -> int:
        return len(self._starts)

    def line_start(self, line: int) -> int:
        """Offset of the first character of 1-based ``line``; ``len(text)`` past the last line."""
        if line > len(self._starts):
            return self._length
        return self._starts[line - 1]


def line_of_offset(text: str) -> LineIndex:
    """Build a :class:`LineIndex` for ``text`` (O(n) once, then O(log n) per lookup)."""
    return LineIndex(text)


def _cut_point(text: str, start: int, limit: int) -> int:
    """Best end for a piece starting at ``start`` that must end at or before ``limit``."""
    lo = start + (limit - start) // 2  # never cut so early that pieces become tiny
    idx = text.rfind("\n\n", lo, limit)
    if idx >= 0:
        return idx + 2
    idx = text.rfind("\n", lo, limit)
    if idx >= 0:
        return idx + 1
    last = None
    for match in _SENTENCE_END.finditer(text, lo, limit):
        last = match
    if last is not None:
        return last.end()
    idx = text.rfind(" ", lo, limit)
    if idx >= 0:
        return idx + 1
    return limit


def _overlap_start(text: str, lo: int, cut: int) -> int:
    """Start of the piece after one ending at ``cut``: a line, else sentence, else word boundary in
    ``[lo, cut - (cut - lo) // 2)``, so that at least half of the wanted overlap is kept; else ``lo``."""
    hi = cut - (cut - lo) // 2
    idx = text.find("\n", lo, hi)
    if idx >= 0:
        return idx + 1
    match = _SENTENCE_END.search(text, lo, hi)
    if match is not None:
        return match.end()
    idx = text.find(" ", lo, hi)
    if idx >= 0:
        return idx + 1
    return lo


def split_span(
    text: str,
    start: int,
    end: int,
    max_chars: int = CHUNK_MAX_CHARS,
    overlap_chars: int = CHUNK_OVERLAP_CHARS,
) -> list[tuple[int, int]]:
    """Cut ``text[start:end]`` into ``[start, end)`` pieces of at most ``max_chars`` characters.

    Pieces end at a blank line if one lies in the second half of the allowed window, else at a
    newline, a sentence end, a space, or (last resort) exactly at the limit. Each next piece starts
    about ``overlap_chars`` before the previous end (moved forward to a line or word boundary), and
    always strictly after the previous start, so the loop makes progress. A span no longer than
    ``max_chars`` comes back as the single piece ``[(start, end)]``; an empty span gives ``[]``.

    Raises:
        ValueError: ``max_chars < 1``, ``overlap_chars < 0`` or ``overlap_chars >= max_chars``.
    """
    if max_chars < 1 or overlap_chars < 0 or overlap_chars >= max_chars:
        raise ValueError(
            f"need max_chars >= 1 and 0 <= overlap_chars < max_chars, got {max_chars}, {overlap_chars}"
        )
    if end <= start:
        return []
    pieces: list[tuple[int, int]] = []
    pos = start
    while end - pos > max_chars:
        cut = _cut_point(text, pos, pos + max_chars)
        pieces.append((pos, cut))
        nxt = cut if overlap_chars == 0 else _overlap_start(text, max(pos + 1, cut - overlap_chars), cut)
        pos = max(nxt, pos + 1)
    pieces.append((pos, end))
    return pieces


def line_windows(
    text: str,
    window_lines: int = CODE_WINDOW_LINES,
    overlap_lines: int = CODE_WINDOW_OVERLAP_LINES,
    max_chars: int = CHUNK_MAX_CHARS,
) -> list[tuple[int, int]]:
    """Cut the whole ``text`` into windows of whole lines, as ``[start, end)`` character spans.

    Each window holds up to ``window_lines`` lines and consecutive windows share ``overlap_lines``
    lines. A window longer than ``max_chars`` characters is shortened to the lines that fit (sharing
    at most half of them with the next window); a single line longer than ``max_chars`` (e.g.
    minified code) is cut with :func:`split_span`. Spans include their trailing newline; an empty
    text gives ``[]``.

    Raises:
        ValueError: ``window_lines < 1`` or ``overlap_lines`` not in ``[0, window_lines)``.
    """
    if window_lines < 1 or not 0 <= overlap_lines < window_lines:
        raise ValueError("need window_lines >= 1 and 0 <= overlap_lines < window_lines")
    if not text:
        return []
    index = LineIndex(text)
    n_lines = index.line_count
    spans: list[tuple[int, int]] = []
    first = 1
    while first <= n_lines:
        start = index.line_start(first)
        last = min(first + window_lines - 1, n_lines)
        while last > first and index.line_start(last + 1) - start > max_chars:
            last -= 1
        end = index.line_start(last + 1)
        if end - start > max_chars:  # one over-long line
            spans.extend(split_span(text, start, end, max_chars, min(CHUNK_OVERLAP_CHARS, max_chars // 4)))
        else:
            spans.append((start, end))
        if last >= n_lines:
            break
        size = last - first + 1
        first = max(first + 1, last + 1 - min(overlap_lines, size // 2))
    return spans


def trim_span(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` to drop trailing whitespace and leading blank lines.

    Indentation of the first non-blank line is kept (it matters for code). A whitespace-only span
    becomes empty (``start == end``).
    """
    while end > start and text[end - 1].isspace():
        end -= 1
    first = start
    while first < end and text[first].isspace():
        first += 1
    if first == end:
        return start, start
    line_start = text.rfind("\n", start, first) + 1
    return max(start, line_start), end


def make_block(
    text: str,
    start: int,
    end: int,
    heading_path: Sequence[str] = (),
    line_index: LineIndex | None = None,
) -> BlockDraft:
    """Make a :class:`BlockDraft` for ``text[start:end]`` after :func:`trim_span`.

    ``line_index`` (from :func:`line_of_offset` over the same ``text``) avoids rescanning the text
    for every block. ``end_line`` is the line of the block's last character. A whitespace-only span
    yields a block with empty text (callers drop those; see :func:`blocks_for_span`).
    """
    start, end = trim_span(text, start, end)
    index = line_index if line_index is not None else LineIndex(text)
    start_line = index(start)
    end_line = index(end - 1) if end > start else start_line
    return BlockDraft(
        text=text[start:end],
        heading_path=tuple(heading_path),
        start_line=start_line,
        end_line=end_line,
        start_char=start,
        end_char=end,
    )


def blocks_for_span(
    text: str,
    start: int,
    end: int,
    heading_path: Sequence[str],
    line_index: LineIndex,
    max_chars: int = CHUNK_MAX_CHARS,
    overlap_chars: int = CHUNK_OVERLAP_CHARS,
) -> list[BlockDraft]:
    """Trim a section, cut it with :func:`split_span` if long, and return its non-empty blocks.

    Every piece keeps ``heading_path``; whitespace-only pieces are dropped.
    """
    start, end = trim_span(text, start, end)
    blocks = []
    for piece_start, piece_end in split_span(text, start, end, max_chars, overlap_chars):
        block = make_block(text, piece_start, piece_end, heading_path, line_index)
        if block.text:
            blocks.append(block)
    return blocks
