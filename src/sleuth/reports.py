"""Typed reports: ``sleuth status``, ``sleuth doctor`` / ``project_memory_doctor``, ``sleuth eval``.

One pydantic model per report serves the Python API, the CLI's ``--format json`` (``model_dump``)
and the MCP structured output, so the three cannot drift. Fields that say nothing when absent are
left out of the JSON (``exclude_if``), as the reports always did.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Literal

from pydantic import Field

from sleuth.types import Model, ProjectInfo


def _absent(value: object) -> bool:
    return value is None


class SkippedFileInfo(Model):
    """A file that was not indexed, and why."""

    project: str
    root: str = Field(description="The project root the path is relative to")
    path: str
    reason: str = Field(description="Why it was not indexed, for people")
    at: str = Field(description="RFC 3339 UTC time it was last looked at")
    state: Literal["skipped", "failed"] | None = Field(
        default=None, exclude_if=_absent,
        description="failed: it could not be read or parsed; skipped: left out by a rule (format, size, ...)")


class SkippedReason(Model):
    """Files not indexed for one reason (the reason's category: the text before its first ``:``)."""

    reason: str
    count: int
    examples: list[str] = Field(default_factory=list, description="The first paths (at most a few)")


#: Paths shown per reason in a skipped-file summary.
SKIPPED_EXAMPLES_PER_REASON = 3
#: Skipped files listed one by one in ``sleuth status`` (all of them with ``--files`` / ``--verbose``).
STATUS_SKIPPED_LISTED_MAX = 20


def reason_category(reason: str) -> str:
    """The category of a skip reason: ``too large: 12 bytes > 10 byte limit`` -> ``too large``."""
    return reason.split(":", 1)[0].strip() or reason


def skip_summary(skips: Iterable[tuple[str, str]], examples: int = SKIPPED_EXAMPLES_PER_REASON,
                 ) -> list[SkippedReason]:
    """``(path, reason)`` pairs summarised by reason category: counts, the first ``examples`` paths of
    each; the most frequent reason first (ties by name)."""
    groups: dict[str, SkippedReason] = {}
    for path, reason in skips:
        key = reason_category(reason)
        group = groups.setdefault(key, SkippedReason(reason=key, count=0))
        group.count += 1
        if len(group.examples) < examples:
            group.examples.append(path)
    return sorted(groups.values(), key=lambda g: (-g.count, g.reason))


def stored_skips(rows: Sequence[Mapping[str, str]]) -> list[tuple[str, str]]:
    """The catalog's skipped-file rows (``project``, ``root``, ``path``, ``reason``) as ``(path,
    reason)`` for :func:`skip_summary`: each path qualified by its root's folder name
    (:func:`sleuth.pathglob.qualified_path`, ``vault/data/blob.bin``) when the rows come from several
    roots, so that two roots' files of one name are told apart (``data/blob.bin, data/blob.bin``)."""
    from sleuth.pathglob import qualified_path

    several = len({(r["project"], r["root"]) for r in rows}) > 1
    return [(qualified_path(r["root"], r["path"]) if several and r["root"] else r["path"], r["reason"])
            for r in rows]


class ProblemInfo(Model):
    """A file indexed with a warning (malformed front matter, a bad date, ...)."""

    project: str
    root: str
    path: str
    problem: str
    at: str


class RootCoverage(Model):
    """How much of one project root is indexed."""

    project: str
    root: str = Field(description="The root folder ('' for records and evaluation corpora)")
    indexed: int = Field(description="Documents indexed from the root")
    skipped: int = Field(description="Files left out by a rule")
    failed: int = Field(description="Files that could not be read or parsed")
    last_indexed: str | None = Field(description="RFC 3339 UTC time of its last indexing run (None: never)")
    outdated: bool = Field(default=False, description=(
        "Its documents were parsed and analysed by an older sleuth (sleuth.ingest.PARSER_VERSION): the "
        "next `sleuth index` parses them again; until then some words may not match as they should"))


class FileInfo(Model):
    """One file the index knows of (``sleuth status --files``)."""

    project: str
    root: str
    path: str
    state: Literal["indexed", "skipped", "failed"]
    indexed_at: str | None = Field(default=None, exclude_if=_absent)
    freshness: Literal["current", "stale"] | None = Field(
        default=None, exclude_if=_absent, description="Is the file as it was indexed (one stat)")
    reason: str | None = Field(default=None, exclude_if=_absent)
    at: str | None = Field(default=None, exclude_if=_absent)


class EmbeddingProgress(Model):
    """Where the embedding of the index's blocks stands (sleuth.background)."""

    state: Literal["running", "stopped", "done"] = Field(
        description="running: a process embeds now; stopped: blocks wait for a vector and no process embeds "
                    "them (a killed worker: `sleuth embed` resumes); done: every block has a vector")
    embedded: int = Field(description="Blocks with a vector")
    total: int = Field(description="Blocks")
    pid: int | None = Field(default=None, exclude_if=_absent, description="The embedding process, while running")
    rate_blocks_per_s: float | None = Field(default=None, exclude_if=_absent,
                                            description="Blocks embedded per second by the running process")
    eta_s: float | None = Field(default=None, exclude_if=_absent, description="Seconds left at that rate")
    starting: bool | None = Field(default=None, exclude_if=_absent,
                                  description="True while the running process starts and loads the model (no rate yet)")
    updated_at: str | None = Field(default=None, exclude_if=_absent,
                                   description="RFC 3339 UTC time the running process last reported")
    error: str | None = Field(default=None, exclude_if=_absent, description="Why the last embedding run failed")


class VectorLaneReport(Model):
    """Can the vector lane answer, and with what."""

    available: bool
    reason: str | None = Field(default=None, description="Why not, when it cannot")
    model: str | None = Field(default=None, exclude_if=_absent, description="The embedding model's name")
    path: str | None = Field(default=None, exclude_if=_absent, description="Which arithmetic runs it (int8 "
                             "with the CPU's instructions, or float32) and why")
    dimensions: int | None = Field(default=None, exclude_if=_absent)
    blocks_with_vectors: int | None = Field(default=None, exclude_if=_absent)
    blocks: int | None = Field(default=None, exclude_if=_absent)
    embedding: EmbeddingProgress | None = Field(default=None, exclude_if=_absent)


class CatalogBackend(Model):
    """Where the catalog lives."""

    backend: Literal["sqlite", "postgresql"]
    location: str = Field(description="The SQLite file, or the PostgreSQL URL ($SLEUTH_CATALOG_URL) with its "
                                      "password replaced by ***")


class MilvusSyncProgress(Model):
    """A Milvus sync that has not ended (``lex_sync`` in the catalog's meta ``milvus:state``)."""

    state: Literal["running", "stopped"] = Field(
        description="running: another process holds the write lock (it syncs, or will finish the sync when its"
                    " work is done; also said when the lock cannot be taken: a read-only index folder); stopped:"
                    " no process holds it: the sync stopped mid-way and the next search or `sleuth index`"
                    " finishes it")
    target_generation: int = Field(description="The catalog generation it brings Milvus to")
    rebuild: bool = Field(description="Whether it writes every row again (else the documents changed since)")
    holder: str | None = Field(default=None, exclude_if=_absent, description="Who holds the write lock, "
                               "while running")


class LeftOutDocument(Model):
    """A document the Milvus sync left out: a row a Milvus field cannot hold (only a damaged or
    hostile catalog has one)."""

    record_id: str
    project_id: str
    root: str
    path: str
    reason: str = Field(description="Which field, how long, and the most Milvus takes (bytes)")


class MilvusReport(Model):
    """The lanes in Milvus (scale-out mode, ``milvus_uri``): where, which generation, what is left out."""

    uri: str = Field(description="milvus_uri, any password replaced by ***")
    collection: str = Field(description="The collections' name prefix (milvus_collection)")
    reachable: bool = Field(description="Whether Milvus answered (and accepts the settings)")
    error: str | None = Field(default=None, exclude_if=_absent, description="Why not, when it did not")
    server_version: str | None = Field(default=None, description="Milvus' version, when reachable")
    generation: int | None = Field(description="The catalog generation the lexical collection reflects (None: "
                                               "never synced; read from the catalog: known when Milvus is down)")
    catalog_generation: int
    up_to_date: bool = Field(description="generation is the catalog's and no sync is under way")
    dense_generation: int | None = Field(default=None, exclude_if=_absent,
                                         description="The generation the dense collection reflects")
    sync: MilvusSyncProgress | None = Field(default=None, exclude_if=_absent,
                                            description="A sync under way or stopped mid-way")
    left_out_count: int = Field(description="Documents left out of Milvus by its syncs, as recorded in the "
                                            "catalog (of the reported projects)")
    left_out_more: bool = Field(description="More documents were left out than the catalog records by id (over "
                                            "1,000, or an id over 1,000 characters): left_out_count is a lower "
                                            "bound")
    left_out: list[LeftOutDocument] = Field(description="The first ones (all are counted)")


class StatusReport(Model):
    """Index health: counts, generations, projects, coverage, skipped files (``sleuth status``)."""

    index_dir: str
    projects: list[ProjectInfo]
    documents: int
    blocks: int
    skipped: int = Field(description="Files not indexed")
    generation: int = Field(description="The catalog's generation (bumped by every committed write)")
    postings_generation: int = Field(description="The generation the tantivy postings reflect")
    postings_behind: str | None = Field(description="Why the postings lag the catalog, when they could not "
                                        "catch up (a full disk, a read-only folder)")
    read_only: str | None = Field(description="Why the index was opened read-only, when it was")
    lanes: list[str] = Field(description="Lanes run by default")
    fusion: str = Field(default="zscore", description="How the lanes' lists are fused (zscore, convex or rrf)")
    settings_unused: list[str] = Field(default_factory=list, description=(
        "Settings of config.toml that the configured fusion does not read ([score_weights] under rrf,"
        " [lane_weights] under zscore or convex), in words"))
    vector_lane: VectorLaneReport
    skipped_by_reason: list[SkippedReason] = Field(description="Files not indexed, counted by reason")
    skipped_files: list[SkippedFileInfo] = Field(description=f"The first {STATUS_SKIPPED_LISTED_MAX} files not "
                                                 "indexed (all with --files or --verbose)")
    problems: list[ProblemInfo]
    coverage: list[RootCoverage]
    files: list[FileInfo] | None = Field(default=None, exclude_if=_absent, description="Every file, with "
                                         "--files")
    catalog: CatalogBackend
    milvus: MilvusReport | None = Field(default=None, exclude_if=_absent,
                                        description="The lanes in Milvus, when milvus_uri is set")


class DoctorProject(ProjectInfo):
    """One project's health in a doctor report."""

    memory_dir: str = Field(description="Where project_memory_record writes this project's records")
    stale_documents: int = Field(description="Documents whose file changed or vanished since indexed")
    skipped_files: int = Field(description="Files not indexed (failed ones included)")
    failed_files: int = Field(default=0, description="Of skipped_files, those that could not be read or parsed")


class StaleDocument(Model):
    """A document whose file changed or vanished since it was indexed."""

    record_id: str
    project_id: str
    root: str
    path: str
    indexed_at: str


class FamilyHealth(Model):
    """One retrieval family (seed 004's ``exact``, ``bm25``, ``vector``, ``graph``) in a doctor report."""

    available: bool
    reason: str | None = Field(default=None, exclude_if=_absent)
    lanes: list[str] = Field(description="The lanes answering for it")
    details: dict[str, Any] = Field(default_factory=dict, description="The lanes' own figures (model, counts)")


class DoctorReport(Model):
    """Index health per project: stale documents, skipped files, lanes (``doctor``)."""

    ok: bool = Field(description="Nothing stale, the postings current, the vector lane available (or the model"
                                 " turned off on purpose: model = 'none'), Milvus (when used) reachable and at the"
                                 " catalog's generation, no two projects overlapping")
    index_dir: str
    generation: int
    postings_generation: int
    projects: list[DoctorProject]
    lanes: dict[str, FamilyHealth] = Field(description="By family")
    stale_documents: list[StaleDocument] = Field(description="The first ones (all are counted)")
    stale_document_count: int
    skipped_file_count: int = Field(description="Files not indexed")
    skipped_by_reason: list[SkippedReason] = Field(description="Files not indexed, counted by reason")
    skipped_files: list[SkippedFileInfo] = Field(description="The first ones (all are counted)")
    problems: list[ProblemInfo] = Field(description="The first files indexed with a warning (all are counted)")
    problem_count: int = Field(description="Files indexed with a warning")
    overlapping: list[str] = Field(default_factory=list, description=(
        "Pairs of the projects whose roots overlap, 'a and b: root' (a root of both, or inside a folder root"
        " of the other that its walk reaches): their files are in both, and a search of every project returns"
        " them twice; needs attention"))
    catalog: CatalogBackend
    milvus: MilvusReport | None = Field(default=None, exclude_if=_absent,
                                        description="The lanes in Milvus, when milvus_uri is set")


class EvalReport(Model):
    """One evaluation run (``sleuth eval``): the ranking's scores on a judged set."""

    dataset: str
    lanes: list[str] = Field(description="Lanes that ran")
    ndcg_10: float = Field(alias="ndcg@10", description="nDCG@10 as trec_eval's ndcg_cut.10, mean over queries")
    recall_100: float = Field(alias="recall@100", description="Recall@100, mean over queries")
    mrr_10: float = Field(alias="mrr@10", description="MRR@10 (reciprocal rank cut at 10), mean over queries")
    queries: int
    documents: int
    index_s: float = Field(description="Seconds to index the corpus (vectors cached by text are not redone)")
    embedded: int = Field(description="Blocks embedded in this run")
    query_ms_mean: float = Field(description="Milliseconds per query, mean")
    unavailable_lanes: dict[str, str]
