"""Embedding after the keyword lanes: in a detached worker process, or in the foreground (``--wait``).

``sleuth index`` commits the catalog and the postings (bm25, index, rm3 and exact lanes answer at once),
then starts ``sleuth embed --worker`` in its own session and returns. The worker embeds the blocks
that have no vector yet (:meth:`sleuth.indexer.Indexer.embed_pending` commits each batch, so a
worker killed with ``kill -9`` loses at most the batch it was on, and the next one resumes where it
stopped). One worker embeds per index: it holds ``embed.lock`` (an exclusive ``flock``, released by
the kernel when the process ends however it ends). It writes its progress to ``embed.state.json``
(replaced atomically) and its log lines to ``embed.log``; ``sleuth status`` reads both, and asks
the lock whether the worker still runs.

The vector lane answers meanwhile with the vectors it has: blocks not yet embedded are simply not
in it, and search responses say so.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import stat
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO

from sleuth.errors import StorageError
from sleuth.ingest.names import is_valid_text
from sleuth.locate import catalog_identity, child_env
from sleuth.locks import LOCK_POLL_S, lock_exclusive
from sleuth.store.scratch import replacing

if TYPE_CHECKING:
    from sleuth.embed import Embedder
    from sleuth.engine import Engine
    from sleuth.progress import Progress

EMBED_LOCK_FILE = "embed.lock"
EMBED_STATE_FILE = "embed.state.json"
EMBED_LOG_FILE = "embed.log"
#: A worker finding the embed lock taken waits this long before leaving the work to its holder, in
#: seconds (a ``sleuth status`` probing the lock holds it for microseconds).
EMBED_LOCK_WAIT_S = 10.0
#: The state file is rewritten at most this often while a worker embeds, in seconds.
STATE_WRITE_INTERVAL_S = 1.0
#: The worker's scheduling priority (``nice`` increment): searches and editors come first.
EMBED_WORKER_NICE = 10
#: What the worker's lines in ``embed.log`` start with, before ``(process PID)``.
WORKER_LOG_LABEL = "sleuth embed"
#: ``embed.log`` is emptied when a worker starts and finds it larger than this, in bytes.
EMBED_LOG_MAX_BYTES = 1_000_000
#: Environment variable: ``1`` makes ``sleuth index`` wait for the embedding (as ``--wait``).
INDEX_WAIT_ENV = "SLEUTH_INDEX_WAIT"
#: Fault injection for tests: the worker stops (sleeps until killed) once it has committed this many
#: blocks in its run, so a test can ``kill -9`` it at a known point instead of after a guessed delay.
HOLD_AFTER_ENV = "SLEUTH_FAULT_EMBED_HOLD_AFTER_BLOCKS"
#: Fault injection for tests: ``1`` makes a worker stop (sleep until killed) before it takes the
#: embed lock, as a worker still loading is.
HOLD_BEFORE_LOCK_ENV = "SLEUTH_FAULT_EMBED_HOLD_BEFORE_LOCK"
#: Fault injection for tests: ``1`` makes the embedding stop (sleep until killed) holding the embed
#: lock once it said it loads the model, as a slow first load (the graph built from the weights) does.
HOLD_LOADING_ENV = "SLEUTH_FAULT_EMBED_HOLD_LOADING"


def wait_by_default() -> bool:
    """Whether ``$SLEUTH_INDEX_WAIT`` asks ``sleuth index`` to wait for the embedding."""
    return os.environ.get(INDEX_WAIT_ENV, "").strip().lower() in ("1", "true", "yes")


#: Seconds a probe of the embed lock keeps trying before it says a process holds it, and how
#: often: another probe (``status``, ``doctor``, a search's notice: :func:`worker_running`) holds it
#: for microseconds, a worker for as long as it embeds. Without it, a record written as another
#: process probed took the probe for a worker and left its blocks without a vector.
EMBED_PROBE_GRACE_S, EMBED_PROBE_POLL_S = 0.02, 0.002


#: A worker :func:`start_worker` started counts as running for this long before it holds the embed
#: lock (it loads Python and opens the catalog first), in seconds, while its process lives.
EMBED_START_GRACE_S = 120.0


def worker_running(index_dir: Path, saved: dict[str, Any] | None = None) -> bool:
    """True while a process holds the index's embed lock (a worker, or a ``--wait``, embeds), or
    while a worker :func:`start_worker` started is still starting (see :func:`_starting`: before,
    a ``sleuth status`` right after ``sleuth index`` said that no process embedded the blocks).

    Probes the lock, holding it for microseconds when free (``EMBED_PROBE_GRACE_S`` of tries when
    held: another probe lets go at once). A folder where the lock file cannot be made (read-only)
    has no worker, and neither has one where no process ever embedded.

    Args:
        saved: the state file as the caller read it (:func:`read_state`, ``{}`` when absent), so
            that one reading serves the caller's whole answer; None: read here.
    """
    if _starting((read_state(index_dir) or {}) if saved is None else saved, index_dir):
        return True
    if not (index_dir / EMBED_LOCK_FILE).exists():
        return False
    try:
        fd = lock_exclusive(index_dir / EMBED_LOCK_FILE, EMBED_PROBE_GRACE_S, EMBED_PROBE_POLL_S)
    except OSError:
        return False
    if fd is None:
        return True
    os.close(fd)
    return False


@contextlib.contextmanager
def embed_lock(index_dir: Path, timeout_s: float, poll_s: float = LOCK_POLL_S) -> Iterator[bool]:
    """Hold the embed lock for the block, waiting at most ``timeout_s`` (``inf``: until free),
    trying every ``poll_s`` seconds; yields whether it was taken."""
    fd = lock_exclusive(index_dir / EMBED_LOCK_FILE, timeout_s, poll_s)
    try:
        yield fd is not None
    finally:
        if fd is not None:
            os.close(fd)


@contextlib.contextmanager
def _holding(fd: int) -> Iterator[None]:
    """Close ``fd`` (releasing the lock it holds) at the end of the block."""
    try:
        yield
    finally:
        os.close(fd)


#: The largest state file read, in bytes (a worker writes about 300).
STATE_FILE_MAX_BYTES = 65_536
#: Longest text field of the state file kept (``error``, ``model``, times), in characters.
STATE_TEXT_MAX_CHARS = 1_000
#: Rates outside this range, in blocks per second, are not believed (a state file written by hand:
#: 1e-320 made the time left infinite, and `sleuth status` ended in OverflowError).
STATE_RATE_RANGE = (1e-3, 1e7)


def _state_field_ok(key: str, value: object) -> bool:
    """Whether ``value`` has the type and range a worker writes for ``key`` (unknown keys pass)."""
    if key == "pid":
        return isinstance(value, int) and not isinstance(value, bool) and 0 < value < 2**31
    if key in ("embedded", "to_embed"):
        return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**53
    if key in ("rate_blocks_per_s", "started_s"):
        low, high = STATE_RATE_RANGE if key == "rate_blocks_per_s" else (0.0, 1e11)
        return value is None or (isinstance(value, int | float) and not isinstance(value, bool)
                                 and low <= value <= high)
    if key in ("model", "state", "started_at", "updated_at", "error"):  # valid UTF-8: JSON output prints them
        return value is None or (isinstance(value, str) and len(value) <= STATE_TEXT_MAX_CHARS
                                 and is_valid_text(value))
    return True


def read_state(index_dir: Path) -> dict[str, Any] | None:
    """The last state a worker wrote (``pid``, ``model``, ``state``, ``started_at``, ``updated_at``,
    ``embedded``, ``to_embed``, ``rate_blocks_per_s``, ``error``), or None; or the record
    :func:`start_worker` wrote for the worker it started (``state`` ``starting``, ``started_s``: the
    epoch seconds it started, ``model`` None) until that worker writes its own.

    The file is hostile until checked (an index folder may come from anywhere): read without
    following a symlink or blocking on a FIFO, a regular file of at most ``STATE_FILE_MAX_BYTES``;
    a field of another type or range than a worker writes is left out (:func:`_state_field_ok`)."""
    try:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(index_dir / EMBED_STATE_FILE, flags)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as f:
            if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                return None
            raw = f.read(STATE_FILE_MAX_BYTES + 1)
        if len(raw) > STATE_FILE_MAX_BYTES:
            return None
        data = json.loads(raw.decode("utf-8"))
    except (OSError, ValueError, RecursionError):  # RecursionError: nested past the decoder's limit
        return None
    if not isinstance(data, dict):
        return None
    return {k: v for k, v in data.items() if _state_field_ok(k, v)}


def _write_state(index_dir: Path, state: dict[str, Any]) -> None:
    with contextlib.suppress(OSError), replacing(index_dir / EMBED_STATE_FILE) as tmp:
        tmp.write_text(json.dumps(state), encoding="utf-8")


def pending_blocks(engine: Engine) -> int:
    """Blocks without a vector of the configured model (0 without a model); loads no model."""
    return pending_or_reason(engine)[0]


def pending_or_reason(engine: Engine) -> tuple[int, str | None]:
    """``(blocks without a vector of the configured model, None)``, or ``(0, why there is no model)``;
    finds the model's files without loading it."""
    counts = _configured_counts(engine)
    if isinstance(counts, str):
        return 0, counts
    _model, have, total = counts
    return total - have, None


