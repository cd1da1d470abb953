"""Ctrl-C that always stops a long command (``sleuth index``, ``sleuth embed``), and that stops a
foreground server (``sleuth watch``, ``sleuth ui``, ``sleuth serve --http``) quietly.

Python turns SIGINT into ``KeyboardInterrupt`` wherever the main thread happens to be. When that is
inside a finalizer (a generator closed by the garbage collector, an object's ``__del__``) the
interpreter prints "Exception ignored" and the exception is lost: the run goes on as if no key was
pressed (a new user's trial saw 2 of 51 presses of Ctrl-C ignored during a 38,404-file index, one of
them running to the end and exiting 0). Within :func:`stop_on_interrupt` a SIGINT is also recorded,
and :func:`check_interrupt` -- called by every progress count (each file scanned or parsed, each
batch of postings or vectors) -- raises ``KeyboardInterrupt`` again, so the run stops at its next
unit of work even when the first one was swallowed.

For a foreground server Ctrl-C or SIGTERM is the normal way to stop, not a failure:
:func:`stopped_by_signals` ends it with one line, ``sleuth <command>: stopped``, and exit status 0
(``sleuth ui`` and ``sleuth serve --http`` ended with click's "Aborted!" and status 1 on Ctrl-C, and
``sleuth ui`` was killed by SIGTERM; ``sleuth watch`` let watchfiles log "KeyboardInterrupt caught,
stopping watch").
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

#: Exit status of a command stopped by Ctrl-C (128 + SIGINT, as shells report it).
INTERRUPTED_EXIT = 130
#: What a command stopped by Ctrl-C before its own handling began says on stderr.
INTERRUPTED_LINE = "sleuth: interrupted"

_received = threading.Event()


def _on_sigint(_signum: int, _frame: FrameType | None) -> None:
    _received.set()
    raise KeyboardInterrupt


@contextlib.contextmanager
def stop_on_interrupt() -> Iterator[None]:
    """Within the block, a SIGINT raises ``KeyboardInterrupt`` as usual and is also remembered for
    :func:`check_interrupt`. Does nothing outside the main thread, or when SIGINT has a handler
    other than Python's default (a server's own, an ignored signal)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGINT) is not signal.default_int_handler:
        yield
        return
    _received.clear()
    signal.signal(signal.SIGINT, _on_sigint)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.default_int_handler)
        _received.clear()


@contextlib.contextmanager
def stop_on_signals(stop: threading.Event) -> Iterator[None]:
    """Within the block, SIGINT and SIGTERM set ``stop`` (a loop's own way out, e.g. a watch's) and
    raise ``KeyboardInterrupt`` where the main thread is, remembered for :func:`check_interrupt` as
    in :func:`stop_on_interrupt`: the work under way (a batch being indexed, a wait on a parse
    worker) stops at once, not at its end. Previous handlers are put back after. Does nothing
    outside the main thread."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        stop.set()
        _received.set()
        raise KeyboardInterrupt

    before = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    _received.clear()
    for sig in before:
        signal.signal(sig, on_signal)
    try:
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        _received.clear()


@contextlib.contextmanager
def stopped_by_signals(command: str, stop: threading.Event | None = None) -> Iterator[None]:
    """Run a foreground server (``sleuth watch``, ``sleuth ui``, ``sleuth serve --http``) until Ctrl-C
    or SIGTERM, its normal way to stop: within the block they set ``stop`` and raise
    ``KeyboardInterrupt`` where the main thread is (:func:`stop_on_signals`; a server that takes the
    signals over while it serves, as uvicorn does, stops gracefully and raises the signal again
    once it has put these handlers back). The block's own cleanup (``finally``, ``with``) runs; the
    ``KeyboardInterrupt`` ends here, and one line ``sleuth <command>: stopped`` is written on
    stderr, so the command exits 0. A block that returns without a signal (a server that could
    not start and said why) writes nothing.

    Args:
        command: the command's name in the line (``watch``, ``ui``, ``serve``).
        stop: the event the signals set (a loop's own way out, e.g. a watch's); default a new one.
    """
    stop = stop or threading.Event()
    try:
        with stop_on_signals(stop):
            yield
    except KeyboardInterrupt:
        stop.set()  # raised where no handler of ours ran: a signal all the same
    if stop.is_set():
        try:
            print(f"sleuth {command}: stopped", file=sys.stderr, flush=True)
        except (OSError, ValueError):  # stderr closed: nothing to tell
            pass


def check_interrupt() -> None:
    """Raise ``KeyboardInterrupt`` when a SIGINT arrived within :func:`stop_on_interrupt`.

    Raises:
        KeyboardInterrupt: one arrived (raised again at each call until the block ends).
    """
    if _received.is_set():
        raise KeyboardInterrupt
