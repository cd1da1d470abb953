"""Every file costs bounded time and memory: files are read, decoded and parsed in worker processes.

A hostile or pathological file (a YAML alias bomb, a PDF or markdown page built to be slow) must
not stall or sink an index run, and no guard inside the indexing process can stop every kind: a
thread cannot be interrupted inside C code, and a memory limit set on the process would bind the
broker too. So each file is handled by a small pool of worker processes (``python -c ...``,
standard library pipes, at most :data:`PARSE_WORKERS`), each one

- limited to :data:`PARSE_MEMORY_MAX_BYTES` of address space (``RLIMIT_AS``): a file that needs
  more is skipped ("needs more memory than ...");
- given :data:`FILE_BUDGET_S` seconds of wall-clock time per file (``SIGALRM`` in the worker; the
  indexer kills a worker that has not answered :data:`BACKSTOP_GRACE_S` after that, e.g. stuck in
  C code, and starts another): the file is skipped with the reason "took too long";
- restarted after it died (a crash skips the file it was on, with the reason).

Files are handed out in order, a few in flight per worker, and their outcomes come back in the
same order (:func:`parse_in_order`), so the indexer reads like a sequential loop while the workers
parse beside it (on two cores the parsing then costs the indexer little: see docs/BENCH.md).
Workers are shared by every run of a process and kept between runs (a broker pays their start-up,
about 0.2 s, once). Results are unpickled with an allow-list of the three result classes, so even a
worker subverted by a file could not run code in the indexer.

Fault injection (tests, never set in production): ``SLEUTH_FAULT_SLOW_FILE=<glob>=<ms>[;...]`` makes
the worker sleep ``ms`` milliseconds before parsing a file whose index path matches ``glob``
(fnmatch); ``SLEUTH_FAULT_STUCK_FILE=<glob>`` makes it hang on such a file with ``SIGALRM``
blocked, as code stuck in C would.
"""

from __future__ import annotations

import atexit
import collections
import fnmatch
import hashlib
import io
import os
import pickle
import selectors
import signal
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any, BinaryIO, Generic, TypeVar

from sleuth.errors import ConfigError, SleuthError

FILE_BUDGET_S = 60.0
"""Wall-clock seconds a worker may spend on one file (read, decode, parse) before it is skipped
("took too long"); ``$SLEUTH_FILE_BUDGET_S`` overrides it."""
FILE_BUDGET_ENV = "SLEUTH_FILE_BUDGET_S"
BACKSTOP_GRACE_S = 5.0
"""A worker that has not answered this many seconds after a file's budget ran out is killed."""
PARSE_MEMORY_MAX_BYTES = 2 * 1024 * 1024 * 1024
"""Address space (``RLIMIT_AS``) of one worker, in bytes; ``$SLEUTH_PARSE_MEMORY_MB`` overrides it."""
PARSE_MEMORY_ENV = "SLEUTH_PARSE_MEMORY_MB"
PARSE_WORKERS = 2
"""Worker processes per index run at most (fewer on a single core); ``$SLEUTH_PARSE_WORKERS``
(1 to 16) overrides it."""
PARSE_WORKERS_ENV = "SLEUTH_PARSE_WORKERS"
JOBS_PER_WORKER = 8
"""Files sent ahead to each worker, so that it never waits for the indexer."""
PENDING_MAX_ITEMS = 4096
"""At most this many candidates wait in order behind a file still being parsed."""
RESULT_MAX_BYTES = 1024 * 1024 * 1024
"""A worker's answer for one file may hold at most this many bytes (else the file is skipped)."""
FAULT_SLOW_FILE_ENV = "SLEUTH_FAULT_SLOW_FILE"
FAULT_STUCK_FILE_ENV = "SLEUTH_FAULT_STUCK_FILE"

_FRAME = struct.Struct("<Q")
#: A worker exits with this status after a MemoryError (it answered first): its queue is sent again.
_EXIT_RESTART = 3
_READ_BYTES = 1024 * 1024
_WORKER_CODE = "from sleuth.ingest.guard import worker_main; worker_main()"
#: The classes a worker's answer may hold (besides builtin containers and scalars).
_RESULT_CLASSES = frozenset({("sleuth.types", "ParsedDocument"), ("sleuth.types", "BlockDraft"),
                             ("sleuth.types", "Link")})

T = TypeVar("T")


def content_hash(text: str) -> str:
    """The content hash of a decoded text: SHA-1 over its UTF-8 bytes and a NUL, in hex (the same as
    ``sleuth.engine.content_hash_of``, which the catalog stores; a test pins them together)."""
    return hashlib.sha1(text.encode("utf-8", "surrogatepass") + b"\0").hexdigest()


