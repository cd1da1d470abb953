"""The parse worker process: reads jobs from the indexer, answers each with its outcome, in order.

Started by :mod:`sleuth.ingest.pool` as ``python -P -c ... MEMORY_BYTES PROGRESS_FD``. It limits its
own address space (``RLIMIT_AS``), runs each file under a ``SIGALRM`` set to the file's budget, and
before each file writes to the progress file (a descriptor it inherited) which job it starts and
when, so that the indexer, if it must kill it, knows which file was at fault.

Protocol: frames of ``<8-byte little-endian length><pickle>`` over the original stdin and stdout
(the worker's own stdout goes to stderr, so that a stray ``print`` cannot corrupt it). A job frame
holds a list of jobs (``(job wire, budget_s, delay_ms, fault)``, see :mod:`sleuth.ingest.guard`);
each answer frame holds one outcome wire. Answers are held back while more jobs are already waiting
(each write would wake the indexer): they go out when the worker would otherwise wait for input,
after a job that took more than ``ANSWER_HOLD_S``, or when ``ANSWER_BATCH`` are held.
"""

from __future__ import annotations

import os
import pickle
import signal
import struct
import sys
import time
from typing import Any

from sleuth.ingest.guard import (
    PARSE_MEMORY_MAX_BYTES,
    RESULT_MAX_BYTES,
    Failed,
    job_from_wire,
    outcome_to_wire,
    parse_job,
    too_long,
)

FRAME = struct.Struct("<Q")
"""The length prefix of every frame."""
PROGRESS = struct.Struct("<qd")
"""The progress record: the index of the job started (0-based, since the worker began) and when
(``time.monotonic()``, the same clock in every process of the machine)."""
EXIT_RESTART = 3
"""The exit status of a worker that answered after a MemoryError and left to start afresh."""
ANSWER_BATCH = 32
"""A worker holds back at most this many answers..."""
ANSWER_HOLD_S = 0.01
"""... and sends them at once after a job that took longer than this."""
READ_BYTES = 1024 * 1024
"""Bytes asked of a pipe per ``read``."""


class _Overrun(BaseException):
    """Raised by SIGALRM: the file's budget ran out (a BaseException, so that no parser's ``except
    Exception`` swallows it)."""


def _alarm(signum: int, frame: object) -> None:
    raise _Overrun


class _Pipes:
    """The worker's ends of the protocol: jobs read in large chunks, answers written in batches."""

    def __init__(self, fd_in: int, fd_out: int) -> None:
        self.fd_in, self.fd_out = fd_in, fd_out
        self.inbuf = bytearray()
        self.outbuf = bytearray()
        self.held = 0

    def _frame(self) -> bytes | None:
        if len(self.inbuf) < FRAME.size:
            return None
        (size,) = FRAME.unpack_from(self.inbuf)
        if len(self.inbuf) < FRAME.size + size:
            return None
        frame = bytes(self.inbuf[FRAME.size : FRAME.size + size])
        del self.inbuf[: FRAME.size + size]
        return frame

    def next_frame(self) -> bytes | None:
        """The next job frame; None when the indexer closed the pipe."""
        while True:
            frame = self._frame()
            if frame is not None:
                return frame
            self.flush()  # about to wait: let the indexer have what is done
            chunk = os.read(self.fd_in, READ_BYTES)
            if not chunk:
                return None
            self.inbuf += chunk

    def answer(self, payload: bytes, took_s: float) -> None:
        self.outbuf += FRAME.pack(len(payload)) + payload
        self.held += 1
        if took_s > ANSWER_HOLD_S or self.held >= ANSWER_BATCH:
            self.flush()

    def flush(self) -> None:
        view = memoryview(self.outbuf)
        while view:
            view = view[os.write(self.fd_out, view) :]
        view.release()
        self.outbuf.clear()
        self.held = 0


def run_job(message: tuple[Any, ...]) -> tuple[Any, ...]:
    """The outcome wire of one job message ``(job wire, budget_s, delay_ms, fault)``, the file's
    budget enforced by ``SIGALRM`` (which must be handled by :func:`_alarm`). Raises MemoryError
    when the address-space limit stops the work."""
    wire, budget_s, delay_ms, fault = message
    signal.setitimer(signal.ITIMER_REAL, budget_s)
    try:
        if fault == "stuck":  # hang as code stuck in C would, deaf to SIGALRM
            signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM})
            while True:
                time.sleep(3600)
        if fault == "hog":  # allocate (and touch) memory until the limit says no
            hog = []
            while True:
                hog.append(bytearray(64 * 1024 * 1024))
        if delay_ms:
            time.sleep(delay_ms / 1000)
        outcome = parse_job(job_from_wire(wire))
    except _Overrun:
        outcome = too_long(budget_s)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
    return outcome_to_wire(outcome)


def worker_main() -> None:
    """The worker's loop, until the indexer closes the pipe (or is gone: a write to a closed pipe
    ends the worker quietly). ``sys.argv[1]``: the address-space limit in bytes; ``sys.argv[2]``:
    the progress file's descriptor."""
    try:
        _serve()
    except BrokenPipeError:
        os._exit(0)  # the indexer went away (killed, say): nobody to answer


def _serve() -> None:
    import resource

    pipes = _Pipes(os.dup(0), os.dup(1))
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    # Python's own messages go to the indexer's stderr; what native code writes to file descriptor 2
    # goes nowhere: markdown-it-pyrs prints a Rust panic there (with its backtrace when RUST_BACKTRACE
    # is set) for some malformed pages, which then fall back to markdown-it-py (sleuth.ingest.markdown_tree).
    own_stderr = os.dup(2)
    quiet = os.open(os.devnull, os.O_WRONLY)
    os.dup2(quiet, 2)
    os.close(quiet)
    os.dup2(own_stderr, 1)
    sys.stderr = os.fdopen(own_stderr, "w", buffering=1, encoding="utf-8", errors="backslashreplace")
    sys.stdout = sys.stderr
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the indexer's to handle
    signal.signal(signal.SIGALRM, _alarm)
    limit = int(sys.argv[1]) if len(sys.argv) > 1 else PARSE_MEMORY_MAX_BYTES
    progress_fd = int(sys.argv[2]) if len(sys.argv) > 2 else -1
    _soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    resource.setrlimit(resource.RLIMIT_AS, (limit if hard == resource.RLIM_INFINITY else min(limit, hard), hard))
    import sleuth.ingest.decode
    import sleuth.ingest.parsers  # noqa: F401 - loaded before the first file, not during its budget

    begun = 0
    while True:
        frame = pipes.next_frame()
        if frame is None:
            pipes.flush()
            return
        for message in pickle.loads(frame):
            started = time.monotonic()
            if progress_fd >= 0:
                os.pwrite(progress_fd, PROGRESS.pack(begun, started), 0)
            begun += 1
            try:
                answer: tuple[Any, ...] | None = run_job(message)
                payload = pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL)
            except MemoryError:
                answer, payload = None, b""
            if answer is None:
                reason = f"needs more memory than the {limit // 2**20} MiB limit of a parse process"
                pipes.answer(pickle.dumps(outcome_to_wire(Failed(reason))), float("inf"))
                os._exit(EXIT_RESTART)  # after a MemoryError, start afresh
            if len(payload) > RESULT_MAX_BYTES:
                payload = pickle.dumps(outcome_to_wire(Failed(f"its parsed form holds more than {RESULT_MAX_BYTES}"
                                                              " bytes")))
            pipes.answer(payload, time.monotonic() - started)


__all__ = ["EXIT_RESTART", "FRAME", "PROGRESS", "run_job", "worker_main"]
