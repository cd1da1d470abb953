"""A record written while a background worker embeds a folder just indexed: the write leaves the
folder's blocks to the worker instead of embedding all of them itself (a new user's trial: the
first project_memory_record after `sleuth index` of 411 Hugo pages took 1 min 57 s, embedding
the pages beside the worker, under the write lock). Real catalog, real model, real lock."""

from __future__ import annotations

import logging
import os
import signal
import time
from pathlib import Path
from typing import Any

from sleuth.background import EMBED_LOG_FILE, embed_lock, read_state, worker_running
from sleuth.engine import Engine
from sleuth.memory.records import RecordStore
from sleuth.types import SearchRequest

#: A generous safety net for a worker to embed a few blocks (it loads the model first), in seconds.
WORKER_WAIT_S = 240.0


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


def test_a_record_leaves_pending_blocks_to_a_running_worker_or_a_new_one_and_embeds_its_own(tmp_path: Path) -> None:
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
        # The worker is gone (its lock released, as the kernel releases a killed worker's) with the
        # folder's blocks left: the write starts a new worker and leaves every block to it.
        assert _counts(engine) == (0, total + 1)  # the folder's and the first record's blocks wait
        second = records.write("p", "note", "Second note", "Written when the worker is gone.")
        pending = total + 1 + len(engine.catalog.blocks_of(second.record_id))
        state = finished_worker(engine.index_dir)  # it found all of them waiting: the write embedded none
        assert (state["state"], state["embedded"], state["to_embed"]) == ("done", pending, pending)
        assert state["pid"] != os.getpid()
        assert _counts(engine) == (total + 2, total + 2)
        hits = engine.search(SearchRequest(query="worker gone", lanes=["vector"], limit=1)).hits
        assert [h.doc_id for h in hits] == [second.record_id]
        # Nothing else waits: the write embeds its own blocks at once, and starts no worker.
        third = records.write("p", "note", "Third note", "Written when nothing else waits for a vector.")
        assert _counts(engine) == (total + 3, total + 3)
        assert read_state(engine.index_dir) == state
        hits = engine.search(SearchRequest(query="nothing else waits", lanes=["vector"], limit=1)).hits
        assert [h.doc_id for h in hits] == [third.record_id]


def test_a_burst_of_records_starts_one_worker(tmp_path: Path, caplog: Any) -> None:
    """Records written one after another while the worker the first started is still starting (it
    has not taken the embed lock yet: held stopped here) started a worker each (attack session
    26b): the burst starts one, which embeds every block once it runs."""
    folder = _folder(tmp_path / "notes", 6)
    with Engine(tmp_path / "idx") as engine:
        engine.index([folder], project="p", embed=False)
        records = RecordStore(engine)
        with caplog.at_level(logging.INFO, logger="sleuth.memory.records"):
            records.write("p", "note", "First of a burst", "Written right after the folder was indexed.")
            started = [r.args[1] for r in caplog.records if "started worker" in r.getMessage()]
            assert len(started) == 1
            os.kill(started[0], signal.SIGSTOP)  # still starting, whatever the machine's speed
            try:
                for i in range(3):
                    records.write("p", "note", f"Burst {i}", f"Burst record {i} about quokkas.")
            finally:
                os.kill(started[0], signal.SIGCONT)
            assert len([r for r in caplog.records if "started worker" in r.getMessage()]) == 1
        state = finished_worker(engine.index_dir)
        assert state["pid"] == started[0]
        have, total = _counts(engine)
        assert have == total


def finished_worker(index_dir: Path) -> dict[str, Any]:
    """The state of the worker a write started, once it has embedded and ended (a safety net of
    ``WORKER_WAIT_S``: it loads the model first)."""
    deadline = time.monotonic() + WORKER_WAIT_S
    while time.monotonic() < deadline:
        state = read_state(index_dir) or {}
        if state.get("state") in ("done", "failed") and not worker_running(index_dir):
            return state
        time.sleep(0.1)
    log = index_dir / EMBED_LOG_FILE
    raise AssertionError(f"no worker embedded the blocks; its log: {log.read_text() if log.exists() else None}")


def test_a_record_written_as_another_process_probes_the_embed_lock_is_embedded(
        tmp_path: Path, monkeypatch: Any) -> None:
    """A probe of the embed lock (``status``, ``doctor``, a search's notice: ``worker_running`` in
    another process) holds it for microseconds. A record written at that instant took the probe for
    a worker (both the write's own probe and its try of the lock were one attempt), so its blocks
    stayed without a vector (attack session 30; ``doctor`` then said "stopped"). Injected here: the
    embed lock's first two tries find it held, as they would during two other processes' probes."""
    import fcntl

    from sleuth import locks

    folder = _folder(tmp_path / "notes", 1)
    with Engine(tmp_path / "idx") as engine:
        engine.index([folder], project="p")  # embedded: nothing waits
        records = RecordStore(engine)
        records.write("p", "note", "First note", "Embedded at once: nothing else waits.")
        assert _counts(engine)[0] == _counts(engine)[1]
        busy = {"tries": 2}
        real_flock = fcntl.flock

        def probed(fd: int, operation: int) -> None:
            if operation & fcntl.LOCK_NB and busy["tries"] and os.readlink(f"/proc/self/fd/{fd}").endswith(
                    "embed.lock"):
                busy["tries"] -= 1
                raise BlockingIOError("held by another process's probe")
            real_flock(fd, operation)

        monkeypatch.setattr(locks.fcntl, "flock", probed)
        second = records.write("p", "note", "Second note", "Written while another process probed the lock.")
        assert busy["tries"] == 0
        have, total = _counts(engine)
        assert have == total
        hits = engine.search(SearchRequest(query="another process probed", lanes=["vector"], limit=1)).hits
        assert [h.doc_id for h in hits] == [second.record_id]
