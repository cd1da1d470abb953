"""Handing files to parse workers and taking their outcomes back in order (the bounds: sleuth.ingest.guard).

:func:`parse_in_order` reads like a sequential loop: ``(item, outcome)`` in the order of the
candidates given, while worker processes (:mod:`sleuth.ingest.parse_worker`) read and parse up to
:data:`JOBS_PER_WORKER` files ahead each. Jobs go out in batches and answers come back in batches
(each write to a pipe may wake a process, which on a busy machine costs more than the write), so
that the many small files of a real repository cost little more than parsing them in-process.

One worker starts with a run; a second one (up to :data:`sleuth.ingest.guard.PARSE_WORKERS`) only
once the indexer has spent :data:`SCALE_UP_WAIT_S`, and half its time, waiting for the warm ones
(parsing, not indexing, is then what takes the time; the 38,404 tldr pages and the 992 Hugo pages
never need it).
Workers are shared by every run of a process and kept between runs: a broker or a watcher pays their
start-up (about 0.2 s of CPU each: Python, markdown-it, PyYAML, pydantic) once.

Each worker records which job it starts and when (a progress file, one ``pwrite`` per file, no
wake-up); the indexer reads it only when a worker has been silent for a file's budget plus
:data:`sleuth.ingest.guard.BACKSTOP_GRACE_S`, to kill it and skip exactly the file it was on (the
files queued behind it, or answered but not yet sent, go to a fresh worker).
"""

from __future__ import annotations

import atexit
import collections
import io
import math
import os
import pickle
import selectors
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Iterator
from typing import Any, Generic, TypeVar

from sleuth.errors import SleuthError
from sleuth.ingest.guard import (
    BACKSTOP_GRACE_S,
    Failed,
    Faults,
    Outcome,
    ParseJob,
    file_budget_s,
    job_to_wire,
    outcome_from_wire,
    parse_memory_max_bytes,
    parse_workers,
    too_long,
)
from sleuth.ingest.parse_worker import EXIT_RESTART, FRAME, PROGRESS

JOBS_PER_WORKER = 32
"""Files sent ahead to each worker, so that it never waits for the indexer."""
SEND_BATCH_JOBS = 8
"""Jobs are sent to a worker once this many wait for it (or at once when the indexer waits)."""
POLL_EVERY_ITEMS = 8
"""While the indexer works through outcomes already in, it looks for new answers (and sends the
jobs waiting) after every this many, so that the workers never run dry behind it."""
PENDING_MAX_ITEMS = 4096
"""At most this many candidates wait in order behind a file still being parsed."""
SCALE_UP_WAIT_S = 0.5
"""Another worker starts (up to the limit) once the indexer has waited this long for warm workers..."""
SCALE_UP_WAIT_SHARE = 0.5
"""... and that was at least this share of its time since they warmed up (parsing is the bottleneck)."""

_READ_BYTES = 1024 * 1024
_WORKER_CODE = "from sleuth.ingest.parse_worker import worker_main; worker_main()"

T = TypeVar("T")


class _ResultUnpickler(pickle.Unpickler):
    """Unpickles builtin values only: an answer naming any class or function is refused."""

    def find_class(self, module: str, name: str) -> Any:
        raise pickle.UnpicklingError(f"a parse worker answered with a forbidden global {module}.{name}")


class _Entry(Generic[T]):
    """One candidate in order: its item, its job (None: nothing to parse) and, once known, its outcome."""

    __slots__ = ("item", "job", "outcome", "done")

    def __init__(self, item: T, job: ParseJob | None) -> None:
        self.item, self.job = item, job
        self.outcome: Outcome | None = None
        self.done = job is None


def _worker_env() -> dict[str, str]:
    """The environment of a worker: this one, with this sleuth first on the module path (the worker
    runs with ``-P``: the current folder, maybe a hostile repository, is not on it)."""
    import sleuth

    package_parent = os.path.dirname(os.path.dirname(os.path.abspath(sleuth.__file__)))
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": package_parent + (os.pathsep + path if path else "")}


def _progress_file() -> int:
    """A small unnamed temporary file for a worker's progress record."""
    try:
        return os.open(tempfile.gettempdir(), os.O_TMPFILE | os.O_RDWR, 0o600)
    except (AttributeError, OSError):
        fd, name = tempfile.mkstemp(prefix="sleuth-progress-")
        os.unlink(name)
        return fd


