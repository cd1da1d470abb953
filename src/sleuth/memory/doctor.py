"""``doctor``: the health of an index, per project -- counts, skipped files with reasons, stale
documents, and which lanes can answer."""

from __future__ import annotations

from collections.abc import Collection
from typing import TYPE_CHECKING, Any

from sleuth.freshness import row_freshness
from sleuth.memory.records import MEMORY_DIR_NAME

if TYPE_CHECKING:
    from sleuth.engine import Engine

#: Stale documents listed by name (all are counted).
STALE_LISTED_MAX = 100


def doctor(engine: Engine, project_id: str | None = None, visible: Collection[str] | None = None) -> dict[str, Any]:
    """Index health as a JSON-ready dict (one project, or all when ``project_id`` is None).

    Stale documents are found by one ``stat`` per indexed file (changed or vanished since indexed).
    Everything reported -- projects, stale documents, skipped files, problems, the graph's and the
    vector lane's counts -- is of the chosen projects only.

    Args:
        visible: the projects the caller may see (None: all); the others are left out of every
            part of the report, and naming one reads exactly as naming a project that does not exist.
    Raises:
        ProjectNotFound: ``project_id`` does not exist (or is not visible).
    """
    from sleuth.errors import ProjectNotFound

    projects = [p for p in engine.catalog.projects()
                if (project_id is None or p["project_id"] == project_id)
                and (visible is None or p["project_id"] in visible)]
    if project_id is not None and not projects:
        raise ProjectNotFound(f"project not found: {project_id} (see get_projects or `sleuth projects`)")
    wanted = [str(p["project_id"]) for p in projects]
    stale: list[dict[str, Any]] = []
    stale_counts = dict.fromkeys(wanted, 0)
    for doc in engine.catalog.documents_for_projects(wanted):
        if row_freshness(doc) == "stale":
            stale_counts[doc.project_id] += 1
            if len(stale) < STALE_LISTED_MAX:
                stale.append({"record_id": doc.doc_id, "project_id": doc.project_id, "root": doc.root,
                              "path": doc.rel_path, "indexed_at": doc.indexed_at})
    skipped = [s for s in engine.catalog.skipped() if s["project"] in wanted]
    problems = [p for p in engine.catalog.problems() if p["project"] in wanted]
    graph = engine.link_graph()
    chosen = set(wanted)
    linked = sum(1 for node in graph.neighbours if graph.project_of.get(node) in chosen)
    entities = sum(1 for node in graph.entities.values() if node.project_id in chosen)
    status = engine.lanes["vector"].status()
    vector = {"available": status.available, "reason": status.reason, **(status.details or {})}
    if "model" in vector:  # the counts of the chosen projects, not of the whole index
        vector["blocks_with_vectors"], vector["blocks"] = engine.catalog.vector_counts(str(vector["model"]), wanted)
    generation, postings_generation = engine.catalog.generation(), engine.postings.generation()
    return {
        "ok": not stale and postings_generation == generation and bool(vector.get("available")),
        "index_dir": str(engine.index_dir),
        "generation": generation,
        "postings_generation": postings_generation,
        "projects": [
            {**p, "memory_dir": str(engine.index_dir / MEMORY_DIR_NAME / str(p["project_id"])),
             "stale_documents": stale_counts[str(p["project_id"])],
             "skipped_files": sum(1 for s in skipped if s["project"] == p["project_id"])}
            for p in projects
        ],
        "lanes": {
            "exact": {"available": True},
            "bm25": {"available": True, "lanes": ["bm25", "tfidf", "index"]},
            "vector": vector,
            "graph": {"available": True, "linked_documents": linked, "entities": entities},
        },
        "stale_documents": stale,
        "stale_document_count": sum(stale_counts.values()),
        "skipped_files": skipped,
        "problems": problems,
    }
