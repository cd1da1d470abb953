"""Shared data types: what ingestion produces, what the catalog stores, what a search returns.

Internal pipeline records are frozen dataclasses (cheap, hashable); everything that crosses an
interface (Python API, CLI ``--format json``, MCP structured output) is a pydantic model, so one
response model serves all three.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sleuth.doc_types import (  # noqa: F401 - re-exported: the records live there, without pydantic
    Block,
    BlockDraft,
    DocumentKind,
    LaneName,
    Link,
    ParsedDocument,
    RankedList,
    SkippedFile,
    SourceFile,
)

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