def _configured_counts(engine: Engine) -> tuple[str, int, int] | str:
    """``(the configured model's name, blocks with a vector of it, blocks)``, or why there is no
    model; finds the model's files without loading it."""
    from sleuth.embed import ModelUnavailable, configured_model, declared_dim

    try:
        files = configured_model(engine.model.spec, engine.model.quantized)
    except ModelUnavailable as exc:
        return str(exc)
    if files is None:
        from sleuth.errors import NO_MODEL_REASON

        return NO_MODEL_REASON
    return files.name, *engine.catalog.vector_counts(files.name, dim=declared_dim(files))


def worker_progress(engine: Engine) -> dict[str, Any] | None:
    """Where the embedding under way stands, as ``sleuth status`` says it (:func:`embedding_progress`
    with the configured model's counts from the catalog): ``state``, ``embedded`` / ``total`` blocks
    and, while a process embeds, its ``pid``, ``rate_blocks_per_s`` and ``eta_s``. None without a
    model. Loads no model."""
    counts = _configured_counts(engine)
    if isinstance(counts, str):
        return None
    return embedding_progress(engine, *counts)


#: While this process waits for the embed lock, the holder's progress is read this often, in
#: seconds (a worker writes its state every ``STATE_WRITE_INTERVAL_S``).
WAIT_REPORT_INTERVAL_S = 1.0


