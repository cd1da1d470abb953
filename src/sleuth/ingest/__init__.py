"""Ingestion: find files (walk), decode them (decode; PDFs: pdf), parse formats (parsers), cut blocks
(chunk); links and entities between documents (links); roles, kinds and recorded times (roles);
what no file may do: leave the roots (confine, names), exhaust an archive reader (archive) or front
matter parser (front_matter), or take unbounded time and memory (guard).

The names below are imported on first use, so that importing one submodule (``sleuth.ingest.names``
for a freshness check, say) does not load markdown-it, PyYAML and pypdf.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

#: The version of what the parsers make of a file. Bumped when the same file parses into other
#: documents or blocks, so that ``sleuth index`` parses every file of a root indexed by an older
#: version again, unchanged ones too (the catalog keeps the version per root:
#: :meth:`sleuth.store.catalog.Catalog.parser_version`). 1: before the catalog recorded it.
#: 2: notebook blocks end their heading path with their cells (``cell 4``, ``cells 4-6``); decision
#: records in adr-tools and MADR layouts get their ``Date:`` / ``## Status`` / supersession.
#: 3: a camelCase identifier of letters (``PagerDuty``) is indexed under its lowercase word's stem,
#: not the unstemmed word (:func:`sleuth.text.analyze._whole_terms`): the blocks' terms change.
#: Also 3: a notebook or config in a notes folder gets its format's kind (``notebook``, ``config``), not
#: ``note`` (:mod:`sleuth.ingest.roles`).
#: 4: a Markdown page's summary in its front matter (``description:``, ``summary:``, ...) is a block of
#: its own (:func:`sleuth.ingest.parsers._description_blocks`): it was not searched.
PARSER_VERSION = 4

if TYPE_CHECKING:
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

_MODULE_OF: dict[str, str] = {
    "CHUNK_MAX_CHARS": "chunk",
    "CHUNK_OVERLAP_CHARS": "chunk",
    "CODE_EXTENSIONS": "parsers",
    "CODE_WINDOW_LINES": "chunk",
    "CODE_WINDOW_OVERLAP_LINES": "chunk",
    "CONFIG_EXTENSIONS": "parsers",
    "DEFAULT_EXCLUDES": "walk",
    "DecodeError": "decode",
    "DecodedText": "decode",
    "FILE_MAX_BYTES": "walk",
    "FRONT_MATTER_RELATIONS": "links",
    "LineIndex": "chunk",
    "Link": "links",
    "LinkResolver": "links",
    "MARKDOWN_EXTENSIONS": "parsers",
    "NOTEBOOK_EXTENSIONS": "parsers",
    "PDF_EXTENSIONS": "parsers",
    "PDF_MAX_BYTES": "pdf",
    "PDF_MAX_PAGES": "pdf",
    "ParseError": "parsers",
    "PdfError": "pdf",
    "ROLES": "roles",
    "TEXT_EXTENSIONS": "parsers",
    "declared_entities": "links",
    "decode_bytes": "decode",
    "extract_links": "links",
    "extract_pdf": "pdf",
    "infer_role": "roles",
    "kind_for_path": "parsers",
    "kind_label": "roles",
    "line_of_offset": "chunk",
    "line_windows": "chunk",
    "make_block": "chunk",
    "parse_document": "parsers",
    "read_text": "decode",
    "recorded_time": "roles",
    "resolve_target": "links",
    "source_family": "roles",
    "split_span": "chunk",
    "walk_roots": "walk",
}


def __getattr__(name: str) -> Any:
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module 'sleuth.ingest' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"sleuth.ingest.{module}"), name)
    globals()[name] = value
    return value


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
