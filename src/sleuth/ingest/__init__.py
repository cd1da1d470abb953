"""Ingestion: find files (walk), decode them (decode; PDFs: pdf), parse formats (parsers), cut blocks
(chunk); links and entities between documents (links); roles, kinds and recorded times (roles)."""

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
from sleuth.ingest.links import (
    FRONT_MATTER_RELATIONS,
    Link,
    LinkResolver,
    declared_entities,
    extract_links,
    resolve_target,
)
from sleuth.ingest.parsers import (
    CODE_EXTENSIONS,
    CONFIG_EXTENSIONS,
    MARKDOWN_EXTENSIONS,
    NOTEBOOK_EXTENSIONS,
    PDF_EXTENSIONS,
    TEXT_EXTENSIONS,
    ParseError,
    kind_for_path,
    parse_document,
)
from sleuth.ingest.pdf import PDF_MAX_BYTES, PDF_MAX_PAGES, PdfError, extract_pdf
from sleuth.ingest.roles import ROLES, infer_role, kind_label, recorded_time, source_family
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
    "FRONT_MATTER_RELATIONS",
    "MARKDOWN_EXTENSIONS",
    "NOTEBOOK_EXTENSIONS",
    "PDF_EXTENSIONS",
    "PDF_MAX_BYTES",
    "PDF_MAX_PAGES",
    "ROLES",
    "TEXT_EXTENSIONS",
    "DecodeError",
    "DecodedText",
    "LineIndex",
    "Link",
    "LinkResolver",
    "ParseError",
    "PdfError",
    "declared_entities",
    "decode_bytes",
    "extract_links",
    "extract_pdf",
    "infer_role",
    "kind_for_path",
    "kind_label",
    "line_of_offset",
    "line_windows",
    "make_block",
    "parse_document",
    "read_text",
    "recorded_time",
    "resolve_target",
    "source_family",
    "split_span",
    "walk_roots",
]