def wait_for_embed_lock(index_dir: Path, timeout_s: float, progress: Progress | None,
                        read: Callable[[], dict[str, Any] | None], clock: Callable[[], float] = time.monotonic,
                        sleep: Callable[[float], None] = time.sleep, poll_s: float = LOCK_POLL_S) -> int | None:
    """Take the embed lock, waiting at most ``timeout_s`` seconds (``inf``: until free) while another
    process holds it, and meanwhile show that process's progress as the ``embedding`` phase of
    ``progress`` (:meth:`~sleuth.progress.Progress.elsewhere`): what ``read`` returns (the shape of
    :func:`worker_progress`, read every ``WAIT_REPORT_INTERVAL_S``: the first time at once; shown
    while its ``state`` is ``running``). Tries the lock every ``poll_s`` seconds.

    Args:
        clock, sleep: seconds, monotonic, and a pause (injected in tests).
    Returns:
        The open descriptor holding the lock (closing it releases the lock), or None when another
        process held it for ``timeout_s``.
    Raises:
        KeyboardInterrupt: Ctrl-C (within :func:`sleuth.interrupts.stop_on_interrupt`, also one lost
            in a finalizer: :meth:`~sleuth.progress.Progress.elsewhere` checks).
        NotALockFile, OSError: as :func:`sleuth.locks.lock_exclusive`.
    """
    next_report = clock()

    def report() -> None:  # between two tries of the lock
        nonlocal next_report
        now = clock()
        if progress is None or now < next_report:
            return
        next_report = now + WAIT_REPORT_INTERVAL_S
        shown = read()
        if shown is not None and shown.get("state") == "running":
            pid = shown.get("pid")
            progress.elsewhere("embedding", shown["embedded"], shown["total"], shown.get("rate_blocks_per_s"),
                               shown.get("eta_s"), f"process {pid}" if isinstance(pid, int) else "another process")

    return lock_exclusive(index_dir / EMBED_LOCK_FILE, timeout_s, poll_s, report, clock, sleep)