class _Worker:
    """One worker process: the jobs it was given and has not answered, in order."""

    def __init__(self, memory_bytes: int) -> None:
        self.progress_fd = _progress_file()
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-c", _WORKER_CODE, str(memory_bytes), str(self.progress_fd)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True, pass_fds=(self.progress_fd,),
                env=_worker_env(),
            )
        except OSError as exc:
            os.close(self.progress_fd)
            raise SleuthError(f"cannot start a parse worker process ({sys.executable}): {exc}") from exc
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin_fd, self.stdout_fd = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.stdin_fd, False)
        os.set_blocking(self.stdout_fd, False)
        self.memory_bytes = memory_bytes
        self.unsent: list[tuple[Any, ...]] = []
        self.outbuf = bytearray()
        self.inbuf = bytearray()
        self.inflight: collections.deque[_Entry[Any]] = collections.deque()
        self.answered = 0  # answers received since the process began (the worker counts jobs begun)
        self.deadline = math.inf  # when to look at what it is doing (monotonic seconds)
        self.warm = False
        self.eof = False

    def queue(self, entry: _Entry[Any], message: tuple[Any, ...]) -> None:
        self.unsent.append(message)
        self.inflight.append(entry)

    def send(self) -> None:
        """Frame the queued jobs and write what the pipe takes now."""
        if self.unsent:
            payload = pickle.dumps(self.unsent, protocol=pickle.HIGHEST_PROTOCOL)
            self.outbuf += FRAME.pack(len(payload)) + payload
            self.unsent = []
        if not self.outbuf:
            return
        try:
            n = os.write(self.stdin_fd, self.outbuf[:_READ_BYTES])
        except BlockingIOError:
            return
        except OSError:
            self.eof = True
            return
        del self.outbuf[:n]

    def receive(self) -> list[tuple[_Entry[Any], Outcome]]:
        """Read what the pipe holds; the jobs answered, with their outcomes."""
        try:
            while True:
                chunk = os.read(self.stdout_fd, _READ_BYTES)
                if not chunk:
                    self.eof = True
                    break
                self.inbuf += chunk
        except BlockingIOError:
            pass
        except OSError:
            self.eof = True
        done: list[tuple[_Entry[Any], Outcome]] = []
        while len(self.inbuf) >= FRAME.size:
            (size,) = FRAME.unpack_from(self.inbuf)
            if len(self.inbuf) < FRAME.size + size:
                break
            payload = bytes(self.inbuf[FRAME.size : FRAME.size + size])
            del self.inbuf[: FRAME.size + size]
            self.answered += 1
            self.warm = True
            if not self.inflight:
                continue
            entry = self.inflight.popleft()
            try:
                outcome = outcome_from_wire(_ResultUnpickler(io.BytesIO(payload)).load())
            except Exception as exc:  # noqa: BLE001 - a garbled answer skips its file, nothing more
                outcome = Failed(f"parser failed: unreadable answer from the parse process ({exc})")
            done.append((entry, outcome))
        return done

    def running(self) -> tuple[int, float] | None:
        """``(index in inflight, started)`` of the job the worker is on, from its progress file;
        None when it is on none of them (between jobs)."""
        try:
            data = os.pread(self.progress_fd, PROGRESS.size, 0)
        except OSError:
            return None
        if len(data) < PROGRESS.size:
            return None
        begun, started = PROGRESS.unpack(data)
        index = begun - self.answered
        return (index, started) if 0 <= index < len(self.inflight) else None

    def death(self) -> str:
        """How the process ended (after EOF), for a skip reason."""
        try:
            code = self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.kill()
            code = self.proc.returncode
        if code is not None and code < 0:
            try:
                return f"killed by {signal.Signals(-code).name}"
            except ValueError:
                return f"killed by signal {-code}"
        return f"exit status {code}"

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            os.close(self.progress_fd)
        except OSError:
            pass

    @property
    def idle(self) -> bool:
        return (not self.inflight and not self.unsent and not self.outbuf and not self.inbuf and not self.eof
                and self.proc.poll() is None)


