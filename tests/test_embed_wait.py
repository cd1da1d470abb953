"""While `sleuth embed` (or `sleuth index --wait`) waits for the process holding the embed lock, it
shows that process's progress -- the figures `sleuth status` shows -- through the same progress
display as its own phases (a new user's trial: `make demo-wait` printed nothing for minutes while
`sleuth status` said "73 %, 9.0 blocks/s, ETA 3 min"). The waiting loop runs on an injected clock
with a scripted reader; the lock is a real ``flock`` held by the test."""

from __future__ import annotations

import io
import os
from pathlib import Path
from typing import Any

from sleuth.background import EMBED_LOCK_FILE, EMBED_STATE_FILE, wait_for_embed_lock, worker_progress
from sleuth.locks import lock_exclusive
from sleuth.progress import PlainLines, Progress


class Clock:
    """Seconds, advanced only by :meth:`sleep` (the waiting loop's pause)."""

    def __init__(self) -> None:
        self.now = 0.0
        self.on_sleep: list[tuple[float, int]] = []  # (at or after this time, close this held descriptor)

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.now += seconds
        for at, fd in list(self.on_sleep):
            if self.now >= at:
                os.close(fd)  # the holder lets the lock go
                self.on_sleep.remove((at, fd))


def worker_at(now: float) -> dict[str, Any] | None:
    """What a worker reports at ``now``: loading its model (no rate yet), then two commits."""
    if now < 3:
        return {"state": "running", "embedded": 0, "total": 300, "pid": 4242}
    if now < 8:
        return {"state": "running", "embedded": 100, "total": 300, "pid": 4242, "rate_blocks_per_s": 9.0,
                "eta_s": 22.2}
    return {"state": "running", "embedded": 219, "total": 300, "pid": 4242, "rate_blocks_per_s": 9.0, "eta_s": 9.0}


def test_the_wait_shows_the_holders_progress_every_interval_then_what_it_did(tmp_path: Path) -> None:
    clock, out = Clock(), io.StringIO()
    holder = lock_exclusive(tmp_path / EMBED_LOCK_FILE, 0)
    assert holder is not None
    clock.on_sleep.append((12.0, holder))
    progress = Progress(PlainLines(out, interval_s=5, label="sleuth embed"), clock=clock)
    reads: list[float] = []

    def read() -> dict[str, Any] | None:
        reads.append(clock.now)
        return worker_at(clock.now)

    fd = wait_for_embed_lock(tmp_path, float("inf"), progress, read, clock=clock, sleep=clock.sleep, poll_s=0.5)
    assert fd is not None
    os.close(fd)
    assert clock.now == 12.0
    assert reads == [float(t) for t in range(12)]  # at once, then once a second (WAIT_REPORT_INTERVAL_S)
    # What embed_now does once it holds the lock: nothing was left for it.
    progress.start("embedding", total=300, done=300, waited_s=12.0, others=300)
    progress.finish("embedding")
    assert out.getvalue().splitlines() == [
        "sleuth embed: embedding 100/300 blocks by process 4242, 9.0 blocks/s, ETA 22 s",  # one interval in
        "sleuth embed: embedding 219/300 blocks by process 4242, 9.0 blocks/s, ETA 9 s",
        "sleuth embed: embedding 300/300 blocks, 300 embedded by another process while this one waited 12 s",
    ]


def test_every_read_is_shown_at_interval_zero_and_only_while_a_process_embeds(tmp_path: Path) -> None:
    clock, out = Clock(), io.StringIO()
    holder = lock_exclusive(tmp_path / EMBED_LOCK_FILE, 0)
    assert holder is not None
    clock.on_sleep.append((4.0, holder))
    progress = Progress(PlainLines(out, interval_s=0, label="sleuth index"), clock=clock)
    progress.start("postings", total=5)
    progress.advance("postings", 5)
    progress.finish("postings", final=False)
    script: list[dict[str, Any] | None] = [
        None,  # no model, or nothing readable
        {"state": "running", "embedded": 2, "total": 5},  # a holder that wrote no state: no pid, no rate
        {"state": "running", "embedded": 4, "total": 5, "pid": 77, "rate_blocks_per_s": 0.5, "eta_s": 2.0},
        {"state": "done", "embedded": 5, "total": 5},  # let go between two tries: nothing to show
    ]
    fd = wait_for_embed_lock(tmp_path, float("inf"), progress, lambda: script.pop(0), clock=clock,
                             sleep=clock.sleep, poll_s=1.0)
    assert fd is not None and script == []
    os.close(fd)
    assert out.getvalue().splitlines() == [
        "sleuth index: postings 0/5 blocks",
        "sleuth index: postings 5/5 blocks",
        "sleuth index: postings 5/5 blocks, done in under 0.1 s",
        "sleuth index: postings 5/5 blocks, done in under 0.1 s | embedding 2/5 blocks by another process",
        "sleuth index: postings 5/5 blocks, done in under 0.1 s | embedding 4/5 blocks by process 77, "
        "0.5 blocks/s, ETA 2 s",
    ]