def _say_loading(index_dir: Path) -> dict[str, Any] | None:
    """Write the state file of a process that holds the embed lock and loads the model, so that
    `sleuth status` says so while it loads (tens of seconds the first time: the graph is built
    from the package's weights) instead of "0 of N blocks embedded" with no word why. Returns the
    state file as it was (:func:`_restore_state` puts it back)."""
    from sleuth.indexer import now_rfc3339

    before = read_state(index_dir)
    _write_state(index_dir, {"pid": os.getpid(), "model": None, "state": "loading", "started_at": now_rfc3339(),
                             "updated_at": now_rfc3339()})
    return before


def _restore_state(index_dir: Path, saved: dict[str, Any] | None) -> None:
    """Put back the state file :func:`_say_loading` found (None: there was none)."""
    if saved is not None:
        _write_state(index_dir, saved)
        return
    with contextlib.suppress(OSError):
        (index_dir / EMBED_STATE_FILE).unlink(missing_ok=True)


def _load_embedder(engine: Engine) -> Embedder | None:
    """The engine's model, loaded by this process holding the embed lock, the state file saying so
    meanwhile (:func:`_say_loading`) and why when it fails; None without a model (the state file
    then as it was).

    Raises:
        KeyboardInterrupt, Exception: as the load raises, after the state file said so.
    """
    from sleuth.indexer import now_rfc3339

    index_dir = engine.index_dir
    before_load = _say_loading(index_dir)
    try:
        while os.environ.get(HOLD_LOADING_ENV) == "1":  # a test's kill or Ctrl-C ends this
            time.sleep(60)
        embedder = engine.embedder()
    except KeyboardInterrupt:  # Ctrl-C while the model loads: said so, not "killed, or it crashed"
        _write_state(index_dir, {"pid": os.getpid(), "model": None, "state": "failed",
                                 "error": "interrupted (Ctrl-C)", "updated_at": now_rfc3339()})
        raise
    except Exception as exc:  # a model that cannot load: `sleuth status` says why, not only embed.log
        _write_state(index_dir, {"pid": os.getpid(), "model": None, "state": "failed",
                                 "error": f"{type(exc).__name__}: {exc}", "updated_at": now_rfc3339()})
        raise
    if embedder is None:  # no model configured: the state file stays as it was
        _restore_state(index_dir, before_load)
    return embedder