class _Idle:
    """Workers kept between runs (shared by every run of the process; each run takes its own)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.workers: list[_Worker] = []

    def take(self, memory_bytes: int) -> _Worker | None:
        with self.lock:
            while self.workers:
                worker = self.workers.pop()
                if worker.idle and worker.memory_bytes == memory_bytes:
                    return worker
                worker.kill()
        return None

    def give_back(self, worker: _Worker, keep: int) -> None:
        if worker.idle:
            with self.lock:
                if len(self.workers) < keep:
                    self.workers.append(worker)
                    return
        worker.kill()

    def close_all(self) -> None:
        with self.lock:
            workers, self.workers = self.workers, []
        for worker in workers:
            worker.kill()


_IDLE = _Idle()
atexit.register(_IDLE.close_all)


def prestart() -> None:
    """Start a worker now, kept for the next run of this process, so that its start-up overlaps with
    what the process does before it indexes (imports, opening the index). Does nothing when one is
    kept already; a failure is left for the run to report."""
    with _IDLE.lock:
        if _IDLE.workers:
            return
    try:
        keep = parse_workers()
        worker = _Worker(parse_memory_max_bytes())
    except Exception:  # noqa: BLE001 - a bad setting or no worker: the run reports it
        return
    _IDLE.give_back(worker, keep)


class _Run(Generic[T]):
    """One ordered pass of candidates through the workers (see :func:`parse_in_order`)."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self.patience_s = budget_s + BACKSTOP_GRACE_S
        self.max_workers = parse_workers()
        self.memory_bytes = parse_memory_max_bytes()
        self.faults = Faults.from_env()
        self.workers: list[_Worker] = []
        self.selector = selectors.DefaultSelector()
        self.writing: set[int] = set()  # stdin descriptors watched for room to write
        self.in_flight = 0
        self.waited_s = 0.0  # seconds the indexer waited for warm workers since the last one started
        self.warm_since: float | None = None  # when the workers had all answered once (monotonic)

    def _add_worker(self) -> _Worker:
        worker = _IDLE.take(self.memory_bytes) or _Worker(self.memory_bytes)
        self.workers.append(worker)
        self.selector.register(worker.stdout_fd, selectors.EVENT_READ, worker)
        return worker

    def _forget(self, worker: _Worker) -> None:
        self.workers.remove(worker)
        self.selector.unregister(worker.stdout_fd)
        if worker.stdin_fd in self.writing:
            self.writing.discard(worker.stdin_fd)
            self.selector.unregister(worker.stdin_fd)
        self.in_flight -= len(worker.inflight)

    def has_room(self) -> bool:
        return self.in_flight < self.max_workers * JOBS_PER_WORKER

    def submit(self, entry: _Entry[T]) -> None:
        """Queue ``entry``'s job on the least loaded worker (starting one when there is none, or
        when the indexer has waited ``SCALE_UP_WAIT_S`` for the warm ones)."""
        assert entry.job is not None
        if not self.workers or (len(self.workers) < self.max_workers and self._waiting_for_parsing()):
            self.waited_s, self.warm_since = 0.0, None
            self._add_worker()
        worker = min(self.workers, key=lambda w: len(w.inflight))
        if not worker.inflight:
            worker.deadline = time.monotonic() + self.patience_s
        delay_ms, fault = self.faults.for_path(entry.job.rel_path)
        worker.queue(entry, (job_to_wire(entry.job), self.budget_s, delay_ms, fault))
        self.in_flight += 1
        if len(worker.unsent) >= SEND_BATCH_JOBS:
            worker.send()

    def _waiting_for_parsing(self) -> bool:
        """Whether the indexer has spent at least ``SCALE_UP_WAIT_S``, and at least
        ``SCALE_UP_WAIT_SHARE`` of its time since the workers warmed up, waiting for them."""
        if self.warm_since is None or self.waited_s < SCALE_UP_WAIT_S:
            return False
        return self.waited_s >= SCALE_UP_WAIT_SHARE * (time.monotonic() - self.warm_since)

    def send_all(self) -> None:
        for worker in self.workers:
            worker.send()

    def pump(self, wait: bool) -> None:
        """Send what waits, take the answers in (waiting, when ``wait``, for one or for a deadline),
        and deal with workers that died or overran a file's budget."""
        self.send_all()
        timeout = 0.0
        if wait:
            now = time.monotonic()
            deadline = min((w.deadline for w in self.workers if w.inflight), default=now + 1.0)
            timeout = min(max(deadline - now, 0.0), 1.0)
        for worker in self.workers:  # wake for room to write only while something waits to be written
            if bool(worker.outbuf) != (worker.stdin_fd in self.writing):
                if worker.outbuf:
                    self.selector.register(worker.stdin_fd, selectors.EVENT_WRITE, worker)
                    self.writing.add(worker.stdin_fd)
                else:
                    self.selector.unregister(worker.stdin_fd)
                    self.writing.discard(worker.stdin_fd)
        started = time.monotonic()
        ready = self.selector.select(timeout)
        if self.warm_since is None and any(w.warm for w in self.workers):
            self.warm_since = started
        if timeout and self.warm_since is not None:
            self.waited_s += time.monotonic() - started  # the indexer waited for parsing
        for key, events in ready:
            if events & selectors.EVENT_READ:
                self._take(key.data)
        self.send_all()
        now = time.monotonic()
        for worker in list(self.workers):
            if worker.eof:  # its stdout closed: the process ended
                self._take(worker)
                self._lost(worker, worker.death())
            elif worker.inflight and now >= worker.deadline:
                self._take(worker)
                if worker.inflight and now >= worker.deadline:
                    self._overdue(worker, now)

    def _take(self, worker: _Worker) -> None:
        done = worker.receive()
        for entry, outcome in done:
            entry.outcome, entry.done = outcome, True
        self.in_flight -= len(done)
        if done:
            worker.deadline = time.monotonic() + self.patience_s if worker.inflight else math.inf

    def _overdue(self, worker: _Worker, now: float) -> None:
        """``worker`` has been silent for a budget and a grace: give it until its current file's
        budget and grace are over, then kill it and skip that file."""
        running = worker.running()
        if running is not None and running[1] + self.patience_s > now:
            worker.deadline = running[1] + self.patience_s
            return
        self._lost(worker, None, running[0] if running is not None else 0)

    def _lost(self, worker: _Worker, died: str | None, at: int | None = None) -> None:
        """Take ``worker`` out. The file it was on (``at``, an index in its queue; from its progress
        file when None) is skipped: "took too long" when ``died`` is None (killed), else "the parse
        process died (died)". The others go to the other workers (or a new one)."""
        if at is None and died is not None:
            running = worker.running()  # read before the progress file is closed
            at = running[0] if running is not None else 0
        self._forget(worker)
        worker.kill()
        queued = list(worker.inflight)
        if not queued:
            return
        if died is not None and worker.proc.returncode == EXIT_RESTART:
            at = None  # it answered for its file (out of memory) and left: the others were not at fault
        if at is not None:
            failed = queued.pop(at)
            failed.outcome = too_long(self.budget_s) if died is None else Failed(f"the parse process died ({died})")
            failed.done = True
        for entry in queued:
            self.submit(entry)
        self.send_all()

    def close(self) -> None:
        for worker in list(self.workers):
            self._forget(worker)
            _IDLE.give_back(worker, self.max_workers)
        self.selector.close()


