"""Shared data types: what ingestion produces, what the catalog stores, what a search returns.

Internal pipeline records are frozen dataclasses (cheap, hashable); everything that crosses an
interface (Python API, CLI ``--format json``, MCP structured output) is a pydantic model, so one
response model serves all three.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

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


# --------------------------------------------------------------------------- API models


class Model(BaseModel):
    """Base of the API models: validators are built on first use, not at import (faster start)."""

    model_config = ConfigDict(defer_build=True)



class LaneContribution(Model):
    """How one lane contributed to a fused document score (``--explain``)."""

    lane: str = Field(description="Lane (retriever) name, e.g. bm25")
    rank: int = Field(description="1-based rank of the document in that lane's grouped list")
    weight: float = Field(description="The lane's RRF weight")
    contribution: float = Field(description="weight / (k + rank); the contributions sum to the score")
    lane_score: float = Field(description="The lane's own score of the document's best block")


class Hit(Model):
    """One ranked document in a search response."""

    rank: int = Field(description="1-based final rank; lower is better")
    doc_id: str = Field(description="Stable document id (derived from project and path)")
    project: str = Field(description="Project id the document belongs to")
    path: str = Field(description="Path of the document relative to its root, forward slashes")
    title: str
    kind: str = Field(description="markdown, notebook, code, text, pdf or config")
    tags: list[str] = Field(default_factory=list)
    score: float = Field(description="Fused weighted-RRF score; for ordering, not a probability")
    sources: list[str] = Field(description="Lanes that returned at least one block of this document")
    block_ids: list[str] = Field(description="All matching blocks of the document, best first")
    best_block_id: str
    heading_path: list[str] = Field(default_factory=list, description="Headings above the best block")
    lines: tuple[int, int] = Field(description="1-based inclusive line span of the best block")
    snippet: str = Field(default="", description="Passage of the best block around the query terms")
    highlights: list[tuple[int, int]] = Field(
        default_factory=list,
        description="Matched-term spans in the snippet, [start, end) offsets in code points",
    )
    explain: list[LaneContribution] | None = Field(
        default=None, description="Per-lane ranks and contributions (only when requested)"
    )


class SearchRequest(Model):
    """A search over one or more projects of an index."""

    query: str
    projects: list[str] | None = Field(default=None, description="Project ids; None = every project")
    limit: int = Field(default=20, ge=1, le=1000, description="Maximum number of documents")
    lanes: list[str] | None = Field(default=None, description="Lanes to run; None = the configured ones")
    explain: bool = False
    snippets: bool = Field(default=True, description="Compute snippets and highlights (off for evaluation)")


class SearchResponse(Model):
    """The answer to a SearchRequest: documents best first, plus what was run."""

    query: str
    terms: list[str] = Field(description="Normalised query terms the lanes searched for")
    phrases: list[str] = Field(default_factory=list, description="Quoted phrases required verbatim")
    result_count: int
    hits: list[Hit]
    lanes: list[str] = Field(description="Lanes that were run")
    took_ms: float = Field(description="Wall-clock time of the search in milliseconds")
    notice: str | None = Field(default=None, description="Why the result is empty, when sleuth knows")
    unavailable_lanes: dict[str, str] = Field(
        default_factory=dict, description="Requested lanes that could not run, with the reason"
    )


class ProjectInfo(Model):
    project_id: str
    name: str
    roots: list[str]
    documents: int
    blocks: int
    last_indexed: str | None = Field(description="RFC 3339 UTC time of the last index run")


class DocumentContent(Model):
    """A whole stored document (``sleuth get``, ``get_notebook``)."""

    doc_id: str
    project: str
    path: str
    root: str
    title: str
    kind: str
    tags: list[str]
    front_matter: dict[str, object]
    mtime: str = Field(description="RFC 3339 UTC modification time of the file when indexed")
    revision: str = Field(description="Changes whenever the document's content changes")
    content_hash: str
    text: str
    blocks: list[dict[str, object]]


class IndexReport(Model):
    """What one ``index`` run did."""

    project: str
    roots: list[str]
    scanned: int = Field(
        description="Files (and archive members) found under the roots after ignore rules, skipped ones included"
    )
    added: int
    updated: int
    unchanged: int
    removed: int
    skipped: list[dict[str, str]] = Field(description="[{path, reason}] files not indexed")
    problems: list[dict[str, str]] = Field(description="[{path, problem}] indexed with a warning")
    blocks: int = Field(description="Blocks written in this run")
    embedded: int = Field(default=0, description="Blocks embedded in this run (vectors not already cached)")
    took_s: float
