"""The session side of the broker: connect to (or start) the index's broker and pipe MCP through it.

``sleuth serve`` calls :func:`serve_via_broker`: it finds the index, connects to its broker's
socket (starting the broker, detached, when none answers), sends one JSON header line with the
session's settings and reads one JSON reply line, then copies stdin to the socket and the socket
to stdout, byte for byte, until either side closes. Nothing but the broker's bytes is written to
stdout; notes go to stderr.

Wire format (protocol 1), one JSON object per line, then (for a session) raw MCP stdio bytes:

- session: ``{"op": "session", "protocol": 1, "tools", "projects", "guides", "events", "env"}`` →
  ``{"ok": true, "pid": N}`` or ``{"ok": false, "error": "...", "exit_code": N}``.
- control: ``{"op": "status"}`` → the broker's status; ``{"op": "stop"}`` → ``{"ok": true, "stopping": true}``.

Standard library only, so a session process starts in a few tens of milliseconds.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

from sleuth.broker.paths import BrokerPaths, BrokerUnavailable
from sleuth.locate import child_env, find_index_dir, has_catalog
from sleuth.locks import lock_exclusive

log = logging.getLogger("sleuth.broker")

#: Environment variable turning the broker off (``0``, ``false``, ``no``, ``off``): serve in-process.
BROKER_ENV = "SLEUTH_BROKER"
#: Version of the header/reply lines exchanged before the MCP bytes.
PROTOCOL_VERSION = 1
#: How long a session waits for a broker it started to accept connections, in seconds.
BROKER_START_TIMEOUT_S = 60.0
#: How long a session waits for another session that is starting the broker, in seconds.
SPAWN_LOCK_TIMEOUT_S = 90.0
#: How long a session waits for the broker's reply to its header, in seconds.
HANDSHAKE_TIMEOUT_S = 30.0
#: How long ``sleuth broker status|stop`` waits for a broker's answer, in seconds.
CONTROL_TIMEOUT_S = 10.0
#: Interval between two connection attempts while a broker starts, in seconds.
START_POLL_S = 0.02
#: Connect-and-handshake attempts (a broker may be closing when a session arrives).
CONNECT_ATTEMPTS = 3
#: Bytes copied per read between stdio and the socket.
PIPE_CHUNK_BYTES = 64 * 1024
#: Longest header or reply line, in bytes.
LINE_MAX_BYTES = 1024 * 1024
#: A broker log larger than this is started afresh when a new broker starts, in bytes.
LOG_MAX_BYTES = 1024 * 1024


def broker_enabled(env: Mapping[str, str] | None = None) -> bool:
    """False when ``$SLEUTH_BROKER`` turns the broker off."""
    value = (os.environ if env is None else env).get(BROKER_ENV, "1")
    return value.strip().lower() not in ("0", "false", "no", "off")


def note(message: str) -> None:
    """One line on stderr (never stdout: it carries the protocol)."""
    with contextlib.suppress(OSError, ValueError):
        sys.stderr.write(f"sleuth: {message}\n")
        sys.stderr.flush()


# ---------------------------------------------------------------------------------------------- lines


def read_line(sock: socket.socket, timeout_s: float, max_bytes: int = LINE_MAX_BYTES) -> tuple[bytes, bytes]:
    """One ``\\n``-terminated line from ``sock`` (without the newline) and the bytes read after it.

    Raises:
        ConnectionError: the peer closed before a whole line, or sent more than ``max_bytes``.
        TimeoutError: no whole line within ``timeout_s``.
    """
    sock.settimeout(timeout_s)
    data = b""
    while b"\n" not in data:
        if len(data) > max_bytes:
            raise ConnectionError(f"line longer than {max_bytes} bytes")
        chunk = sock.recv(PIPE_CHUNK_BYTES)
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    line, _, rest = data.partition(b"\n")
    return line, rest


def send_line(sock: socket.socket, message: Mapping[str, Any]) -> None:
    sock.sendall(json.dumps(message, ensure_ascii=False).encode("utf-8") + b"\n")


def connect(paths: BrokerPaths) -> socket.socket | None:
    """A connection to the broker's socket, or None when no broker listens there.

    Raises:
        BrokerUnavailable: the socket cannot be reached, or the process listening on it runs as
            another user (``SO_PEERCRED``, Linux): nothing is sent to it.
    """
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(os.fspath(paths.socket))
        uid = peer_uid(sock)
    except (FileNotFoundError, ConnectionRefusedError):
        sock.close()
        return None
    except OSError as exc:
        sock.close()
        raise BrokerUnavailable(f"cannot connect to {paths.socket}: {exc.strerror or exc}") from exc
    if uid is not None and uid != os.getuid():
        sock.close()
        raise BrokerUnavailable(f"the socket {paths.socket} is served by another user (uid {uid}): not used")
    return sock


def peer_uid(sock: socket.socket) -> int | None:
    """The user id of the process at the other end of the Unix socket ``sock`` (None where the
    system does not say: ``SO_PEERCRED`` is Linux's)."""
    option = getattr(socket, "SO_PEERCRED", None)
    if option is None:
        return None
    _pid, uid, _gid = struct.unpack("3i", sock.getsockopt(socket.SOL_SOCKET, option, struct.calcsize("3i")))
    return int(uid)


def request(paths: BrokerPaths, message: Mapping[str, Any],
            timeout_s: float = CONTROL_TIMEOUT_S) -> dict[str, Any] | None:
    """Send a control ``message`` (``{"op": "status"}``...) and return the broker's JSON answer;
    None when no broker listens. Raises ConnectionError/TimeoutError when it does not answer."""
    sock = connect(paths)
    if sock is None:
        return None
    with sock:
        send_line(sock, message)
        line, _ = read_line(sock, timeout_s)
    answer = json.loads(line)
    if not isinstance(answer, dict):
        raise ConnectionError("the broker's answer is not a JSON object")
    return answer


# ---------------------------------------------------------------------------------------------- starting


@contextlib.contextmanager
def _flock(path: Path, timeout_s: float) -> Iterator[None]:
    fd = lock_exclusive(path, timeout_s, START_POLL_S)
    if fd is None:
        raise BrokerUnavailable(f"another session held {path} for {timeout_s:.0f} s")
    try:
        yield
    finally:
        os.close(fd)  # closing the descriptor releases the lock


def _log_tail(path: Path, offset: int) -> str:
    """The last non-blank line the broker wrote to its log after ``offset``."""
    try:
        with open(path, "rb") as f:
            f.seek(offset)
            lines = [ln.strip() for ln in f.read().decode("utf-8", "replace").splitlines() if ln.strip()]
    except OSError:
        return ""
    return lines[-1] if lines else ""


def start_broker(index_dir: Path, paths: BrokerPaths, env: Mapping[str, str]) -> subprocess.Popen[bytes]:
    """Start ``sleuth broker run`` for ``index_dir``, detached (own session, stdio not inherited,
    stderr to the broker's log)."""
    try:
        size = paths.log.stat().st_size
    except OSError:
        size = 0
    mode = os.O_WRONLY | os.O_CREAT | (os.O_TRUNC if size > LOG_MAX_BYTES else os.O_APPEND)
    log_fd = os.open(paths.log, mode, 0o600)
    try:
        return subprocess.Popen(
            # -P: the broker runs in the index folder, which must not put modules on its import path (a
            # `click.py` or `mcp.py` there would run in it, as in the embedding worker: see sleuth.background)
            [sys.executable, "-P", "-m", "sleuth.cli", "broker", "run", "--index", str(index_dir), "--key", paths.key],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=log_fd, cwd=str(index_dir),
            env=child_env(env), start_new_session=True, close_fds=True,
        )
    finally:
        os.close(log_fd)


def connect_or_start(index_dir: Path, paths: BrokerPaths, env: Mapping[str, str]) -> socket.socket:
    """A connection to the broker of ``index_dir``, starting it when none listens.

    One session at a time starts a broker (the spawn lock); the others wait for it and connect.

    Raises:
        BrokerUnavailable: the broker could not be started (the reason from its log) or did not
            accept connections within :data:`BROKER_START_TIMEOUT_S`.
    """
    sock = connect(paths)
    if sock is not None:
        return sock
    with _flock(paths.spawn_lock, SPAWN_LOCK_TIMEOUT_S):
        sock = connect(paths)  # started by the session that held the spawn lock before us
        if sock is not None:
            return sock
        try:
            offset = paths.log.stat().st_size
        except OSError:
            offset = 0
        try:
            proc = start_broker(index_dir, paths, env)
        except OSError as exc:
            raise BrokerUnavailable(f"cannot start the broker: {exc.strerror or exc}") from exc
        deadline = time.monotonic() + BROKER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            sock = connect(paths)
            if sock is not None:
                return sock
            if proc.poll() is not None and proc.returncode != 0:
                reason = _log_tail(paths.log, offset) or f"exit code {proc.returncode}"
                raise BrokerUnavailable(f"the broker did not start ({reason}; log {paths.log})")
            time.sleep(START_POLL_S)
    raise BrokerUnavailable(f"the broker did not accept connections within {BROKER_START_TIMEOUT_S:.0f} s "
                            f"(log {paths.log})")


# ---------------------------------------------------------------------------------------------- sessions


def session_header(tools: str | None, projects: Sequence[str], guides: str | Path | None,
                   events: str | Path | None, env: Mapping[str, str]) -> dict[str, Any]:
    """The header line of a session: its settings, paths made absolute against this folder."""
    def absolute(p: str | Path | None) -> str | None:
        return None if p is None or str(p) == "" else os.path.abspath(os.path.expanduser(str(p)))

    session_env = {k: env[k] for k in ("SLEUTH_TOOLS", "SLEUTH_GUIDES") if env.get(k)}
    if "SLEUTH_GUIDES" in session_env:
        session_env["SLEUTH_GUIDES"] = absolute(session_env["SLEUTH_GUIDES"]) or ""
    return {"op": "session", "protocol": PROTOCOL_VERSION, "tools": tools, "projects": list(projects),
            "guides": absolute(guides), "events": absolute(events), "env": session_env}


def open_session(index_dir: Path, header: Mapping[str, Any], env: Mapping[str, str]
                 ) -> tuple[socket.socket, dict[str, Any], bytes]:
    """Connect (starting the broker if needed), send ``header``; returns (socket, reply, bytes after it).

    Raises:
        BrokerUnavailable: no broker could be reached or started, or none answered the header.
    """
    paths = BrokerPaths.for_index(index_dir, env)
    last = "no attempt"
    for _ in range(CONNECT_ATTEMPTS):
        sock = connect_or_start(index_dir, paths, env)
        try:
            send_line(sock, header)
            line, rest = read_line(sock, HANDSHAKE_TIMEOUT_S)
            reply = json.loads(line)
            if not isinstance(reply, dict):
                raise ValueError("the reply is not a JSON object")
        except (OSError, ValueError) as exc:  # the broker was closing, or is broken: try again
            sock.close()
            last = str(exc) or type(exc).__name__
            continue
        sock.settimeout(None)
        return sock, reply, rest
    raise BrokerUnavailable(f"the broker did not answer ({last})")


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view):]