def parse_in_order(items: Iterable[tuple[T, ParseJob | None]],
                   budget_s: float | None = None) -> Iterator[tuple[T, Outcome | None]]:
    """``(item, outcome)`` for each ``(item, job)`` of ``items``, in the same order: the outcome of
    ``job`` read and parsed by a worker process under the per-file bounds of
    :mod:`sleuth.ingest.guard`, or None when ``job`` is.

    Args:
        budget_s: seconds per file; default :func:`sleuth.ingest.guard.file_budget_s`.
    Raises:
        ConfigError: a ``SLEUTH_*`` setting of sleuth.ingest.guard is invalid.
        SleuthError: no worker process can be started.
    """
    run: _Run[T] = _Run(file_budget_s() if budget_s is None else budget_s)
    pending: collections.deque[_Entry[T]] = collections.deque()
    source = iter(items)
    exhausted = False
    handed_out = 0
    try:
        while True:
            while not exhausted and len(pending) < PENDING_MAX_ITEMS and run.has_room():
                try:
                    item, job = next(source)
                except StopIteration:
                    exhausted = True
                    break
                entry = _Entry(item, job)
                pending.append(entry)
                if job is not None:
                    run.submit(entry)
            if pending and pending[0].done:
                entry = pending.popleft()
                yield entry.item, entry.outcome
                handed_out += 1
                if run.in_flight and handed_out % POLL_EVERY_ITEMS == 0:
                    run.pump(wait=False)  # take answers in and send more jobs while the indexer works
                continue
            if not pending:
                if exhausted:
                    return
                continue
            run.pump(wait=True)
    finally:
        run.close()


__all__ = ["JOBS_PER_WORKER", "PENDING_MAX_ITEMS", "SEND_BATCH_JOBS", "parse_in_order", "prestart"]