# ============================================================================ jobs and outcomes


@dataclass(frozen=True)
class ParseJob:
    """One file to read and parse: ``rel_path`` (index form) decides the format; the bytes are
    ``data`` (an archive member) or the file ``path``, opened only if it is the regular file
    ``identity`` (``(st_dev, st_ino)``, see :func:`sleuth.ingest.confine.open_file`) inside
    ``roots`` (real paths) and at most ``max_bytes`` long. ``known_hash``: the content hash the
    catalog holds for it; when the text still has it, it is not parsed again."""

    rel_path: str
    path: str | None = None
    data: bytes | None = None
    identity: tuple[int, int] | None = None
    roots: tuple[str, ...] | None = None
    max_bytes: int = 0
    known_hash: str | None = None


@dataclass(frozen=True)
class Parsed:
    """A file read and parsed: its content hash, and its parsed document (None when the hash is the
    job's ``known_hash``: unchanged, not parsed)."""

    content_hash: str
    document: Any  # sleuth.types.ParsedDocument | None


@dataclass(frozen=True)
class Failed:
    """A file that could not be indexed, with the skip reason."""

    reason: str


Outcome = Parsed | Failed


def parse_job(job: ParseJob) -> Outcome:
    """Read, decode and parse one file in this process (what a worker runs; no time or memory bound
    here). Reasons: ``unreadable: ...`` (I/O, confinement, decoding), ``cannot parse: ...``,
    ``parser failed: ...``, and the size limit."""
    from sleuth.ingest.confine import FileTooLarge, Roots, read_file
    from sleuth.ingest.decode import DecodeError, decode_bytes
    from sleuth.ingest.parsers import ParseError, parse_document

    try:
        if job.data is not None:  # an archive member: a PDF is known by its first bytes
            decoded = decode_bytes(job.data)
        else:
            assert job.path is not None
            roots = Roots.from_real(job.roots) if job.roots is not None else None
            data = read_file(job.path, job.max_bytes, job.identity, roots)
            try:
                decoded = decode_bytes(data, os.path.basename(job.path))
            except DecodeError as exc:
                raise type(exc)(f"{job.path}: {exc}") from None
    except FileTooLarge as exc:
        return Failed(str(exc))
    except (DecodeError, OSError) as exc:
        return Failed(f"unreadable: {exc}")
    digest = content_hash(decoded.text)
    if digest == job.known_hash:
        return Parsed(digest, None)
    try:
        return Parsed(digest, parse_document(job.rel_path, decoded.text, title=decoded.title))
    except ParseError as exc:
        return Failed(f"cannot parse: {exc}")
    except MemoryError:
        raise  # the worker reports it, and starts afresh
    except Exception as exc:  # noqa: BLE001 - one bad file never aborts an index
        return Failed(f"parser failed: {type(exc).__name__}: {exc}")


def _too_long(budget_s: float) -> Failed:
    return Failed(f"took too long: more than the {budget_s:g} s per-file time budget")


# ============================================================================ settings and faults


def _env_number(name: str, default: float, low: float, high: float) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        value = float("nan")
    if not low <= value <= high:
        raise ConfigError(f"{name} must be a number from {low:g} to {high:g}, got {raw!r}")
    return value


def file_budget_s() -> float:
    """``$SLEUTH_FILE_BUDGET_S`` (0.1 to 86400 seconds) when set, else :data:`FILE_BUDGET_S`.
    Raises ConfigError for another value."""
    return _env_number(FILE_BUDGET_ENV, FILE_BUDGET_S, 0.1, 86_400)


def parse_memory_max_bytes() -> int:
    """``$SLEUTH_PARSE_MEMORY_MB`` (256 to 1048576 MiB) in bytes when set, else :data:`PARSE_MEMORY_MAX_BYTES`."""
    mb = _env_number(PARSE_MEMORY_ENV, PARSE_MEMORY_MAX_BYTES / 2**20, 256, 2**20)
    return int(mb * 2**20)


def parse_workers() -> int:
    """``$SLEUTH_PARSE_WORKERS`` (1 to 16) when set, else :data:`PARSE_WORKERS` (at most the cores)."""
    return int(_env_number(PARSE_WORKERS_ENV, min(PARSE_WORKERS, os.cpu_count() or 1), 1, 16))