def embed_now(engine: Engine, progress: Progress | None = None, wait_s: float = float("inf")) -> int | None:
    """Embed every block that has no vector yet, holding the embed lock, writing the state file as
    it goes; then warm the vector lane (saving its files when the write lock is free).

    Args:
        progress: counts the ``embedding`` phase.
        wait_s: how long to wait for another process holding the embed lock.
    Returns:
        Blocks embedded, or None when another process held the lock for ``wait_s`` (it embeds them).
    """
    from sleuth.indexer import now_rfc3339

    index_dir = engine.index_dir
    embedded = 0
    # Who holds the lock now, and what is embedded, so the progress can say what that process
    # embedded while this one waited (the counts are the configured model's: no model is loaded).
    asked = progress.clock() if progress is not None else 0.0
    busy = progress is not None and worker_running(index_dir)
    counts = _configured_counts(engine) if busy else None
    before = counts[1] if isinstance(counts, tuple) else None
    # While another process holds the lock, its progress is shown as this run's (a new user's
    # trial: `sleuth embed` printed nothing for minutes while `sleuth status` showed the worker's).
    fd = wait_for_embed_lock(index_dir, wait_s, progress, lambda: worker_progress(engine))
    if fd is None:
        return None
    with _holding(fd):
        loading_started = time.monotonic()
        embedder = _load_embedder(engine)
        if embedder is None:
            return 0
        have, total = engine.catalog.vector_counts(embedder.name, dim=embedder.dim)
        started, clock = now_rfc3339(), time.monotonic
        t0 = last = clock()
        state: dict[str, Any] = {"pid": os.getpid(), "model": embedder.name, "state": "running",
                                 "started_at": started, "updated_at": started, "embedded": 0,
                                 "to_embed": total - have, "rate_blocks_per_s": None, "error": None}
        _write_state(index_dir, state)
        hold_after = int(os.environ.get(HOLD_AFTER_ENV, "0") or 0)
        if progress is not None:
            waited = progress.clock() - asked if busy else 0.0
            progress.start("embedding", total=total, done=have, waited_s=waited,
                           others=max(0, have - before) if before is not None else 0,
                           setup_s=time.monotonic() - loading_started)

        catalog_at_start = catalog_identity(index_dir)

        def advance(done: int, _todo: int) -> None:
            nonlocal last
            if catalog_at_start is not None and catalog_identity(index_dir) != catalog_at_start:
                # `rm -rf` of the index (make demo again) left a worker embedding into the deleted
                # catalog for minutes, at full speed, beside the new index's worker.
                raise StorageError(f"the index folder {index_dir} was deleted or replaced while embedding: stopped")
            if progress is not None:
                progress.advance("embedding", done - (progress.phases["embedding"].done - have))
            now = clock()
            state.update(embedded=done, rate_blocks_per_s=round(done / (now - t0), 2) if now > t0 else None)
            if now - last >= STATE_WRITE_INTERVAL_S or (hold_after and done >= hold_after):
                last = now
                state["updated_at"] = now_rfc3339()
                _write_state(index_dir, state)
            if hold_after and done >= hold_after:
                while True:  # a test's kill -9 ends this
                    time.sleep(60)

        try:
            embedded = engine.embed_pending(advance)
        except KeyboardInterrupt:  # Ctrl-C of `sleuth index --wait` or `sleuth embed`: said so, not "killed"
            state.update(state="failed", error="interrupted (Ctrl-C)", updated_at=now_rfc3339())
            _write_state(index_dir, state)
            raise
        except Exception as exc:
            state.update(state="failed", error=f"{type(exc).__name__}: {exc}", updated_at=now_rfc3339())
            _write_state(index_dir, state)
            raise
        state.update(state="done", embedded=embedded, updated_at=now_rfc3339())
        _write_state(index_dir, state)
        if progress is not None:  # blocks, not distinct texts (blocks of the same text share a vector)
            progress.phases["embedding"].done = engine.catalog.vector_counts(embedder.name, dim=embedder.dim)[0]
            progress.finish("embedding")
        with engine.folder.write_lock.held_or_skip() as writable:
            if writable and "vector" in engine.lanes:
                engine.lanes["vector"].warm()
    return embedded


