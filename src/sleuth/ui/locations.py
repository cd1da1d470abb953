"""Where a block sits in its document, for people: heading path, PDF page, notebook cell, lines.

Pure functions over a document's stored text (no I/O). A PDF's text layer joins its pages with
:data:`sleuth.ingest.pdf.PAGE_SEPARATOR` (a form feed on a line of its own, and page texts never
hold a form feed), so the page of an offset is one more than the form feeds before it.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence

#: The character between two PDF pages' texts (see :data:`sleuth.ingest.pdf.PAGE_SEPARATOR`).
PAGE_BREAK = "\f"
#: Kinds whose stored lines are not lines of the file a person opens.
LINELESS_KINDS = frozenset({"pdf", "notebook"})


class PageIndex:
    """The page numbers of offsets into one PDF's text.

    Args:
        text: the document's stored text (pages joined by form feeds).
    """

    def __init__(self, text: str) -> None:
        self._breaks = [i for i, ch in enumerate(text) if ch == PAGE_BREAK]

    @property
    def pages(self) -> int:
        """How many pages the text holds (at least 1)."""
        return len(self._breaks) + 1

    def page_at(self, offset: int) -> int:
        """The 1-based page of the code point at ``offset`` (offsets past the end: the last page)."""
        return bisect.bisect_right(self._breaks, offset) + 1


def location_label(kind: str, heading_path: Sequence[str], lines: Sequence[int], page: int | None = None,
                   cell: int | None = None) -> str:
    """One line saying where a passage is: ``"§ A > B · page 3"``, ``"§ A · cell 4"``, ``"lines 3-9"``.

    The lines of a PDF (of its extracted text) and of a notebook (of its rendered cells, not of the
    ``.ipynb`` file) mean nothing to a reader and are never shown: the page, or the cell when the
    pipeline knows it, is shown instead.
    """
    parts = [f"§ {' > '.join(heading_path)}"] if heading_path else []
    if page is not None:
        if f"page {page}" not in heading_path:  # a PDF block's heading path may name its page already
            parts.append(f"page {page}")
    elif cell is not None:
        parts.append(f"cell {cell}")
    elif kind not in LINELESS_KINDS and len(lines) == 2 and lines[0] > 0:
        parts.append(f"line {lines[0]}" if lines[0] == lines[1] else f"lines {lines[0]}-{lines[1]}")
    return " · ".join(parts)
