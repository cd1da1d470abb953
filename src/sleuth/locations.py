"""Where a block is, for people: a PDF page, notebook cells, else lines. Pure.

A block's line span counts lines of the document's *text* -- for a PDF its text layer, for a
notebook its rendered cells -- which a reader cannot find in the file. So a PDF block is located by
its page (the parser puts ``page N`` first in its heading path) and a notebook block by its cells
(the parser puts ``cell N`` or ``cells N-M`` last in its heading path, numbered as Jupyter shows
them, 1-based, every cell counted); any other block by its lines.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

#: A PDF block's page heading, and a notebook block's cell heading (both written by the parsers).
PAGE_HEADING = re.compile(r"page (\d+)")
CELL_HEADING = re.compile(r"cells? (\d+)(?:-(\d+))?")


def cell_heading(first: int, last: int) -> str:
    """The heading naming notebook cells ``first`` to ``last`` (1-based): ``cell 4``, ``cells 4-6``."""
    return f"cell {first}" if first == last else f"cells {first}-{last}"


def block_location(file_format: str, heading_path: Sequence[str], start_line: int, end_line: int) -> str:
    """``page N`` (PDF), ``cell N`` / ``cells N-M`` (notebook), else ``line N`` / ``lines N-M``."""
    if file_format == "pdf" and heading_path and PAGE_HEADING.fullmatch(heading_path[0]):
        return heading_path[0]
    if file_format == "notebook" and heading_path and CELL_HEADING.fullmatch(heading_path[-1]):
        return heading_path[-1]
    return f"line {start_line}" if start_line == end_line else f"lines {start_line}-{end_line}"


__all__ = ["CELL_HEADING", "PAGE_HEADING", "block_location", "cell_heading"]