def pipe(sock: socket.socket, first: bytes = b"", stdin_fd: int = 0, stdout_fd: int = 1) -> int:
    """Copy ``stdin_fd`` → ``sock`` and ``sock`` → ``stdout_fd`` until the broker closes; returns the
    exit code (0 when the client closed stdin first, 1 when the broker ended the session)."""
    stdin_closed = threading.Event()

    def upstream() -> None:
        try:
            while True:
                data = os.read(stdin_fd, PIPE_CHUNK_BYTES)
                if not data:
                    break
                sock.sendall(data)
        except OSError:
            pass
        finally:
            stdin_closed.set()
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_WR)  # the broker ends the session when it has answered

    threading.Thread(target=upstream, name="sleuth-stdin", daemon=True).start()
    try:
        if first:
            _write_all(stdout_fd, first)
        while True:
            try:
                data = sock.recv(PIPE_CHUNK_BYTES)
            except OSError:
                data = b""
            if not data:
                break
            _write_all(stdout_fd, data)
    except OSError:  # stdout closed: the client went away
        return 0
    finally:
        sock.close()
    if stdin_closed.is_set():
        return 0
    note("the broker ended this session (stopped or crashed); the next session starts a new one")
    return 1


def serve_via_broker(index: str | Path | None, tools: str | None, projects: Sequence[str],
                     guides: str | Path | None, events: str | Path | None,
                     env: Mapping[str, str] | None = None) -> int | None:
    """Serve this MCP session through the index's broker; returns the exit code, or None when the
    session must be served in this process (no index found: the in-process server reports it or
    serves index-free profiles; or no broker could be used: a note on stderr says why).

    Args:
        index: ``--index`` (None: ``$SLEUTH_INDEX`` or the nearest ``.sleuth/``).
        tools: ``--tools`` as given (None: ``$SLEUTH_TOOLS``, config.toml, the default).
        projects: ``--project`` values (the broker checks them).
        guides, events: ``--guides`` / ``--events`` files.
        env: the environment (default: this process's).
    """
    env = os.environ if env is None else env
    index_dir = find_index_dir(index)
    if index_dir is None or not has_catalog(index_dir):
        return None
    header = session_header(tools, projects, guides, events, env)
    try:
        sock, reply, rest = open_session(index_dir, header, env)
    except BrokerUnavailable as exc:
        note(f"{exc}; serving this session in its own process")
        return None
    if not reply.get("ok"):
        sock.close()
        sys.stderr.write(f"error: {reply.get('error', 'the broker refused the session')}\n")
        code = reply.get("exit_code")
        return code if isinstance(code, int) and code > 0 else 2
    try:
        return pipe(sock, rest)
    except KeyboardInterrupt:
        return 130


