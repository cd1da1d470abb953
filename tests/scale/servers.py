"""Real servers for the scale-out tests and benchmarks: a PostgreSQL server in a temporary data
folder on a free loopback port, and milvus-lite serving its gRPC API on another.

Both are separate processes reached over the network, started and stopped here. PostgreSQL comes
from Debian's ``postgresql`` package (``.ci/run`` installs it); its binaries are found under
``/usr/lib/postgresql/*/bin``. As root, the server runs as the ``postgres`` user (initdb refuses root).
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: How long a server may take to start accepting connections, in seconds (a generous safety net).
SERVER_START_TIMEOUT_S = 120.0


def free_port() -> int:
    """A TCP port on 127.0.0.1 free now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], what: str, log: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}: {log.read_text(errors='replace')[-2000:]}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), timeout=1):
            return
        time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on port {port} in {SERVER_START_TIMEOUT_S:g} s")


def pg_bin(name: str) -> str:
    """The path of PostgreSQL's program ``name`` (``initdb``, ``postgres``, ``pg_ctl``)."""
    found = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    if found:
        return found[-1]
    path = shutil.which(name)
    if path is None:
        raise RuntimeError(f"PostgreSQL's {name} not found: install Debian's postgresql package (apt-get install"
                           " postgresql)")
    return path


class PgServer:
    """A PostgreSQL server of its own: ``initdb`` into a temporary folder, ``postgres`` on a free
    loopback port, trust authentication for local connections; :meth:`stop` removes it all."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sleuth-pg-"))
        self.data = self.root / "data"
        self.port = free_port()
        self.user = "postgres" if os.geteuid() == 0 else pwd.getpwuid(os.geteuid()).pw_name
        self.proc: subprocess.Popen[bytes] | None = None

    def _run_as(self, args: list[str]) -> list[str]:
        return ["runuser", "-u", "postgres", "--", *args] if os.geteuid() == 0 else args

    def start(self) -> PgServer:
        if os.geteuid() == 0:
            shutil.chown(self.root, "postgres", "postgres")
        log = self.root / "server.log"
        subprocess.run(self._run_as([pg_bin("initdb"), "-D", str(self.data), "-U", self.user, "-A", "trust",
                                     "-E", "UTF8", "--no-locale", "--no-sync"]),
                       check=True, capture_output=True, timeout=SERVER_START_TIMEOUT_S)
        with open(log, "wb") as out:
            self.proc = subprocess.Popen(
                self._run_as([pg_bin("postgres"), "-D", str(self.data), "-p", str(self.port), "-h", "127.0.0.1",
                              "-k", str(self.root), "-c", "fsync=off", "-c", "max_connections=200",
                              "-c", "shared_buffers=128MB"]),
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        _wait_for_port(self.port, self.proc, "postgres", log)
        self._wait_for_connections(log)
        return self

    def _wait_for_connections(self, log: Path) -> None:
        """Listening is not ready: until recovery ends postgres refuses connections ("the database
        system is starting up"); wait (at most ``SERVER_START_TIMEOUT_S``) until one is accepted."""
        import psycopg

        from sleuth.locks import retry_until

        def accepted() -> bool:
            try:
                psycopg.connect(self.url(), connect_timeout=10).close()
            except psycopg.OperationalError:
                if self.proc is not None and self.proc.poll() is not None:
                    raise RuntimeError(f"postgres ended: {log.read_text(errors='replace')[-2000:]}") from None
                return False
            return True

        if not retry_until(accepted, SERVER_START_TIMEOUT_S, 0.1):
            raise RuntimeError(f"postgres accepted no connection in {SERVER_START_TIMEOUT_S:g} s")

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{self.user}@127.0.0.1:{self.port}/{database}"

    def new_database(self, name: str) -> str:
        """Create database ``name`` (a fresh catalog) and return its URL."""
        import psycopg

        with psycopg.connect(self.url(), autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')
        return self.url(name)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()  # SIGTERM: "smart" shutdown would wait for clients; this is "fast"
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)


class MilvusLiteServer:
    """``milvus-lite server`` (the gRPC API of Milvus) on a free loopback port, data in a
    temporary folder; :meth:`stop` ends it and removes the folder."""

    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="sleuth-milvus-"))
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> MilvusLiteServer:
        exe = Path(sys.executable).with_name("milvus-lite")
        log = self.root / "server.log"
        with open(log, "wb") as out:
            self.proc = subprocess.Popen([str(exe), "server", "--data-dir", str(self.root / "data"),
                                          "--host", "127.0.0.1", "--port", str(self.port)],
                                         stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        _wait_for_port(self.port, self.proc, "milvus-lite server", log)
        return self

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        shutil.rmtree(self.root, ignore_errors=True)