def run_worker(engine: Engine, progress: Progress | None = None) -> int:
    """The detached worker's loop: embed while blocks are pending and no other process embeds them.

    After releasing the lock it looks once more: blocks committed by an indexing run whose own
    worker found the lock taken (and left) are embedded here. Runs at a lower priority
    (``EMBED_WORKER_NICE``). Returns the blocks embedded."""
    with contextlib.suppress(OSError):
        os.nice(EMBED_WORKER_NICE)
    while os.environ.get(HOLD_BEFORE_LOCK_ENV) == "1":  # a test's kill ends this
        time.sleep(60)
    total = 0
    wait_s = EMBED_LOCK_WAIT_S
    while True:
        done = embed_now(engine, progress, wait_s)
        if done is None:
            return total  # another process holds the lock: it embeds what is pending
        total += done
        if done == 0 or pending_blocks(engine) == 0:  # 0: nothing it could embed; never spin
            return total
        wait_s = 0.0


#: The worker this process last started, by index folder: a burst of writes (records over MCP)
#: starts no second one while it runs, before it has taken the embed lock too.
_STARTED: dict[Path, subprocess.Popen[bytes]] = {}


def worker_started_here(index_dir: Path) -> bool:
    """True while the worker this process started for ``index_dir`` (:func:`start_worker`) is
    still starting: alive, and not yet at the embedding (it loads Python and the catalog before it
    takes the embed lock and writes its pid to the state file). Once it wrote its pid the lock
    tells (:func:`worker_running`): a worker past its last look for pending blocks embeds no more."""
    proc = _STARTED.get(index_dir)
    if proc is None or proc.poll() is not None:
        return False
    saved = read_state(index_dir) or {}
    return saved.get("pid") != proc.pid or saved.get("state") == "starting"