def test_a_wait_with_a_bound_gives_up_and_one_without_progress_reads_nothing(tmp_path: Path) -> None:
    clock = Clock()
    holder = lock_exclusive(tmp_path / EMBED_LOCK_FILE, 0)
    assert holder is not None
    try:
        def never() -> dict[str, Any] | None:
            raise AssertionError("read without a progress to show it")

        assert wait_for_embed_lock(tmp_path, 3.0, None, never, clock=clock, sleep=clock.sleep, poll_s=0.5) is None
        assert clock.now == 3.0
        progress = Progress(clock=clock)
        assert wait_for_embed_lock(tmp_path, 0.0, progress, never, clock=clock, sleep=clock.sleep) is None
        assert clock.now == 3.0 and progress.phases == {}  # one try, no wait, nothing read
    finally:
        os.close(holder)
    fd = wait_for_embed_lock(tmp_path, 0.0, None, never, clock=clock, sleep=clock.sleep)
    assert fd is not None
    os.close(fd)


def test_the_figures_shown_are_those_of_sleuth_status(tmp_path: Path) -> None:
    """The default reader, on a real index with a worker's state file and the lock held: the same
    dictionary ``sleuth status`` renders (real catalog; the model's files are found, not loaded)."""
    import json

    from sleuth.engine import Engine

    notes = tmp_path / "notes"
    notes.mkdir()
    for i in range(4):
        (notes / f"n{i}.md").write_text(f"# Note {i}\n\nThe heron {i} waits by the reeds.\n", encoding="utf-8")
    with Engine(tmp_path / "idx") as engine:
        engine.index([notes], project="notes", embed=False)
        model = engine.status().vector_lane.model
        assert model is not None
        holder = lock_exclusive(engine.index_dir / EMBED_LOCK_FILE, 0)
        assert holder is not None
        try:
            (engine.index_dir / EMBED_STATE_FILE).write_text(json.dumps(
                {"pid": 4242, "model": model, "state": "running", "started_at": "2026-12-06T22:00:00Z",
                 "updated_at": "2026-12-06T22:00:05Z", "embedded": 0, "to_embed": 4, "rate_blocks_per_s": 0.8,
                 "error": None}), encoding="utf-8")
            shown = worker_progress(engine)
            status = engine.status().vector_lane.embedding
        finally:
            os.close(holder)
    assert status is not None
    assert shown == status.model_dump(exclude_none=True) == {
        "state": "running", "embedded": 0, "total": 4, "pid": 4242, "rate_blocks_per_s": 0.8, "eta_s": 5.0,
        "updated_at": "2026-12-06T22:00:05Z"}


def test_on_a_terminal_the_bar_shows_the_holder_then_this_process() -> None:
    from sleuth.progress import RichBars

    out, clock = io.StringIO(), Clock()
    bars = RichBars(out)
    progress = Progress(bars, clock=clock)
    progress.elsewhere("embedding", 219, 300, 9.0, 9.0, "process 4242")
    bars.close()
    waiting = out.getvalue().splitlines()[-1]
    assert waiting.startswith("embedding by process 4242") and "219/300" in waiting
    assert waiting.rstrip().endswith("9.0 blocks/s 0:00:00 ETA 9 s")
    out.seek(0)
    out.truncate()
    progress.start("embedding", total=300, done=300, waited_s=30.0, others=81)  # the lock is free
    progress.finish("embedding")
    bars.close()
    done = out.getvalue().splitlines()[-1]
    assert done.startswith("embedding ") and "by process" not in done and "300/300" in done and "ETA" not in done
