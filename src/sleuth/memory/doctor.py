"""``doctor``: the health of an index, per project -- counts, skipped files with reasons, stale
documents, and which retrieval families can answer (from the lane registry)."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from sleuth.errors import ProjectNotFound, shown
from sleuth.freshness import row_freshness, skip_state
from sleuth.ingest.placement import overlapping_projects
from sleuth.lanes import registry
from sleuth.memory.records import MEMORY_DIR_NAME
from sleuth.reports import (
    DoctorProject,
    DoctorReport,
    FamilyHealth,
    ProblemInfo,
    SkippedFileInfo,
    StaleDocument,
    skip_summary,
    stored_skips,
)
from sleuth.scaleout import catalog_backend, milvus_report, one_report

if TYPE_CHECKING:
    from sleuth.engine import Engine

#: Stale documents listed by name (all are counted).
STALE_LISTED_MAX = 100
#: Skipped files, and files indexed with a warning, listed by name (all are counted, the skipped ones
#: by reason with a few examples each): the report stays a few kilobytes for an agent however many
#: files a vault holds that sleuth does not index.
DOCTOR_LISTED_MAX = 20


def _families(engine: Engine, wanted: list[str]) -> dict[str, FamilyHealth]:
    """Each family's health from its lanes' status; the vector and graph figures of the chosen projects.
    The model is loaded first (the vector lane's status alone reads its files only): a doctor tells
    a model that cannot load."""
    if "vector" in engine.lanes:
        engine.model.get()
    out: dict[str, FamilyHealth] = {}
    for family in registry.families():
        names = [n for n in registry.lanes_of_family(family) if n in engine.lanes]
        if not names:
            continue
        statuses = {n: engine.lanes[n].status() for n in names}
        down = [s for s in statuses.values() if not s.available]
        details: dict[str, Any] = {}
        for s in statuses.values():
            details.update(s.details or {})
        out[family] = FamilyHealth(available=not down, reason=down[0].reason if down else None, lanes=names,
                                   details=details)
    chosen = set(wanted)
    if "vector" in out and "model" in out["vector"].details:  # the chosen projects' counts, not the index's
        dim = out["vector"].details.get("dimensions")
        have, total = engine.catalog.vector_counts(str(out["vector"].details["model"]), wanted,
                                                   dim=dim if isinstance(dim, int) else None)
        out["vector"].details.update(blocks_with_vectors=have, blocks=total)
    if "graph" in out and "graph" in engine.lanes:
        graph = engine.link_graph()
        out["graph"].details = {
            "linked_documents": sum(1 for node in graph.neighbours if graph.project_of.get(node) in chosen),
            "entities": sum(1 for node in graph.entities.values() if node.project_id in chosen)}
    out.pop("postings_generation", None)
    for health in out.values():
        health.details.pop("postings_generation", None)
    return out


def _embedding_goes_on(engine: Engine, vector: FamilyHealth) -> bool:
    """False when blocks of the chosen projects wait for a vector and no process embeds them (a
    killed worker: ``sleuth embed`` resumes); then ``vector.details["embedding"]`` is ``"stopped"``
    (``"running"`` while a process embeds)."""
    from sleuth.background import worker_running

    have, total = vector.details.get("blocks_with_vectors"), vector.details.get("blocks")
    if not isinstance(have, int) or not isinstance(total, int) or have >= total:
        return True
    running = worker_running(engine.index_dir)
    vector.details["embedding"] = "running" if running else "stopped"
    return running


def _first_vectors_coming(engine: Engine, vector: FamilyHealth) -> bool:
    """True when the vector lane is unavailable only because no block has a vector yet while a
    process embeds them (right after ``sleuth index``: the worker's first batch is not committed);
    then ``vector.details["embedding"]`` is ``"running"``. Before, ``sleuth index && sleuth doctor``
    needed attention for the embedding that index had just started."""
    from sleuth.background import worker_running

    if vector.available or not engine.catalog.has_blocks() or not worker_running(engine.index_dir):
        return False
    if engine.model.tried and engine.model.unavailable() is not None:  # the lane asked: the model is broken
        return False
    vector.details["embedding"] = "running"
    return True


def doctor(engine: Engine, project_id: str | None = None, visible: Collection[str] | None = None) -> DoctorReport:
    """Index health (one project, or all when ``project_id`` is None).

    Needs attention (``ok`` False): stale documents, postings behind the catalog, no vector lane
    although a model is configured, blocks waiting for a vector with no process embedding them,
    Milvus unreachable or behind, two of the chosen projects overlapping
    (:func:`sleuth.ingest.placement.overlapping_projects`: their files are in both).

    Stale documents are found by one ``stat`` per indexed file (changed or vanished since indexed).
    Everything reported -- projects, stale documents, skipped files, problems, the graph's and the
    vector lane's counts, documents left out of Milvus -- is of the chosen projects only. Its size
    is bounded: at most ``STALE_LISTED_MAX`` stale documents and ``DOCTOR_LISTED_MAX`` skipped
    files, problems and documents left out of Milvus are listed by name; all are counted (skipped
    files by reason, with ``SKIPPED_EXAMPLES_PER_REASON`` paths each). In scale-out mode, Milvus
    unreachable or behind the catalog needs attention (as postings behind do); documents left out
    of it are reported, not counted (as skipped files).

    In scale-out mode the report reaches Milvus once for its version and once for the row count
    of its lexical collection, however many lanes report on it (:func:`sleuth.scaleout.one_report`).

    Args:
        visible: the projects the caller may see (None: all); the others are left out of every
            part of the report, and naming one reads exactly as naming a project that does not exist.
    Raises:
        ProjectNotFound: ``project_id`` does not exist (or is not visible).
    """
    with one_report():
        return _doctor(engine, project_id, visible)


def _doctor(engine: Engine, project_id: str | None, visible: Collection[str] | None) -> DoctorReport:
    """:func:`doctor`'s report."""
    projects = [p for p in engine.projects()
                if (project_id is None or p.project_id == project_id)
                and (visible is None or p.project_id in visible)]
    if project_id is not None and not projects:
        raise ProjectNotFound(f"project not found: {shown(project_id)} (see get_projects or `sleuth projects`)")
    wanted = [p.project_id for p in projects]
    stale: list[StaleDocument] = []
    stale_counts = dict.fromkeys(wanted, 0)
    for doc in engine.catalog.documents_for_projects(wanted):
        if row_freshness(doc) == "stale":
            stale_counts[doc.project_id] += 1
            if len(stale) < STALE_LISTED_MAX:
                stale.append(StaleDocument(record_id=doc.doc_id, project_id=doc.project_id, root=doc.root,
                                           path=doc.rel_path, indexed_at=doc.indexed_at))
    skipped = [s for s in engine.catalog.skipped() if s["project"] in wanted]
    problems = [ProblemInfo(**p) for p in engine.catalog.problems() if p["project"] in wanted]
    lanes = _families(engine, wanted)
    generation, postings_generation = engine.catalog.generation(), engine.postings.generation()
    vector = lanes.get("vector")
    # a model turned off (model = 'none') is the user's choice: reported, but nothing to attend to
    vector_ok = vector is None or vector.available or engine.model.disabled or _first_vectors_coming(engine, vector)
    embedding_ok = vector is None or engine.model.disabled or _embedding_goes_on(engine, vector)
    # documents left out of Milvus are reported as skipped files are, not counted
    milvus = milvus_report(engine, wanted, DOCTOR_LISTED_MAX)
    milvus_ok = milvus is None or (milvus.reachable and milvus.up_to_date)
    # projects the caller may see only: another's roots are never named
    overlapping = overlapping_projects(engine.catalog.roots(), wanted, engine.index_dir)
    return DoctorReport(
        ok=(not stale and postings_generation == generation and vector_ok and embedding_ok and milvus_ok
            and not overlapping),
        overlapping=overlapping,
        index_dir=str(engine.index_dir), generation=generation, postings_generation=postings_generation,
        projects=[DoctorProject(**p.model_dump(), memory_dir=str(engine.index_dir / MEMORY_DIR_NAME / p.project_id),
                                stale_documents=stale_counts[p.project_id],
                                skipped_files=sum(1 for s in skipped if s["project"] == p.project_id),
                                failed_files=sum(1 for s in skipped if s["project"] == p.project_id
                                                 and skip_state(s["reason"]) == "failed"))
                  for p in projects],
        lanes=lanes, stale_documents=stale, stale_document_count=sum(stale_counts.values()),
        skipped_file_count=len(skipped), skipped_by_reason=skip_summary(stored_skips(skipped)),
        skipped_files=[SkippedFileInfo(**s, state=skip_state(s["reason"])) for s in skipped[:DOCTOR_LISTED_MAX]],
        problems=problems[:DOCTOR_LISTED_MAX], problem_count=len(problems),
        catalog=catalog_backend(engine), milvus=milvus,
    )
