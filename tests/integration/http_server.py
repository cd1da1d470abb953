"""A real `sleuth serve --http` process on a free loopback port, and raw HTTP helpers for it."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx2

from tests.integration.conftest import run_cli
from tests.integration.mcp_session import serve_env

#: Generous safety net for the server to start answering (the machine is shared), in seconds.
START_WAIT_S = 180.0
#: Generous safety net for one HTTP answer, in seconds.
ANSWER_WAIT_S = 120.0

ACCEPT = {"accept": "application/json, text/event-stream", "content-type": "application/json"}
INIT = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}}


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class HttpServer:
    """A running server: its process, URLs, and what it wrote to stderr once stopped."""

    def __init__(self, proc: subprocess.Popen[str], port: int, log: Path) -> None:
        self.proc, self.port, self.log = proc, port, log
        self.base = f"http://127.0.0.1:{port}"
        self.url = f"{self.base}/mcp"
        self.metadata_url = f"{self.base}/.well-known/oauth-protected-resource/mcp"

    def post(self, body: Any, token: str | None = None, headers: dict[str, str] | None = None,
             content: bytes | None = None) -> httpx2.Response:
        """One raw POST to the MCP endpoint."""
        sent = {**ACCEPT, **({"authorization": f"Bearer {token}"} if token else {}), **(headers or {})}
        data = content if content is not None else json.dumps(body).encode("utf-8")
        return httpx2.post(self.url, content=data, headers=sent, timeout=ANSWER_WAIT_S)


def sse_json(response: httpx2.Response) -> dict[str, Any]:
    """The JSON-RPC message of a response, sent as JSON or as one SSE ``data:`` event."""
    if response.headers.get("content-type", "").startswith("application/json"):
        return response.json()  # type: ignore[no-any-return]
    for line in response.text.splitlines():
        if line.startswith("data:") and line[5:].strip():
            return json.loads(line[5:])  # type: ignore[no-any-return]
    raise AssertionError(f"no message in the response: {response.text[:500]!r}")


@contextmanager
def http_server(index: Path, *args: str, log_dir: Path, env: dict[str, str] | None = None) -> Iterator[HttpServer]:
    """Start `sleuth serve --http 127.0.0.1:<free port> --index INDEX *args` (``env``: extra environment
    variables); stop it afterwards."""
    port = free_port()
    log = log_dir / f"serve-{port}.log"
    with open(log, "w") as err:
        proc = subprocess.Popen([sys.executable, "-m", "sleuth.cli", "serve", "--http", f"127.0.0.1:{port}",
                                 "--index", str(index), *args], stdout=subprocess.DEVNULL, stderr=err,
                                text=True, env=serve_env(env))
    server = HttpServer(proc, port, log)
    try:
        deadline = time.monotonic() + START_WAIT_S
        while True:
            if proc.poll() is not None:
                raise AssertionError(f"the server exited ({proc.returncode}): {log.read_text()}")
            try:
                if httpx2.get(server.metadata_url, timeout=5).status_code == 200:
                    break
            except httpx2.TransportError:
                pass
            if time.monotonic() > deadline:
                raise AssertionError(f"the server did not answer within {START_WAIT_S} s: {log.read_text()}")
            time.sleep(0.2)
        yield server
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def token(index: Path, name: str, url: str, *args: str) -> str:
    """`sleuth users token NAME --url URL *args` (the token on stdout)."""
    return run_cli("users", "token", name, "--url", url, "--index", str(index), *args).stdout.strip()