@dataclass(frozen=True)
class _Faults:
    slow: tuple[tuple[str, int], ...] = ()
    stuck: tuple[str, ...] = ()

    @classmethod
    def from_env(cls) -> _Faults:
        slow: list[tuple[str, int]] = []
        for spec in filter(None, os.environ.get(FAULT_SLOW_FILE_ENV, "").split(";")):
            glob, _, ms = spec.rpartition("=")
            if not glob or not ms.strip().isdigit():
                raise ConfigError(f"{FAULT_SLOW_FILE_ENV} must be <glob>=<ms>[;...], got {spec!r}")
            slow.append((glob, int(ms)))
        stuck = tuple(filter(None, os.environ.get(FAULT_STUCK_FILE_ENV, "").split(";")))
        return cls(tuple(slow), stuck)

    def for_path(self, rel_path: str) -> tuple[int, bool]:
        """``(delay in ms, stuck)`` for a file."""
        delay = sum(ms for glob, ms in self.slow if fnmatch.fnmatchcase(rel_path, glob))
        return delay, any(fnmatch.fnmatchcase(rel_path, glob) for glob in self.stuck)


# ============================================================================ the worker process


class _Overrun(BaseException):
    """Raised in a worker by SIGALRM: the file's budget ran out (a BaseException, so that no
    parser's ``except Exception`` swallows it)."""


def _alarm(signum: int, frame: object) -> None:
    raise _Overrun


def _read_frame(stream: BinaryIO) -> bytes | None:
    header = stream.read(_FRAME.size)
    if len(header) < _FRAME.size:
        return None
    (size,) = _FRAME.unpack(header)
    data = stream.read(size)
    return data if len(data) == size else None


def _write_frame(stream: BinaryIO, payload: bytes) -> None:
    stream.write(_FRAME.pack(len(payload)) + payload)
    stream.flush()


def _run_job(message: tuple[Any, ...]) -> tuple[str, Any]:
    job, budget_s, delay_ms, stuck = message
    signal.setitimer(signal.ITIMER_REAL, budget_s)
    try:
        if stuck:  # a fault: hang as code stuck in C would, deaf to SIGALRM
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            while True:
                time.sleep(3600)
        if delay_ms:
            time.sleep(delay_ms / 1000)
        outcome = parse_job(job)
    except _Overrun:
        outcome = _too_long(budget_s)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return ("outcome", outcome)


def worker_main() -> None:
    """The worker's loop: read a job, answer its outcome, until the indexer closes the pipe.

    ``sys.argv[1]``: the address-space limit in bytes. The protocol runs over the original stdin and
    stdout; the worker's own stdout goes to stderr, so that a stray ``print`` cannot corrupt it.
    """
    import resource

    proto_in = os.fdopen(os.dup(0), "rb")
    proto_out = os.fdopen(os.dup(1), "wb")
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the indexer's to handle
    signal.signal(signal.SIGALRM, _alarm)
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else PARSE_MEMORY_MAX_BYTES
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    import sleuth.ingest.decode
    import sleuth.ingest.parsers  # noqa: F401 - loaded before the first file, not during its budget

    while True:
        frame = _read_frame(proto_in)
        if frame is None:
            return
        try:
            answer = _run_job(pickle.loads(frame))
            payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
        except MemoryError:
            answer, payload = None, b""
        if answer is None or len(payload) > RESULT_MAX_BYTES:
            reason = (f"needs more memory than the {limit // 2**20} MiB limit of a parse process" if answer is None
                      else f"its parsed form holds more than {RESULT_MAX_BYTES} bytes")
            _write_frame(proto_out, pickle.dumps(("outcome", Failed(reason))))
            if answer is None:
                proto_out.close()
                os._exit(_EXIT_RESTART)  # after a MemoryError, start afresh
            continue
        _write_frame(proto_out, payload)


# ============================================================================ the indexer's side


class _ResultUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _RESULT_CLASSES or (module == "sleuth.ingest.guard" and name in ("Parsed", "Failed")):
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"a parse worker answered with a forbidden class {module}.{name}")


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


