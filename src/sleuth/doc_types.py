"""The plain records of ingestion and ranking: frozen dataclasses, importable without pydantic.

Re-exported by :mod:`sleuth.types` (import them from there); they live here so that a parse worker
process (:mod:`sleuth.ingest.parse_worker`), which needs only these, starts without building the
pydantic API models.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

DocumentKind = Literal["markdown", "notebook", "code", "text", "pdf", "config"]
LaneName = Literal["bm25", "tfidf", "index", "exact", "vector"]


# --------------------------------------------------------------------------- ingestion


@dataclass(frozen=True)
class SourceFile:
    """A file found under a root that is a candidate for indexing.

    ``rel_path`` uses forward slashes and is relative to ``root``; ``mtime_ns`` is the
    modification time in nanoseconds since the epoch; ``size_bytes`` the size on disk.
    """

    root: Path
    path: Path
    rel_path: str
    size_bytes: int
    mtime_ns: int
    #: ``(st_dev, st_ino)`` of the file the walker listed: the reader opens that file or none.
    identity: tuple[int, int] | None = field(default=None, compare=False)


@dataclass(frozen=True)
class SkippedFile:
    """A file that was not indexed, with a human-readable reason (never silently dropped)."""

    path: str
    reason: str


@dataclass(frozen=True)
class BlockDraft:
    """One retrievable unit cut from a document, before ids are assigned.

    Spans are 1-based inclusive line numbers and 0-based half-open character offsets counted in
    Unicode code points into the document's full text (``ParsedDocument.text``), so that
    ``text == document_text[start_char:end_char]`` holds for every block.
    """

    text: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    start_char: int
    end_char: int


@dataclass(frozen=True)
class Link:
    """One outgoing link of a document, as written (see :mod:`sleuth.ingest.links`).

    ``target`` is the link target without ``#anchor`` and ``?query``, percent-decoded (a path such as
    ``../plans/q3.md``, or a wikilink name such as ``Design Doc``); ``relation`` is ``"link"`` (a
    markdown link), ``"wikilink"`` (``[[...]]``) or a front-matter relation key such as
    ``"supersedes"``; ``label`` is the link text or wikilink alias (``""`` when there is none).
    """

    target: str
    relation: str
    label: str = ""


@dataclass
class ParsedDocument:
    """A document after format parsing and chunking.

    ``text`` is the full decoded text (line endings normalised to ``\\n``, BOM removed); blocks
    point into it. ``problems`` lists non-fatal issues (e.g. malformed front matter) that are
    reported but did not stop indexing. ``links`` are the document's outgoing links in document
    order (front-matter relations first) and ``entities`` the entities its front matter declares
    (markdown and notebooks; empty for other formats).
    """

    kind: DocumentKind
    title: str
    text: str
    blocks: list[BlockDraft]
    tags: list[str] = field(default_factory=list)
    front_matter: dict[str, object] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    links: list[Link] = field(default_factory=list)
    entities: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Block:
    """A block as stored in the catalog and indexed by the lanes."""

    block_id: str
    doc_id: str
    project_id: str
    ordinal: int
    text: str
    heading_path: tuple[str, ...]
    start_line: int
    end_line: int
    start_char: int
    end_char: int
    content_hash: str


# --------------------------------------------------------------------------- ranking


@dataclass(frozen=True)
class RankedList:
    """One lane's answer: block ids, best first, with the lane's raw scores (same length).

    Ranks are implied by position (1-based). A lane never pads this list with blocks that match
    no query term.
    """

    lane: str
    block_ids: tuple[str, ...]
    scores: tuple[float, ...]
