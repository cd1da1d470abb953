"""Files parsed in worker processes, in order, under the per-file time and memory bounds (real worker
processes; faults injected through the hooks of sleuth.ingest.guard, with wide margins)."""

from __future__ import annotations

import os
import pickle
import signal
import threading
import time
from pathlib import Path

import pytest

from sleuth.engine import content_hash_of
from sleuth.ingest import pool
from sleuth.ingest.guard import Failed, Parsed, ParseJob, content_hash, parse_job
from sleuth.ingest.pool import parse_in_order

#: Files here are a few bytes: parsing one takes milliseconds even on a loaded machine.
BUDGET_S = 5.0


@pytest.fixture
def files(tmp_path: Path) -> list[tuple[str, ParseJob]]:
    out = []
    for i in range(40):
        path = tmp_path / f"doc{i:02d}.md"
        path.write_text(f"# Page {i}\n\nText of page {i}.\n")
        st = path.stat()
        out.append((path.name, ParseJob(path.name, str(path), identity=(st.st_dev, st.st_ino),
                                        roots=(str(tmp_path.resolve()),), max_bytes=1000)))
    return out


@pytest.fixture
def workers_started(monkeypatch: pytest.MonkeyPatch) -> list[pool._Worker]:
    """Every worker process started during the test (and none kept from an earlier test)."""
    pool._IDLE.close_all()
    started: list[pool._Worker] = []

    class Recorded(pool._Worker):
        def __init__(self, memory_bytes: int) -> None:
            super().__init__(memory_bytes)
            started.append(self)

    monkeypatch.setattr(pool, "_Worker", Recorded)
    yield started
    pool._IDLE.close_all()


def test_the_content_hash_is_the_catalogs() -> None:
    for text in ("", "abc", "caf\u00e9\n", "\udce9 lone surrogate"):
        assert content_hash(text) == content_hash_of(text)


def test_outcomes_come_back_in_order_as_in_process(files, workers_started) -> None:
    items = [(name, job if i % 3 else None) for i, (name, job) in enumerate(files)]
    got = list(parse_in_order(items, budget_s=BUDGET_S))
    assert [name for name, _ in got] == [name for name, _ in files]
    for (name, job), (_, outcome) in zip(items, got, strict=True):
        if job is None:
            assert outcome is None
        else:
            assert outcome == parse_job(job)
            assert isinstance(outcome, Parsed) and outcome.document.title == f"Page {int(name[3:5])}"
    # the text is not parsed again when its hash is the known one
    name, job = files[1]
    same = ParseJob(**{**job.__dict__, "known_hash": content_hash(Path(job.path).read_text())})
    ((_, outcome),) = parse_in_order([(name, same)], budget_s=BUDGET_S)
    assert outcome == Parsed(same.known_hash, None)
    assert len(workers_started) == 1  # small files: one worker keeps up, and is kept between runs


def test_a_slow_file_takes_too_long_and_the_rest_is_parsed(files, monkeypatch) -> None:
    monkeypatch.setenv("SLEUTH_FAULT_SLOW_FILE", "doc07.md=600000")  # ten minutes: far past any budget
    got = dict(parse_in_order(files, budget_s=BUDGET_S))
    assert got["doc07.md"] == Failed("took too long: more than the 5 s per-file time budget")
    assert all(isinstance(o, Parsed) for name, o in got.items() if name != "doc07.md")


def test_a_file_stuck_in_c_code_is_stopped_by_killing_its_worker(files, monkeypatch, workers_started) -> None:
    monkeypatch.setenv("SLEUTH_FAULT_STUCK_FILE", "doc03.md;doc30.md")  # deaf to SIGALRM
    monkeypatch.setattr(pool, "BACKSTOP_GRACE_S", 1.0)
    got = list(parse_in_order(files, budget_s=BUDGET_S))
    assert [name for name, _ in got] == [name for name, _ in files]
    outcomes = dict(got)
    assert outcomes["doc03.md"] == outcomes["doc30.md"] == Failed(
        "took too long: more than the 5 s per-file time budget")
    assert all(isinstance(o, Parsed) for name, o in outcomes.items() if name not in ("doc03.md", "doc30.md"))
    assert sum(w.proc.returncode == -signal.SIGKILL for w in workers_started) == 2


def test_a_worker_that_dies_skips_only_its_file(files, monkeypatch, workers_started) -> None:
    monkeypatch.setenv("SLEUTH_FAULT_SLOW_FILE", "doc05.md=60000")

    def kill_when_on_doc05() -> None:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            for worker in list(workers_started):
                running = worker.running()
                if running is not None and worker.inflight[running[0]].item == "doc05.md":
                    os.kill(worker.proc.pid, signal.SIGKILL)
                    return
            time.sleep(0.01)

    killer = threading.Thread(target=kill_when_on_doc05)
    killer.start()
    got = dict(parse_in_order(files, budget_s=120.0))
    killer.join()
    assert got["doc05.md"] == Failed("the parse process died (killed by SIGKILL)")
    assert all(isinstance(o, Parsed) for name, o in got.items() if name != "doc05.md")


def test_memory_is_bounded_per_worker(files, monkeypatch) -> None:
    monkeypatch.setenv("SLEUTH_FAULT_HOG_FILE", "doc11.md")
    monkeypatch.setenv("SLEUTH_PARSE_MEMORY_MB", "256")
    got = dict(parse_in_order(files, budget_s=BUDGET_S))
    assert got["doc11.md"] == Failed("needs more memory than the 256 MiB limit of a parse process")
    assert all(isinstance(o, Parsed) for name, o in got.items() if name != "doc11.md")


def test_reads_and_settings_are_checked(tmp_path: Path, monkeypatch) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("secret\n")
    (tmp_path / "root").mkdir()
    (tmp_path / "root" / "link.md").symlink_to(secret)
    job = ParseJob("link.md", str(tmp_path / "root" / "link.md"), roots=(str(tmp_path / "root"),), max_bytes=100)
    ((_, outcome),) = parse_in_order([("link.md", job)], budget_s=BUDGET_S)
    assert outcome == Failed("unreadable: is a symlink (not followed)")
    monkeypatch.setenv("SLEUTH_FILE_BUDGET_S", "soon")
    from sleuth.errors import ConfigError

    with pytest.raises(ConfigError, match="SLEUTH_FILE_BUDGET_S must be a number from 0.1 to 86400"):
        list(parse_in_order([("link.md", job)]))


def test_an_answer_naming_a_class_is_refused() -> None:
    import io

    hostile = pickle.dumps(("failed", os.system))
    with pytest.raises(pickle.UnpicklingError, match="forbidden global"):
        pool._ResultUnpickler(io.BytesIO(hostile)).load()