class _Worker:
    """One worker process and what it was sent."""

    def __init__(self, memory_bytes: int) -> None:
        try:
            self.proc = subprocess.Popen(
                [sys.executable, "-P", "-c", _WORKER_CODE, str(memory_bytes)],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, close_fds=True, env=_worker_env(),
            )
        except OSError as exc:
            raise SleuthError(f"cannot start a parse worker process ({sys.executable}): {exc}") from exc
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin_fd, self.stdout_fd = self.proc.stdin.fileno(), self.proc.stdout.fileno()
        os.set_blocking(self.stdin_fd, False)
        os.set_blocking(self.stdout_fd, False)
        self.memory_bytes = memory_bytes
        self.outbuf = bytearray()
        self.inbuf = bytearray()
        self.inflight: collections.deque[tuple[_Entry[Any], int]] = collections.deque()  # (entry, end of its bytes)
        self.written = 0  # bytes written to stdin so far
        self.head_since = 0.0  # when the oldest job in flight was known to be started (monotonic)
        self.eof = False

    def send(self, entry: _Entry[Any], message: tuple[Any, ...]) -> None:
        payload = pickle.dumps(message, protocol=pickle.HIGHEST_PROTOCOL)
        self.outbuf += _FRAME.pack(len(payload)) + payload
        self.inflight.append((entry, self.written + len(self.outbuf)))

    def flush(self, now: float) -> None:
        """Write what the pipe takes now; the head's clock starts once its bytes are all written."""
        if not self.outbuf:
            return
        try:
            n = os.write(self.stdin_fd, self.outbuf[:_READ_BYTES])
        except BlockingIOError:
            return
        except (BrokenPipeError, OSError):
            self.eof = True
            return
        del self.outbuf[:n]
        before = self.written
        self.written += n
        if self.inflight and before < self.inflight[0][1] <= self.written:
            self.head_since = max(self.head_since, now)

    def receive(self, now: float) -> list[tuple[_Entry[Any], Outcome]]:
        """Read what the pipe holds; the finished jobs with their outcomes."""
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
        while len(self.inbuf) >= _FRAME.size:
            (size,) = _FRAME.unpack_from(self.inbuf)
            if len(self.inbuf) < _FRAME.size + size:
                break
            payload = bytes(self.inbuf[_FRAME.size : _FRAME.size + size])
            del self.inbuf[: _FRAME.size + size]
            if not self.inflight:
                continue
            entry, end = self.inflight.popleft()
            try:
                kind, outcome = _ResultUnpickler(io.BytesIO(payload)).load()
                if kind != "outcome" or not isinstance(outcome, Parsed | Failed):
                    raise pickle.UnpicklingError("not an outcome")
            except Exception as exc:  # noqa: BLE001 - a garbled answer skips its file, nothing more
                outcome = Failed(f"parser failed: unreadable answer from the parse process ({exc})")
            done.append((entry, outcome))
            if self.inflight and self.inflight[0][1] <= self.written:
                self.head_since = now  # the next job starts now at the latest
        return done

    def death(self) -> str:
        """Why the process ended (after EOF), as part of a skip reason."""
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
        self.close()

    def close(self) -> None:
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass

    @property
    def idle(self) -> bool:
        return not self.inflight and not self.outbuf and not self.inbuf and not self.eof and self.proc.poll() is None


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
        if not worker.idle:
            worker.kill()
            return
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


