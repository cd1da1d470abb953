"""A record written while a background worker embeds a folder just indexed: the write leaves the
folder's blocks to the worker instead of embedding all of them itself (a new user's trial: the
first project_memory_record after `sleuth index` of 411 Hugo pages took 1 min 57 s, embedding
the pages beside the worker, under the write lock). Real catalog, real model, real lock."""

from __future__ import annotations

from pathlib import Path

from sleuth.background import embed_lock
from sleuth.engine import Engine
from sleuth.memory.records import RecordStore
from sleuth.types import SearchRequest


def _folder(root: Path, pages: int) -> Path:
    root.mkdir()
    for i in range(pages):
        (root / f"page{i}.md").write_text(f"# Page {i}\n\nText of page {i} about lighthouses and tides.\n",
                                          encoding="utf-8")
    return root


def _counts(engine: Engine) -> tuple[int, int]:
    embedder = engine.embedder()
    assert embedder is not None, "the default model is needed (make venv installs it)"
    return engine.catalog.vector_counts(embedder.name, dim=embedder.dim)


def test_a_record_leaves_pending_blocks_to_a_running_worker_and_embeds_them_when_none_runs(tmp_path: Path) -> None:
    folder = _folder(tmp_path / "notes", 6)
    with Engine(tmp_path / "idx") as engine:
        engine.index([folder], project="p", embed=False)  # as `sleuth index`: the worker embeds later
        have, total = _counts(engine)
        assert have == 0 and total >= 6
        records = RecordStore(engine)
        with embed_lock(engine.index_dir, 0) as held:  # a worker embedding the folder
            assert held
            receipt = records.write("p", "note", "Quokka habitat", "Quokkas live on Rottnest Island.")
            assert _counts(engine)[0] == 0  # nothing embedded by the write: the worker does it
            hits = engine.search(SearchRequest(query="quokka rottnest", lanes=["bm25"], limit=3)).hits
            assert hits and hits[0].doc_id == receipt.record_id  # the keyword lanes find it at once
        records.write("p", "note", "Second note", "Written when no worker runs.")
        have, total = _counts(engine)
        assert have == total  # no worker: the write embeds what is pending, its own blocks with it
