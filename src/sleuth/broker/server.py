"""The broker: one process per index that serves every MCP session of that index over a Unix socket.

It opens the engine once (the catalog, the lanes and, on first use or while warming up, the
embedding model) and runs each session that connects as its own task: an ``MCPServer`` built from
the session's settings (tool profiles, ``--project`` allow list, guides and events files) over the
shared engine, on the SDK's low-level server loop. Sessions run concurrently; engine work runs in
worker threads. Tool calls pass the :class:`~sleuth.broker.gate.ReadWriteGate` (reads together,
writes one at a time, in order), and sessions with the same project access share one
:class:`~sleuth.pipeline.requests.RequestRegistry`, so ``query_status`` / ``query_cancel`` reach a
request started by another session.

Lifetime: started detached by the first ``sleuth serve`` that finds none listening
(:mod:`sleuth.broker.client`), it holds ``<key>.lock`` while it runs and exits by itself after
:data:`BROKER_IDLE_EXIT_S` without sessions or calls (``$SLEUTH_BROKER_IDLE_S``), when its index
folder is deleted or made anew, on SIGTERM/SIGINT, or on ``sleuth broker stop``. Exiting removes
its socket and info file; after a kill -9 they stay, and the next broker replaces them.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import os
import signal
import sys
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import anyio
from anyio.abc import ByteStream
from anyio.streams.buffered import BufferedByteReceiveStream
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.types import CallToolResult

from sleuth import __version__
from sleuth.broker.client import PROTOCOL_VERSION
from sleuth.broker.gate import CONTROL, READ, ReadWriteGate, gate_kinds
from sleuth.broker.paths import BrokerPaths, broker_key, config_stamp
from sleuth.broker.search import SEARCH_OP, answer_search
from sleuth.broker.transport import stream_transport
from sleuth.config import load_serve_settings
from sleuth.engine import Engine
from sleuth.errors import ConfigError, IndexBusy, SleuthError, storage_errors
from sleuth.locate import catalog_identity
from sleuth.locks import WRITE_LOCK_TIMEOUT_S, lock_exclusive
from sleuth.mcp.errors import structured_error
from sleuth.mcp.events import JsonLinesSink, NonBlockingHook
from sleuth.mcp.limits import CALLER_CALLS, new_caller_limiter, run_in_worker, session_setup_limiter
from sleuth.mcp.registry import ServeContext
from sleuth.mcp.sdk import serve_streams
from sleuth.mcp.server import build_server, check_allowed_projects, needs_index, parse_profiles
from sleuth.pipeline.requests import SESSION_REQUESTS, RequestRegistry, RequestState, cancel_all

log = logging.getLogger("sleuth.broker")

#: A broker without sessions or running calls for this long exits, in seconds.
BROKER_IDLE_EXIT_S = 600.0
#: Environment variable overriding :data:`BROKER_IDLE_EXIT_S` (seconds; tests use a few).
IDLE_ENV = "SLEUTH_BROKER_IDLE_S"
#: Longest interval between two idle checks, in seconds.
IDLE_CHECK_MAX_S = 5.0
#: How long a new broker waits for the previous one (still exiting) to release the index, in seconds.
RUN_LOCK_WAIT_S = 30.0
#: How long a connection may take to send its header line, in seconds.
HEADER_TIMEOUT_S = 30.0
#: Longest header line, in bytes.
HEADER_MAX_BYTES = 1024 * 1024
#: Interval between two looks at the index's write lock while another process writes, in seconds.
WRITER_POLL_S = 0.05


class BrokerRunning(SleuthError):
    """Another broker holds this index's broker lock (it is running or still exiting)."""

    exit_code = 7


def idle_exit_from_env(env: Mapping[str, str] | None = None) -> float:
    """``$SLEUTH_BROKER_IDLE_S`` in seconds, else :data:`BROKER_IDLE_EXIT_S`.

    Raises:
        ConfigError: not a positive number.
    """
    raw = (os.environ if env is None else env).get(IDLE_ENV)
    if raw is None or not raw.strip():
        return BROKER_IDLE_EXIT_S
    try:
        value = float(raw)
    except ValueError:
        value = 0.0
    if not value > 0:
        raise ConfigError(f"{IDLE_ENV} must be a positive number of seconds, got {raw!r}")
    return value


