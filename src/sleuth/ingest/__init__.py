"""Ingestion: find files (walk), decode them (decode), parse formats (parsers), cut blocks (chunk)."""

from __future__ import annotations

from sleuth.ingest.chunk import (
    CHUNK_MAX_CHARS,
    CHUNK_OVERLAP_CHARS,
    CODE_WINDOW_LINES,
    CODE_WINDOW_OVERLAP_LINES,
    LineIndex,
    line_of_offset,
    line_windows,
    make_block,
    split_span,
)
from sleuth.ingest.decode import DecodedText, DecodeError, decode_bytes, read_text
from sleuth.ingest.parsers import (
    CODE_EXTENSIONS,
    CONFIG_EXTENSIONS,
    MARKDOWN_EXTENSIONS,
    NOTEBOOK_EXTENSIONS,
    TEXT_EXTENSIONS,
    ParseError,
    kind_for_path,
    parse_document,
)
from sleuth.ingest.walk import DEFAULT_EXCLUDES, FILE_MAX_BYTES, walk_roots

__all__ = [
    "CHUNK_MAX_CHARS",
    "CHUNK_OVERLAP_CHARS",
    "CODE_EXTENSIONS",
    "CODE_WINDOW_LINES",
    "CODE_WINDOW_OVERLAP_LINES",
    "CONFIG_EXTENSIONS",
    "DEFAULT_EXCLUDES",
    "FILE_MAX_BYTES",
    "MARKDOWN_EXTENSIONS",
    "NOTEBOOK_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "DecodeError",
    "DecodedText",
    "LineIndex",
    "ParseError",
    "decode_bytes",
    "kind_for_path",
    "line_of_offset",
    "line_windows",
    "make_block",
    "parse_document",
    "read_text",
    "split_span",
    "walk_roots",
]
