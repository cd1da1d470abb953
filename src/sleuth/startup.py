"""What the ``sleuth`` command does first: process-wide defaults, and for ``sleuth search`` the
start of the embedding model's load while the process is still importing.

A cold hybrid ``sleuth search`` spends about 0.2 s importing (click, pydantic, numpy, tantivy) and
0.25 s creating the model's onnxruntime session, mostly outside the GIL. Started first, on a thread
of its own, the model is ready about when the imports are done (docs/BENCH.md has the numbers).

Standard library only, like :mod:`sleuth.locate`: whatever this module imports delays the start.
The thread reads the index's settings with :func:`sleuth.config.load_config`, so it loads exactly the
model the engine asks for; :func:`sleuth.embed.load_embedder` then :func:`claim`\\ s it instead of
loading it again. When anything is unclear (help asked, no index, the vector lane not run, a bad
setting) nothing is started and the command loads (and reports) as usual; nor when the index's
broker runs, which answers the search itself (:mod:`sleuth.broker.search`).
"""

from __future__ import annotations

import functools
import os
import signal
import threading
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from types import FrameType
from typing import Any

from sleuth.interrupts import INTERRUPTED_EXIT, INTERRUPTED_LINE
from sleuth.locate import find_index_dir, has_catalog


def set_process_defaults() -> None:
    """Environment defaults of a ``sleuth`` process, set before numpy and pydantic load (an
    explicit setting in the environment wins)."""
    # This process never uses pydantic plugins: without this, the first model class scans the entry
    # points of every installed distribution for them (tens of milliseconds of a cold `sleuth search`).
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    # One BLAS thread (set before numpy loads OpenBLAS): the exact vector search is one matrix-vector
    # product, and OpenBLAS threads woken for it stall whenever the other core is busy.
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")


def begin(args: Sequence[str]) -> None:
    """Run first in a ``sleuth ARGS`` process: :func:`set_process_defaults`, then for a search
    :func:`start_search_model_load`, for ``index`` and ``watch`` the start of a parse worker
    (:func:`sleuth.ingest.pool.prestart`)."""
    set_process_defaults()
    if args[:1] == ["search"]:
        start_search_model_load(args[1:])
    elif args[:1] in (["index"], ["watch"]) and not {"-h", "--help"} & set(args):
        from sleuth.ingest.pool import prestart  # standard library and sleuth.errors only

        prestart()  # the parse worker starts while this process imports the engine


#: The one model load started for this process: ``(spec, quantized, embedder)``, or None when the
#: thread found nothing to load or failed before loading (the caller then loads as usual).
_pending: Future[tuple[str, bool | None, object] | None] | None = None
_pending_lock = threading.Lock()


def search_options(args: Sequence[str]) -> tuple[str | None, str | None] | None:
    """The ``--index`` and ``--lanes`` values of ``sleuth search`` arguments (None when absent), or
    None when the arguments ask for help or an option lacks its value."""
    index = lanes = None
    i = 0
    while i < len(args):
        name, eq, value = args[i].partition("=")
        if name in ("--help", "-h"):
            return None
        if name in ("--index", "--lanes"):
            if not eq:
                if i + 1 >= len(args):
                    return None
                value = args[i + 1]
                i += 1
            if name == "--index":
                index = value
            else:
                lanes = value
        i += 1
    return index, lanes


def start_search_model_load(args: Sequence[str]) -> bool:
    """Start loading the model that ``sleuth search ARGS`` will embed its query with, on a daemon
    thread. Returns whether a load was started (not when the lanes given leave out ``vector`` or
    no index is found)."""
    global _pending
    options = search_options(args)
    if options is None:
        return False
    index, lanes = options
    if lanes is not None and "vector" not in (lane.strip() for lane in lanes.split(",")):
        return False
    try:
        found = find_index_dir(index)
    except OSError:  # e.g. the current folder was deleted: the command reports it
        return False
    if found is None or not has_catalog(found):
        return False
    from sleuth.broker.client import broker_alive  # standard library only

    if broker_alive(found):  # the broker answers the search with its own model (sleuth.broker.search)
        return False
    with _pending_lock:
        if _pending is not None:
            return False
        _pending = Future()
        future = _pending
    threading.Thread(target=_load, args=(future, found, lanes), name="sleuth-model-warmup", daemon=True).start()
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, functools.partial(_interrupted_while_loading, future))
    return True


def _interrupted_while_loading(future: Future[Any], _signum: int, _frame: FrameType | None) -> None:
    """SIGINT while ``sleuth search`` runs: a ``KeyboardInterrupt`` as usual once the warm-up thread
    is done; before that the process ends at once, with ``sleuth: interrupted`` and status 130.
    A ``KeyboardInterrupt`` raised in the main thread while both threads import can leave a module
    lock held that the other waits on: an attack round saw 1 search in 26 hang for good after one
    Ctrl-C. A search writes nothing, so ending it at any point loses nothing."""
    if future.done():
        raise KeyboardInterrupt
    os.write(2, f"{INTERRUPTED_LINE}\n".encode())
    os._exit(INTERRUPTED_EXIT)


def _load(future: Future[tuple[str, bool | None, object] | None], index_dir: Path, lanes: str | None) -> None:
    try:
        from sleuth.config import load_config
        from sleuth.embed import load_embedder_now

        config = load_config(index_dir)
        if lanes is not None:
            config = config.with_lanes(lanes.split(","))
        if "vector" not in config.lanes or not config.model or config.model.lower() == "none":
            future.set_result(None)
            return
    except Exception:  # noqa: BLE001 - a bad setting is reported by the command itself
        future.set_result(None)
        return
    try:
        future.set_result((config.model, config.model_int8, load_embedder_now(config.model, config.model_int8)))
    except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it as its own load would
        future.set_exception(exc)


def claim(spec: str, quantized: bool | None) -> tuple[bool, object]:
    """``(True, embedder)`` when this process's model load was for ``spec`` and ``quantized``
    (waiting for it to finish; its error is raised here), else ``(False, None)``. A load is
    claimed once: later calls load for themselves."""
    global _pending
    with _pending_lock:
        future, _pending = _pending, None
    if future is None:
        return False, None
    loaded = future.result()  # raises the load's error (ModelUnavailable), as a load here would
    if loaded is None or loaded[:2] != (spec, quantized):
        return False, None
    return True, loaded[2]