def wait_for_other_writers(lock_path: Path, timeout_s: float) -> None:
    """Return once no process holds the index's write lock (``flock`` on ``lock_path``).

    Only looks: the lock is released again at once, and the engine takes it for the write itself.

    Raises:
        IndexBusy: another process held it for ``timeout_s`` seconds.
        IndexReadOnly, StorageFull, IndexGone: the lock file cannot be opened.
    """
    with storage_errors(lock_path.parent, f"the lock file {lock_path.name}", retry="write again"):
        fd = lock_exclusive(lock_path, timeout_s, WRITER_POLL_S)
    if fd is None:
        raise IndexBusy(f"another process is writing to {lock_path.parent}; waited {timeout_s:.0f} s")
    os.close(fd)  # released at once: the engine takes it for the write itself


def _refused(exc: SleuthError) -> CallToolResult:
    """The memory tools' tool error for a write that could not start (e.g. code ``INDEX_BUSY``)."""
    return structured_error(exc)


def _rss_mb() -> float | None:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return round(int(line.split()[1]) / 1024, 1)
    except (OSError, ValueError, IndexError):
        pass
    return None


class Broker:
    """Serves MCP sessions of one open engine (see the module docstring).

    Args:
        engine: the open index (closed by whoever opened it).
        paths: this broker's socket and files.
        idle_exit_s: exit after this many seconds without sessions or calls.
    """

    def __init__(self, engine: Engine, paths: BrokerPaths, idle_exit_s: float = BROKER_IDLE_EXIT_S) -> None:
        self.engine = engine
        self.paths = paths
        self.idle_exit_s = idle_exit_s
        self.gate = ReadWriteGate()
        self.registries: dict[frozenset[str] | None, RequestRegistry] = {}
        self._registries_lock = threading.Lock()
        self.sessions = 0
        self.sessions_total = 0
        self.searches_total = 0
        self.calls_running = 0
        self.connecting = 0
        self.started = time.monotonic()
        self.started_at = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        self.last_active = time.monotonic()
        self.stop_reason: str | None = None
        self.warm: bool | str = False
        self._scope: anyio.CancelScope | None = None
        self._catalog = self._catalog_identity()
        self._socket: tuple[int, int] | None = None
        #: The index's config.toml as the key was computed with it (:func:`config_stamp`); None when
        #: it was edited between the key's computing (by the session that started this broker) and
        #: this moment: then this broker's settings are not its key's, and it exits once idle.
        self._config: str | None = config_stamp(engine.index_dir)
        if broker_key(engine.index_dir) != paths.key:
            self._config = None

    def _socket_identity(self) -> tuple[int, int] | None:
        """(device, inode) of the socket file, None when it is gone."""
        try:
            st = os.stat(self.paths.socket)
        except OSError:
            return None
        return st.st_dev, st.st_ino

    def _catalog_identity(self) -> tuple[int, int] | None:
        """(device, inode) of the catalog file, None when it is gone."""
        return catalog_identity(self.engine.index_dir)

    # ------------------------------------------------------------------ lifetime

    async def run(self) -> None:
        """Listen on the socket and serve until stopped (idle, a signal or ``stop``)."""
        listener = await anyio.create_unix_listener(self.paths.socket, mode=0o600)
        self._socket = self._socket_identity()
        log.info("broker %d serving %s on %s (idle exit after %g s)", os.getpid(), self.engine.index_dir,
                 self.paths.socket, self.idle_exit_s)
        try:
            async with listener, anyio.create_task_group() as tg:
                self._scope = tg.cancel_scope
                tg.start_soon(self._watch_idle)
                tg.start_soon(self._watch_signals)
                tg.start_soon(self._warm_up)
                await listener.serve(self._handle, task_group=tg)
        finally:
            self._unlink_socket()
            log.info("broker %d stopped: %s", os.getpid(), self.stop_reason or "error")

    def stop(self, reason: str) -> None:
        """Stop accepting sessions and end the running ones (their calls in threads finish first)."""
        if self.stop_reason is None:
            self.stop_reason = reason
        self._unlink_socket()  # new sessions start a new broker, which waits for our lock
        if self._scope is not None:
            self._scope.cancel()

    def _unlink_socket(self) -> None:
        """Remove our socket file -- only ours: another broker may own the path by now."""
        if self._socket is not None and self._socket_identity() == self._socket:
            with contextlib.suppress(OSError):
                self.paths.socket.unlink()

    def config_current(self) -> bool:
        """Whether the index's ``config.toml`` is as it was when this broker read it (a session
        after an edit gets another broker: :func:`sleuth.broker.paths.broker_key`)."""
        return self._config is not None and config_stamp(self.engine.index_dir) == self._config

    async def _watch_idle(self) -> None:
        """Stop when idle long enough, or when the index folder was deleted or made anew (the open
        catalog would be a ghost: the next session starts a broker on the new index), or when no
        session is left of one whose ``config.toml`` was edited since it started (the next session
        gets a broker of the new settings: this one would only idle out its time, holding its
        model and lanes in memory)."""
        interval = min(IDLE_CHECK_MAX_S, self.idle_exit_s / 4)
        while True:
            await anyio.sleep(interval)
            if self._catalog_identity() != self._catalog:
                self.stop("the index was deleted or replaced")
                return
            if self._socket_identity() != self._socket:
                # Unreachable without its socket: exit, releasing the lock for a new broker.
                self.stop("its socket file was removed or replaced")
                return
            if self.idle_s() >= self.idle_exit_s:
                self.stop(f"idle for {self.idle_exit_s:g} s")
                return
            if self.idle_s() > 0 and not self.config_current():
                self.stop("config.toml changed since it started: a session gets a broker of the new settings")
                return

    async def _watch_signals(self) -> None:
        with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async for signum in signals:
                self.stop(f"signal {signal.Signals(signum).name}")
                return

    async def _warm_up(self) -> None:
        """Load the model and build the lanes' matrices, so the first search does not wait for them."""
        def warm() -> None:
            embedder = self.engine.embedder()
            self.engine.warm_lanes()
            if embedder is not None:
                embedder.embed(["warm up"])

        try:
            await anyio.to_thread.run_sync(warm)
            self.warm = True
        except Exception as exc:  # noqa: BLE001 - a failed warm-up is retried by the first search
            self.warm = f"{type(exc).__name__}: {exc}"
            log.warning("warm-up failed: %s", self.warm)

    def idle_s(self) -> float:
        """Seconds since the last session ended or call finished (0 while any runs or connects;
        ``sleuth broker status`` does not count)."""
        if self.sessions or self.calls_running or self.connecting:
            return 0.0
        return time.monotonic() - self.last_active

    def status(self) -> dict[str, Any]:
        """What ``sleuth broker status`` shows (JSON-ready)."""
        with self._registries_lock:
            registries = list(self.registries.values())
        running = sorted(rid for registry in registries for rid in registry.running())
        return {
            "ok": True, "pid": os.getpid(), "index": str(self.engine.index_dir), "key": self.paths.key,
            "socket": str(self.paths.socket), "version": __version__, "started_at": self.started_at,
            "uptime_s": round(time.monotonic() - self.started, 1), "idle_s": round(self.idle_s(), 1),
            "idle_exit_s": self.idle_exit_s, "sessions": self.sessions, "sessions_total": self.sessions_total,
            "searches_total": self.searches_total,
            "calls_running": self.calls_running, "requests_running": running, "gate": self.gate.snapshot(),
            "model": self.engine.config.model, "warm": self.warm, "rss_mb": _rss_mb(),
            "config_current": self.config_current(),
        }

    # ------------------------------------------------------------------ connections

    async def _handle(self, stream: ByteStream) -> None:
        """One connection: a header line, then a session or a control answer. Never raises, so one
        bad connection cannot end the others."""
        try:
            session: dict[str, Any] | None = None
            search: dict[str, Any] | None = None
            async with stream:
                receive = BufferedByteReceiveStream(stream)
                with anyio.move_on_after(HEADER_TIMEOUT_S):
                    self.connecting += 1  # a session in its handshake keeps the broker from idling out
                    try:
                        line = await receive.receive_until(b"\n", HEADER_MAX_BYTES)
                    finally:
                        self.connecting -= 1
                    try:
                        header = json.loads(line)
                    except ValueError:
                        header = None
                    if not isinstance(header, dict):
                        await self._reply(stream, {"ok": False, "error": "bad header: not a JSON object",
                                                   "exit_code": 2})
                        return
                    op = header.get("op")
                    if op == "status":
                        await self._reply(stream, self.status())
                        return
                    if op == "stop":
                        await self._reply(stream, {"ok": True, "stopping": True, "pid": os.getpid()})
                        self.stop("sleuth broker stop")
                        return
                    if op == SEARCH_OP:  # `sleuth search` (sleuth.broker.search); answered past the header timeout
                        await self._reply(stream, {"ok": True, "accepted": True})
                        search = header
                    elif op != "session":
                        await self._reply(stream, {"ok": False, "error": f"unknown op {op!r}", "exit_code": 2})
                        return
                    elif header.get("protocol") != PROTOCOL_VERSION:
                        await self._reply(stream, {"ok": False, "exit_code": 2, "error":
                                                   f"session protocol {header.get('protocol')!r}; this broker "
                                                   f"speaks {PROTOCOL_VERSION}"})
                        return
                    else:
                        session = header
                if search is not None:
                    await self._search(search, stream)
                    return
                if session is None:
                    return  # no header in time
                await self._session(session, receive, stream)
        except (anyio.EndOfStream, anyio.IncompleteRead, anyio.DelimiterNotFound, anyio.BrokenResourceError,
                anyio.ClosedResourceError, OSError):
            return  # the session went away
        except Exception:  # logged; the broker keeps serving the other sessions
            log.exception("a session failed")

    async def _search(self, header: Mapping[str, Any], stream: ByteStream) -> None:
        """A ``sleuth search`` sent to this broker: run under the read gate, like a read tool call."""
        self.calls_running += 1
        try:
            async with self.gate.read():
                answer = await run_in_worker(functools.partial(answer_search, self.engine, header))
        finally:
            self.calls_running -= 1
            self.searches_total += 1
            self.last_active = time.monotonic()
        await self._reply(stream, answer)

    @staticmethod
    async def _reply(stream: ByteStream, message: Mapping[str, Any]) -> None:
        await stream.send(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")

    def registry_for(self, allowed: frozenset[str] | None) -> RequestRegistry:
        """The request registry shared by sessions with the same project access (sessions are set
        up in worker threads: one registry per access however many start at once)."""
        with self._registries_lock:
            registry = self.registries.get(allowed)
            if registry is None:
                registry = self.registries[allowed] = RequestRegistry()
            return registry

    def session_context(self, header: Mapping[str, Any]) -> tuple[ServeContext, tuple[str, ...]]:
        """The serve context and profiles of a session header (as ``sleuth serve`` would build them).

        Raises:
            ConfigError: a malformed header, unknown profiles or projects, an unusable guides or events file.
        """
        tools, projects, env = header.get("tools"), header.get("projects") or [], header.get("env") or {}
        guides, events = header.get("guides"), header.get("events")
        if (not (tools is None or isinstance(tools, str)) or not isinstance(projects, list)
                or not all(isinstance(p, str) for p in projects) or not isinstance(env, dict)
                or not all(isinstance(v, str) for v in env.values())
                or not all(p is None or isinstance(p, str) for p in (guides, events))):
            raise ConfigError("bad session header: tools, guides and events must be strings, projects a list")
        settings = load_serve_settings(self.engine.index_dir, env=env)
        profiles = parse_profiles(tools if tools is not None else settings.tools)
        allowed = frozenset(projects) if projects else None
        context = ServeContext(allowed_projects=list(projects) or None,
                               guides_path=Path(guides) if guides else settings.guides,
                               registry=self.registry_for(allowed))
        if needs_index(profiles):
            context.engine = self.engine
        check_allowed_projects(profiles, context.engine, context.allowed_projects)
        if events:
            hook = NonBlockingHook(JsonLinesSink(Path(events)))
            context.on_tool_call = hook
            context.cleanups.append(hook.close)
        return context, profiles

    async def _session(self, header: Mapping[str, Any], receive: BufferedByteReceiveStream,
                       stream: ByteStream) -> None:
        made: list[ServeContext] = []

        def setup() -> tuple[ServeContext, Any]:
            # In a worker thread: reading the guides file and computing its sort keys, the config
            # and the project list must not hold the event loop that serves the other sessions.
            context, profiles = self.session_context(header)
            made.append(context)
            return context, build_server(context, profiles)

        try:
            # Not on the tool threads: a session starts even while other sessions' calls hold them all.
            context, server = await anyio.to_thread.run_sync(setup, limiter=session_setup_limiter())
        except SleuthError as exc:
            for context in made:
                context.close()
            await self._reply(stream, {"ok": False, "error": str(exc), "exit_code": exc.exit_code})
            return
        kinds = gate_kinds(await server.list_tools())
        server.middleware.append(functools.partial(self._gatekeeper, kinds))
        self.sessions += 1
        self.sessions_total += 1
        try:
            await self._reply(stream, {"ok": True, "pid": os.getpid()})
            # This session's tool calls (spawned from this task, so they see the variable) work at
            # most TOOL_CALLS_PER_CALLER at once: a burst from one session never takes every thread.
            CALLER_CALLS.set(new_caller_limiter())
            owned: list[RequestState] = []
            SESSION_REQUESTS.set(owned)

            def cancel_left() -> None:  # what it left running would hold tool threads with nobody to answer
                stopped = cancel_all(owned, "the session that sent it ended")
                if stopped:
                    log.info("a session ended with %d request(s) running: cancelled", stopped)

            try:
                async with stream_transport(receive, stream, on_end=cancel_left) as (read_stream, write_stream):
                    await serve_streams(server, read_stream, write_stream)
            finally:  # also when the session ends another way (the broker stopping)
                cancel_left()
        finally:
            self.sessions -= 1
            self.last_active = time.monotonic()
            with anyio.CancelScope(shield=True):
                await anyio.to_thread.run_sync(context.close)

    async def _gatekeeper(self, kinds: Mapping[str, str], ctx: ServerRequestContext[Any, Any],
                          call_next: CallNext) -> HandlerResult:
        """Middleware: tool calls pass the read/write gate as their tool's annotations say (an
        unknown tool name is a read: the SDK answers it with an error); everything else goes
        straight through."""
        if ctx.method != "tools/call":
            return await call_next(ctx)
        kind = kinds.get(str((ctx.params or {}).get("name")), READ)
        self.calls_running += 1
        try:
            if kind == CONTROL:
                return await call_next(ctx)
            if kind == READ:
                async with self.gate.read():
                    return await call_next(ctx)
            try:
                async with self.gate.write(before=self._wait_for_other_writers):
                    return await call_next(ctx)
            except SleuthError as exc:  # the write could not start (busy, read-only, full, gone)
                return _refused(exc)
        finally:
            self.calls_running -= 1
            self.last_active = time.monotonic()

    async def _wait_for_other_writers(self) -> None:
        # Wait for a `sleuth index` of another process here, before reads are held back.
        lock = self.engine.index_dir / "write.lock"  # the engine's write lock (sleuth.engine._WriteLock)
        await anyio.to_thread.run_sync(wait_for_other_writers, lock, WRITE_LOCK_TIMEOUT_S)


# ---------------------------------------------------------------------------------------------- entry


def _hold_run_lock(path: Path, wait_s: float) -> int:
    """An open descriptor holding ``flock`` on ``path`` (released when the process ends).

    Raises:
        BrokerRunning: another process held it for ``wait_s`` seconds.
    """
    fd = lock_exclusive(path, wait_s, WRITER_POLL_S)
    if fd is None:
        raise BrokerRunning(f"a broker for this index is already running ({path})")
    return fd


#: Environment variable: ``1`` makes the broker keep the index current with a file watcher
#: (:func:`sleuth.watch.watch_index`) while it runs. Part of the broker's key (a watching broker is
#: its own broker).
WATCH_ENV = "SLEUTH_BROKER_WATCH"
#: How long a stopping broker waits for its watcher's current batch, in seconds.
WATCHER_STOP_WAIT_S = 10.0
#: How long the broker's watcher waits before watching again after an unexpected exception, in seconds.
WATCHER_RETRY_WAIT_S = 5.0


def watch_from_env(env: Mapping[str, str] | None = None) -> bool:
    """Whether ``SLEUTH_BROKER_WATCH`` asks the broker to watch the files of its index."""
    value = (os.environ if env is None else env).get(WATCH_ENV, "").strip().lower()
    return value not in ("", "0", "false", "no", "off")


def start_watcher(engine: Engine) -> tuple[threading.Event, threading.Thread]:
    """Watch every project's roots of ``engine`` in a daemon thread; returns (stop event, thread).
    Each batch re-indexes only the changed paths (``Engine.update_paths``), under the index's write
    lock, so sessions see the index before or after a batch. A batch that fails is logged and the
    watch goes on (:func:`sleuth.watch.watch_index`); an unexpected exception out of the watch itself
    is logged with its traceback, and the thread watches again after ``WATCHER_RETRY_WAIT_S``."""
    from sleuth.watch import watch_index

    stop = threading.Event()

    def report(batch: object) -> None:
        log.info("watch: %s", batch)

    from sleuth.progress import PlainLines, Progress, progress_interval_s

    interval = progress_interval_s()

    def progress() -> Progress:  # a batch that lasts (a first scan) says how far it is, on stderr
        return Progress(PlainLines(sys.stderr, interval, "sleuth broker watch", end_line=False))

    def watch() -> None:
        while not stop.is_set():
            try:
                watch_index(engine, None, stop, on_batch=report, progress=progress)
            except Exception:  # logged: a bug must not end the watching for the broker's lifetime
                log.exception("watch: the file watcher failed; watching again in %g s", WATCHER_RETRY_WAIT_S)
                stop.wait(WATCHER_RETRY_WAIT_S)

    thread = threading.Thread(target=watch, name="sleuth-broker-watch", daemon=True)
    thread.start()
    return stop, thread


def run_broker(index_dir: Path | None, key: str | None = None, idle_exit_s: float | None = None) -> str:
    """Run the broker of ``index_dir`` (None: ``$SLEUTH_INDEX`` or the nearest ``.sleuth/``) in this
    process until it stops; returns why it stopped. ``key`` names its socket (default: computed).

    Raises:
        IndexNotFound: ``index_dir`` holds no index.
        BrokerRunning: another broker of the same key is running.
        BrokerUnavailable: the brokers' folder cannot be used.
        ConfigError: a bad ``$SLEUTH_BROKER_IDLE_S``.
    """
    logging.basicConfig(stream=sys.stderr, level=logging.INFO,
                        format="%(asctime)s %(name)s %(levelname)s %(message)s")
    idle = idle_exit_s if idle_exit_s is not None else idle_exit_from_env()
    with Engine.open(index_dir, serving=True) as engine:
        paths = BrokerPaths.for_index(engine.index_dir, key=key)
        lock_fd = _hold_run_lock(paths.run_lock, RUN_LOCK_WAIT_S)
        try:
            broker = Broker(engine, paths, idle)
            info = {"index": str(engine.index_dir), "pid": os.getpid(), "key": paths.key,
                    "socket": str(paths.socket), "version": __version__, "started_at": broker.started_at}
            tmp = paths.info.with_suffix(".json.tmp")
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                out.write(json.dumps(info))
            tmp.replace(paths.info)
            watcher = start_watcher(engine) if watch_from_env() else None
            try:
                anyio.run(broker.run)
            finally:
                if watcher is not None:
                    watcher[0].set()
                    watcher[1].join(timeout=WATCHER_STOP_WAIT_S)
                with contextlib.suppress(OSError):
                    paths.info.unlink()
            return broker.stop_reason or "stopped"
        finally:
            os.close(lock_fd)