def _alive(pid: int) -> bool:
    """Whether process ``pid`` runs (not ended, not a zombie waiting for its parent to reap it)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # another user's process: it exists
        return True
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as f:
            return f.read().rsplit(")", 1)[-1].split()[:1] != ["Z"]
    except OSError:  # no /proc (macOS): kill(pid, 0) said it exists
        return True


def _starting(saved: dict[str, Any], index_dir: Path) -> bool:
    """Whether ``saved`` (the state file) is the record :func:`start_worker` wrote for a worker that
    has not yet written its own: its process lives, is the embedding worker of ``index_dir`` (where
    ``/proc`` tells) and started less than ``EMBED_START_GRACE_S`` ago (a record left by a worker that
    ended without embedding, by a reused pid, or planted naming any live process, is not)."""
    pid, started = saved.get("pid"), saved.get("started_s")
    if saved.get("state") != "starting" or not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0 \
            or not isinstance(started, int | float) or not 0 <= time.time() - started < EMBED_START_GRACE_S:
        return False
    return _alive(pid) and _may_be_worker(pid, index_dir)


#: The most of ``/proc/<pid>/cmdline`` read to tell an embedding worker (its command line is a few hundred bytes).
CMDLINE_MAX_BYTES = 64 * 1024


def _may_be_worker(pid: int, index_dir: Path) -> bool:
    """False when ``/proc`` shows that process ``pid`` is not the embedding worker of ``index_dir``
    (its command line lacks ``embed --worker`` and ``--index`` naming that folder, as
    :func:`start_worker` starts it); True when it is, or when ``/proc`` cannot tell (macOS has none;
    ``hidepid`` hides other users' processes), where a live pid is taken at its word."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            args = f.read(CMDLINE_MAX_BYTES).removesuffix(b"\0").split(b"\0")  # each argument ends in NUL
    except FileNotFoundError:
        return not os.path.isdir("/proc/self")  # gone meanwhile (Linux), or no /proc at all
    except OSError:
        return True
    if b"embed" not in args or b"--worker" not in args or b"--index" not in args[:-1]:
        return False
    named = args[args.index(b"--index") + 1]
    if not named:
        return False
    try:  # a relative --index is the worker's working folder's
        return os.path.samefile(os.path.join(f"/proc/{pid}/cwd".encode(), named), index_dir)
    except (OSError, ValueError):
        return False


def embed_in_background(engine: Engine) -> tuple[dict[str, Any], str | None]:
    """After a write committed (``sleuth index``, a ``sleuth watch`` batch): ``({state, pending_blocks,
    started, pid[, error]} or {} when nothing waits, why there is no model or None)``. A worker
    (:func:`start_worker`) is started unless one already runs:
    probed after the commit, the running one takes the new blocks on (it looks for pending blocks
    again after it lets the lock go), where a second one would only wait ``EMBED_LOCK_WAIT_S`` and leave."""
    pending, no_model = pending_or_reason(engine)
    if not pending:
        return {}, no_model
    if worker_running(engine.index_dir):
        running = (read_state(engine.index_dir) or {}).get("pid")
        return {"state": "background", "pending_blocks": pending, "started": False,
                "pid": running if isinstance(running, int) else None}, no_model
    embedding: dict[str, Any] = {"state": "background", "pending_blocks": pending, "started": True}
    try:
        embedding["pid"] = start_worker(engine.index_dir)
    except OSError as exc:
        embedding.update(state="not started", error=f"{exc.strerror or exc}")
    return embedding, no_model


def _open_log(path: Path) -> BinaryIO:
    """``embed.log`` opened to append, as hostile as the rest of the index folder: a symlink is not
    followed (the worker's lines were appended to the file it named), a FIFO not waited on (`sleuth
    index` hung), anything but a regular file refused.

    Raises:
        OSError: it cannot be opened, or is not a regular file (the message says so).
    """
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    try:
        fd = os.open(path, flags, 0o600)
    except OSError as exc:
        if os.path.islink(path) or (os.path.exists(path) and not os.path.isfile(path)):
            raise OSError(exc.errno, f"{path} is not a regular file (a symlink, FIFO or folder)") from exc
        raise
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise OSError(errno.EINVAL, f"{path} is not a regular file (a symlink, FIFO or folder)")
    return os.fdopen(fd, "ab")


def start_worker(index_dir: Path) -> int:
    """Start ``sleuth embed --worker`` for ``index_dir`` in its own session (it survives the
    terminal and this process) at a lower priority (``EMBED_WORKER_NICE``), its stderr appended to
    ``embed.log``; returns its pid.

    Raises:
        OSError: the log cannot be opened or the process cannot start (the caller says so and
            suggests ``sleuth embed``).
    """
    log_path = index_dir / EMBED_LOG_FILE
    with contextlib.suppress(OSError):
        if log_path.lstat().st_size > EMBED_LOG_MAX_BYTES:
            log_path.unlink()
    with _open_log(log_path) as log:
        proc = subprocess.Popen(
            # -P: ``-m`` would put the working folder, the index folder, first on the import path, and a
            # `click.py` there (an index folder may come from anywhere: a cloned repository) ran in the worker
            [sys.executable, "-P", "-m", "sleuth.cli", "embed", "--worker", "--index", str(index_dir)],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log, start_new_session=True,
            close_fds=True, cwd=str(index_dir), env=child_env(os.environ))
        from sleuth.indexer import now_rfc3339

        with contextlib.suppress(OSError):  # the first line of this worker's part of the log
            log.write(f"{WORKER_LOG_LABEL} (process {proc.pid}): started at {now_rfc3339()}\n".encode())
    _STARTED[index_dir] = proc

    # Until the worker writes its own (once it holds the embed lock), this record says it runs.
    _write_state(index_dir, {"pid": proc.pid, "model": None, "state": "starting", "started_at": now_rfc3339(),
                             "started_s": time.time(), "embedded": 0, "to_embed": None,
                             "rate_blocks_per_s": None, "error": None})
    return proc.pid


def embedding_progress(engine: Engine, model: str, have: int, total: int) -> dict[str, Any]:
    """Where the embedding of the index stands, for ``sleuth status``: ``state`` (``running``: a
    process embeds now; ``stopped``: blocks wait and none does, e.g. a killed worker; ``done``),
    ``embedded`` / ``total`` blocks, and while running the worker's ``pid``, ``rate_blocks_per_s``
    and ``eta_s`` (seconds left at that rate), or ``starting`` while it starts and loads the model;
    ``error`` when the last run failed.

    The state file is read once (a worker rewrites it while it embeds): whether a worker is
    starting, its pid and its rate all come from the same reading."""
    index_dir = engine.index_dir
    saved = read_state(index_dir) or {}
    running = worker_running(index_dir, saved)
    out: dict[str, Any] = {"state": "running" if running else "done" if have >= total else "stopped",
                           "embedded": have, "total": total}
    if running and (_starting(saved, index_dir) or saved.get("state") == "loading"):  # no rate before the embedding
        out.update(pid=saved.get("pid"), starting=True)
    elif running and saved.get("model") == model:
        rate = saved.get("rate_blocks_per_s")
        out.update(pid=saved.get("pid"), rate_blocks_per_s=rate, updated_at=saved.get("updated_at"))
        if isinstance(rate, int | float) and rate > 0:
            out["eta_s"] = round((total - have) / rate, 1)
    elif saved.get("state") == "failed" and have < total:
        out["error"] = saved.get("error")
    elif saved.get("state") in ("running", "starting", "loading") and have < total and not running:
        # Ended without a word of its own: killed (kill -9, out of memory) or crashed.
        last = last_log_line(index_dir, saved.get("pid"))
        out["error"] = (f"the embedding process {saved.get('pid')} ended before it finished (killed, or it"
                        f" crashed){f'; the last line of {EMBED_LOG_FILE}: {last}' if last else ''}")
    return out


#: How much of the end of ``embed.log`` :func:`last_log_line` reads, in bytes; the line it returns
#: is cut to ``LOG_LINE_SHOWN_MAX_CHARS`` characters.
LOG_TAIL_BYTES = 16384
LOG_LINE_SHOWN_MAX_CHARS = 300


def last_log_line(index_dir: Path, pid: object) -> str | None:
    """The last line the worker ``pid`` wrote to ``embed.log`` (its stderr: a traceback's last line
    names the error) other than its progress lines, cut to ``LOG_LINE_SHOWN_MAX_CHARS``; None when
    there is none, the log's last ``LOG_TAIL_BYTES`` do not show that process (its lines are told
    by ``sleuth embed (process PID)``, which :func:`start_worker` writes first and every progress
    line starts with; its part ends where another worker's begins: an older or later worker's
    traceback is not blamed on it), or the log cannot be read.
    Does not follow a symlink."""
    label = f"{WORKER_LOG_LABEL} (process {pid})"
    try:
        flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
        fd = os.open(index_dir / EMBED_LOG_FILE, flags)
    except OSError:
        return None
    try:
        with os.fdopen(fd, "rb") as log:  # a folder fails here, a FIFO reads nothing (non-blocking)
            st = os.fstat(log.fileno())
            if not stat.S_ISREG(st.st_mode):
                return None
            log.seek(max(0, st.st_size - LOG_TAIL_BYTES))
            tail = log.read(LOG_TAIL_BYTES)
    except OSError:
        return None
    lines = [line.strip() for line in tail.decode("utf-8", errors="replace").splitlines() if line.strip()]
    first = next((i for i, line in enumerate(lines) if line.startswith(label)), None)
    own: list[str] = []
    for line in lines[first:] if first is not None else []:
        if line.startswith(f"{WORKER_LOG_LABEL} (process "):
            if not line.startswith(label):
                break  # another worker's part of the log begins
            continue  # a progress line
        own.append(line)
    if not own:
        return None
    line = "".join(ch if ch.isprintable() else "?" for ch in own[-1])
    return line if len(line) <= LOG_LINE_SHOWN_MAX_CHARS else line[: LOG_LINE_SHOWN_MAX_CHARS - 1] + "…"