class _Run(Generic[T]):
    """One ordered pass of candidates through the workers (see :func:`parse_in_order`)."""

    def __init__(self, budget_s: float) -> None:
        self.budget_s = budget_s
        self.max_workers = parse_workers()
        self.memory_bytes = parse_memory_max_bytes()
        self.faults = _Faults.from_env()
        self.workers: list[_Worker] = []
        self.selector = selectors.DefaultSelector()
        self.registered: dict[int, bool] = {}  # stdout fd -> whether its stdin is watched for writing

    def _add_worker(self) -> _Worker:
        worker = _IDLE.take(self.memory_bytes) or _Worker(self.memory_bytes)
        self.workers.append(worker)
        self.selector.register(worker.stdout_fd, selectors.EVENT_READ, worker)
        self.registered[worker.stdout_fd] = False
        return worker

    def _forget(self, worker: _Worker) -> None:
        self.workers.remove(worker)
        self.selector.unregister(worker.stdout_fd)
        if self.registered.pop(worker.stdout_fd, False):
            self.selector.unregister(worker.stdin_fd)

    def submit(self, entry: _Entry[T]) -> None:
        assert entry.job is not None
        free = [w for w in self.workers if not w.inflight]
        if free:
            worker = free[0]
        elif len(self.workers) < self.max_workers:
            worker = self._add_worker()
        else:
            worker = min(self.workers, key=lambda w: len(w.inflight))
        self._send(worker, entry)

    def _send(self, worker: _Worker, entry: _Entry[T]) -> None:
        assert entry.job is not None
        delay_ms, stuck = self.faults.for_path(entry.job.rel_path)
        if not worker.inflight:
            worker.head_since = time.monotonic()
        worker.send(entry, (entry.job, self.budget_s, delay_ms, stuck))
        worker.flush(time.monotonic())

    def in_flight(self) -> int:
        return sum(len(w.inflight) for w in self.workers)

    def has_room(self) -> bool:
        return self.in_flight() < self.max_workers * JOBS_PER_WORKER

    def pump(self, wait: bool) -> None:
        """Move bytes to and from the workers (waiting, when ``wait``, for at least one answer or a
        deadline); enforce the backstop; replace dead workers."""
        now = time.monotonic()
        timeout = 0.0
        if wait:
            deadlines = [w.head_since + self.budget_s + BACKSTOP_GRACE_S for w in self.workers if w.inflight]
            timeout = max(0.0, min(min(deadlines, default=now + 1.0) - now, 1.0))
        for worker in self.workers:  # wake for a writable stdin only while there is something to write
            wants_write = bool(worker.outbuf)
            if self.registered[worker.stdout_fd] != wants_write:
                if wants_write:
                    self.selector.register(worker.stdin_fd, selectors.EVENT_WRITE, worker)
                else:
                    self.selector.unregister(worker.stdin_fd)
                self.registered[worker.stdout_fd] = wants_write
        ready = self.selector.select(timeout)
        now = time.monotonic()
        for worker in self.workers:
            worker.flush(now)
        for key, events in ready:
            if events & selectors.EVENT_READ:
                self._deliver(key.data.receive(now))
        for worker in list(self.workers):
            if worker.eof or worker.proc.poll() is not None:
                self._deliver(worker.receive(now))  # what it said before it went
                self._replace(worker, worker.death() if worker.inflight else "")
            elif worker.inflight and now > worker.head_since + self.budget_s + BACKSTOP_GRACE_S:
                self._deliver(worker.receive(now))
                if worker.inflight and now > worker.head_since + self.budget_s + BACKSTOP_GRACE_S:
                    worker.kill()
                    self._replace(worker, None)

    def _deliver(self, done: list[tuple[_Entry[T], Outcome]]) -> None:
        for entry, outcome in done:
            entry.outcome, entry.done = outcome, True

    def _replace(self, worker: _Worker, died: str | None) -> None:
        """Take ``worker`` out: its current file is skipped (``died``: how the process ended; None:
        it was killed for taking too long), the files queued behind it go to the other workers."""
        self._forget(worker)
        worker.kill()
        queued = [entry for entry, _end in worker.inflight]
        if not queued:
            return
        if worker.proc.returncode == _EXIT_RESTART:
            rest = queued  # it answered for its file and left: the others were not at fault
        else:
            head, rest = queued[0], queued[1:]
            head.outcome = _too_long(self.budget_s) if died is None else Failed(f"the parse process died ({died})")
            head.done = True
        for entry in rest:
            self.submit(entry)

    def close(self, keep: int) -> None:
        for worker in list(self.workers):
            self._forget(worker)
            _IDLE.give_back(worker, keep)
        self.selector.close()


def parse_in_order(items: Iterable[tuple[T, ParseJob | None]],
                   budget_s: float | None = None) -> Iterator[tuple[T, Outcome | None]]:
    """``(item, outcome)`` for each ``(item, job)`` of ``items``, in the same order: the outcome of
    ``job`` read and parsed by a worker process under the per-file budget, or None when ``job`` is.

    Args:
        budget_s: seconds per file; default :func:`file_budget_s`.
    Raises:
        ConfigError: a ``SLEUTH_*`` setting of this module is invalid.
        SleuthError: no worker process can be started.
    """
    run: _Run[T] = _Run(file_budget_s() if budget_s is None else budget_s)
    pending: collections.deque[_Entry[T]] = collections.deque()
    source = iter(items)
    exhausted = False
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
                if pending[0].done:
                    break  # something to hand out already
            while pending and pending[0].done:
                entry = pending.popleft()
                yield entry.item, entry.outcome
            if not pending:
                if exhausted:
                    return
                continue
            run.pump(wait=not run.has_room() or exhausted or len(pending) >= PENDING_MAX_ITEMS)
    finally:
        run.close(keep=run.max_workers)


__all__ = [
    "BACKSTOP_GRACE_S",
    "FILE_BUDGET_ENV",
    "FILE_BUDGET_S",
    "PARSE_MEMORY_MAX_BYTES",
    "PARSE_WORKERS",
    "Failed",
    "Outcome",
    "ParseJob",
    "Parsed",
    "content_hash",
    "file_budget_s",
    "parse_in_order",
    "parse_job",
    "worker_main",
]