# ---------------------------------------------------------------------------------------------- for people


def _lock_free(path: Path) -> bool:
    """True when no process holds ``flock`` on ``path`` (checked without keeping it)."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError:
        return True
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    finally:
        os.close(fd)


def broker_alive(index_dir: Path, env: Mapping[str, str] | None = None) -> bool:
    """True when the broker of ``index_dir`` under ``env``'s settings runs: its socket file exists
    and a process holds its lock (looked at without connecting; never starts one)."""
    env = os.environ if env is None else env
    if not broker_enabled(env):
        return False
    try:
        paths = BrokerPaths.for_index(index_dir, env, create=False)
    except BrokerUnavailable:
        return False
    return paths.socket.exists() and paths.run_lock.exists() and not _lock_free(paths.run_lock)


def list_brokers(index_dir: Path | None = None, env: Mapping[str, str] | None = None) -> list[dict[str, Any]]:
    """The brokers of ``index_dir`` (None: every broker of this user), each as its status
    (``running: true``) or, when it does not answer, ``{index, pid, running, state}``. Files left
    by a killed broker (no process holds its lock) are removed on the way."""
    from sleuth.broker.paths import all_broker_paths

    out: list[dict[str, Any]] = []
    for paths in all_broker_paths(env):
        try:
            info = json.loads(paths.info.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if not isinstance(info, dict) or (index_dir is not None and info.get("index") != str(index_dir)):
            continue
        base = {"index": info.get("index"), "pid": info.get("pid"), "key": paths.key}
        try:
            status = request(paths, {"op": "status"})
        except BrokerUnavailable as exc:  # served by another user: not ours to list or stop
            log.warning("%s", exc)
            continue
        except (OSError, ValueError) as exc:
            out.append({**base, "running": True, "state": f"not answering ({exc or type(exc).__name__})"})
            continue
        if status is not None:
            status.pop("ok", None)
            out.append({**status, "running": True, "state": "serving"})
        elif _lock_free(paths.run_lock):
            for stale in (paths.socket, paths.info):
                with contextlib.suppress(OSError):
                    stale.unlink()
        else:
            out.append({**base, "running": True, "state": "starting or stopping"})
    return out


def stop_brokers(index_dir: Path | None = None, env: Mapping[str, str] | None = None,
                 timeout_s: float = BROKER_START_TIMEOUT_S) -> list[dict[str, Any]]:
    """Ask the brokers of ``index_dir`` (None: all of this user) to stop and wait until each has
    released its lock (at most ``timeout_s``); returns ``{index, pid, stopped}`` per broker."""
    from sleuth.broker.paths import broker_dir

    asked: list[tuple[BrokerPaths, dict[str, Any]]] = []
    for status in list_brokers(index_dir, env):
        paths = BrokerPaths(broker_dir(env), status["key"])
        try:
            answered = request(paths, {"op": "stop"}) is not None
        except (OSError, ValueError, BrokerUnavailable):
            answered = False
        if not answered and isinstance(status.get("pid"), int):  # alive (it holds its lock) but not answering
            with contextlib.suppress(OSError):
                os.kill(status["pid"], signal.SIGTERM)
        asked.append((paths, {"index": status.get("index"), "pid": status.get("pid")}))
    deadline = time.monotonic() + timeout_s
    out = []
    for paths, row in asked:
        while not _lock_free(paths.run_lock) and time.monotonic() < deadline:
            time.sleep(START_POLL_S)
        out.append({**row, "stopped": _lock_free(paths.run_lock)})
    return out
