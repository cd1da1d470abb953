"""A lane whose tasks hang holds only its own threads (sleuth.pipeline.retrieve.LanePools)."""

from __future__ import annotations

import threading

import pytest

from sleuth.pipeline.retrieve import LANE_THREADS, LanePools

#: Safety net for a task that must run: never a measure of speed, in seconds.
WAIT_S = 120.0


def test_a_hung_lane_never_takes_the_threads_of_another() -> None:
    pools = LanePools()
    release = threading.Event()
    started = threading.Semaphore(0)

    def hang() -> str:
        started.release()
        release.wait(WAIT_S)
        return "vector"

    try:
        hung = [pools.submit("vector", hang) for _ in range(LANE_THREADS)]
        for _ in hung:
            assert started.acquire(timeout=WAIT_S)  # every thread of the vector lane is held
        queued = pools.submit("vector", lambda: "late vector")
        assert pools.submit("bm25", lambda: "bm25").result(timeout=WAIT_S) == "bm25"
        assert not queued.done()  # the vector lane's next task waits for the vector lane's threads
        release.set()
        assert [f.result(timeout=WAIT_S) for f in hung] == ["vector"] * LANE_THREADS
        assert queued.result(timeout=WAIT_S) == "late vector"
    finally:
        release.set()
        pools.shutdown()
    with pytest.raises(RuntimeError, match="after shutdown"):
        pools.submit("bm25", lambda: None)
